// Package atomicfile replaces files so that readers, and a crash at any moment, see either the
// old or the new content, never a mix or an empty file; stirank's state directories and datasets
// rely on it on local and shared POSIX filesystems.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// TempPrefix starts the names of the temporary files WriteFile creates, so that whoever owns a
// directory can remove what a crash left.
const TempPrefix = ".tmp-"

// WriteFile replaces path by a file holding data: it writes a temporary file in the same
// directory (a rename across directories may not be atomic), fsyncs it so the rename can never
// expose an empty file after a power loss, renames it over path and fsyncs the directory so the
// rename itself is durable. The file is readable by all (mode 0644).
func WriteFile(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, TempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	// CreateTemp makes the file private.
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
	return SyncDir(dir)
}

// SyncDir makes the entries of dir (creations, renames) durable. Some filesystems (FUSE mounts
// among them) cannot fsync a directory and report EINVAL or ENOTSUP; they persist metadata on
// their own, so those errors are not failures.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return nil
}
