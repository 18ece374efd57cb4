package tensorio

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/stirank/stirank/tensor"

	"github.com/stirank/stirank/internal/atomicfile"
)

// AppendOptions configures Append.
type AppendOptions struct {
	// Replace lets added cells overwrite cells already stored instead of refusing them. The shards
	// that hold replaced cells are rewritten without them as new files; the old files stay, since
	// earlier versions name them.
	Replace bool
	// Source names the input in error messages, such as the file the cells were read from.
	Source string
	// Origin, when not nil, says where cell pos of the input was read from, so that errors point
	// at it: a file and its 1-based line with row -1 (a text file, see ReadTextLines), or a file
	// and its 0-based row with line 0 (a shard, see Dataset.Origin). Nil names Source alone.
	Origin func(pos int) (file string, row int64, line int)
}

// ErrAlreadyStored is wrapped by Append's error when an added cell is already stored and
// AppendOptions.Replace is not set, so that callers can say how to overwrite it.
var ErrAlreadyStored = errors.New("already stored")

// lockName is the file Append locks, so that two appends cannot both build on one version and
// the second publish a version without the first one's cells.
const lockName = ".append.lock"

// crash is called at the points of an append where a crash would leave the most behind. Tests
// make it panic there to check that the previous version survives and that a retry succeeds.
var crash = func(step string) {}

// Append adds the cells of add to the dataset in dir as a new version (Version+1) made of new
// shards, keeping every earlier version readable (ReadVersion), so that a dataset can grow
// without invalidating what was computed on its earlier states.
//
// add must have the dataset's order and values valid for its kind. Its cells may lie outside the
// dataset's shape: the new shape is, per mode, the largest of the old extent, add's extent and
// the largest index plus one. A cell the dataset already stores is an error wrapping
// ErrAlreadyStored unless opts.Replace is set. A blocked dataset stays blocked while its shape
// does not change; once the shape grows, the grid's bounds no longer fit the old shards, and the
// new version is not blocked.
//
// dir must be a local or mounted directory: the new version is published by renaming
// manifest.json atomically, after the new shards and the version's copy under versions/ are on
// stable storage. A crash leaves the previous version intact, and at most files that no
// manifest names, which readers ignore and a retry overwrites. Concurrent appends to a dataset
// are refused by an advisory lock on dir/.append.lock.
func Append(ctx context.Context, dir string, add *tensor.Sparse, opts AppendOptions) (*Manifest, error) {
	if IsURL(dir) {
		return nil, fmt.Errorf("%s: appends need a local or mounted directory: they publish a version by renaming %s atomically, which object stores cannot do", dir, ManifestName)
	}
	st, err := openBeamStore(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer st.close()
	// Refuse a directory that is not a dataset before leaving a lock file in it.
	if _, err := manifestOf(st, 0); err != nil {
		return nil, err
	}
	lock, err := lockDataset(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	// Read under the lock: the new version builds on the current one.
	old, err := read(ctx, st, 0, ReadOptions{}, nil)
	if err != nil {
		return nil, err
	}
	x, err := grown(old.Manifest, add, opts)
	if err != nil {
		return nil, err
	}
	found := stored(old.Tensor, x)
	if len(found) > 0 && !opts.Replace {
		c := found[0]
		s, row := old.origins.at(c.old)
		return nil, opts.errorAt(c.add, "cell %v is %w (%s row %d)", x.Index(c.add, nil), ErrAlreadyStored, old.Manifest.Shards[s].Path, row)
	}
	m, segments, err := nextVersion(old, x, found)
	if err != nil {
		return nil, err
	}
	names := shardNames(st, old.Manifest, len(segments))
	s := &dirSink{dir: dir, prev: old.Manifest}
	if err := writeShards(ctx, s, m, segments, func(n int) string { return names[n] }); err != nil {
		s.abort()
		return nil, err
	}
	if err := s.commit(m.encode()); err != nil {
		s.abort()
		return nil, err
	}
	return m, nil
}

// lockDataset takes the advisory lock that keeps appends to dir apart. The kernel releases it
// when the file is closed or the process dies, so a crashed append never blocks the next one.
func lockDataset(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot lock the dataset for the append: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: another append to this dataset is in progress (it holds %s); retry once it has finished", dir, lockName)
		}
		return nil, fmt.Errorf("%s: cannot lock %s: %w", dir, lockName, err)
	}
	return f, nil
}

// source names the input in errors.
func (o AppendOptions) source() string {
	if o.Source == "" {
		return "appended cells"
	}
	return o.Source
}

