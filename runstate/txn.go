package runstate

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/stirank/stirank/internal/atomicfile"
)

// Txn is a run in progress: a staging directory that Commit turns into the committed run.
type Txn struct {
	d     *Dir
	id    string
	dir   string
	tried bool // Commit was called: the staging directory may hold its files or be gone
}

// Begin starts the run id in an empty staging directory, runs/<id>.tmp, with an empty states/
// subdirectory. Leftovers of an earlier attempt at the same id are removed first, so a run
// interrupted by a crash is simply begun again. Only one run can be in progress, and id cannot
// be the committed run's (its directory is in use until another run replaces it).
func (d *Dir) Begin(id string) (*Txn, error) {
	if d.lock == nil {
		return nil, errors.New("runstate: Begin on a closed state directory")
	}
	if d.txn != nil {
		return nil, fmt.Errorf("runstate: run %s is already in progress", d.txn.id)
	}
	if err := checkID(id); err != nil {
		return nil, fmt.Errorf("runstate: %w", err)
	}
	cur, ok, err := d.Current()
	if err != nil {
		return nil, err
	}
	if ok && cur.ID == id {
		return nil, fmt.Errorf("runstate: run %s is already the committed run", id)
	}
	t := &Txn{d: d, id: id, dir: d.runDir(id) + stagingSuffix}
	remove := []string{t.dir}
	// The run directory itself may exist too: renamed into place by a Commit that crashed before
	// its commit point (removed here), or the previous run being redone, which stays the
	// committed run's rollback copy until this run reaches Commit.
	if !ok || cur.Previous != id {
		remove = append(remove, d.runDir(id))
	}
	for _, p := range remove {
		if err := os.RemoveAll(p); err != nil {
			return nil, fmt.Errorf("runstate: %w", err)
		}
	}
	if err := os.MkdirAll(t.StatesDir(), 0o755); err != nil {
		return nil, fmt.Errorf("runstate: %w", err)
	}
	d.txn = t
	return t, nil
}

// Dir returns the staging directory, where the caller writes the run's other files (such as
// evidence.json); its top-level files are published to latest/ on commit. The names run.json,
// history.parquet and history.csv are reserved for Commit.
func (t *Txn) Dir() string { return t.dir }

// StatesDir returns the directory where the run's new chain states are written.
func (t *Txn) StatesDir() string { return filepath.Join(t.dir, statesDir) }

// Abort discards the run: it removes the staging directory. It does nothing after a successful
// Commit or Close, so callers can defer it.
func (t *Txn) Abort() error {
	if t.d.txn != t {
		return nil
	}
	t.d.txn = nil
	if err := os.RemoveAll(t.dir); err != nil {
		return fmt.Errorf("runstate: %w", err)
	}
	return nil
}

// Commit makes the run the committed one. run.ID must be the id given to Begin; rows must hold
// exactly one row per rank of run.Ranks. Commit stamps the run-level columns of every row (Time,
// RunID, DatasetVersion, DatasetChecksum, ChosenRank) from run, sets run.Previous and, if zero,
// run.Time.
//
// The steps, each safe to be interrupted: fsync the staging files and write into the staging
// directory the full history (every row of the committed run's history, then rows) and run.json;
// rename the staging directory to runs/<id>; replace current.json — the commit point; publish the
// history and latest/ files; remove runs other than this one and the previous one.
//
// The previous run is kept until the next commit so that a reader who read current.json just
// before this commit can still read that run's files; it also lets an operator roll back by
// copying its run.json over current.json. The cost is one more run's chain states on disk.
//
// Commit can be called once. If it fails, Current tells whether the run was committed (a failure
// after the commit point only leaves published files stale, which the next Open repairs); call
// Abort either way to release the run.
func (t *Txn) Commit(run Run, rows []HistoryRow) error {
	if t.d.txn != t || t.tried {
		return fmt.Errorf("runstate: run %s is not in progress", t.id)
	}
	t.tried = true
	if err := t.commit(run, rows); err != nil {
		return fmt.Errorf("runstate: committing run %s: %w", t.id, err)
	}
	t.d.txn = nil
	return nil
}

