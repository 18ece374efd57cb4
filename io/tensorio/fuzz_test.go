package tensorio_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"testing/fstest"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/io/tensorio/tensoriotest"
)

// The fuzz targets feed every reader bytes from the corpus of bad inputs in tensoriotest and
// their mutations. Each asserts that the reader returns (no panic, no hang: the fuzzer's own
// timeout) and that it allocated no more than a bound linear in the input: what it can claim in
// a few bytes must not become gigabytes. CI runs the seeds as ordinary tests; run one with
//
//	go test ./io/tensorio -run '^$' -fuzz FuzzReadText -fuzztime 10m

// allocated returns the bytes f allocates, all goroutines included.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// corpus builds the bad inputs of tensoriotest once per target.
func corpus(f *testing.F) []tensoriotest.Case {
	cases, err := tensoriotest.Corpus(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	return cases
}

var formats = []tensorio.TextFormat{tensorio.CSV, tensorio.TNS, tensorio.MTX}

// FuzzReadText reads CSV, FROSTT .tns and Matrix Market text. Bound: 8 MB (the 1 MB line buffer
// and its growth) plus 200 bytes per input byte (a cell of three short fields costs its
// coordinates, value, line number and the duplicate check's key, in slices that double).
func FuzzReadText(f *testing.F) {
	for _, c := range corpus(f) {
		if c.Text == "" {
			continue
		}
		data, err := os.ReadFile(c.Text)
		if err != nil {
			f.Fatal(err)
		}
		for k, tf := range formats {
			if tf == c.Format {
				f.Add(data, uint8(k))
			}
		}
	}
	f.Add([]byte("i,j,k,value\n0,0,0,1\n1,2,3,4.5\n"), uint8(0))
	f.Add([]byte("i,j,re,im\n0,0,1,-2\n1,2,0,4.5\n"), uint8(0))
	f.Add([]byte("1 1 1 2\n2 3 4 5\n"), uint8(1))
	f.Add([]byte("%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 1 2\n3 1 4\n"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		tf := formats[int(format)%len(formats)]
		n := allocated(func() {
			tensorio.ReadText(bytes.NewReader(data), "fuzz", tf, tensorio.TextOptions{})
		})
		if bound := uint64(8<<20 + 200*len(data)); n > bound {
			t.Errorf("%s of %d bytes: allocated %d bytes, bound %d", tf, len(data), n, bound)
		}
	})
}

// FuzzManifest reads a dataset made of a manifest alone. Bound: 1 MB plus 100 bytes per byte.
func FuzzManifest(f *testing.F) {
	for _, c := range corpus(f) {
		if data, err := os.ReadFile(filepath.Join(c.Dataset, tensorio.ManifestName)); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{"d/" + tensorio.ManifestName: {Data: data}}
		n := allocated(func() { tensorio.ReadFS(fsys, "d", tensorio.ReadOptions{Complex: true}) })
		if bound := uint64(1<<20 + 100*len(data)); n > bound {
			t.Errorf("manifest of %d bytes: allocated %d bytes, bound %d", len(data), n, bound)
		}
	})
}

// FuzzShard reads one Parquet shard under a manifest that agrees with it: its size and checksum,
// and rows rows of a 30x20 matrix, so that every mutation reaches the Parquet guard and decoder.
// Every shard is read twice, as a count matrix (columns i, j, value) and as a complex one (i, j,
// value, imag). Bound, per read: 32 MB (16 MB, and two buffers of a zstd window of at most 8 MB)
// plus 200 bytes per file byte and 1 KB per declared row (the tensor, and pages of up to
// maxPageBytes per value).
func FuzzShard(f *testing.F) {
	for _, c := range corpus(f) {
		shard, err := os.ReadFile(filepath.Join(c.Dataset, "data", "shard-00000.parquet"))
		if err != nil {
			continue
		}
		rows := uint16(1)
		if m, err := tensoriotest.ReadManifest(c.Dataset); err == nil && len(m.Shards) == 1 && m.Shards[0].Rows < 1<<16 {
			rows = uint16(m.Shards[0].Rows)
		}
		f.Add(shard, rows)
	}
	f.Fuzz(func(t *testing.T, shard []byte, rows uint16) {
		sum := sha256.Sum256(shard)
		sh := tensorio.Shard{Path: "data/shard-00000.parquet", Rows: int64(rows), Bytes: int64(len(shard)), SHA256: hex.EncodeToString(sum[:])}
		for _, kind := range []tensorio.ValueKind{tensorio.Count, tensorio.Complex} {
			m, err := json.Marshal(tensoriotest.MatrixManifest(kind, sh))
			if err != nil {
				t.Fatal(err)
			}
			fsys := fstest.MapFS{"d/" + tensorio.ManifestName: {Data: m}, "d/" + sh.Path: {Data: shard}}
			n := allocated(func() { tensorio.ReadFS(fsys, "d", tensorio.ReadOptions{Complex: true}) })
			if bound := uint64(32<<20 + 200*len(shard) + 1024*int(rows)); n > bound {
				t.Errorf("%s shard of %d bytes, %d rows: allocated %d bytes, bound %d", kind, len(shard), rows, n, bound)
			}
		}
	})
}
