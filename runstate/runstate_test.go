package runstate

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// The lock relies on flock locks belonging to an open file description: a second descriptor of
// the same file in the same process is refused.
func TestFlockIsPerOpenFileDescription(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	var fds []int
	for range 2 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fds = append(fds, int(f.Fd()))
	}
	if err := syscall.Flock(fds[0], syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(fds[1], syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("second flock in the same process: %v, want EWOULDBLOCK", err)
	}
}

var inUseMessage = regexp.MustCompile(`^state directory (.+) is in use by another stirank reanalyze \(pid (\d+) on host (.*), since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\); runs on one state directory cannot overlap$`)

// checkInUse checks that err refuses the state directory at path because of process pid.
func checkInUse(t *testing.T, err error, path string, pid int) {
	t.Helper()
	var e *InUseError
	if !errors.As(err, &e) {
		t.Fatalf("Open of a locked state directory: %v, want an *InUseError", err)
	}
	host, _ := os.Hostname()
	m := inUseMessage.FindStringSubmatch(err.Error())
	if m == nil || m[2] != strconv.Itoa(pid) || m[3] != host {
		t.Fatalf("message %q does not name pid %d on host %s", err, pid, host)
	}
	if want, _ := filepath.EvalSymlinks(path); m[1] != want {
		t.Fatalf("message names %s, want %s", m[1], want)
	}
}

func TestOpenRefusedWhileOpenAndReleasedOnClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	d := mustOpen(t, path)
	_, err := Open(path)
	checkInUse(t, err, path, os.Getpid())
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(path, alias); err != nil {
		t.Fatal(err)
	}
	_, err = Open(alias)
	checkInUse(t, err, path, os.Getpid())
	// The refused Opens must not have released the lock.
	f, err := os.Open(filepath.Join(path, lockFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("flock of a held state directory: %v, want EWOULDBLOCK", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Begin("v1"); err == nil {
		t.Fatal("Begin after Close succeeded")
	}
	mustOpen(t, path).Close()
}

// startChild runs the test binary as a child of the given kind on the state directory dir and
// waits for its first line of output.
func startChild(t *testing.T, kind, dir string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+kind, dirEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		cmd.Wait()
		t.Fatalf("child %s: %v\n%s", kind, err, &stderr)
	}
	return cmd, &stderr
}

// kill sends SIGKILL to the child and checks that it was still running.
func kill(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer) {
	t.Helper()
	cmd.Process.Kill()
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended before SIGKILL: %v\n%s", err, stderr)
	}
}

func TestLockReleasedWhenHolderDies(t *testing.T) {
	path := t.TempDir()
	cmd, stderr := startChild(t, "hold", path)
	_, err := Open(path)
	checkInUse(t, err, path, cmd.Process.Pid)
	kill(t, cmd, stderr)
	mustOpen(t, path).Close()
}

