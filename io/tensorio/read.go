package tensorio

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	// Local paths are the default filesystem; gs:// and s3:// work once a program links them in.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	"github.com/parquet-go/parquet-go"

	"github.com/stirank/stirank/internal/memlimit"
	"github.com/stirank/stirank/tensor"
)

// ReadOptions configures Read, ReadBlock and ReadFS.
type ReadOptions struct {
	// Counts requires every value to be a non-negative integer, as the Poisson models do, even
	// when the manifest says the values are real. Count datasets are always checked as counts.
	Counts bool
	// Complex says the caller reads the imaginary parts of a complex dataset (tensor.Sparse.Imag).
	// Without it a complex dataset is refused, so that a reader of real values never takes the
	// real parts alone for the data.
	Complex bool
}

// Dataset is a dataset read into memory.
type Dataset struct {
	Manifest *Manifest
	// Tensor holds the cells read, in shard order, with the dataset's full shape.
	Tensor *tensor.Sparse
	// origins maps the tensor's cells back to the shards they were read from.
	origins origins
}

// Origin returns the shard file and 0-based row that cell pos of the tensor was read from, so
// that checks made after reading, such as Append's, can point at the cell's source. It needs a
// dataset read by this package.
func (d *Dataset) Origin(pos int) (file string, row int64) {
	s, row := d.origins.at(pos)
	return d.origins.files[s], row
}

// ReadManifest reads and validates the manifest of the dataset at url, a local directory or a
// Beam filesystem URL, without reading its shards.
func ReadManifest(ctx context.Context, url string) (*Manifest, error) {
	st, err := openBeamStore(ctx, url)
	if err != nil {
		return nil, err
	}
	defer st.close()
	return manifestOf(st, 0)
}

// ReadManifestVersion reads and validates the manifest of version v of the dataset at url, so
// that results computed on an earlier state of a growing dataset (Append) can be checked or
// reproduced. Earlier versions are read from the copies Append keeps under versions/; the
// current version is read from manifest.json.
func ReadManifestVersion(ctx context.Context, url string, v int) (*Manifest, error) {
	if v < 1 {
		return nil, fmt.Errorf("tensorio: version %d must be at least 1", v)
	}
	st, err := openBeamStore(ctx, url)
	if err != nil {
		return nil, err
	}
	defer st.close()
	return manifestOf(st, v)
}

// Read reads and validates the dataset at url, a local directory or a Beam filesystem URL.
func Read(ctx context.Context, url string, opts ReadOptions) (*Dataset, error) {
	return readURL(ctx, url, 0, opts)
}

// ReadVersion reads and validates version v of the dataset at url as it was when v was current
// (see ReadManifestVersion): appends after v do not change what it reads.
func ReadVersion(ctx context.Context, url string, v int, opts ReadOptions) (*Dataset, error) {
	if v < 1 {
		return nil, fmt.Errorf("tensorio: version %d must be at least 1", v)
	}
	return readURL(ctx, url, v, opts)
}

// readURL reads version v (0: the current one) of the dataset at url.
func readURL(ctx context.Context, url string, v int, opts ReadOptions) (*Dataset, error) {
	st, err := openBeamStore(ctx, url)
	if err != nil {
		return nil, err
	}
	defer st.close()
	return read(ctx, st, v, opts, nil)
}

// ReadBlock reads the cells of one block of a blocked dataset, reading only that block's shards.
// block holds one range index per mode (see tensor.Grid); the cells keep their coordinates in the
// whole tensor.
func ReadBlock(ctx context.Context, url string, block []int, opts ReadOptions) (*Dataset, error) {
	if len(block) == 0 {
		return nil, errors.New("tensorio: ReadBlock needs a block")
	}
	st, err := openBeamStore(ctx, url)
	if err != nil {
		return nil, err
	}
	defer st.close()
	return read(ctx, st, 0, opts, block)
}

// ReadFS reads and validates the dataset in directory dir of fsys, such as embedded test data.
func ReadFS(fsys fs.FS, dir string, opts ReadOptions) (*Dataset, error) {
	return read(context.Background(), fsStore{fsys, dir}, 0, opts, nil)
}

