package runstate

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The test binary re-executes itself as a child process (lock holder, committing loop) when
// childEnv is set; dirEnv names the state directory.
const (
	childEnv = "RUNSTATE_TEST_CHILD"
	dirEnv   = "RUNSTATE_TEST_DIR"
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "hold":
		holdChild(os.Getenv(dirEnv))
	case "loop":
		loopChild(os.Getenv(dirEnv))
	}
	fmt.Fprintf(os.Stderr, "unknown %s=%q\n", childEnv, os.Getenv(childEnv))
	os.Exit(2)
}

// holdChild opens the state directory, says so and waits to be killed.
func holdChild(dir string) {
	if _, err := Open(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("locked")
	time.Sleep(time.Minute)
	os.Exit(3)
}

// loopChild commits the successive test runs after the committed one until it is killed.
func loopChild(dir string) {
	fmt.Println("started")
	d, err := Open(dir)
	for err == nil {
		cur, _, cerr := d.Current()
		if cerr != nil {
			err = cerr
			break
		}
		err = commitTestRun(d, cur.DatasetVersion+1)
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(2)
}

var baseTime = time.Date(2026, 11, 22, 4, 0, 0, 123456000, time.UTC)

// testID is the id of test run i, shaped like the ids stirank reanalyze uses.
func testID(i int) string {
	return fmt.Sprintf("v%06d-%012x", i, uint64(i)*0x9e3779b97f4a7c15>>16)
}

// testRun returns test run i (i ≥ 1) and its history rows as committed.
func testRun(i int) (Run, []HistoryRow) {
	run := Run{
		ID:              testID(i),
		Time:            baseTime.Add(time.Duration(i) * time.Hour),
		DatasetVersion:  i,
		DatasetChecksum: fmt.Sprintf("sha256:%08x", i*7919),
		Settings:        "cp-poisson;chains=4",
		Seed:            uint64(i)<<40 | 12345,
		BestRank:        1 + i%4,
		Ranks:           []int{1, 2, 3, 4},
	}
	if i > 1 {
		run.Previous = testID(i - 1)
	}
	var rows []HistoryRow
	for _, k := range run.Ranks {
		rows = append(rows, HistoryRow{
			Time: run.Time, RunID: run.ID, DatasetVersion: i, DatasetChecksum: run.DatasetChecksum,
			Rank:          k,
			LogEvidence:   -1234.5/float64(i) + math.Log(float64(k))/3,
			StdErr:        0.1 / float64(i*k),
			PosteriorProb: math.Exp(-float64(k)) / 3,
			ChosenRank:    run.BestRank,
			Steps:         int64(1000*i + k),
			WarmStart:     i > 1,
		})
	}
	return run, rows
}

// testHistory returns the history after test runs 1..n.
func testHistory(n int) []HistoryRow {
	var h []HistoryRow
	for i := 1; i <= n; i++ {
		_, rows := testRun(i)
		h = append(h, rows...)
	}
	return h
}

func stateBytes(i, k int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("state of rank %d after run %d\n", k, i)), 128)
}

func evidenceBytes(i int) []byte { return []byte(fmt.Sprintf(`{"run":%d}`+"\n", i)) }

// stageTestRun begins test run i and writes its files, leaving the Commit to the caller. The run
// and rows returned are what a caller passes to Commit: no Previous, and rows that carry only
// their per-rank columns, in reverse rank order.
func stageTestRun(d *Dir, i int) (*Txn, Run, []HistoryRow, error) {
	run, rows := testRun(i)
	run.Previous = ""
	txn, err := d.Begin(run.ID)
	if err != nil {
		return nil, run, nil, err
	}
	for _, k := range run.Ranks {
		if err := os.WriteFile(filepath.Join(txn.StatesDir(), fmt.Sprintf("rank-%d.state", k)), stateBytes(i, k), 0o644); err != nil {
			return nil, run, nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(txn.Dir(), "evidence.json"), evidenceBytes(i), 0o644); err != nil {
		return nil, run, nil, err
	}
	var bare []HistoryRow
	for _, r := range slices.Backward(rows) {
		bare = append(bare, HistoryRow{Rank: r.Rank, LogEvidence: r.LogEvidence, StdErr: r.StdErr,
			PosteriorProb: r.PosteriorProb, Steps: r.Steps, WarmStart: r.WarmStart})
	}
	return txn, run, bare, nil
}

func commitTestRun(d *Dir, i int) error {
	txn, run, rows, err := stageTestRun(d, i)
	if err != nil {
		return err
	}
	defer txn.Abort()
	return txn.Commit(run, rows)
}

func mustCommit(t *testing.T, d *Dir, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		if err := commitTestRun(d, i); err != nil {
			t.Fatal(err)
		}
	}
}

