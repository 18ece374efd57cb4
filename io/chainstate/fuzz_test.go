package chainstate

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stirank/stirank/io/tensorio/tensoriotest"
)

// FuzzRead reads chain state files: a real final state, the hostile Parquet shards of
// tensorio's corpus, and their mutations. It asserts that Read returns and allocates at most
// 16 MB plus 300 bytes per file byte: a parameter row costs its decoded columns and its place
// in the state, and the rows a file may declare are bounded by its size.
// CI runs the seeds; fuzz with go test ./io/chainstate -run '^$' -fuzz FuzzRead -fuzztime 10m.
func FuzzRead(f *testing.F) {
	dir := f.TempDir()
	path := Path(dir, Chain{Rank: 2})
	if err := Write(context.Background(), path, finalState(f, true)); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	cases, err := tensoriotest.Corpus(filepath.Join(dir, "corpus"))
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		if shard, err := os.ReadFile(filepath.Join(c.Dataset, "data", "shard-00000.parquet")); err == nil {
			f.Add(shard)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file := filepath.Join(t.TempDir(), "state.parquet")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		Read(context.Background(), file)
		runtime.ReadMemStats(&after)
		if n, bound := after.TotalAlloc-before.TotalAlloc, uint64(16<<20+300*len(data)); n > bound {
			t.Errorf("file of %d bytes: allocated %d bytes, bound %d", len(data), n, bound)
		}
	})
}
