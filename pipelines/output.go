package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	// Local paths are the default filesystem; gs:// is linked in by the runners package.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/transforms"
)

// Output file names inside the output directory.
const (
	EvidenceJSON = "evidence.json"
	EvidenceCSV  = "evidence.csv"
	TimingJSON   = "timing.json"
)

// CheckOutDir fails when results cannot be written to dir: a local dir must not exist or be an
// empty directory, and a URL must not hold an evidence.json already.
func CheckOutDir(ctx context.Context, dir string) error {
	if dir == "" {
		return errors.New("no output directory")
	}
	if tensorio.IsURL(dir) {
		fsys, err := filesystem.New(ctx, dir)
		if err != nil {
			return err
		}
		defer fsys.Close()
		name := joinURL(dir, EvidenceJSON)
		if m, err := fsys.List(ctx, name); err == nil && len(m) > 0 {
			return fmt.Errorf("%s exists already", name)
		}
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s exists and is not a directory", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("output directory %s exists and is not empty", dir)
	}
	return nil
}

func joinURL(dir, name string) string { return strings.TrimSuffix(dir, "/") + "/" + name }

// WriteResult writes evidence.json, evidence.csv and timing.json into dir. A local dir appears
// complete or not at all: the files are written into a temporary directory beside it, which is
// then renamed to dir (replacing an empty directory). On a Beam filesystem each file is written
// under a temporary name and renamed, evidence.json last. Writing the same result again succeeds,
// so a retried bundle does no harm; the first timing stays.
func WriteResult(ctx context.Context, dir string, r Result, t Timing) error {
	js, err := r.JSON()
	if err != nil {
		return err
	}
	tj, err := t.JSON()
	if err != nil {
		return err
	}
	return writeFiles(ctx, dir, []outFile{{EvidenceCSV, r.CSV()}, {TimingJSON, tj}, {EvidenceJSON, js}})
}

// Timing is what a run cost, per rank: timing.json. It is kept apart from evidence.json, which
// a rerun reproduces byte for byte.
type Timing struct {
	Ranks []transforms.RankTime `json:"ranks"`
}

// JSON encodes t as timing.json.
func (t Timing) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(t, "", "  ")
	return append(b, '\n'), err
}

// Rank returns the cost of rank, and false when t has none.
func (t Timing) Rank(rank int) (transforms.RankTime, bool) {
	for _, rt := range t.Ranks {
		if rt.Rank == rank {
			return rt, true
		}
	}
	return transforms.RankTime{}, false
}

// ReadTiming reads dir/timing.json; a directory without one (written before stirank recorded
// timings, or by a command that does not) gives an empty Timing.
func ReadTiming(dir string) (Timing, error) {
	var t Timing
	b, err := os.ReadFile(filepath.Join(dir, TimingJSON))
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("%s: %v", filepath.Join(dir, TimingJSON), err)
	}
	return t, nil
}

// outFile is one file of a result; the last of a result's files is its evidence.json.
type outFile struct {
	name string
	data []byte
}

// writeFiles writes a result's files into dir as WriteResult describes.
func writeFiles(ctx context.Context, dir string, files []outFile) error {
	js := files[len(files)-1].data
	if tensorio.IsURL(dir) {
		fsys, err := filesystem.New(ctx, dir)
		if err != nil {
			return err
		}
		defer fsys.Close()
		for _, f := range files {
			name := joinURL(dir, f.name)
			if err := filesystem.Write(ctx, fsys, name+".tmp", f.data); err != nil {
				return fmt.Errorf("writing %s: %w", name, err)
			}
			if err := filesystem.Rename(ctx, fsys, name+".tmp", name); err != nil {
				return fmt.Errorf("writing %s: %w", name, err)
			}
		}
		return nil
	}
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	for _, f := range files {
		if err := writeFileSync(filepath.Join(tmp, f.name), f.data); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	// An empty directory is replaced (os.Rename does not replace directories); a directory with
	// anything in it makes the rename fail.
	os.Remove(dir)
	if err := os.Rename(tmp, dir); err != nil {
		// A retried write of the same result finds it in place.
		if old, rerr := os.ReadFile(filepath.Join(dir, EvidenceJSON)); rerr == nil && bytes.Equal(old, js) {
			return nil
		}
		return fmt.Errorf("writing results: %w", err)
	}
	return nil
}

func writeFileSync(name string, data []byte) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readEvidenceJSON reads dir/evidence.json (dir a local path or a Beam filesystem URL).
func readEvidenceJSON(ctx context.Context, dir string) ([]byte, error) {
	if !tensorio.IsURL(dir) {
		return os.ReadFile(filepath.Join(dir, EvidenceJSON))
	}
	fsys, err := filesystem.New(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer fsys.Close()
	return filesystem.Read(ctx, fsys, joinURL(dir, EvidenceJSON))
}

// ReadResult reads dir/evidence.json (dir a local path or a Beam filesystem URL).
func ReadResult(ctx context.Context, dir string) (Result, error) {
	js, err := readEvidenceJSON(ctx, dir)
	if err != nil {
		return Result{}, err
	}
	return ParseResult(js)
}