// errorAt reports a problem with cell pos of the input, naming where Origin says it came from.
func (o AppendOptions) errorAt(pos int, format string, args ...any) error {
	e := &Error{File: o.source(), Row: -1, Err: fmt.Errorf(format, args...)}
	if o.Origin != nil {
		e.File, e.Row, e.Line = o.Origin(pos)
	}
	return e
}

// grown checks the cells to add against the dataset's manifest m and returns them as a tensor
// of the grown shape.
func grown(m *Manifest, add *tensor.Sparse, opts AppendOptions) (*tensor.Sparse, error) {
	switch {
	case len(add.Shape) != len(add.Coords):
		return nil, fileError(opts.source(), "%d coordinate columns for order %d", len(add.Coords), len(add.Shape))
	case len(add.Shape) != m.Order:
		return nil, fileError(opts.source(), "the cells are %d-way, the dataset is %d-way", len(add.Shape), m.Order)
	case add.NNZ() == 0:
		return nil, fileError(opts.source(), "no cells to append")
	case add.Complex():
		// Append reads the dataset as real values, so a complex dataset never gets here.
		return nil, fileError(opts.source(), "the cells are complex, the dataset is %s: appends take real values", m.Kind)
	}
	shape := slices.Clone(m.Shape)
	for mode := range shape {
		shape[mode] = max(shape[mode], add.Shape[mode])
		for _, i := range add.Coords[mode] {
			shape[mode] = max(shape[mode], int(i)+1)
		}
		if shape[mode] > math.MaxInt32 {
			return nil, fileError(opts.source(), "mode %d would grow to extent %d, more than %d", mode, shape[mode], math.MaxInt32)
		}
	}
	x := &tensor.Sparse{Shape: shape, Coords: add.Coords, Values: add.Values}
	if err := validate(x, m.Kind == Count); err != nil {
		var ce *tensor.CellError
		if errors.As(err, &ce) {
			return nil, opts.errorAt(ce.Cell, "cell %v: %s", ce.Index, ce.Problem)
		}
		return nil, fileError(opts.source(), "%v", err)
	}
	return x, nil
}

// match is an added cell that the dataset already stores: its position in each.
type match struct{ add, old int }

// stored finds the cells of add that old stores too, in the order of add. It sorts the cells of
// add and looks every cell of old up among them: O((n+k) log k) time for n stored and k added
// cells, and memory for k positions only.
func stored(old, add *tensor.Sparse) []match {
	perm := make([]int, add.NNZ())
	for c := range perm {
		perm[c] = c
	}
	slices.SortFunc(perm, func(a, b int) int { return compareCells(add, a, add, b) })
	var found []match
	for p := range old.Values {
		if c, ok := slices.BinarySearchFunc(perm, p, func(c, p int) int { return compareCells(add, c, old, p) }); ok {
			found = append(found, match{add: perm[c], old: p})
		}
	}
	slices.SortFunc(found, func(a, b match) int { return cmp.Compare(a.add, b.add) })
	return found
}

// compareCells orders cell a of x and cell b of y by their coordinates, mode 0 first.
func compareCells(x *tensor.Sparse, a int, y *tensor.Sparse, b int) int {
	for m := range x.Coords {
		if c := cmp.Compare(x.Coords[m][a], y.Coords[m][b]); c != 0 {
			return c
		}
	}
	return 0
}

// nextVersion returns the manifest of the version after old's that adds the cells of x, less
// the cells of old that x replaces (found), and the segments still to write as its new shards:
// the old shards that lose cells, rewritten without them, then the cells of x. The manifest lists
// the untouched old shards so far.
func nextVersion(old *Dataset, x *tensor.Sparse, found []match) (*Manifest, []segment, error) {
	pm := old.Manifest
	m := &Manifest{
		Format:        FormatName,
		FormatVersion: FormatVersion,
		Version:       pm.Version + 1,
		Order:         pm.Order,
		Shape:         x.Shape,
		Kind:          pm.Kind,
		Cells:         pm.Cells - int64(len(found)) + int64(x.NNZ()),
		ZerosStored:   pm.ZerosStored || hasZero(x),
		Provenance:    pm.Provenance,
		Shards:        []Shard{},
	}
	var opts WriteOptions
	if pm.Blocks != nil && slices.Equal(x.Shape, pm.Shape) {
		m.Blocks, opts.Blocks = pm.Blocks, pm.Blocks.B
	}
	gone := make([]int, len(found))
	for n, f := range found {
		gone[n] = f.old
	}
	slices.Sort(gone)
	t := old.Tensor
	kept := &tensor.Sparse{Shape: x.Shape, Coords: make([][]int32, m.Order)}
	var segments []segment
	for s, sh := range pm.Shards {
		if m.Blocks == nil {
			sh.Block = nil
		}
		lo, hi := old.origins.starts[s], old.origins.starts[s]+int(sh.Rows)
		if len(gone) == 0 || gone[0] >= hi {
			m.Shards = append(m.Shards, sh)
			continue
		}
		first := kept.NNZ()
		for p := lo; p < hi; p++ {
			if len(gone) > 0 && gone[0] == p {
				gone = gone[1:]
				continue
			}
			for mode := range kept.Coords {
				kept.Coords[mode] = append(kept.Coords[mode], t.Coords[mode][p])
			}
			kept.Values = append(kept.Values, t.Values[p])
		}
		if kept.NNZ() > first {
			segments = append(segments, segment{t: kept, lo: first, hi: kept.NNZ(), block: sh.Block})
		}
	}
	added, _, err := layout(x, opts)
	if err != nil {
		return nil, nil, err
	}
	return m, append(segments, added...), nil
}

