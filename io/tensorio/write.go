package tensorio

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/parquet-go/parquet-go"

	"github.com/stirank/stirank/tensor"
)

// DefaultShardRows bounds the rows of a shard when WriteOptions.ShardRows is zero. A shard of
// 2²⁰ cells is a few MB compressed: small enough that readers of remote datasets, which buffer one
// shard at a time, stay lean, and large enough that per-file costs do not dominate.
const DefaultShardRows = 1 << 20

// rowGroupRows bounds the Parquet row groups inside a shard, so that engines reading by row
// group (Spark, DuckDB, pyarrow) can split and stream a shard.
const rowGroupRows = 1 << 17

// WriteOptions configures Write.
type WriteOptions struct {
	// Kind is the value kind recorded in the manifest. Empty means Count when every value is a
	// non-negative integer and Real otherwise.
	Kind ValueKind
	// Blocks, when positive, cuts every mode into Blocks ranges (tensor.NewGrid) and writes the
	// cells of every block to shards of their own, so a reader can load one block alone.
	Blocks int
	// ShardRows bounds the rows of a shard; zero means DefaultShardRows.
	ShardRows int
	// Attachments are extra files written into the dataset directory in the same atomic step,
	// such as the true parameters of a generated dataset: slash-separated relative names to
	// contents. They are not part of the manifest.
	Attachments map[string][]byte
	// Provenance is recorded in the manifest (Manifest.Provenance).
	Provenance map[string]string
}

// Write validates t and writes it as a dataset in dir: zstd-compressed Parquet shards under
// dir/data and dir/manifest.json. dir is a local path or a Beam filesystem URL.
//
// The write is atomic: a local dataset is assembled in a temporary directory beside dir and
// renamed into place, and on other filesystems the manifest, which readers need, is written last.
// On failure nothing is left behind. dir must not exist yet or be an empty directory.
func Write(ctx context.Context, dir string, t *tensor.Sparse, opts WriteOptions) (*Manifest, error) {
	kind, err := checkWrite(t, opts)
	if err != nil {
		return nil, err
	}
	segments, blocks, err := layout(t, opts)
	if err != nil {
		return nil, err
	}
	var s sink
	if IsURL(dir) {
		s, err = newBeamSink(ctx, dir)
	} else {
		s, err = newLocalSink(dir)
	}
	if err != nil {
		return nil, err
	}
	m := &Manifest{
		Format:        FormatName,
		FormatVersion: FormatVersion,
		Version:       1,
		Order:         t.Order(),
		Shape:         slices.Clone(t.Shape),
		Kind:          kind,
		Cells:         int64(t.NNZ()),
		ZerosStored:   hasZero(t),
		Blocks:        blocks,
		Provenance:    maps.Clone(opts.Provenance),
		Shards:        []Shard{},
	}
	if err := writeAll(ctx, s, m, segments, opts); err != nil {
		s.abort()
		return nil, err
	}
	return m, nil
}

// checkWrite validates the options and the tensor, and returns the value kind to record.
func checkWrite(t *tensor.Sparse, opts WriteOptions) (ValueKind, error) {
	if opts.Blocks < 0 {
		return "", fmt.Errorf("tensorio: block count %d is negative", opts.Blocks)
	}
	if opts.ShardRows < 0 {
		return "", fmt.Errorf("tensorio: shard rows %d is negative", opts.ShardRows)
	}
	for name := range opts.Attachments {
		if !fs.ValidPath(name) || name == "." || name == ManifestName || name == "data" || strings.HasPrefix(name, "data/") {
			return "", fmt.Errorf("tensorio: attachment name %q must be a relative path outside data/ other than %s", name, ManifestName)
		}
	}
	if t.Order() < 1 || t.Order() > tensor.MaxOrder {
		return "", fmt.Errorf("tensorio: order %d not supported (1 to %d)", t.Order(), tensor.MaxOrder)
	}
	if t.NNZ() == 0 {
		return "", fmt.Errorf("tensorio: %w: a dataset needs at least one", tensor.ErrEmpty)
	}
	kind := opts.Kind
	if kind == "" {
		kind = inferKind(t)
	} else if _, err := ParseValueKind(string(kind)); err != nil {
		return "", fmt.Errorf("tensorio: %v", err)
	}
	switch {
	case kind == Complex && !t.Complex():
		return "", fmt.Errorf("tensorio: a complex dataset needs the imaginary parts of its values")
	case kind != Complex && t.Complex():
		return "", fmt.Errorf("tensorio: a %s dataset cannot hold imaginary parts", kind)
	}
	if err := validate(t, kind == Count); err != nil {
		return "", fmt.Errorf("tensorio: %s tensor: %w", kind, err)
	}
	return kind, nil
}