func (t *Txn) commit(run Run, rows []HistoryRow) error {
	d := t.d
	if run.ID != t.id {
		return fmt.Errorf("run id %q differs from the id given to Begin", run.ID)
	}
	rows, err := stamp(&run, rows)
	if err != nil {
		return err
	}
	for _, name := range []string{runFile, historyParquet, historyCSV} {
		if _, err := os.Lstat(filepath.Join(t.dir, name)); err == nil {
			return fmt.Errorf("the staging directory holds %s, a name reserved for Commit", name)
		}
	}
	prev, ok, err := d.Current()
	if err != nil {
		return err
	}
	var history []HistoryRow
	if ok {
		run.Previous = prev.ID
		if history, err = d.History(); err != nil {
			return err
		}
	}
	history = append(history, rows...)
	pq, err := encodeParquet(history)
	if err != nil {
		return err
	}
	csv, err := encodeCSV(history)
	if err != nil {
		return err
	}
	runJSON, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err
	}
	runJSON = append(runJSON, '\n')
	for name, data := range map[string][]byte{runFile: runJSON, historyParquet: pq, historyCSV: csv} {
		if err := os.WriteFile(filepath.Join(t.dir, name), data, 0o644); err != nil {
			return err
		}
	}
	if err := syncTree(t.dir); err != nil {
		return err
	}
	if err := d.step("staged"); err != nil {
		return err
	}
	runDir := d.runDir(run.ID)
	// The previous run's copy when its id is being redone (see Begin): replaced only now that the
	// new run is staged. A crash before the rename loses only that rollback copy.
	if err := os.RemoveAll(runDir); err != nil {
		return err
	}
	if err := os.Rename(t.dir, runDir); err != nil {
		return err
	}
	// current.json must never name a run whose rename a power loss could undo.
	if err := atomicfile.SyncDir(filepath.Dir(runDir)); err != nil {
		return err
	}
	if err := d.step("renamed"); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(d.path, currentFile), runJSON); err != nil {
		return err
	}
	if err := d.step("committed"); err != nil {
		return err
	}
	if err := d.publish(runDir); err != nil {
		return err
	}
	return d.prune(run.ID, run.Previous)
}

// stamp sets run.Time if zero and truncates it to the history's precision, checks that rows has
// exactly one row per rank of the run, and returns the rows sorted by rank with their run-level
// columns taken from run.
func stamp(run *Run, rows []HistoryRow) ([]HistoryRow, error) {
	if run.Time.IsZero() {
		run.Time = time.Now()
	}
	run.Time = run.Time.UTC().Truncate(time.Microsecond)
	if len(run.Ranks) == 0 {
		return nil, errors.New("the run has no ranks")
	}
	pending := map[int]bool{}
	for _, k := range run.Ranks {
		if pending[k] {
			return nil, fmt.Errorf("rank %d is listed twice in the run's ranks", k)
		}
		pending[k] = true
	}
	if len(rows) != len(run.Ranks) {
		return nil, fmt.Errorf("%d history rows for %d ranks", len(rows), len(run.Ranks))
	}
	out := make([]HistoryRow, len(rows))
	for i, r := range rows {
		if !pending[r.Rank] {
			return nil, fmt.Errorf("history row for rank %d: not a rank of the run, or repeated", r.Rank)
		}
		delete(pending, r.Rank)
		r.Time, r.RunID, r.DatasetVersion, r.DatasetChecksum, r.ChosenRank =
			run.Time, run.ID, run.DatasetVersion, run.DatasetChecksum, run.BestRank
		out[i] = r
	}
	slices.SortFunc(out, func(a, b HistoryRow) int { return cmp.Compare(a.Rank, b.Rank) })
	return out, nil
}