// shardNames returns n names for the new shards of the version after m's. They are never names
// that a version of the dataset uses, so no shard a version needs is overwritten; files that no
// version names, left by a failed append, may be.
func shardNames(st store, m *Manifest, n int) []string {
	taken := make(map[string]bool)
	for _, sh := range m.Shards {
		taken[sh.Path] = true
	}
	for v := 1; v < m.Version; v++ {
		// A version whose manifest cannot be read any more has no shards to protect.
		if old, err := readManifest(st, versionPath(v)); err == nil {
			for _, sh := range old.Shards {
				taken[sh.Path] = true
			}
		}
	}
	names := make([]string, 0, n)
	for k := 0; len(names) < n; k++ {
		if name := fmt.Sprintf("data/v%06d-shard-%05d.parquet", m.Version+1, k); !taken[name] {
			names = append(names, name)
		}
	}
	return names
}

// dirSink writes the files of a new version straight into the dataset directory: readers see
// none of them until the manifest, renamed into place last, names them.
type dirSink struct {
	dir string
	// prev is the manifest of the version the append builds on.
	prev    *Manifest
	created []string
	// published is set once manifest.json names the new files.
	published bool
}

func (s *dirSink) create(name string) (io.WriteCloser, error) {
	w, err := createFile(s.dir, name)
	if err != nil {
		return nil, err
	}
	s.created = append(s.created, filepath.Join(s.dir, filepath.FromSlash(name)))
	crash("create " + name)
	return w, nil
}

// commit makes the new shards durable, keeps the manifests of the previous version (when no
// copy exists yet, as for a dataset that import wrote) and the new one under versions/, and
// publishes the new one as manifest.json.
func (s *dirSink) commit(manifest []byte) error {
	if err := atomicfile.SyncDir(filepath.Join(s.dir, "data")); err != nil {
		return err
	}
	crash("shards")
	prev := versionPath(s.prev.Version)
	switch _, err := os.Stat(filepath.Join(s.dir, filepath.FromSlash(prev))); {
	case errors.Is(err, fs.ErrNotExist):
		if err := replaceFile(s.dir, prev, s.prev.encode()); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	if err := replaceFile(s.dir, versionPath(s.prev.Version+1), manifest); err != nil {
		return err
	}
	// The dataset directory holds the entries of data/ and versions/ when this append made them.
	for _, dir := range []string{filepath.Join(s.dir, "versions"), s.dir} {
		if err := atomicfile.SyncDir(dir); err != nil {
			return err
		}
	}
	if err := replaceFile(s.dir, ManifestName, manifest); err != nil {
		return err
	}
	s.published = true
	return atomicfile.SyncDir(s.dir)
}

// abort removes the new shards unless a manifest already names them.
func (s *dirSink) abort() {
	if s.published {
		return
	}
	for _, p := range s.created {
		os.Remove(p)
	}
}

// replaceFile writes data to the file at slash-separated rel under dir atomically: through a
// temporary file, flushed to stable storage and renamed over the old one, so that readers, and
// the directory after a crash, hold either the old file or the whole new one.
func replaceFile(dir, rel string, data []byte) error {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-")
	if err != nil {
		return err
	}
	// CreateTemp makes the file private; the manifest should be as readable as the shards.
	err = f.Chmod(0o644)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = syncFile{f}.Close()
	} else {
		f.Close()
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("%s: %w", p, err)
	}
	crash("rename " + rel)
	if err := os.Rename(f.Name(), p); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