// validate is t.Validate with the duplicate check done by sorting, which needs 8 bytes per cell
// where Validate's hash set needs several times that: at 10⁸ cells, the difference is gigabytes.
func validate(t *tensor.Sparse, counts bool) error {
	if len(t.Coords) != len(t.Shape) {
		return fmt.Errorf("%d coordinate columns for order %d", len(t.Coords), len(t.Shape))
	}
	for m := range t.Coords {
		if len(t.Coords[m]) != len(t.Values) {
			return fmt.Errorf("mode %d has %d coordinates for %d values", m, len(t.Coords[m]), len(t.Values))
		}
	}
	if t.Imag != nil && len(t.Imag) != len(t.Values) {
		return fmt.Errorf("%d imaginary parts for %d values", len(t.Imag), len(t.Values))
	}
	bad := func(n int, format string, args ...any) error {
		return &tensor.CellError{Cell: n, Index: t.Index(n, nil), Problem: fmt.Sprintf(format, args...)}
	}
	for n, v := range t.Values {
		for m, extent := range t.Shape {
			if c := t.Coords[m][n]; c < 0 || int(c) >= extent {
				return bad(n, "mode-%d index %d outside [0, %d)", m, c, extent)
			}
		}
		if problem := valueProblem(v, counts, true); problem != "" {
			return bad(n, "%s", problem)
		}
		if t.Imag != nil {
			if problem := imagProblem(v, t.Imag[n], true); problem != "" {
				return bad(n, "%s", problem)
			}
		}
	}
	if first, second, ok := duplicate(t); ok {
		return bad(second, "stored twice (first as cell %d)", first)
	}
	return nil
}

// segment is a run of cells written to one shard.
type segment struct {
	t      *tensor.Sparse
	lo, hi int
	block  []int
}

// layout cuts the cells into shards of at most ShardRows, by block when asked.
func layout(t *tensor.Sparse, opts WriteOptions) ([]segment, *Blocks, error) {
	rows := opts.ShardRows
	if rows == 0 {
		rows = DefaultShardRows
	}
	split := func(segs []segment, t *tensor.Sparse, lo, hi int, block []int) []segment {
		for ; lo < hi; lo += rows {
			segs = append(segs, segment{t: t, lo: lo, hi: min(lo+rows, hi), block: block})
		}
		return segs
	}
	if opts.Blocks == 0 {
		return split(nil, t, 0, t.NNZ(), nil), nil, nil
	}
	bt, err := tensor.Block(t, opts.Blocks)
	if err != nil {
		return nil, nil, fmt.Errorf("tensorio: %v", err)
	}
	var segs []segment
	for l := range bt.Grid.NumBlocks() {
		lo, hi := bt.BlockCells(l)
		segs = split(segs, bt.Sparse, lo, hi, bt.Grid.Coords(l, make([]int, t.Order())))
	}
	return segs, &Blocks{B: bt.Grid.B, Bounds: bt.Grid.Bounds}, nil
}

// writeAll writes the shards, the attachments and, last, the manifest.
func writeAll(ctx context.Context, s sink, m *Manifest, segments []segment, opts WriteOptions) error {
	shardName := func(n int) string { return fmt.Sprintf("data/shard-%05d.parquet", n) }
	if err := writeShards(ctx, s, m, segments, shardName); err != nil {
		return err
	}
	for name, data := range opts.Attachments {
		if err := writeFile(s, name, data); err != nil {
			return err
		}
	}
	return s.commit(m.encode())
}

