// Package runstate keeps the state directory of stirank reanalyze: the chain states, evidence
// and history of the last committed run, so that a scheduled re-analysis of a growing dataset can
// warm-start from them. It must survive SIGKILL at any moment, so every change follows one rule:
// build the new run in a staging directory, then switch a single small file (current.json) by
// rename. Everything else — the published copies of the history and of the latest results, and
// the removal of old or unfinished runs — is derived from the committed run and redone by Open,
// so a crash between any two steps leaves either the old or the new run committed, never a mix.
//
// Layout of a state directory:
//
//	.stirank-state             marker: the directory is a state directory, written before anything else
//	lock                       flock target; holds the holder's pid, host and start time (JSON)
//	current.json               the committed Run: the single commit point
//	runs/<id>/                 the committed run
//	    states/                its final chain states, written by the caller
//	    evidence.json, ...     other files the caller wrote into the staging directory
//	    run.json               the Run, a copy of current.json at commit
//	    history.parquet        the full history: every row of every committed run up to this one
//	    history.csv            the same rows as CSV
//	runs/<previous id>/        the run committed before it, kept for one more run (see Txn.Commit)
//	runs/<id>.tmp/             staging directory of a run in progress (removed by Open)
//	history.parquet            published copy of runs/<id>/history.parquet
//	history.csv                published copy of runs/<id>/history.csv
//	latest/                    published copies of every top-level file of runs/<id>
//	.tmp-*                     temporary files of atomic writes (removed by Open)
//
// Open refuses a non-empty directory without the marker unless it has exactly the layout above
// (see claim), because repair and prune remove entries of runs/, latest/ and .tmp-* files: they
// may only do so in a directory that stirank made. Entries of runs/ that are not run or staging
// directory names are never removed.
//
// The directory may be local or on a shared POSIX filesystem; only os, rename, fsync and flock
// are used. The package is unix-only (syscall.Flock).
package runstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/stirank/stirank/internal/atomicfile"
	"github.com/stirank/stirank/io/tensorio"
)

// Names inside a state directory and inside a run directory.
const (
	markerFile     = ".stirank-state"
	currentFile    = "current.json"
	runsDir        = "runs"
	latestDir      = "latest"
	statesDir      = "states"
	runFile        = "run.json"
	historyParquet = "history.parquet"
	historyCSV     = "history.csv"
	stagingSuffix  = ".tmp"
	tempPrefix     = atomicfile.TempPrefix
)

// Run is the record of a committed run, stored as JSON in current.json (the commit point) and in
// the run's own directory.
type Run struct {
	// ID is the caller's deterministic run id, e.g. "v000003-1a2b3c4d5e6f". It names the run's
	// directory, so it is restricted to letters, digits, '.', '_' and '-', may not start with
	// '.' and may not end in ".tmp" (the staging suffix).
	ID string `json:"id"`
	// Time is the commit time in UTC, truncated to microseconds (the precision of the Parquet
	// history). Commit sets it to the current time when it is zero.
	Time            time.Time `json:"time"`
	DatasetVersion  int       `json:"dataset_version"`
	DatasetChecksum string    `json:"dataset_checksum"`
	// Settings is an opaque key of the analysis settings (model, configuration); a change forces
	// a rerun even when the dataset did not change.
	Settings string `json:"settings"`
	Seed     uint64 `json:"seed"`
	// BestRank is the rank the run chose, −1 when no rank had an estimate (rank 0 is a rank).
	BestRank int `json:"best_rank"`
	// Ranks are the ranks analysed in this run; the run has one history row per rank.
	Ranks []int `json:"ranks"`
	// Previous is the id of the run this one replaced ("" for the first run). Commit sets it.
	Previous string `json:"previous,omitempty"`
	// States is where the run's chain states are when the caller kept them outside the state
	// directory (a URL that remote workers reach); empty for the run directory's states/.
	States string `json:"states,omitempty"`
}

// Dir is an open, locked state directory. It is not safe for concurrent use; the lock already
// makes one Dir the only user of the directory.
type Dir struct {
	path string
	lock *os.File
	txn  *Txn
	// made lists the directories Open created, deepest first, for Close to remove when no run
	// was committed: a failed first run leaves nothing behind.
	made []string
	// hook, when set by tests, is called after every step of Commit and publish with the step's
	// name; an error or panic from it simulates a crash at that step boundary.
	hook func(step string) error
}