// store is the directory a dataset is read from.
type store interface {
	// name is how errors refer to the file at slash-separated path rel of the dataset.
	name(rel string) string
	open(rel string) (io.ReadCloser, error)
	close()
}

type beamStore struct {
	ctx context.Context
	fs  filesystem.Interface
	dir string
}

func openBeamStore(ctx context.Context, url string) (*beamStore, error) {
	fsys, err := filesystem.New(ctx, url)
	if err != nil {
		return nil, err
	}
	return &beamStore{ctx: ctx, fs: fsys, dir: url}, nil
}

func (s *beamStore) name(rel string) string {
	if IsURL(s.dir) {
		return strings.TrimSuffix(s.dir, "/") + "/" + rel
	}
	return filepath.Join(s.dir, filepath.FromSlash(rel))
}

func (s *beamStore) open(rel string) (io.ReadCloser, error) { return s.fs.OpenRead(s.ctx, s.name(rel)) }
func (s *beamStore) close()                                 { s.fs.Close() }

type fsStore struct {
	fsys fs.FS
	dir  string
}

func (s fsStore) name(rel string) string                 { return path.Join(s.dir, rel) }
func (s fsStore) open(rel string) (io.ReadCloser, error) { return s.fsys.Open(s.name(rel)) }
func (fsStore) close()                                   {}

// maxManifestBytes bounds the manifest read into memory; a manifest lists shards, not cells.
const maxManifestBytes = 64 << 20

// manifestOf reads the manifest of version v of the dataset, or of the current version when v
// is 0.
func manifestOf(st store, v int) (*Manifest, error) {
	m, err := readManifest(st, ManifestName)
	if err != nil || v == 0 || v == m.Version {
		return m, err
	}
	if v > m.Version {
		return nil, fileError(st.name(ManifestName), "no version %d: the dataset is at version %d", v, m.Version)
	}
	rel := versionPath(v)
	old, err := readManifest(st, rel)
	if err != nil {
		return nil, err
	}
	if old.Version != v {
		return nil, fileError(st.name(rel), "holds version %d, want %d", old.Version, v)
	}
	return old, nil
}

// readManifest reads and validates the manifest file at rel: manifest.json, or the copy of an
// earlier version's.
func readManifest(st store, rel string) (*Manifest, error) {
	file := st.name(rel)
	r, err := st.open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		if rel != ManifestName {
			return nil, fileError(file, "missing: this version of the dataset was not kept")
		}
		return nil, fileError(file, "no manifest: not a stirank dataset, or its write did not finish")
	}
	if err != nil {
		return nil, fileError(file, "cannot open the manifest: %v", err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxManifestBytes+1))
	if err != nil {
		return nil, fileError(file, "%v", err)
	}
	if len(data) > maxManifestBytes {
		return nil, fileError(file, "larger than %d bytes", maxManifestBytes)
	}
	return parseManifest(data, file)
}

