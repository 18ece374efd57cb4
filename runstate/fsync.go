package runstate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// writeFileAtomic replaces path by a file holding data, so that readers and a crash see either
// the old or the new content: it writes a temporary file in the same directory (a rename across
// directories may not be atomic), fsyncs it so the rename can never expose an empty file after a
// power loss, renames it over path and fsyncs the directory so the rename itself is durable.
// Temporary files left by a crash start with tempPrefix and are removed by Open.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	// CreateTemp makes the file private; published files are meant to be read by others.
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes the entries of dir (creations, renames) durable. Some filesystems (FUSE mounts
// among them) cannot fsync a directory and report EINVAL or ENOTSUP; they persist metadata on
// their own, so those errors are not failures.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}

// syncTree fsyncs every file and directory under root, so that a rename of root publishes
// content that survives a power loss.
func syncTree(root string) error {
	return filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return syncDir(path)
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
