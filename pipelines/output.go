package pipelines

import (
	"bytes"
	"context"
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
)

// Output file names inside the output directory.
const (
	EvidenceJSON = "evidence.json"
	EvidenceCSV  = "evidence.csv"
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

// WriteResult writes evidence.json and evidence.csv into dir. A local dir appears complete or
// not at all: the files are written into a temporary directory beside it, which is then renamed
// to dir (replacing an empty directory). On a Beam filesystem each file is written under a
// temporary name and renamed. Writing the same result again succeeds, so a retried bundle does
// no harm.
func WriteResult(ctx context.Context, dir string, r Result) error {
	js, err := r.JSON()
	if err != nil {
		return err
	}
	return writeFiles(ctx, dir, []outFile{{EvidenceCSV, r.CSV()}, {EvidenceJSON, js}})
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
