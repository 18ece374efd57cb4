package tensorio_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/io/tensorio/tensoriotest"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// sample returns a generated tensor of the given order: Gaussian observations for order 1,
// Poisson counts for orders 2 and 3.
func sample(t testing.TB, order int, seed uint64) *tensor.Sparse {
	t.Helper()
	if order == 1 {
		x, _ := models.GenerateGauss(rng.New(seed), 200, 3, models.ICASSPGauss)
		s, err := tensor.New([]int{len(x)}, len(x))
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range x {
			s.Append([]int{i}, v)
		}
		return s
	}
	shape := []int{12, 10, 8}[:order]
	rates := []float64{1, 1, 1}[:order]
	s, _, err := models.GeneratePoisson(rng.New(seed), shape, 2, rates)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// equalCells fails unless got holds exactly the cells of want, in the same order.
func equalCells(t *testing.T, got, want *tensor.Sparse) {
	t.Helper()
	if !slices.Equal(got.Shape, want.Shape) {
		t.Fatalf("shape %v, want %v", got.Shape, want.Shape)
	}
	if got.NNZ() != want.NNZ() {
		t.Fatalf("%d cells, want %d", got.NNZ(), want.NNZ())
	}
	for m := range want.Coords {
		if !slices.Equal(got.Coords[m], want.Coords[m]) {
			t.Fatalf("mode-%d coordinates differ", m)
		}
	}
	if got.Complex() != want.Complex() {
		t.Fatalf("complex %v, want %v", got.Complex(), want.Complex())
	}
	for n := range want.Values {
		// Compare bits: the round trip must be exact.
		if math.Float64bits(got.Values[n]) != math.Float64bits(want.Values[n]) {
			t.Fatalf("cell %d: value %v, want %v", n, got.Values[n], want.Values[n])
		}
		if want.Complex() && math.Float64bits(got.Imag[n]) != math.Float64bits(want.Imag[n]) {
			t.Fatalf("cell %d: imaginary part %v, want %v", n, got.Imag[n], want.Imag[n])
		}
	}
}

// TestComplexRoundTrip writes complex tensors, blocked or not, in one shard or many, and reads
// back every part of every value bit for bit; a reader that does not ask for complex values, or
// asks for counts, is refused.
func TestComplexRoundTrip(t *testing.T) {
	ctx := context.Background()
	for order := 2; order <= tensor.MaxOrder; order++ {
		for _, blocks := range []int{0, 3} {
			for _, shardRows := range []int{0, 17} {
				t.Run(fmt.Sprintf("order%d/blocks%d/rows%d", order, blocks, shardRows), func(t *testing.T) {
					x := sample(t, order, uint64(10*order+blocks))
					r := rng.New(uint64(order), uint64(blocks))
					// Awkward bits: a negative third, a subnormal, the largest finite, a real
					// value and a purely imaginary one, then Gaussian parts.
					special := [][2]float64{{-1.0 / 3, 2}, {5e-324, -1e308}, {math.MaxFloat64, 0}, {0, -7.25}}
					x.Imag = make([]float64, x.NNZ())
					for n := range x.Values {
						if n < len(special) {
							x.Values[n], x.Imag[n] = special[n][0], special[n][1]
						} else {
							x.Values[n], x.Imag[n] = r.NormFloat64(), r.NormFloat64()*1e-3
						}
					}
					dir := filepath.Join(t.TempDir(), "ds")
					m, err := tensorio.Write(ctx, dir, x, tensorio.WriteOptions{Blocks: blocks, ShardRows: shardRows})
					if err != nil {
						t.Fatal(err)
					}
					if m.Kind != tensorio.Complex || m.ZerosStored {
						t.Fatalf("manifest kind %s, zeros stored %v; want complex, false", m.Kind, m.ZerosStored)
					}
					want, _ := written(t, x, blocks)
					d, err := tensorio.Read(ctx, dir, tensorio.ReadOptions{Complex: true})
					if err != nil {
						t.Fatal(err)
					}
					equalCells(t, d.Tensor, want)
					for _, opts := range []tensorio.ReadOptions{{}, {Counts: true, Complex: true}} {
						if _, err := tensorio.Read(ctx, dir, opts); err == nil || !strings.Contains(err.Error(), "manifest.json: value_kind complex") {
							t.Errorf("read with %+v: %v", opts, err)
						}
					}
				})
			}
		}
	}
	// The kind must agree with the tensor.
	x := sample(t, 2, 1)
	if _, err := tensorio.Write(ctx, filepath.Join(t.TempDir(), "ds"), x, tensorio.WriteOptions{Kind: tensorio.Complex}); err == nil || !strings.Contains(err.Error(), "needs the imaginary parts") {
		t.Errorf("complex kind of a real tensor: %v", err)
	}
	x.Imag = make([]float64, x.NNZ())
	if _, err := tensorio.Write(ctx, filepath.Join(t.TempDir(), "ds"), x, tensorio.WriteOptions{Kind: tensorio.Real}); err == nil || !strings.Contains(err.Error(), "real dataset cannot hold imaginary parts") {
		t.Errorf("real kind of a complex tensor: %v", err)
	}
}

// TestWriterUnchanged writes count and real tensors, blocked or not, in shards of 17 rows: the
// manifests, which hold every shard's SHA-256, must be those the writer made before complex
// values existed, so that a count or real dataset's bytes have not changed. (An upgrade of
// parquet-go may change them for its own reasons; then check that old datasets still read.)
func TestWriterUnchanged(t *testing.T) {
	for _, c := range []struct {
		order, blocks int
		checksum      string
	}{
		{1, 0, "dafefdf6a2ad337b154f22630d5bc11b9bcfde56722a12bf0c946847ad198ac1"},
		{1, 3, "84121a42030942c887b725b43f3b0810cdad195d616b8cc060f49f877051ab6c"},
		{2, 0, "8a7e2c8e6147d719a6076a71c158f8551c224ec30ce97ed3fddf92b064c6c96e"},
		{2, 3, "43ffbb646b5dc677a836bb3af83f1b824c96dea2b8010591da55cddccc6303bc"},
		{3, 0, "0863f022d48b227425659b7502c994b66c3bb2424a799decc04b4a21575839af"},
		{3, 3, "4142bab86b10add46bbb116396548fd52821781ab021cb502ea409e9536051dd"},
	} {
		x := sample(t, c.order, uint64(10*c.order+c.blocks))
		m, err := tensorio.Write(context.Background(), filepath.Join(t.TempDir(), "ds"), x, tensorio.WriteOptions{Blocks: c.blocks, ShardRows: 17})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Checksum(); got != c.checksum {
			t.Errorf("order %d, %d blocks: manifest checksum %s, want %s", c.order, c.blocks, got, c.checksum)
		}
	}
}

// written returns the cells of x in the order a write cut into blocks stores them (x itself
// when blocks is 0), and the block grid.
func written(t *testing.T, x *tensor.Sparse, blocks int) (*tensor.Sparse, tensor.Grid) {
	t.Helper()
	if blocks == 0 {
		return x, tensor.Grid{}
	}
	bt, err := tensor.Block(x, blocks)
	if err != nil {
		t.Fatal(err)
	}
	return bt.Sparse, bt.Grid
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	for order := 1; order <= tensor.MaxOrder; order++ {
		for _, blocks := range []int{0, 1, 3} {
			for _, shardRows := range []int{0, 17} {
				t.Run(fmt.Sprintf("order%d/blocks%d/rows%d", order, blocks, shardRows), func(t *testing.T) {
					x := sample(t, order, uint64(10*order+blocks))
					dir := filepath.Join(t.TempDir(), "ds")
					m, err := tensorio.Write(ctx, dir, x, tensorio.WriteOptions{Blocks: blocks, ShardRows: shardRows})
					if err != nil {
						t.Fatal(err)
					}
					want, grid := written(t, x, blocks)
					if blocks > 0 {
						g, ok := m.Grid()
						if !ok || !slices.EqualFunc(g.Bounds, grid.Bounds, slices.Equal) {
							t.Fatalf("manifest grid %v, want %v", g, grid)
						}
					}
					wantKind := tensorio.Count
					if order == 1 {
						wantKind = tensorio.Real
					}
					if m.Kind != wantKind || m.Cells != int64(x.NNZ()) || m.Order != order {
						t.Fatalf("manifest kind %s, cells %d, order %d; want %s, %d, %d", m.Kind, m.Cells, m.Order, wantKind, x.NNZ(), order)
					}
					if shardRows > 0 {
						for _, sh := range m.Shards {
							if sh.Rows > int64(shardRows) {
								t.Fatalf("shard %s has %d rows, more than %d", sh.Path, sh.Rows, shardRows)
							}
						}
					}
					d, err := tensorio.Read(ctx, dir, tensorio.ReadOptions{})
					if err != nil {
						t.Fatal(err)
					}
					equalCells(t, d.Tensor, want)
					if d.Manifest.Checksum() != m.Checksum() {
						t.Errorf("checksum of the manifest read %s, written %s", d.Manifest.Checksum(), m.Checksum())
					}
					fsd, err := tensorio.ReadFS(os.DirFS(dir), ".", tensorio.ReadOptions{})
					if err != nil {
						t.Fatal(err)
					}
					equalCells(t, fsd.Tensor, want)
				})
			}
		}
	}
}

func TestReadBlock(t *testing.T) {
	ctx := context.Background()
	for order := 1; order <= tensor.MaxOrder; order++ {
		x := sample(t, order, 7)
		dir := filepath.Join(t.TempDir(), "ds")
		if _, err := tensorio.Write(ctx, dir, x, tensorio.WriteOptions{Blocks: 3, ShardRows: 20}); err != nil {
			t.Fatal(err)
		}
		bt, err := tensor.Block(x, 3)
		if err != nil {
			t.Fatal(err)
		}
		block := make([]int, order)
		for l := range bt.Grid.NumBlocks() {
			bt.Grid.Coords(l, block)
			d, err := tensorio.ReadBlock(ctx, dir, block, tensorio.ReadOptions{})
			if err != nil {
				t.Fatalf("block %v: %v", block, err)
			}
			lo, hi := bt.BlockCells(l)
			want := &tensor.Sparse{Shape: x.Shape, Coords: make([][]int32, order), Values: bt.Values[lo:hi]}
			for m := range want.Coords {
				want.Coords[m] = bt.Coords[m][lo:hi]
			}
			equalCells(t, d.Tensor, want)
		}
	}
}

func TestReadBlockErrors(t *testing.T) {
	ctx := context.Background()
	x := sample(t, 2, 1)
	flat := filepath.Join(t.TempDir(), "flat")
	if _, err := tensorio.Write(ctx, flat, x, tensorio.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tensorio.ReadBlock(ctx, flat, []int{0, 0}, tensorio.ReadOptions{}); err == nil || !strings.Contains(err.Error(), "not blocked") {
		t.Errorf("ReadBlock of an unblocked dataset: %v", err)
	}
	blocked := filepath.Join(t.TempDir(), "blocked")
	if _, err := tensorio.Write(ctx, blocked, x, tensorio.WriteOptions{Blocks: 2}); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]int{{0}, {0, 2}, {-1, 0}} {
		if _, err := tensorio.ReadBlock(ctx, blocked, b, tensorio.ReadOptions{}); err == nil || !strings.Contains(err.Error(), "is not a block") {
			t.Errorf("ReadBlock(%v): %v", b, err)
		}
	}
	// A shard that holds a cell outside the block the manifest files it under.
	m, err := tensoriotest.ReadManifest(blocked)
	if err != nil {
		t.Fatal(err)
	}
	m.Shards[0].Block = []int{1, 1}
	if err := tensoriotest.WriteManifest(blocked, m); err != nil {
		t.Fatal(err)
	}
	_, err = tensorio.ReadBlock(ctx, blocked, []int{1, 1}, tensorio.ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "shard-00000.parquet row 0: mode-0 index 0 outside block [1 1]'s range [6, 12)") {
		t.Errorf("ReadBlock of a misfiled shard: %v", err)
	}
}

// TestBeamFilesystem writes and reads a dataset through a Beam filesystem other than the local
// one, whose files have no random access, so the reader buffers them.
func TestBeamFilesystem(t *testing.T) {
	ctx := context.Background()
	x := sample(t, 3, 3)
	// memfs is one store for the whole process: keep repeated runs (-count) apart.
	url := fmt.Sprintf("memfs://%s-%d/ds", t.Name(), time.Now().UnixNano())
	m, err := tensorio.Write(ctx, url, x, tensorio.WriteOptions{Blocks: 2, ShardRows: 50})
	if err != nil {
		t.Fatal(err)
	}
	d, err := tensorio.Read(ctx, url, tensorio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bt, _ := tensor.Block(x, 2)
	equalCells(t, d.Tensor, bt.Sparse)
	if d.Manifest.Checksum() != m.Checksum() {
		t.Error("manifest checksum changed in the round trip")
	}
	if _, err := tensorio.Write(ctx, url, x, tensorio.WriteOptions{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second write to %s: %v", url, err)
	}
	// A corrupted shard is caught on the buffered path as well.
	memfs.Write(url+"/data/shard-00000.parquet", []byte("PAR1 not really PAR1"))
	if _, err := tensorio.Read(ctx, url, tensorio.ReadOptions{}); err == nil || !strings.Contains(err.Error(), "data/shard-00000.parquet: file has 20 bytes") {
		t.Errorf("read of a corrupted memfs dataset: %v", err)
	}
}

// TestWriteAtomic checks that a failed write leaves nothing behind and an existing dataset alone.
func TestWriteAtomic(t *testing.T) {
	ctx := context.Background()
	x := sample(t, 2, 1)
	parent := t.TempDir()
	dir := filepath.Join(parent, "ds")

	bad := &tensor.Sparse{Shape: []int{3, 3}, Coords: [][]int32{{0, 1}, {0, 5}}, Values: []float64{1, 2}}
	if _, err := tensorio.Write(ctx, dir, bad, tensorio.WriteOptions{}); err == nil || !strings.Contains(err.Error(), "mode-1 index 5 outside [0, 3)") {
		t.Errorf("write of a bad tensor: %v", err)
	}
	if _, err := tensorio.Write(ctx, dir, &tensor.Sparse{Shape: []int{3}, Coords: [][]int32{nil}}, tensorio.WriteOptions{}); !errors.Is(err, tensor.ErrEmpty) {
		t.Errorf("write of an empty tensor: %v", err)
	}
	if _, err := tensorio.Write(ctx, dir, x, tensorio.WriteOptions{Kind: tensorio.Count, Blocks: 100}); err == nil {
		t.Error("write with more blocks than indices succeeded")
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := tensorio.Write(canceled, dir, x, tensorio.WriteOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("write with a canceled context: %v", err)
	}
	if _, err := tensorio.Write(ctx, filepath.Join(parent, "no", "such", "parent"), x, tensorio.WriteOptions{}); err == nil {
		t.Error("write under a missing parent succeeded")
	}
	if entries, _ := os.ReadDir(parent); len(entries) > 0 {
		t.Fatalf("failed writes left %v behind", entries)
	}

	// An empty directory is fine; a non-empty one is refused and left as it was.
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := tensorio.Write(ctx, dir, x, tensorio.WriteOptions{Attachments: map[string][]byte{"notes/truth.json": []byte("{}")}})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes", "truth.json")); err != nil || string(b) != "{}" {
		t.Errorf("attachment: %q, %v", b, err)
	}
	if _, err := tensorio.Write(ctx, dir, sample(t, 2, 2), tensorio.WriteOptions{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("write over a dataset: %v", err)
	}
	d, err := tensorio.Read(ctx, dir, tensorio.ReadOptions{})
	if err != nil || d.Manifest.Checksum() != m.Checksum() {
		t.Errorf("the first dataset changed: %v", err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("parent holds %v, want the dataset only", entries)
	}
}

func TestChecksum(t *testing.T) {
	ctx := context.Background()
	x := sample(t, 3, 5)
	m1, err := tensorio.Write(ctx, filepath.Join(t.TempDir(), "a"), x, tensorio.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := tensorio.Write(ctx, filepath.Join(t.TempDir(), "b"), x, tensorio.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m1.Checksum() != m2.Checksum() {
		t.Errorf("the same tensor written twice has checksums %s and %s", m1.Checksum(), m2.Checksum())
	}
	x.Values[0]++
	m3, err := tensorio.Write(ctx, filepath.Join(t.TempDir(), "c"), x, tensorio.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m3.Checksum() == m1.Checksum() {
		t.Error("changing a value did not change the checksum")
	}
}

// TestForeignParquet reads shards written the way other tools write them: optional columns,
// 64-bit coordinates, dictionary encoding, columns in another order, several shards.
func TestForeignParquet(t *testing.T) {
	type cell struct {
		Value *float64 `parquet:"value,optional"`
		J     *int64   `parquet:"j,optional,dict"`
		I     int64    `parquet:"i,dict"`
	}
	cells := tensoriotest.Matrix()
	rows := make([]cell, len(cells))
	for n, c := range cells {
		j := int64(c.J)
		rows[n] = cell{Value: &c.Value, J: &j, I: int64(c.I)}
	}
	dir := t.TempDir()
	a, err := tensoriotest.WriteShard(dir, "part-a.parquet", rows[:50])
	if err != nil {
		t.Fatal(err)
	}
	b, err := tensoriotest.WriteShard(dir, "sub/part-b.parquet", rows[50:])
	if err != nil {
		t.Fatal(err)
	}
	if err := tensoriotest.WriteManifest(dir, tensoriotest.MatrixManifest(tensorio.Count, a, b)); err != nil {
		t.Fatal(err)
	}
	d, err := tensorio.Read(context.Background(), dir, tensorio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tensor.New([]int{30, 20}, len(cells))
	for _, c := range cells {
		want.Append([]int{int(c.I), int(c.J)}, c.Value)
	}
	equalCells(t, d.Tensor, want)
}

func TestReadCountsOption(t *testing.T) {
	ctx := context.Background()
	x := sample(t, 1, 1)
	dir := filepath.Join(t.TempDir(), "ds")
	if _, err := tensorio.Write(ctx, dir, x, tensorio.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tensorio.Read(ctx, dir, tensorio.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := tensorio.Read(ctx, dir, tensorio.ReadOptions{Counts: true})
	var e *tensorio.Error
	if !errors.As(err, &e) || e.Row != 0 || !strings.Contains(e.Error(), "shard-00000.parquet row 0: count") {
		t.Errorf("real data read as counts: %v", err)
	}
}

// TestCorpus reads every bad input of the corpus and checks the message names the file, the
// row or line, and the problem.
func TestCorpus(t *testing.T) {
	cases, err := tensoriotest.Corpus(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 15 {
		t.Fatalf("corpus has %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			var err error
			if c.Dataset != "" {
				_, err = tensorio.Read(context.Background(), c.Dataset, c.Read)
			} else {
				var f *os.File
				if f, err = os.Open(c.Text); err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				_, _, err = tensorio.ReadText(f, c.Text, c.Format, c.Options)
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.As(err, new(*tensorio.Error)) {
				t.Errorf("error %v is not a *tensorio.Error", err)
			}
			for _, w := range c.Want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
