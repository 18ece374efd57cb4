package transforms

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/stirank/stirank/estimators"
)

// A race run by workers in this process keeps its chains' states in a directory between stages
// rather than in its collections (RunFn.Spill): prism holds every collection in memory, encoded,
// in several copies (a stage's output, the shuffle after it, the next round's join), and the
// states of a large tensor's chains weigh gigabytes a round (docs/runners.md). The collections
// then carry file names, and memory holds the states of the tasks running. Runners whose workers
// are other processes move collections through their own shuffle, which spills to disk, and
// states stay in them.

// spillPath is the file task t's payload is left in under dir: a task's identity and round name
// it, so a retried bundle rewrites the same file with the same bytes.
func spillPath(dir string, t estimators.Task) string {
	return filepath.Join(dir, fmt.Sprintf("r%d-k%d-s%d-i%d-q%d-c%d%s", t.Rank, t.Round, t.Stage, t.Index, t.Replica, t.Chain, t.Kind))
}

// SpillBytes is the smallest payload spill moves to a file: a small one costs the collections
// little and a file's system calls more. A variable so that tests can send small states through
// files.
var SpillBytes = 64 << 10

// spill moves t's payload to a file under dir and names it in t.Stored; nothing without a dir,
// or for an empty payload or one under SpillBytes.
func spill(dir string, t *estimators.Task) error {
	if dir == "" || len(t.Payload) == 0 || len(t.Payload) < SpillBytes {
		return nil
	}
	path := spillPath(dir, *t)
	// Written aside and renamed, so that a reader never sees part of a file; the directory
	// dies with the run, so nothing is synced.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, t.Payload, 0o600); err != nil {
		return fmt.Errorf("task rank %d, rung %d, replica %d: keeping its state: %w", t.Rank, t.Index, t.Replica, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	t.Payload, t.Stored = nil, path
	return nil
}

// unspill reads back the payload spill moved out of t.
func unspill(t *estimators.Task) error {
	if t.Stored == "" {
		return nil
	}
	b, err := os.ReadFile(t.Stored)
	if err != nil {
		return fmt.Errorf("task rank %d, rung %d, replica %d: reading its state: %w", t.Rank, t.Index, t.Replica, err)
	}
	t.Payload, t.Stored = b, ""
	return nil
}

// spillState moves result r's state to the file its next round's task reads (estimators.Continue)
// and names it in r.Stored, as spill does a payload.
func spillState(dir string, r *estimators.Result) error {
	next := estimators.Continue(*r, false)
	if err := spill(dir, &next); err != nil || next.Stored == "" {
		return err
	}
	r.State, r.Stored = nil, next.Stored
	return nil
}
