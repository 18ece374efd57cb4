package tensorio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stirank/stirank/tensor"
)

// cube returns a 3-way count tensor of shape 6×5×4 with a cell wherever (i+2j+3k) mod 3 is 0.
func cube() *tensor.Sparse {
	t, _ := tensor.New([]int{6, 5, 4}, 0)
	for i := range 6 {
		for j := range 5 {
			for k := range 4 {
				if (i+2*j+3*k)%3 == 0 {
					t.Append([]int{i, j, k}, float64(1+(i+j+k)%4))
				}
			}
		}
	}
	return t
}

// cells builds a 3-way tensor of the given shape from cells {i, j, k, value}.
func cells(shape []int, cs ...[4]float64) *tensor.Sparse {
	t := &tensor.Sparse{Shape: shape, Coords: make([][]int32, 3)}
	for _, c := range cs {
		t.Append([]int{int(c[0]), int(c[1]), int(c[2])}, c[3])
	}
	return t
}

// cellMap returns the cells of a 3-way tensor by coordinates.
func cellMap(t *tensor.Sparse) map[[3]int32]float64 {
	m := make(map[[3]int32]float64, t.NNZ())
	for n, v := range t.Values {
		m[[3]int32{t.Coords[0][n], t.Coords[1][n], t.Coords[2][n]}] = v
	}
	return m
}

// newDataset writes x as a fresh dataset and returns its directory.
func newDataset(t *testing.T, x *tensor.Sparse, opts WriteOptions) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ds")
	if _, err := Write(context.Background(), dir, x, opts); err != nil {
		t.Fatal(err)
	}
	return dir
}

// snapshot holds what a reader sees of a dataset's current version.
type snapshot struct {
	manifest []byte
	checksum string
	cells    map[[3]int32]float64
}

func snap(t *testing.T, dir string) snapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Read(context.Background(), dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return snapshot{b, d.Manifest.Checksum(), cellMap(d.Tensor)}
}

// unchanged fails unless dir's current version is still the one in s.
func (s snapshot) unchanged(t *testing.T, dir string) {
	t.Helper()
	now := snap(t, dir)
	if !bytes.Equal(now.manifest, s.manifest) || now.checksum != s.checksum || !mapsEqual(now.cells, s.cells) {
		t.Fatalf("the dataset changed:\n%s\nwas\n%s", now.manifest, s.manifest)
	}
}

