package runstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

const lockFile = "lock"

// InUseError is returned by Open when another Dir, in this or another process, holds the state
// directory. The holder fields come from the lock file and are zero when the holder had not
// written them yet.
type InUseError struct {
	Path  string    `json:"-"`
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	Since time.Time `json:"since"`
}

func (e *InUseError) Error() string {
	holder := "holder unknown"
	if e.PID != 0 {
		holder = fmt.Sprintf("pid %d on host %s, since %s", e.PID, e.Host, e.Since.Format(time.RFC3339))
	}
	return fmt.Sprintf("state directory %s is in use by another stirank reanalyze (%s); runs on one state directory cannot overlap", e.Path, holder)
}

// held records the state directories locked by this process. flock locks belong to an open
// file description, so a second descriptor in this process is refused on local filesystems; but
// NFS emulates flock with POSIX record locks, which belong to the process: there a second Open
// would be granted the lock, and closing its descriptor would release the first one's. Refusing
// in-process before touching the lock file avoids both.
var held = struct {
	sync.Mutex
	dirs map[string]InUseError
}{dirs: map[string]InUseError{}}

// lock takes an exclusive non-blocking flock on dir/lock and writes the holder's identity into it.
func lock(dir string) (*os.File, error) {
	held.Lock()
	defer held.Unlock()
	if h, ok := held.dirs[dir]; ok {
		return nil, &h
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("runstate: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("runstate: locking %s: %w", f.Name(), err)
		}
		e := &InUseError{Path: dir}
		// Best effort: the holder may be between taking the lock and writing its identity.
		if data, err := io.ReadAll(f); err != nil || json.Unmarshal(data, e) != nil {
			*e = InUseError{Path: dir}
		}
		return nil, e
	}
	host, _ := os.Hostname()
	h := InUseError{Path: dir, PID: os.Getpid(), Host: host, Since: time.Now().UTC().Truncate(time.Second)}
	data, _ := json.Marshal(h)
	if err = f.Truncate(0); err == nil {
		_, err = f.WriteAt(append(data, '\n'), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("runstate: writing %s: %w", f.Name(), err)
	}
	held.dirs[dir] = h
	return f, nil
}

// unlock releases the lock taken by lock; closing the descriptor drops the flock.
func unlock(dir string, f *os.File) error {
	held.Lock()
	defer held.Unlock()
	delete(held.dirs, dir)
	return f.Close()
}