// Open creates the state directory if needed, locks it and recovers from an interrupted run.
//
// A directory that exists must be empty, hold the marker file, or have the layout of a state
// directory made before the marker existed (see claim); anything else is refused untouched.
//
// The lock is an exclusive non-blocking flock on path/lock, so that overlapping scheduled runs
// fail fast with an *InUseError naming the holder instead of queueing behind it. Recovery removes
// the staging directories and uncommitted run directories left by a crash, and re-publishes the
// committed run's history and latest files if a crash left them stale.
func Open(path string) (*Dir, error) {
	made, err := claim(path)
	if err != nil {
		return nil, err
	}
	// Until the lock is held, a failure removes only the directories this call created.
	fail := func(err error) (*Dir, error) {
		(&Dir{made: made}).removeMade()
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(path, runsDir), 0o755); err != nil {
		return fail(fmt.Errorf("runstate: %w", err))
	}
	// A canonical path makes the in-process lock registry see through symlinks and relative paths.
	canon, err := filepath.EvalSymlinks(path)
	if err == nil {
		canon, err = filepath.Abs(canon)
	}
	if err != nil {
		return fail(fmt.Errorf("runstate: %w", err))
	}
	f, err := lock(canon)
	if err != nil {
		// The holder is using the directory, even if this call created it a moment before.
		return nil, err
	}
	d := &Dir{path: canon, lock: f, made: made}
	if err := d.repair(); err != nil {
		d.Close()
		return nil, fmt.Errorf("runstate: recovering %s: %w", canon, err)
	}
	return d, nil
}

// Close releases the lock. A run in progress is abandoned; the next Open removes its staging
// directory. When Open created the directory and no run was committed, Close removes what Open
// wrote (marker, lock, runs/) and the directories it created, so a failed first run leaves no
// empty state directory behind.
func (d *Dir) Close() error {
	if d.lock == nil {
		return nil
	}
	var cleanup bool
	if len(d.made) > 0 {
		_, committed, err := d.Current()
		cleanup = err == nil && !committed
	}
	if cleanup {
		// Only the names Open writes (an aborted run has removed its staging directory); a file
		// someone else put there keeps the directory, since os.Remove fails on a non-empty one.
		os.Remove(filepath.Join(d.path, runsDir))
		os.Remove(filepath.Join(d.path, markerFile))
		os.Remove(filepath.Join(d.path, lockFile))
	}
	err := unlock(d.path, d.lock)
	if cleanup {
		d.removeMade()
	}
	d.lock, d.txn, d.made = nil, nil, nil
	return err
}

// removeMade removes the directories Open created, deepest first, if they are empty.
func (d *Dir) removeMade() {
	for _, p := range d.made {
		if entries, err := os.ReadDir(p); err == nil && len(entries) == 1 && entries[0].Name() == markerFile {
			os.Remove(filepath.Join(p, markerFile))
		}
		if os.Remove(p) != nil {
			return
		}
	}
}

// claim makes path a state directory of ours or refuses it, before anything in it is touched. It
// returns the directories it created, deepest first. A directory that exists is claimed when it
// is empty, holds the marker, or has the layout of a state directory made before the marker
// existed: a lock file holding a holder record (JSON with a pid), a runs/ directory, and no entry
// besides the names of the layout. Every Open since the first version wrote both, so an old
// state directory always qualifies, and a directory of someone else's files almost never does;
// the cost of a false refusal is an error message, of a false acceptance a deleted file.
func claim(path string) (made []string, err error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		for p := filepath.Clean(path); ; p = filepath.Dir(p) {
			if _, err := os.Lstat(p); err == nil || p == filepath.Dir(p) {
				break
			}
			made = append(made, p)
		}
		if err := os.MkdirAll(path, 0o755); err != nil {
			return nil, fmt.Errorf("runstate: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("runstate: %w", err)
	case !fi.IsDir():
		return nil, fmt.Errorf("runstate: state directory %s exists and is not a directory", path)
	default:
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("runstate: %w", err)
		}
		if len(entries) > 0 {
			if m, err := os.Lstat(filepath.Join(path, markerFile)); err == nil && m.Mode().IsRegular() {
				return nil, nil
			}
			if !oldLayout(path, entries) {
				return nil, fmt.Errorf("runstate: %s is not empty and is not a stirank state directory (no %s marker); give a new or empty directory", path, markerFile)
			}
		}
	}
	if err := atomicfile.WriteFile(filepath.Join(path, markerFile), []byte(markerText)); err != nil {
		(&Dir{made: made}).removeMade()
		return nil, fmt.Errorf("runstate: %w", err)
	}
	return made, nil
}

// markerText is the content of the marker file, for whoever finds the directory.
const markerText = "stirank state directory: written by stirank reanalyze, which removes only what it wrote here\n"

// oldLayout reports whether the entries of dir are those of a state directory written before
// the marker existed (see claim).
func oldLayout(dir string, entries []fs.DirEntry) bool {
	var hasLock, hasRuns bool
	for _, e := range entries {
		switch name := e.Name(); {
		case name == lockFile && e.Type().IsRegular():
			data, err := os.ReadFile(filepath.Join(dir, name))
			var h InUseError
			hasLock = err == nil && json.Unmarshal(data, &h) == nil && h.PID > 0
		case name == runsDir && e.IsDir():
			hasRuns = true
		case name == latestDir && e.IsDir():
		case (name == currentFile || name == historyParquet || name == historyCSV) && e.Type().IsRegular():
		case strings.HasPrefix(name, tempPrefix):
		default:
			return false
		}
	}
	return hasLock && hasRuns
}

// Path returns the canonical path of the state directory.
func (d *Dir) Path() string { return d.path }