func mapsEqual(a, b map[[3]int32]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestAppendGrows(t *testing.T) {
	ctx := context.Background()
	for mode := range 3 {
		t.Run(fmt.Sprintf("mode%d", mode), func(t *testing.T) {
			dir := newDataset(t, cube(), WriteOptions{})
			before := snap(t, dir)
			// Two cells past the end of the mode (the last one two past), one inside the shape.
			idx := [][3]int{{1, 2, 0}, {0, 1, 1}, {3, 4, 2}}
			idx[0][mode] = []int{6, 5, 4}[mode]
			idx[1][mode] = []int{6, 5, 4}[mode] + 1
			add := cells([]int{1, 1, 1}, [4]float64{float64(idx[0][0]), float64(idx[0][1]), float64(idx[0][2]), 7},
				[4]float64{float64(idx[1][0]), float64(idx[1][1]), float64(idx[1][2]), 0},
				[4]float64{3, 4, 2, 9})
			if _, ok := before.cells[[3]int32{3, 4, 2}]; ok {
				t.Fatal("test cell [3 4 2] is already stored")
			}
			m, err := Append(ctx, dir, add, AppendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wantShape := []int{6, 5, 4}
			wantShape[mode] += 2
			if m.Version != 2 || !slices.Equal(m.Shape, wantShape) || m.Cells != int64(len(before.cells)+3) || !m.ZerosStored {
				t.Errorf("manifest version %d, shape %v, cells %d, zeros %t; want 2, %v, %d, true", m.Version, m.Shape, m.Cells, m.ZerosStored, wantShape, len(before.cells)+3)
			}
			d, err := Read(ctx, dir, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := cellMap(add)
			for c, v := range before.cells {
				want[c] = v
			}
			if !slices.Equal(d.Tensor.Shape, wantShape) || !mapsEqual(cellMap(d.Tensor), want) {
				t.Errorf("read back shape %v and %d cells; want %v and the union, %d", d.Tensor.Shape, d.Tensor.NNZ(), wantShape, len(want))
			}
			if d.Manifest.Checksum() == before.checksum || d.Manifest.Checksum() != m.Checksum() {
				t.Errorf("checksum %s after the append, %s before, %s returned", d.Manifest.Checksum(), before.checksum, m.Checksum())
			}
			// Version 1 reads as it was, from its copy under versions/.
			v1, err := ReadVersion(ctx, dir, 1, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if v1.Manifest.Checksum() != before.checksum || !mapsEqual(cellMap(v1.Tensor), before.cells) {
				t.Error("version 1 changed")
			}
			if _, err := os.Stat(filepath.Join(dir, "versions", "v000001.json")); err != nil {
				t.Error(err)
			}
			if v2, err := os.ReadFile(filepath.Join(dir, "versions", "v000002.json")); err != nil || !bytes.Equal(v2, m.encode()) {
				t.Errorf("versions/v000002.json is not the new manifest: %v", err)
			}
		})
	}
}

// TestAppendVersions appends twice and reads every version back, through ReadVersion and
// ReadManifestVersion, including a current version 1 that has no copy under versions/ yet.
func TestAppendVersions(t *testing.T) {
	ctx := context.Background()
	dir := newDataset(t, cube(), WriteOptions{})
	v1 := snap(t, dir)
	if d, err := ReadVersion(ctx, dir, 1, ReadOptions{}); err != nil || d.Manifest.Checksum() != v1.checksum {
		t.Fatalf("ReadVersion 1 of a fresh dataset: %v", err)
	}
	if _, err := Append(ctx, dir, cells([]int{1, 1, 1}, [4]float64{5, 4, 3, 2}), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	v2 := snap(t, dir)
	// The shape grows by add.Shape alone.
	m3, err := Append(ctx, dir, cells([]int{6, 9, 4}, [4]float64{0, 1, 0, 1}), AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m3.Version != 3 || !slices.Equal(m3.Shape, []int{6, 9, 4}) {
		t.Errorf("version %d, shape %v; want 3, [6 9 4]", m3.Version, m3.Shape)
	}
	for v, s := range map[int]snapshot{1: v1, 2: v2} {
		d, err := ReadVersion(ctx, dir, v, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := ReadManifestVersion(ctx, dir, v)
		if err != nil {
			t.Fatal(err)
		}
		if d.Manifest.Version != v || d.Manifest.Checksum() != s.checksum || m.Checksum() != s.checksum || !mapsEqual(cellMap(d.Tensor), s.cells) {
			t.Errorf("version %d reads differently from when it was current", v)
		}
	}
	if m, err := ReadManifestVersion(ctx, dir, 3); err != nil || m.Checksum() != m3.Checksum() {
		t.Errorf("current version: %v", err)
	}
	for _, v := range []int{0, 4} {
		if _, err := ReadVersion(ctx, dir, v, ReadOptions{}); err == nil {
			t.Errorf("ReadVersion %d succeeded", v)
		}
	}
	if _, err := ReadVersion(ctx, dir, 4, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "no version 4: the dataset is at version 3") {
		t.Errorf("ReadVersion of a future version: %v", err)
	}
	os.Remove(filepath.Join(dir, "versions", "v000001.json"))
	if _, err := ReadVersion(ctx, dir, 1, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "v000001.json: missing") {
		t.Errorf("ReadVersion of a version not kept: %v", err)
	}
}

func TestAppendDuplicate(t *testing.T) {
	ctx := context.Background()
	dir := newDataset(t, cube(), WriteOptions{ShardRows: 16})
	before := snap(t, dir)
	d, err := Read(ctx, dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Cells 0 and 2 of the input are new; cells 1 and 3 are stored (the 20th and 5th read).
	old := [2]int{20, 5}
	add := cells([]int{1, 1, 1}, [4]float64{5, 4, 3, 1}, [4]float64{}, [4]float64{5, 3, 3, 1}, [4]float64{})
	for n, p := range []int{1, 3} {
		for m := range 3 {
			add.Coords[m][p] = d.Tensor.Coords[m][old[n]]
		}
	}
	lines := []int{2, 7, 9, 12}
	opts := AppendOptions{Source: "new.csv", Origin: func(pos int) (string, int64, int) { return "new.csv", -1, lines[pos] }}
	_, err = Append(ctx, dir, add, opts)
	file, row := d.Origin(old[0])
	want := fmt.Sprintf("new.csv line 7: cell %v is already stored (%s row %d)", add.Index(1, nil), strings.TrimPrefix(file, dir+"/"), row)
	var e *Error
	if !errors.Is(err, ErrAlreadyStored) || !errors.As(err, &e) || e.Line != 7 || err.Error() != want {
		t.Errorf("append of a stored cell: %v\nwant %s", err, want)
	}
	if !strings.Contains(want, "data/shard-00001.parquet row 4") {
		t.Errorf("test expects the 20th cell in the second shard of 16: %s", want)
	}
	before.unchanged(t, dir)
	if entries, _ := os.ReadDir(filepath.Join(dir, "data")); len(entries) != len(d.Manifest.Shards) {
		t.Errorf("data/ holds %d files, the dataset %d shards", len(entries), len(d.Manifest.Shards))
	}
	// Without Origin, the error names the source.
	if _, err := Append(ctx, dir, add, AppendOptions{Source: "more"}); err == nil || !strings.HasPrefix(err.Error(), "more: cell ") {
		t.Errorf("append without origin: %v", err)
	}
}

func TestAppendReplace(t *testing.T) {
	ctx := context.Background()
	dir := newDataset(t, cube(), WriteOptions{ShardRows: 8})
	before := snap(t, dir)
	d, err := Read(ctx, dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m1 := d.Manifest
	shard0, err := os.ReadFile(filepath.Join(dir, "data", "shard-00000.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	// Replace every cell of shard 0 (positions 0-7), cell 9 of shard 1, and add one new cell.
	add := &tensor.Sparse{Shape: []int{1, 1, 1}, Coords: make([][]int32, 3)}
	for _, p := range []int{9, 0, 1, 2, 3, 4, 5, 6, 7} {
		add.Append(d.Tensor.Index(p, nil), d.Tensor.Values[p]+10)
	}
	add.Append([]int{5, 4, 3}, 2)
	m, err := Append(ctx, dir, add, AppendOptions{Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	if m.Cells != m1.Cells+1 {
		t.Errorf("%d cells after replacing 9 and adding 1 to %d", m.Cells, m1.Cells)
	}
	// Shards 2… untouched, shard 1 rewritten, shard 0 gone, then the new shard.
	var paths []string
	for _, sh := range m.Shards {
		paths = append(paths, sh.Path)
	}
	wantPaths := []string{}
	for _, sh := range m1.Shards[2:] {
		wantPaths = append(wantPaths, sh.Path)
	}
	wantPaths = append(wantPaths, "data/v000002-shard-00000.parquet", "data/v000002-shard-00001.parquet")
	if !slices.Equal(paths, wantPaths) || m.Shards[len(m.Shards)-2].Rows != 7 {
		t.Errorf("shards %v (rows %d); want %v, 7 rows in the rewritten shard", paths, m.Shards[len(m.Shards)-2].Rows, wantPaths)
	}
	after := snap(t, dir)
	want := cellMap(add)
	for c, v := range before.cells {
		if _, ok := want[c]; !ok {
			want[c] = v
		}
	}
	if !mapsEqual(after.cells, want) {
		t.Error("cells read after the replace are not the old ones with the new values")
	}
	// The old shard file and version 1 are as they were.
	if b, err := os.ReadFile(filepath.Join(dir, "data", "shard-00000.parquet")); err != nil || !bytes.Equal(b, shard0) {
		t.Errorf("old shard changed: %v", err)
	}
	if v1, err := ReadVersion(ctx, dir, 1, ReadOptions{}); err != nil || !mapsEqual(cellMap(v1.Tensor), before.cells) {
		t.Errorf("version 1 changed: %v", err)
	}
}

func TestAppendRejects(t *testing.T) {
	ctx := context.Background()
	dir := newDataset(t, cube(), WriteOptions{})
	before := snap(t, dir)
	shape := []int{1, 1, 1}
	lines := func(pos int) (string, int64, int) { return "bad.tns", -1, 10 + pos }
	tests := []struct {
		name string
		add  *tensor.Sparse
		want string
	}{
		{"negative count", cells(shape, [4]float64{9, 0, 0, 1}, [4]float64{9, 1, 0, -2}), "bad.tns line 11: cell [9 1 0]: count -2 is negative"},
		{"fraction", cells(shape, [4]float64{9, 1, 0, 0.5}), "bad.tns line 10: cell [9 1 0]: count 0.5 is not an integer"},
		{"NaN", cells(shape, [4]float64{9, 1, 0, math.NaN()}), "bad.tns line 10: cell [9 1 0]: value NaN is not finite"},
		{"negative index", cells(shape, [4]float64{9, -1, 0, 1}), "bad.tns line 10: cell [9 -1 0]: mode-1 index -1 outside [0, 5)"},
		{"twice", cells(shape, [4]float64{9, 1, 0, 1}, [4]float64{9, 1, 0, 2}), "bad.tns line 11: cell [9 1 0]: stored twice"},
		{"order", &tensor.Sparse{Shape: []int{7, 7}, Coords: [][]int32{{6}, {6}}, Values: []float64{1}}, "bad.tns: the cells are 2-way, the dataset is 3-way"},
		{"empty", cells(shape), "bad.tns: no cells to append"},
		{"columns", &tensor.Sparse{Shape: []int{7, 7, 7}, Coords: [][]int32{{6}, {6}}, Values: []float64{1}}, "bad.tns: 2 coordinate columns for order 3"},
	}
	for _, tt := range tests {
		_, err := Append(ctx, dir, tt.add, AppendOptions{Source: "bad.tns", Origin: lines})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want %q", tt.name, err, tt.want)
		}
		before.unchanged(t, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "versions")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rejected appends created versions/: %v", err)
	}
	ok := cells(shape, [4]float64{9, 1, 0, 1})
	if _, err := Append(ctx, "gs://bucket/ds", ok, AppendOptions{}); err == nil || !strings.Contains(err.Error(), "need a local or mounted directory") {
		t.Errorf("append to a URL: %v", err)
	}
	empty := t.TempDir()
	if _, err := Append(ctx, empty, ok, AppendOptions{}); err == nil || !strings.Contains(err.Error(), "no manifest") {
		t.Errorf("append to a directory without a dataset: %v", err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("append to a non-dataset left %v", entries)
	}
	// A real dataset takes any finite value.
	real := newDataset(t, cells([]int{2, 2, 2}, [4]float64{0, 0, 0, 1.5}), WriteOptions{})
	if _, err := Append(ctx, real, cells(shape, [4]float64{1, 1, 1, -0.25}), AppendOptions{}); err != nil {
		t.Errorf("append of a negative value to real data: %v", err)
	}
}

// crashed is the panic the crash hook raises.
type crashed string

// TestAppendCrash stops an append at every step where a crash leaves files behind: each time the
// previous version must read as before, and a retried append must succeed.
func TestAppendCrash(t *testing.T) {
	ctx := context.Background()
	steps := []string{
		"create data/v000003-shard-00000.parquet",
		"shards",
		"rename versions/v000003.json",
		"rename manifest.json",
	}
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			// Version 1 has no copy under versions/ until the first append writes one; crash the
			// first append there too.
			dir := newDataset(t, cube(), WriteOptions{})
			v1 := snap(t, dir)
			if !crashAppend(t, dir, "rename versions/v000001.json", cells([]int{1, 1, 1}, [4]float64{5, 4, 3, 1})) {
				t.Fatal("no crash before keeping version 1")
			}
			v1.unchanged(t, dir)
			crash = func(string) {}
			if _, err := Append(ctx, dir, cells([]int{1, 1, 1}, [4]float64{5, 4, 3, 1}), AppendOptions{}); err != nil {
				t.Fatalf("retry after a crash: %v", err)
			}
			v2 := snap(t, dir)
			add := cells([]int{1, 1, 1}, [4]float64{6, 0, 0, 3}, [4]float64{0, 0, 0, 4})
			if !crashAppend(t, dir, step, add) {
				t.Fatalf("no crash at %q", step)
			}
			v2.unchanged(t, dir)
			if _, err := ReadVersion(ctx, dir, 3, ReadOptions{}); err == nil {
				t.Error("version 3 readable after a crash before it was published")
			}
			crash = func(string) {}
			m, err := Append(ctx, dir, add, AppendOptions{Replace: true})
			if err != nil {
				t.Fatalf("retry after a crash: %v", err)
			}
			if got := snap(t, dir); m.Version != 3 || len(got.cells) != len(v2.cells)+1 || got.cells[[3]int32{0, 0, 0}] != 4 {
				t.Errorf("after the retry: version %d, %d cells", m.Version, len(got.cells))
			}
			for v, s := range map[int]snapshot{1: v1, 2: v2} {
				if d, err := ReadVersion(ctx, dir, v, ReadOptions{}); err != nil || d.Manifest.Checksum() != s.checksum {
					t.Errorf("version %d after the retry: %v", v, err)
				}
			}
		})
	}
}

// crashAppend runs an append that crashes at step, and reports whether it got there.
func crashAppend(t *testing.T, dir, step string, add *tensor.Sparse) (hit bool) {
	t.Helper()
	crash = func(s string) {
		if s == step {
			panic(crashed(s))
		}
	}
	defer func() {
		crash = func(string) {}
		if p := recover(); p != nil {
			if _, ok := p.(crashed); !ok {
				panic(p)
			}
			hit = true
		}
	}()
	if _, err := Append(context.Background(), dir, add, AppendOptions{Replace: true}); err != nil {
		t.Fatalf("append before the crash: %v", err)
	}
	return false
}

func TestAppendLocked(t *testing.T) {
	dir := newDataset(t, cube(), WriteOptions{})
	before := snap(t, dir)
	// Another process's append holds the lock.
	f, err := os.OpenFile(filepath.Join(dir, ".append.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	add := cells([]int{1, 1, 1}, [4]float64{5, 4, 3, 1})
	if _, err := Append(context.Background(), dir, add, AppendOptions{}); err == nil || !strings.Contains(err.Error(), "another append to this dataset is in progress") {
		t.Errorf("append while locked: %v", err)
	}
	before.unchanged(t, dir)
	f.Close()
	if _, err := Append(context.Background(), dir, add, AppendOptions{}); err != nil {
		t.Errorf("append once the lock is released: %v", err)
	}
}

func TestAppendBlocked(t *testing.T) {
	ctx := context.Background()
	x := cube()
	dir := newDataset(t, x, WriteOptions{Blocks: 2})
	before := snap(t, dir)
	// Inside the shape: still blocked, with the new cells in blocks [1 1 1] and [0 0 0].
	add := cells([]int{1, 1, 1}, [4]float64{5, 4, 3, 1}, [4]float64{0, 1, 1, 2})
	m, err := Append(ctx, dir, add, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, ok := m.Grid()
	if !ok || g.B != 2 {
		t.Fatalf("blocks after an append inside the shape: %+v", m.Blocks)
	}
	var newBlocks [][]int
	for _, sh := range m.Shards {
		if strings.HasPrefix(sh.Path, "data/v000002-") {
			newBlocks = append(newBlocks, sh.Block)
		}
	}
	if !slices.EqualFunc(newBlocks, [][]int{{0, 0, 0}, {1, 1, 1}}, slices.Equal) {
		t.Errorf("new shards in blocks %v, want [0 0 0] and [1 1 1]", newBlocks)
	}
	want := cellMap(add)
	for c, v := range before.cells {
		want[c] = v
	}
	got := map[[3]int32]float64{}
	block := make([]int, 3)
	for l := range g.NumBlocks() {
		d, err := ReadBlock(ctx, dir, g.Coords(l, block), ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for c, v := range cellMap(d.Tensor) {
			got[c] = v
		}
	}
	if !mapsEqual(got, want) {
		t.Errorf("the blocks hold %d cells, want the %d of the union", len(got), len(want))
	}

	// Growing the shape drops the blocks; version 2 stays blocked.
	m, err = Append(ctx, dir, cells([]int{1, 1, 1}, [4]float64{6, 0, 0, 1}), AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Blocks != nil || slices.ContainsFunc(m.Shards, func(sh Shard) bool { return sh.Block != nil }) {
		t.Errorf("grown dataset still blocked: %+v", m)
	}
	if d, err := Read(ctx, dir, ReadOptions{}); err != nil || d.Tensor.NNZ() != len(want)+1 {
		t.Errorf("read of the grown dataset: %v", err)
	}
	if _, err := ReadBlock(ctx, dir, []int{0, 0, 0}, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "not blocked") {
		t.Errorf("ReadBlock of the grown dataset: %v", err)
	}
	if m2, err := ReadManifestVersion(ctx, dir, 2); err != nil || m2.Blocks == nil {
		t.Errorf("version 2 lost its blocks: %v", err)
	}
}

// BenchmarkAppend appends 10⁶ cells, a tenth of them already stored, to a dataset of 10⁶ cells.
func BenchmarkAppend(b *testing.B) {
	const n = 1 << 20
	shape := []int{1 << 10, 1 << 10, 1 << 10}
	x, _ := tensor.New(shape, n)
	add, _ := tensor.New(shape, n)
	for c := range n {
		i, j, k := c%1021, (c/1021)%1019, c%997
		x.Append([]int{i, j, k}, 1)
		if c%10 == 0 {
			add.Append([]int{i, j, k}, 2)
		} else {
			add.Append([]int{i, j, 1000 + c%7}, 2)
		}
	}
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "ds")
		if _, err := Write(ctx, dir, x, WriteOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := Append(ctx, dir, add, AppendOptions{Replace: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestProvenance checks that the provenance a writer records is read back, survives an
// append, and stays out of the manifests of datasets that have none.
func TestProvenance(t *testing.T) {
	ctx := context.Background()
	want := map[string]string{"from": "wav", "window": "512"}
	dir := newDataset(t, cube(), WriteOptions{Provenance: want})
	if _, err := Append(ctx, dir, cells([]int{6, 5, 4}, [4]float64{5, 4, 3, 2}), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int{1, 2} {
		d, err := ReadVersion(ctx, dir, v, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(d.Manifest.Provenance, want) {
			t.Errorf("version %d provenance %v, want %v", v, d.Manifest.Provenance, want)
		}
	}
	plain, err := os.ReadFile(filepath.Join(newDataset(t, cube(), WriteOptions{}), ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain, []byte("provenance")) {
		t.Errorf("a dataset without provenance has a provenance field:\n%s", plain)
	}
}