// read reads the whole of version v of the dataset (0: the current one), or one block of it when
// block is not nil.
func read(ctx context.Context, st store, v int, opts ReadOptions, block []int) (*Dataset, error) {
	m, err := manifestOf(st, v)
	if err != nil {
		return nil, err
	}
	switch {
	case m.Kind == Complex && opts.Counts:
		return nil, fileError(st.name(ManifestName), "value_kind complex: counts are wanted, and counts are real")
	case m.Kind == Complex && !opts.Complex:
		return nil, fileError(st.name(ManifestName), "value_kind complex: this reader takes real values only (stirank dictionary and inspect read complex data)")
	}
	shards := m.Shards
	lo, hi := make([]int64, m.Order), make([]int64, m.Order)
	for mode, n := range m.Shape {
		hi[mode] = int64(n)
	}
	if block != nil {
		g, ok := m.Grid()
		if !ok {
			return nil, fileError(st.name(ManifestName), "dataset is not blocked; cannot read block %v", block)
		}
		if len(block) != m.Order || slices.ContainsFunc(block, func(b int) bool { return b < 0 || b >= g.B }) {
			return nil, fileError(st.name(ManifestName), "block %v is not a block of the %d-way grid of order %d", block, g.B, m.Order)
		}
		shards = slices.DeleteFunc(slices.Clone(shards), func(sh Shard) bool { return !slices.Equal(sh.Block, block) })
		for mode, b := range block {
			lo[mode], hi[mode] = int64(g.Bounds[mode][b]), int64(g.Bounds[mode][b+1])
		}
	}
	var cells int64
	for _, sh := range shards {
		cells += sh.Rows
	}
	if err := checkMemory(st.name(ManifestName), cells, m.Order, m.Kind == Complex); err != nil {
		return nil, err
	}
	// The rows are a claim until each shard's pages back them: the tensor grows shard by shard
	// (decoder.grow), from a start the claim cannot make large.
	start := min(cells, maxPrealloc/cellBytes(m.Order, m.Kind == Complex))
	t := &tensor.Sparse{Shape: slices.Clone(m.Shape), Coords: make([][]int32, m.Order), Values: make([]float64, 0, start)}
	for mode := range t.Coords {
		t.Coords[mode] = make([]int32, 0, start)
	}
	if m.Kind == Complex {
		t.Imag = make([]float64, 0, start)
	}
	d := &decoder{
		t:           t,
		counts:      opts.Counts || m.Kind == Count,
		zerosStored: m.ZerosStored,
		lo:          lo,
		hi:          hi,
		block:       block,
	}
	pos := 0
	for _, sh := range shards {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		file := st.name(sh.Path)
		if err := d.readShard(st, sh, file, pos); err != nil {
			return nil, err
		}
		d.starts = append(d.starts, pos)
		d.files = append(d.files, file)
		pos += int(sh.Rows)
	}
	ds := &Dataset{Manifest: m, Tensor: t, origins: d.origins}
	if first, second, ok := duplicate(t); ok {
		f1, r1 := ds.Origin(first)
		f2, r2 := ds.Origin(second)
		return nil, rowError(f2, r2, "cell %v stored twice (first at %s row %d)", t.Index(second, nil), f1, r1)
	}
	return ds, nil
}

// decoder fills a tensor from Parquet shards, validating every value on the way.
type decoder struct {
	t           *tensor.Sparse
	counts      bool
	zerosStored bool
	// lo[m], hi[m] bound mode-m indices: the shape, or the block's ranges when reading a block.
	lo, hi []int64
	block  []int
	origins
	// scratch buffers for dictionary-encoded pages.
	values  []parquet.Value
	indexes []int64
	doubles []float64
}

// origins records where the cells of a tensor read from shards came from.
type origins struct {
	// starts[s] is the tensor position of the first row of the s-th shard read, files[s] its name.
	starts []int
	files  []string
}

// at returns the shard (its index among the shards read) and the row a tensor position was read
// from.
func (o *origins) at(pos int) (s int, row int64) {
	// The last shard starting at or before pos: empty shards share their start with the next.
	s = sort.Search(len(o.starts), func(s int) bool { return o.starts[s] > pos }) - 1
	return s, int64(pos - o.starts[s])
}

// readShard checks a shard against the manifest and decodes it into positions pos… of the tensor.
func (d *decoder) readShard(st store, sh Shard, file string, pos int) (err error) {
	r, err := st.open(sh.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fileError(file, "shard listed in the manifest is missing")
		}
		return fileError(file, "cannot open: %v", err)
	}
	defer r.Close()
	ra, size, err := verify(r, sh, file)
	if err != nil {
		return err
	}
	if err := checkFooter(ra, size, file); err != nil {
		return err
	}
	// A corrupt file can drive a Parquet decoder into states it does not expect; report that as
	// what it is rather than crash.
	defer func() {
		if p := recover(); p != nil {
			err = fileError(file, "corrupt Parquet file: %v", p)
		}
	}()
	f, err := parquet.OpenFile(ra, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fileError(file, "not a valid Parquet file (truncated or corrupt): %v", err)
	}
	leaves, kinds, err := d.columns(f, file)
	if err != nil {
		return err
	}
	if f.NumRows() != sh.Rows {
		return fileError(file, "has %d rows, the manifest says %d", f.NumRows(), sh.Rows)
	}
	if err := (&pageChecker{ra: ra, size: size, file: file}).checkChunks(f.Metadata()); err != nil {
		return err
	}
	d.grow(pos + int(sh.Rows))
	var row int64
	for _, rg := range f.RowGroups() {
		n := rg.NumRows()
		if n < 0 || row+n > sh.Rows {
			return fileError(file, "corrupt Parquet file: row groups hold more than %d rows", sh.Rows)
		}
		chunks := rg.ColumnChunks()
		for c, leaf := range leaves {
			if err := d.readChunk(chunks[leaf], kinds[c], c, file, row, n, pos); err != nil {
				return err
			}
		}
		row += n
	}
	if row != sh.Rows {
		return fileError(file, "row groups hold %d rows, the manifest says %d", row, sh.Rows)
	}
	return nil
}