// writeShards writes every segment as a shard named shardName(n), n counting from 0, and adds the
// shards to the manifest.
func writeShards(ctx context.Context, s sink, m *Manifest, segments []segment, shardName func(n int) string) error {
	for n, seg := range segments {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := shardName(n)
		w, err := s.create(name)
		if err != nil {
			return err
		}
		d := &digestWriter{w: w, h: sha256.New()}
		if err := writeShard(d, seg); err != nil {
			w.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		m.Shards = append(m.Shards, Shard{
			Path:   name,
			Rows:   int64(seg.hi - seg.lo),
			Bytes:  d.n,
			SHA256: hex.EncodeToString(d.h.Sum(nil)),
			Block:  seg.block,
		})
	}
	return nil
}

func writeFile(s sink, name string, data []byte) error {
	w, err := s.create(name)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// schemaOf is the Parquet schema of an order-n dataset: required int32 columns i, j, k (as many
// as the order) and a required double column value, and for complex values a required double
// column imag.
func schemaOf(order int, hasImag bool) *parquet.Schema {
	g := parquet.Group{valueColumn: parquet.Leaf(parquet.DoubleType)}
	if hasImag {
		g[imagColumn] = parquet.Leaf(parquet.DoubleType)
	}
	for _, name := range indexColumns[:order] {
		// Coordinates come sorted or nearly so; delta encoding shrinks them several-fold, and every
		// major Parquet reader decodes it.
		g[name] = parquet.Encoded(parquet.Int(32), &parquet.DeltaBinaryPacked)
	}
	// A Group orders its fields by name: i, imag, j, k, value.
	return parquet.NewSchema("tensor", g)
}

// indexColumns names the coordinate columns of modes 0, 1, 2.
var indexColumns = [tensor.MaxOrder]string{"i", "j", "k"}

// The value columns: the value (the real part of a complex value) and the imaginary part.
const (
	valueColumn = "value"
	imagColumn  = "imag"
)

// writeBatch is the number of rows handed to the Parquet writer at a time.
const writeBatch = 4096

// writeShard writes the cells of seg as one Parquet file.
func writeShard(w io.Writer, seg segment) error {
	order, hasImag := seg.t.Order(), seg.t.Complex()
	schema := schemaOf(order, hasImag)
	// leaf returns the position of a column in a row, which the schema's name order decides.
	leaf := func(name string) int {
		l, _ := schema.Lookup(name)
		return l.ColumnIndex
	}
	var modes [tensor.MaxOrder]int
	for m := range order {
		modes[m] = leaf(indexColumns[m])
	}
	value, imag := leaf(valueColumn), -1
	width := order + 1
	if hasImag {
		imag = leaf(imagColumn)
		width++
	}
	pw := parquet.NewWriter(w, schema,
		parquet.Compression(&parquet.Zstd),
		parquet.MaxRowsPerRowGroup(rowGroupRows))
	values := make([]parquet.Value, writeBatch*width)
	rows := make([]parquet.Row, writeBatch)
	for r := range rows {
		rows[r] = values[r*width : (r+1)*width]
	}
	for lo := seg.lo; lo < seg.hi; lo += writeBatch {
		n := min(writeBatch, seg.hi-lo)
		for r := range n {
			row := rows[r]
			for m := range order {
				row[modes[m]] = parquet.Int32Value(seg.t.Coords[m][lo+r]).Level(0, 0, modes[m])
			}
			row[value] = parquet.DoubleValue(seg.t.Values[lo+r]).Level(0, 0, value)
			if hasImag {
				row[imag] = parquet.DoubleValue(seg.t.Imag[lo+r]).Level(0, 0, imag)
			}
		}
		if _, err := pw.WriteRows(rows[:n]); err != nil {
			return err
		}
	}
	return pw.Close()
}

// digestWriter hashes and counts what it writes.
type digestWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (d *digestWriter) Write(p []byte) (int, error) {
	n, err := d.w.Write(p)
	d.h.Write(p[:n])
	d.n += int64(n)
	return n, err
}

// A sink receives the files of a dataset being written.
type sink interface {
	// create opens a file of the dataset by its slash-separated relative name.
	create(name string) (io.WriteCloser, error)
	// commit writes the manifest and makes the dataset visible.
	commit(manifest []byte) error
	// abort removes whatever was written.
	abort()
}

// isURL reports whether dir names a Beam filesystem other than the local one.
// IsURL reports whether path names a Beam filesystem URL (gs://…, s3://…) rather than a local path.
func IsURL(path string) bool { return strings.Contains(path, "://") }

// localSink assembles the dataset in a hidden directory beside dir and renames it into place.
type localSink struct {
	dir, staging string
}

func newLocalSink(dir string) (*localSink, error) {
	dir = filepath.Clean(dir)
	switch entries, err := os.ReadDir(dir); {
	case err == nil && len(entries) > 0:
		return nil, fmt.Errorf("%s: output directory exists and is not empty", dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: output path exists and is not a usable directory: %w", dir, err)
	}
	parent := filepath.Dir(dir)
	if info, err := os.Stat(parent); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("%s: parent directory %s does not exist", dir, parent)
	}
	staging, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, err
	}
	// MkdirTemp makes the directory private; the dataset should be as readable as any output.
	if err := os.Chmod(staging, 0o755); err != nil {
		os.RemoveAll(staging)
		return nil, err
	}
	return &localSink{dir: dir, staging: staging}, nil
}

func (s *localSink) create(name string) (io.WriteCloser, error) { return createFile(s.staging, name) }

// createFile creates the file at slash-separated name under dir, and its directories, replacing
// any file there; the file reaches stable storage when closed.
func createFile(dir, name string) (io.WriteCloser, error) {
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(p)
	if err != nil {
		return nil, err
	}
	return syncFile{f}, nil
}

func (s *localSink) commit(manifest []byte) error {
	if err := writeFile(s, ManifestName, manifest); err != nil {
		return err
	}
	// os.Rename does not replace directories, not even empty ones; Remove fails unless dir is
	// empty or absent, so it cannot lose anything.
	if err := os.Remove(s.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", s.dir, err)
	}
	if err := os.Rename(s.staging, s.dir); err != nil {
		return fmt.Errorf("%s: %w", s.dir, err)
	}
	return nil
}

func (s *localSink) abort() { os.RemoveAll(s.staging) }

// syncFile flushes a file to stable storage before closing it, so that the rename that publishes
// the dataset never exposes files whose content a crash could lose.
type syncFile struct{ *os.File }

func (f syncFile) Close() error {
	if err := f.Sync(); err != nil {
		f.File.Close()
		return err
	}
	return f.File.Close()
}

// beamSink writes through a Beam filesystem. Object stores have no directories to rename, but
// they publish a file atomically when it is closed; the manifest goes last, so a reader sees
// either the whole dataset or none.
type beamSink struct {
	ctx     context.Context
	fs      filesystem.Interface
	dir     string
	written []string
}

func newBeamSink(ctx context.Context, dir string) (*beamSink, error) {
	fsys, err := filesystem.New(ctx, dir)
	if err != nil {
		return nil, err
	}
	dir = strings.TrimSuffix(dir, "/")
	if _, err := fsys.Size(ctx, dir+"/"+ManifestName); err == nil {
		fsys.Close()
		return nil, fmt.Errorf("%s: a dataset already exists there", dir)
	}
	return &beamSink{ctx: ctx, fs: fsys, dir: dir}, nil
}

func (s *beamSink) create(name string) (io.WriteCloser, error) {
	p := s.dir + "/" + name
	w, err := s.fs.OpenWrite(s.ctx, p)
	if err != nil {
		return nil, err
	}
	s.written = append(s.written, p)
	return w, nil
}

func (s *beamSink) commit(manifest []byte) error {
	if err := writeFile(s, ManifestName, manifest); err != nil {
		return err
	}
	return s.fs.Close()
}

func (s *beamSink) abort() {
	defer s.fs.Close()
	if rm, ok := s.fs.(filesystem.Remover); ok {
		for _, p := range s.written {
			rm.Remove(s.ctx, p)
		}
	}
}