// Current returns the committed run; false when no run was committed yet.
func (d *Dir) Current() (Run, bool, error) {
	data, err := os.ReadFile(filepath.Join(d.path, currentFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Run{}, false, nil
	}
	if err != nil {
		return Run{}, false, fmt.Errorf("runstate: %w", err)
	}
	var r Run
	if err := json.Unmarshal(data, &r); err != nil {
		return Run{}, false, fmt.Errorf("runstate: %s: %w", currentFile, err)
	}
	if err := checkID(r.ID); err != nil {
		return Run{}, false, fmt.Errorf("runstate: %s: %w", currentFile, err)
	}
	return r, true, nil
}

// StatesDir returns the directory (or URL, see Run.States) holding the chain state files of the
// committed run r.
func (d *Dir) StatesDir(r Run) string {
	if r.States != "" {
		return r.States
	}
	return filepath.Join(d.runDir(r.ID), statesDir)
}

// History returns the full history of the committed runs, oldest first, read from the committed
// run's Parquet file; nil when no run was committed yet.
func (d *Dir) History() ([]HistoryRow, error) {
	cur, ok, err := d.Current()
	if err != nil || !ok {
		return nil, err
	}
	file := filepath.Join(d.runDir(cur.ID), historyParquet)
	data, err := os.ReadFile(file)
	var f *parquet.File
	if err == nil {
		// A history row holds a time, ids and a checksum: well over a byte each.
		f, err = tensorio.OpenParquet(bytes.NewReader(data), int64(len(data)), file, int64(len(data)))
	}
	var rows []HistoryRow
	if err == nil {
		rows, err = tensorio.ReadRows[HistoryRow](f, file)
	}
	if err != nil {
		return nil, fmt.Errorf("runstate: reading history of run %s: %w", cur.ID, err)
	}
	return rows, nil
}

func (d *Dir) runDir(id string) string { return filepath.Join(d.path, runsDir, id) }

// step reports the end of a step of Commit or publish to the test hook.
func (d *Dir) step(name string) error {
	if d.hook == nil {
		return nil
	}
	return d.hook(name)
}

// repair brings the directory back to the state right after the last successful Commit. Every
// action is idempotent, so a crash during recovery is recovered by the next Open.
func (d *Dir) repair() error {
	if err := removeTemps(d.path); err != nil {
		return err
	}
	cur, ok, err := d.Current()
	if err != nil {
		return err
	}
	if !ok {
		return d.prune()
	}
	if _, err := os.Stat(filepath.Join(d.runDir(cur.ID), historyParquet)); err != nil {
		return fmt.Errorf("committed run %s is incomplete: %w", cur.ID, err)
	}
	if err := d.prune(cur.ID, cur.Previous); err != nil {
		return err
	}
	return d.publish(d.runDir(cur.ID))
}

// prune removes every run or staging directory of runs/ except the runs named by keep: staging
// directories, runs renamed into place but never committed, and runs older than the previous one. It does not
// fsync runs/: an entry that reappears after a power loss is pruned again.
func (d *Dir) prune(keep ...string) error {
	entries, err := os.ReadDir(filepath.Join(d.path, runsDir))
	if err != nil {
		return err
	}
	for _, e := range entries {
		id := strings.TrimSuffix(e.Name(), stagingSuffix)
		if slices.Contains(keep, e.Name()) || checkID(id) != nil {
			// Kept, or not a name Begin or Commit writes: not ours to remove.
			continue
		}
		if err := os.RemoveAll(d.runDir(e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// publish copies the run's history to the top of the state directory and its top-level files
// to latest/, each by an atomic replace so readers never see a half-written file, skipping files
// that are already current. Files in latest/ that the run does not have are removed.
func (d *Dir) publish(runDir string) error {
	for _, name := range []string{historyParquet, historyCSV} {
		if err := d.publishFile(filepath.Join(runDir, name), name); err != nil {
			return err
		}
	}
	latest := filepath.Join(d.path, latestDir)
	if err := os.MkdirAll(latest, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(runDir)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		want[e.Name()] = true
		if err := d.publishFile(filepath.Join(runDir, e.Name()), filepath.Join(latestDir, e.Name())); err != nil {
			return err
		}
	}
	stale, err := os.ReadDir(latest)
	if err != nil {
		return err
	}
	for _, e := range stale {
		if !want[e.Name()] {
			if err := os.RemoveAll(filepath.Join(latest, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// publishFile replaces the file rel (relative to the state directory) by a copy of src unless it
// already has the same content.
func (d *Dir) publishFile(src, rel string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	dst := filepath.Join(d.path, rel)
	if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := atomicfile.WriteFile(dst, data); err != nil {
		return err
	}
	return d.step("published " + filepath.ToSlash(rel))
}

// removeTemps removes the temporary files that atomic writes into dir left behind.
func removeTemps(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*$`)

// checkID rejects run ids that are not a plain, non-hidden directory name or that could be
// mistaken for a staging directory.
func checkID(id string) error {
	if !idPattern.MatchString(id) || strings.HasSuffix(id, stagingSuffix) {
		return fmt.Errorf("invalid run id %q: want letters, digits, '.', '_' or '-', not starting with '.' nor ending in %q", id, stagingSuffix)
	}
	return nil
}