// maxPrealloc bounds the buffers allocated up front from a claim of the manifest: a shard read
// into memory, the tensor before its shards are read.
const maxPrealloc = 64 << 20

// cellBytes is the memory a cell of an order-n tensor takes: its coordinates and its value, or
// both parts of a complex one.
func cellBytes(order int, hasImag bool) int64 {
	if hasImag {
		return 4*int64(order) + 16
	}
	return 4*int64(order) + 8
}

// checkMemory refuses a dataset whose cells would not fit in memory, before any is read. Reading
// holds the tensor, briefly two copies of it while it grows shard by shard, and then the
// duplicate check's sorted keys (8 bytes a cell, 16 beyond 2⁶⁴ cells).
func checkMemory(file string, cells int64, order int, hasImag bool) error {
	need := float64(cells) * float64(2*cellBytes(order, hasImag)+16)
	if err := memlimit.Check(fmt.Sprintf("%d stored cells", cells), need); err != nil {
		return fileError(file, "%v", err)
	}
	return nil
}

// grow extends the tensor to n cells, once a shard's pages have shown that it holds them.
func (d *decoder) grow(n int) {
	t := d.t
	for m := range t.Coords {
		t.Coords[m] = slices.Grow(t.Coords[m], n-len(t.Coords[m]))[:n]
	}
	t.Values = slices.Grow(t.Values, n-len(t.Values))[:n]
	if t.Imag != nil {
		t.Imag = slices.Grow(t.Imag, n-len(t.Imag))[:n]
	}
}

// sizedReaderAt is a file that supports random access, as local and embedded files do.
type sizedReaderAt interface {
	io.ReaderAt
	Stat() (fs.FileInfo, error)
}

// verify checks the size and SHA-256 of an open shard against the manifest and returns it as an
// io.ReaderAt for the Parquet decoder. Files with random access are hashed by streaming them
// once; others (object stores) are read into memory once, hashing on the way, since Parquet
// needs random access. Shards are bounded in size, so that buffer is too.
func verify(r io.Reader, sh Shard, file string) (io.ReaderAt, int64, error) {
	h := sha256.New()
	var ra io.ReaderAt
	var size int64
	if f, ok := r.(sizedReaderAt); ok {
		info, err := f.Stat()
		if err != nil {
			return nil, 0, fileError(file, "%v", err)
		}
		if size = info.Size(); size != sh.Bytes {
			return nil, 0, fileError(file, "file has %d bytes, the manifest says %d (truncated or replaced)", size, sh.Bytes)
		}
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, size)); err != nil {
			return nil, 0, fileError(file, "%v", err)
		}
		ra = f
	} else {
		// Size the buffer from the manifest, within reason: the manifest is not trusted yet.
		buf := bytes.NewBuffer(make([]byte, 0, min(sh.Bytes, maxPrealloc)))
		n, err := io.Copy(io.MultiWriter(buf, h), io.LimitReader(r, sh.Bytes+1))
		if err != nil {
			return nil, 0, fileError(file, "%v", err)
		}
		if size = n; size != sh.Bytes {
			return nil, 0, fileError(file, "file has %s bytes, the manifest says %d (truncated or replaced)", sizeString(n, sh.Bytes), sh.Bytes)
		}
		ra = bytes.NewReader(buf.Bytes())
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != sh.SHA256 {
		return nil, 0, fileError(file, "sha256 %s does not match the manifest's %s (file changed or corrupt)", sum, sh.SHA256)
	}
	return ra, size, nil
}

