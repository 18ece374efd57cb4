package runstate

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/stirank/stirank/internal/atomicfile"
)

// syncTree fsyncs every file and directory under root, so that a rename of root publishes
// content that survives a power loss.
func syncTree(root string) error {
	return filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return atomicfile.SyncDir(path)
		}
		if !e.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	})
}
