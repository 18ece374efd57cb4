package runstate

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// FuzzState opens a state directory whose commit record (current.json) and committed history
// (history.parquet) are the fuzzer's: from a real committed run and their mutations. It asserts
// that Open, Current and History return, and allocate at most 16 MB plus 300 bytes per input
// byte. CI runs the seeds; fuzz with go test ./runstate -run '^$' -fuzz FuzzState -fuzztime 10m.
func FuzzState(f *testing.F) {
	dir := f.TempDir()
	d, err := Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	if err := commitTestRun(d, 1); err != nil {
		f.Fatal(err)
	}
	d.Close()
	current, err := os.ReadFile(filepath.Join(dir, currentFile))
	if err != nil {
		f.Fatal(err)
	}
	history, err := os.ReadFile(filepath.Join(dir, historyParquet))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(current, history)
	f.Add(current, history[:len(history)/2])
	f.Add([]byte(`{"id":"../x"}`), history)
	f.Fuzz(func(t *testing.T, current, history []byte) {
		dir := t.TempDir()
		run := filepath.Join(dir, runsDir, testID(1))
		if err := os.MkdirAll(run, 0o755); err != nil {
			t.Fatal(err)
		}
		for p, data := range map[string][]byte{
			filepath.Join(dir, markerFile):     []byte(markerText),
			filepath.Join(dir, currentFile):    current,
			filepath.Join(run, historyParquet): history,
		} {
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if d, err := Open(dir); err == nil {
			d.Current()
			d.History()
			d.Close()
		}
		runtime.ReadMemStats(&after)
		if n, bound := after.TotalAlloc-before.TotalAlloc, uint64(16<<20+300*(len(current)+len(history))); n > bound {
			t.Errorf("inputs of %d and %d bytes: allocated %d bytes, bound %d", len(current), len(history), n, bound)
		}
	})
}