func mustOpen(t *testing.T, path string) *Dir {
	t.Helper()
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var n []string
	for _, e := range entries {
		n = append(n, e.Name())
	}
	return n
}

// checkDir opens the state directory at path, as the next run would, and checks the invariants
// that must hold whatever happened before: the committed run is a test run n (0 when none) and
// its directory is complete, the history holds exactly the rows of runs 1..n, only runs n and
// n-1 remain, the published files are exact copies of the committed ones and no temporary file
// is left. It returns the open Dir and n.
func checkDir(t *testing.T, path string) (*Dir, int) {
	t.Helper()
	d := mustOpen(t, path)
	cur, ok, err := d.Current()
	if err != nil {
		t.Fatal(err)
	}
	n := cur.DatasetVersion
	hist, err := d.History()
	if err != nil {
		t.Fatal(err)
	}
	if want := testHistory(n); !reflect.DeepEqual(hist, want) {
		t.Fatalf("history after run %d: %d rows, want %d:\n got %+v\nwant %+v", n, len(hist), len(want), hist, want)
	}
	var runs []string
	if n > 1 {
		runs = append(runs, testID(n-1))
	}
	if ok {
		runs = append(runs, testID(n))
	}
	if got := names(t, filepath.Join(path, runsDir)); !slices.Equal(got, runs) {
		t.Fatalf("runs/ holds %q, want %q", got, runs)
	}
	for _, name := range names(t, path) {
		if strings.HasPrefix(name, tempPrefix) {
			t.Fatalf("temporary file %s left", name)
		}
	}
	if !ok {
		if got := names(t, path); !slices.Equal(got, []string{markerFile, lockFile, runsDir}) {
			t.Fatalf("state directory without a committed run holds %q", got)
		}
		return d, 0
	}
	want, _ := testRun(n)
	if !reflect.DeepEqual(cur, want) {
		t.Fatalf("current run\n got %+v\nwant %+v", cur, want)
	}
	runDir := filepath.Join(path, runsDir, cur.ID)
	for _, k := range cur.Ranks {
		if got := readFile(t, filepath.Join(d.StatesDir(cur), fmt.Sprintf("rank-%d.state", k))); !bytes.Equal(got, stateBytes(n, k)) {
			t.Fatalf("state of rank %d of run %d is wrong", k, n)
		}
	}
	if got := readFile(t, filepath.Join(runDir, "evidence.json")); !bytes.Equal(got, evidenceBytes(n)) {
		t.Fatalf("evidence.json of run %d: %q", n, got)
	}
	if !bytes.Equal(readFile(t, filepath.Join(runDir, runFile)), readFile(t, filepath.Join(path, currentFile))) {
		t.Fatalf("run.json of run %d differs from current.json", n)
	}
	wantCSV, err := encodeCSV(testHistory(n))
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(runDir, historyCSV)); !bytes.Equal(got, wantCSV) {
		t.Fatalf("history.csv of run %d:\n%s\nwant\n%s", n, got, wantCSV)
	}
	for _, name := range []string{historyParquet, historyCSV} {
		if !bytes.Equal(readFile(t, filepath.Join(path, name)), readFile(t, filepath.Join(runDir, name))) {
			t.Fatalf("published %s differs from run %d's", name, n)
		}
	}
	var files []string
	for _, name := range names(t, runDir) {
		if name != statesDir {
			files = append(files, name)
		}
	}
	if got := names(t, filepath.Join(path, latestDir)); !slices.Equal(got, files) {
		t.Fatalf("latest/ holds %q, want %q", got, files)
	}
	for _, name := range files {
		if !bytes.Equal(readFile(t, filepath.Join(path, latestDir, name)), readFile(t, filepath.Join(runDir, name))) {
			t.Fatalf("latest/%s differs from run %d's", name, n)
		}
	}
	return d, n
}