// sizeString prints the size of a file read up to one byte past the expected size.
func sizeString(n, want int64) string {
	if n > want {
		return fmt.Sprintf("more than %d", want)
	}
	return fmt.Sprint(n)
}

// columns checks the shard's schema: one flat column per mode named i, j, k, of type INT32 or
// INT64, a DOUBLE column named value and, for complex values, a DOUBLE column named imag, in any
// order. Columns may be optional (pandas and Spark write them so) but a null is an error. It
// returns the leaf index and kind of the columns in the order i, j, k, value, imag.
func (d *decoder) columns(f *parquet.File, file string) ([]int, []parquet.Kind, error) {
	order := d.t.Order()
	want := append(slices.Clone(indexColumns[:order]), valueColumn)
	if d.t.Complex() {
		want = append(want, imagColumn)
	}
	leaves := make([]int, len(want))
	kinds := make([]parquet.Kind, len(want))
	seen := make([]bool, len(want))
	for _, col := range f.Root().Columns() {
		name := col.Name()
		c := slices.Index(want, name)
		switch {
		case c < 0:
			return nil, nil, fileError(file, "unexpected column %q: an order-%d %sdataset has columns %s", name, order, d.complexWord(), strings.Join(want, ", "))
		case !col.Leaf():
			return nil, nil, fileError(file, "column %q is a group, want a flat column", name)
		case col.Repeated():
			return nil, nil, fileError(file, "column %q is repeated, want one value per row", name)
		}
		kind := col.Type().Kind()
		if c >= order && kind != parquet.Double {
			return nil, nil, fileError(file, "column %q has type %v, want DOUBLE", name, kind)
		}
		if c < order && kind != parquet.Int32 && kind != parquet.Int64 {
			return nil, nil, fileError(file, "column %q has type %v, want INT32 or INT64", name, kind)
		}
		leaves[c], kinds[c], seen[c] = col.Index(), kind, true
	}
	if c := slices.Index(seen, false); c >= 0 {
		return nil, nil, fileError(file, "missing column %q: an order-%d %sdataset has columns %s", want[c], order, d.complexWord(), strings.Join(want, ", "))
	}
	return leaves, kinds, nil
}

// complexWord is "complex " when the values read are complex, for messages about columns.
func (d *decoder) complexWord() string {
	if d.t.Complex() {
		return "complex "
	}
	return ""
}

// readChunk decodes the n values of column c (a mode, or the values when c is the order) of the
// row group starting at row first of the shard.
func (d *decoder) readChunk(chunk parquet.ColumnChunk, kind parquet.Kind, c int, file string, first, n int64, pos int) error {
	pages := chunk.Pages()
	defer pages.Close()
	row := first
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			break
		}
		if err != nil {
			return rowError(file, row, "corrupt Parquet page in column %q: %v", columnName(c, d.t.Order()), err)
		}
		err = d.readPage(p, kind, c, file, row, first+n, pos)
		row += p.NumRows()
		parquet.Release(p)
		if err != nil {
			return err
		}
	}
	if row != first+n {
		return fileError(file, "column %q has %d values in the row group of rows [%d, %d)", columnName(c, d.t.Order()), row-first, first, first+n)
	}
	return nil
}

// columnName names column c: a mode's index below the order, then the value and the imaginary
// part.
func columnName(c, order int) string {
	switch c - order {
	case 0:
		return valueColumn
	case 1:
		return imagColumn
	}
	return indexColumns[c]
}

