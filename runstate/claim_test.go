package runstate

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// writeTree creates the files of tree (path relative to dir → content) in dir.
func writeTree(t *testing.T, dir string, tree map[string]string) {
	t.Helper()
	for p, content := range tree {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkTree fails unless dir holds exactly the files of tree.
func checkTree(t *testing.T, dir string, tree map[string]string) {
	t.Helper()
	got := map[string]string{}
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			got[rel] = string(readFile(t, p))
		}
		return nil
	})
	for p, content := range tree {
		if got[p] != content {
			t.Errorf("%s: %q, want %q", p, got[p], content)
		}
	}
	if len(got) != len(tree) {
		t.Errorf("%s holds %d files, want %d: %v", dir, len(got), len(tree), got)
	}
}

// A directory that is neither empty, nor marked, nor laid out as an old state directory is
// refused before anything in it is touched, including names that repair and prune remove in a
// state directory.
func TestOpenRefusesForeignDirectory(t *testing.T) {
	for name, tree := range map[string]map[string]string{
		"user files":               {"notes.txt": "mine", "runs/2025/a.csv": "1,2", "latest/x": "x", ".tmp-keep": "t"},
		"lock not a holder record": {"lock": "my lock", "runs/a/b": "b"},
		"extra entry":              {"lock": `{"pid":7,"host":"h"}`, "runs/a/b": "b", "photo.jpg": "p"},
		"no runs":                  {"lock": `{"pid":7,"host":"h"}`, "current.json": "{}"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tree)
			if d, err := Open(dir); err == nil {
				d.Close()
				t.Fatal("Open succeeded")
			}
			checkTree(t, dir, tree)
		})
	}
	file := filepath.Join(t.TempDir(), "f")
	writeTree(t, filepath.Dir(file), map[string]string{"f": "data"})
	if _, err := Open(file); err == nil {
		t.Fatal("Open of a regular file succeeded")
	}
}

// A state directory written before the marker existed is recognised by its layout, marked, and
// used as before.
func TestOpenAdoptsUnmarkedStateDirectory(t *testing.T) {
	path := t.TempDir()
	d := mustOpen(t, path)
	mustCommit(t, d, 1, 2)
	d.Close()
	if err := os.Remove(filepath.Join(path, markerFile)); err != nil {
		t.Fatal(err)
	}
	d, n := checkDir(t, path)
	d.Close()
	if n != 2 {
		t.Fatalf("run %d current, want 2", n)
	}
	if _, err := os.Stat(filepath.Join(path, markerFile)); err != nil {
		t.Fatal("adopted state directory was not marked:", err)
	}
}

// Entries of runs/ that are not run or staging directory names are not stirank's: kept.
func TestPruneKeepsForeignEntries(t *testing.T) {
	path := t.TempDir()
	d := mustOpen(t, path)
	foreign := map[string]string{"runs/.DS_Store": "x", "runs/my notes/a": "a"}
	writeTree(t, path, foreign)
	mustCommit(t, d, 1, 3)
	d.Close()
	for p, content := range foreign {
		if got := readFile(t, filepath.Join(path, p)); string(got) != content {
			t.Fatalf("%s: %q", p, got)
		}
	}
}

// A directory Open created (with its missing parents) is removed by Close when no run was
// committed; one that existed before, or that holds a committed run, stays.
func TestCloseRemovesUnusedDirectoryItCreated(t *testing.T) {
	base := t.TempDir()
	path := filepath.Join(base, "a", "b", "state")
	d := mustOpen(t, path)
	txn, _, _, err := stageTestRun(d, 1)
	if err != nil {
		t.Fatal(err)
	}
	txn.Abort()
	d.Close()
	if got := names(t, base); len(got) != 0 {
		t.Fatalf("a failed first run left %q", got)
	}

	d = mustOpen(t, path)
	mustCommit(t, d, 1, 1)
	d.Close()
	d, n := checkDir(t, path)
	d.Close()
	if n != 1 {
		t.Fatalf("run %d current, want 1", n)
	}

	empty := t.TempDir()
	mustOpen(t, empty).Close()
	if got := names(t, empty); !slices.Equal(got, []string{markerFile, lockFile, runsDir}) {
		t.Fatalf("existing directory holds %q after Close", got)
	}
}

// Redoing the previous run's id keeps that run's files, the rollback copy of the committed run,
// until the new run is staged and committing: an aborted redo leaves them intact.
func TestRedoOfPreviousIDKeepsRollbackCopy(t *testing.T) {
	path := t.TempDir()
	d := mustOpen(t, path)
	defer d.Close()
	mustCommit(t, d, 1, 2)
	txn, _, _, err := stageTestRun(d, 1)
	if err != nil {
		t.Fatal(err)
	}
	txn.Abort()
	prev := filepath.Join(path, runsDir, testID(1))
	if got := readFile(t, filepath.Join(prev, "evidence.json")); !bytes.Equal(got, evidenceBytes(1)) {
		t.Fatalf("rollback copy's evidence.json: %q", got)
	}
	if got := names(t, filepath.Join(prev, statesDir)); len(got) != 4 {
		t.Fatalf("rollback copy's states: %q", got)
	}
	// Committed this time: the redone run replaces the old copy and the run before is kept.
	mustCommit(t, d, 1, 1)
	cur, _, err := d.Current()
	if err != nil {
		t.Fatal(err)
	}
	if cur.ID != testID(1) || cur.Previous != testID(2) {
		t.Fatalf("current run %s (previous %s), want %s (previous %s)", cur.ID, cur.Previous, testID(1), testID(2))
	}
	if got := names(t, filepath.Join(path, runsDir)); !slices.Equal(got, []string{testID(1), testID(2)}) {
		t.Fatalf("runs/ holds %q", got)
	}
}

// A long history passes the Parquet guard: its string columns (run ids, checksums) take more
// bytes a value than numeric ones.
func TestLongHistory(t *testing.T) {
	d := mustOpen(t, t.TempDir())
	defer d.Close()
	mustCommit(t, d, 1, 60)
	h, err := d.History()
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 60*4 {
		t.Fatalf("%d history rows, want %d", len(h), 60*4)
	}
}
