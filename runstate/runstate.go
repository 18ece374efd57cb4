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
)

// Names inside a state directory and inside a run directory.
const (
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
	BestRank int    `json:"best_rank"`
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
	// hook, when set by tests, is called after every step of Commit and publish with the step's
	// name; an error or panic from it simulates a crash at that step boundary.
	hook func(step string) error
}

// Open creates the state directory if needed, locks it and recovers from an interrupted run.
//
// The lock is an exclusive non-blocking flock on path/lock, so that overlapping scheduled runs
// fail fast with an *InUseError naming the holder instead of queueing behind it. Recovery removes
// the staging directories and uncommitted run directories left by a crash, and re-publishes the
// committed run's history and latest files if a crash left them stale.
func Open(path string) (*Dir, error) {
	if err := os.MkdirAll(filepath.Join(path, runsDir), 0o755); err != nil {
		return nil, fmt.Errorf("runstate: %w", err)
	}
	// A canonical path makes the in-process lock registry see through symlinks and relative paths.
	canon, err := filepath.EvalSymlinks(path)
	if err == nil {
		canon, err = filepath.Abs(canon)
	}
	if err != nil {
		return nil, fmt.Errorf("runstate: %w", err)
	}
	f, err := lock(canon)
	if err != nil {
		return nil, err
	}
	d := &Dir{path: canon, lock: f}
	if err := d.repair(); err != nil {
		d.Close()
		return nil, fmt.Errorf("runstate: recovering %s: %w", canon, err)
	}
	return d, nil
}

// Close releases the lock. A run in progress is abandoned; the next Open removes its staging
// directory.
func (d *Dir) Close() error {
	if d.lock == nil {
		return nil
	}
	err := unlock(d.path, d.lock)
	d.lock, d.txn = nil, nil
	return err
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
	rows, err := parquet.ReadFile[HistoryRow](filepath.Join(d.runDir(cur.ID), historyParquet))
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

// prune removes every entry of runs/ except the runs named by keep: staging directories, runs
// renamed into place but never committed, and runs older than the previous one. It does not
// fsync runs/: an entry that reappears after a power loss is pruned again.
func (d *Dir) prune(keep ...string) error {
	entries, err := os.ReadDir(filepath.Join(d.path, runsDir))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if slices.Contains(keep, e.Name()) {
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