// readPage decodes one page whose first value belongs to row; end is the end of its row group.
func (d *decoder) readPage(p parquet.Page, kind parquet.Kind, c int, file string, row, end int64, pos int) error {
	n := p.NumRows()
	name := columnName(c, d.t.Order())
	if p.NumValues() != n || row+n > end {
		return rowError(file, row, "corrupt Parquet page in column %q: %d values for %d rows, %d rows left in the row group", name, p.NumValues(), n, end-row)
	}
	if p.NumNulls() > 0 {
		for k, level := range p.DefinitionLevels() {
			if level == 0 {
				return rowError(file, row+int64(k), "%s is null", name)
			}
		}
	}
	at := pos + int(row)
	if p.Dictionary() == nil {
		data := p.Data()
		switch kind {
		case parquet.Int32:
			return putIndexes(d, c, file, row, at, int(n), data.Int32())
		case parquet.Int64:
			return putIndexes(d, c, file, row, at, int(n), data.Int64())
		}
		if len(data.Double()) != int(n) {
			return d.shortPage(name, file, row, len(data.Double()), n)
		}
		return d.putValues(c, file, row, at, data.Double())
	}
	// Dictionary-encoded pages (pyarrow's default) hold indexes into the dictionary; go through
	// the generic value reader.
	if cap(d.values) < int(n) {
		d.values = make([]parquet.Value, n)
	}
	vals := d.values[:n]
	if k, err := p.Values().ReadValues(vals); int64(k) != n && err != nil {
		return rowError(file, row+int64(k), "corrupt Parquet page in column %q: %v", name, err)
	}
	if kind == parquet.Double {
		d.doubles = d.doubles[:0]
		for _, v := range vals {
			d.doubles = append(d.doubles, v.Double())
		}
		return d.putValues(c, file, row, at, d.doubles)
	}
	d.indexes = d.indexes[:0]
	for _, v := range vals {
		if kind == parquet.Int32 {
			d.indexes = append(d.indexes, int64(v.Int32()))
		} else {
			d.indexes = append(d.indexes, v.Int64())
		}
	}
	return putIndexes(d, c, file, row, at, int(n), d.indexes)
}

func (d *decoder) shortPage(name, file string, row int64, got int, want int64) error {
	return rowError(file, row, "corrupt Parquet page in column %q: %d values decoded for %d rows", name, got, want)
}

// putIndexes checks and stores mode-m coordinates read from rows row… of file at positions at….
func putIndexes[T int32 | int64](d *decoder, m int, file string, row int64, at, n int, idx []T) error {
	if len(idx) != n {
		return d.shortPage(indexColumns[m], file, row, len(idx), int64(n))
	}
	lo, hi := d.lo[m], d.hi[m]
	dst := d.t.Coords[m][at : at+len(idx)]
	for k, v := range idx {
		if i := int64(v); i < lo || i >= hi {
			return d.indexError(m, i, file, row+int64(k))
		}
		dst[k] = int32(v)
	}
	return nil
}

func (d *decoder) indexError(m int, i int64, file string, row int64) error {
	if n := d.t.Shape[m]; i < 0 || i >= int64(n) {
		return rowError(file, row, "mode-%d index %d outside [0, %d)", m, i, n)
	}
	return rowError(file, row, "mode-%d index %d outside block %v's range [%d, %d)", m, i, d.block, d.lo[m], d.hi[m])
}

// putValues checks and stores the values (c is the order) or imaginary parts (c is the order
// plus one) read from rows row… of file at positions at…. A shard's columns are read in the
// order i, j, k, value, imag, so the real parts of a complex value's cells are in place when
// its imaginary parts come.
func (d *decoder) putValues(c int, file string, row int64, at int, vals []float64) error {
	if c > d.t.Order() {
		re, dst := d.t.Values[at:at+len(vals)], d.t.Imag[at:at+len(vals)]
		for k, v := range vals {
			if problem := imagProblem(re[k], v, d.zerosStored); problem != "" {
				return rowError(file, row+int64(k), "%s", problem)
			}
			dst[k] = v
		}
		return nil
	}
	dst := d.t.Values[at : at+len(vals)]
	// A complex value of real part 0 is zero only if its imaginary part is: imagProblem decides.
	zerosStored := d.zerosStored || d.t.Complex()
	for k, v := range vals {
		if problem := valueProblem(v, d.counts, zerosStored); problem != "" {
			return rowError(file, row+int64(k), "%s", problem)
		}
		dst[k] = v
	}
	return nil
}