func TestCommitRoundTrip(t *testing.T) {
	path := t.TempDir()
	d, n := checkDir(t, path)
	if n != 0 {
		t.Fatalf("new state directory has run %d", n)
	}
	if h, err := d.History(); h != nil || err != nil {
		t.Fatalf("History of a new state directory: %v, %v", h, err)
	}
	for i := 1; i <= 3; i++ {
		mustCommit(t, d, i, i)
		d.Close()
		if d, n = checkDir(t, path); n != i {
			t.Fatalf("after committing run %d, run %d is current", i, n)
		}
	}
	defer d.Close()

	// The Parquet and CSV columns are the documented ones, and the CSV round-trips.
	f, err := parquet.ReadFile[HistoryRow](filepath.Join(path, historyParquet))
	if err != nil || !reflect.DeepEqual(f, testHistory(3)) {
		t.Fatalf("published Parquet history: %v", err)
	}
	pf, err := os.Open(filepath.Join(path, historyParquet))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	st, _ := pf.Stat()
	file, err := parquet.OpenFile(pf, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range file.Schema().Columns() {
		cols = append(cols, strings.Join(c, "."))
	}
	if !slices.Equal(cols, csvHeader) {
		t.Fatalf("Parquet columns %q, want %q", cols, csvHeader)
	}
	recs, err := csv.NewReader(bytes.NewReader(readFile(t, filepath.Join(path, historyCSV)))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs[0], csvHeader) || len(recs) != 1+len(testHistory(3)) {
		t.Fatalf("CSV header %q and %d records", recs[0], len(recs))
	}
	for i, want := range testHistory(3) {
		r := recs[1+i]
		tm, _ := time.Parse(time.RFC3339Nano, r[0])
		ev, _ := strconv.ParseFloat(r[5], 64)
		pp, _ := strconv.ParseFloat(r[7], 64)
		if !tm.Equal(want.Time) || ev != want.LogEvidence || pp != want.PosteriorProb || r[1] != want.RunID {
			t.Fatalf("CSV record %q does not round-trip %+v", r, want)
		}
	}
}

func TestCommitRejectsInconsistentRuns(t *testing.T) {
	path := t.TempDir()
	d := mustOpen(t, path)
	defer d.Close()
	mustCommit(t, d, 1, 1)
	for name, spoil := range map[string]func(txn *Txn, run *Run, rows *[]HistoryRow){
		"id":         func(_ *Txn, run *Run, _ *[]HistoryRow) { run.ID = "other" },
		"missing":    func(_ *Txn, _ *Run, rows *[]HistoryRow) { *rows = (*rows)[1:] },
		"repeated":   func(_ *Txn, _ *Run, rows *[]HistoryRow) { (*rows)[0].Rank = (*rows)[1].Rank },
		"no ranks":   func(_ *Txn, run *Run, rows *[]HistoryRow) { run.Ranks, *rows = nil, nil },
		"reserved":   func(txn *Txn, _ *Run, _ *[]HistoryRow) { os.WriteFile(filepath.Join(txn.Dir(), runFile), nil, 0o644) },
		"twice rank": func(_ *Txn, run *Run, _ *[]HistoryRow) { run.Ranks = []int{1, 1, 2, 3} },
	} {
		txn, run, rows, err := stageTestRun(d, 2)
		if err != nil {
			t.Fatal(err)
		}
		spoil(txn, &run, &rows)
		if err := txn.Commit(run, rows); err == nil {
			t.Fatalf("%s: Commit succeeded", name)
		}
		if err := txn.Commit(run, rows); err == nil {
			t.Fatalf("%s: second Commit succeeded", name)
		}
		if err := txn.Abort(); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	checkDir(t, path)
}

func TestBegin(t *testing.T) {
	path := t.TempDir()
	d := mustOpen(t, path)
	mustCommit(t, d, 1, 1)
	for _, id := range []string{"", ".hidden", "a/b", "..", "x.tmp", "a b"} {
		if _, err := d.Begin(id); err == nil {
			t.Fatalf("Begin(%q) succeeded", id)
		}
	}
	if _, err := d.Begin(testID(1)); err == nil {
		t.Fatal("Begin of the committed run's id succeeded")
	}
	// The same id twice: after Abort, and after a crash (Close without Abort, then Open).
	for range 2 {
		txn, _, _, err := stageTestRun(d, 2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Begin(testID(3)); err == nil {
			t.Fatal("Begin while a run is in progress succeeded")
		}
		if err := txn.Abort(); err != nil {
			t.Fatal(err)
		}
		txn, _, _, err = stageTestRun(d, 2)
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
		d = mustOpen(t, path)
		txn, err = d.Begin(testID(2))
		if err != nil {
			t.Fatal(err)
		}
		if got := names(t, txn.Dir()); !slices.Equal(got, []string{statesDir}) || len(names(t, txn.StatesDir())) != 0 {
			t.Fatalf("staging directory of a restarted run holds %q", got)
		}
		txn.Abort()
	}
	mustCommit(t, d, 2, 2)
	d.Close()
	checkDir(t, path)
}

// A crash leaves staging directories, uncommitted runs, temporary files and stale published
// files; Open repairs them all.
func TestOpenRepairs(t *testing.T) {
	path := t.TempDir()
	d := mustOpen(t, path)
	mustCommit(t, d, 1, 2)
	d.Close()
	for _, p := range []string{"runs/v9.tmp/states/x", "runs/v9/evidence.json", ".tmp-history.csv-123", "latest/.tmp-run.json-4", "latest/stale.json"} {
		os.MkdirAll(filepath.Join(path, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(path, p), []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(path, historyCSV), []byte("time,run_id\n"), 0o644)
	os.Remove(filepath.Join(path, latestDir, "evidence.json"))
	os.Remove(filepath.Join(path, historyParquet))
	d, n := checkDir(t, path)
	defer d.Close()
	if n != 2 {
		t.Fatalf("run %d current, want 2", n)
	}
}

// crashErr is what the test hook returns or panics with to simulate a crash.
var crashErr = errors.New("simulated crash")

// commitOrCrash calls Commit and turns a panic of the test hook into an error.
func commitOrCrash(txn *Txn, run Run, rows []HistoryRow) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = r.(error)
		}
	}()
	return txn.Commit(run, rows)
}

// A crash at every step boundary of Commit, either as an error the caller sees (and Aborts) or
// as a panic that stops everything, followed by Open: the old run is current before the commit
// point and the new one from it on, and every invariant holds. The next runs then complete.
func TestCrashAtEveryCommitStep(t *testing.T) {
	var steps []string
	d := mustOpen(t, t.TempDir())
	mustCommit(t, d, 1, 2)
	d.hook = func(step string) error { steps = append(steps, step); return nil }
	mustCommit(t, d, 3, 3)
	d.Close()
	commitPoint := slices.Index(steps, "committed")
	if commitPoint < 0 || len(steps) != 9 {
		t.Fatalf("steps of Commit: %q", steps)
	}
	for i, step := range steps {
		for _, panics := range []bool{false, true} {
			t.Run(step+map[bool]string{false: " error", true: " panic"}[panics], func(t *testing.T) {
				path := t.TempDir()
				d := mustOpen(t, path)
				mustCommit(t, d, 1, 2)
				txn, run, rows, err := stageTestRun(d, 3)
				if err != nil {
					t.Fatal(err)
				}
				d.hook = func(s string) error {
					if s == step && panics {
						panic(crashErr)
					}
					if s == step {
						return crashErr
					}
					return nil
				}
				if err := commitOrCrash(txn, run, rows); !errors.Is(err, crashErr) {
					t.Fatalf("Commit: %v, want the simulated crash", err)
				}
				if !panics {
					txn.Abort()
				}
				d.Close()
				d, n := checkDir(t, path)
				if want := map[bool]int{false: 2, true: 3}[i >= commitPoint]; n != want {
					t.Fatalf("run %d current after a crash at %q, want %d", n, step, want)
				}
				mustCommit(t, d, n+1, 4)
				d.Close()
				d, _ = checkDir(t, path)
				d.Close()
			})
		}
	}
}

// A child process commits run after run and is killed by SIGKILL at random moments (from
// before its Open to anywhere in a Commit); after every kill the state directory passes
// checkDir, and the runs then finished without interruption give the same history. A Commit
// costs a few tens of fsyncs, tens of ms on a VM disk, so the delays span a few commits.
func TestSIGKILL(t *testing.T) {
	path := t.TempDir()
	rng := rand.New(rand.NewPCG(2026, 11))
	last := 0
	for k := range 10 {
		cmd, stderr := startChild(t, "loop", path)
		delay := time.Duration(rng.IntN(150000)) * time.Microsecond
		time.Sleep(delay)
		kill(t, cmd, stderr)
		left := append(names(t, filepath.Join(path, runsDir)), names(t, filepath.Join(path, latestDir))...)
		d, n := checkDir(t, path)
		d.Close()
		t.Logf("kill %d after %v: run %d committed; runs/ and latest/ before Open: %q", k, delay, n, left)
		if n < last {
			t.Fatalf("run %d current after run %d was", n, last)
		}
		last = n
	}
	d := mustOpen(t, path)
	mustCommit(t, d, last+1, last+2)
	d.Close()
	d, n := checkDir(t, path)
	d.Close()
	if n != last+2 {
		t.Fatalf("run %d current, want %d", n, last+2)
	}
}
