package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/stirank/stirank/pipelines"
)

// roleEnv makes the test binary, re-executed, play a part other than the tests: "stirank" is the
// command itself (main), so that a worker pool of this binary starts workers of this binary, the
// same build as the launcher (the test); "prism" serves a prism job server on the port given.
const roleEnv = "STIRANK_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
		os.Exit(m.Run())
	case "stirank":
		main()
	case "prism":
		port, err := strconv.Atoi(os.Args[1])
		if err == nil {
			_, err = prism.CreateJobServer(context.Background(), prism.Options{Port: port})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		select {}
	}
	fmt.Fprintf(os.Stderr, "unknown %s=%q\n", roleEnv, os.Getenv(roleEnv))
	os.Exit(2)
}

// child is a process of this test binary in a role (see roleEnv), and the file its output goes to.
type child struct {
	cmd *exec.Cmd
	log string
}

func startChild(t *testing.T, role string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	return &child{cmd, startProcess(t, role, cmd)}
}

// startProcess starts cmd in a process group of its own, so that it and whatever it starts are
// killed when the test ends, with its output in a file, whose path it returns and which is
// shown when the test fails.
func startProcess(t *testing.T, name string, cmd *exec.Cmd) string {
	t.Helper()
	log := filepath.Join(t.TempDir(), "output.log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		f.Close()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, readFile(t, log))
		}
	})
	return log
}

// output is what the child has written so far.
func (c *child) output(t *testing.T) string { return string(readFile(t, c.log)) }

// waitListening waits until addr accepts connections.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startWorkerPool starts stirank worker-pool (this binary) on a free port and returns it with
// its address.
func startWorkerPool(t *testing.T) (*child, string) {
	t.Helper()
	port := freePort(t)
	pool := startChild(t, "stirank", "worker-pool", "--port", strconv.Itoa(port))
	addr := fmt.Sprintf("localhost:%d", port)
	waitListening(t, addr)
	return pool, addr
}

// workerReads matches the line a worker process writes when it reads a dataset.
var workerReads = regexp.MustCompile(`stirank worker (\d+): read (\S+)`)

// readers returns the pids of the worker processes that read a dataset, from a pool's output, by
// the dataset they read.
func readers(out string) map[string]map[int]bool {
	got := map[string]map[int]bool{}
	for _, m := range workerReads.FindAllStringSubmatch(out, -1) {
		pid, _ := strconv.Atoi(m[1])
		if got[m[2]] == nil {
			got[m[2]] = map[int]bool{}
		}
		got[m[2]][pid] = true
	}
	return got
}

// readCount is the launcher's line saying how many datasets the workers read (printWorkerReads).
var readCount = regexp.MustCompile(`datasets read by the workers themselves: (\d+) `)

// TestWorkerPool runs jobs of every kind — select (whatever graph it builds) on a local and a
// gs:// dataset (Cloud Storage emulated on loopback), select through a standalone prism job
// server, chib, ais, dictionary, and reanalyze cold and then warm-started from its saved
// states — on a worker pool of this binary (stirank worker-pool), whose workers are
// processes of their own that read the data themselves, and checks that each writes evidence.json
// byte for byte as the in-process run does (the command line apart), and that the workers, not
// the launcher, read the data: the Beam counter the launcher prints counts reads in worker
// processes only, and the pool's output names the processes. A job that stages another build of
// the binary runs that build instead of the pool's.
func TestWorkerPool(t *testing.T) {
	dir := t.TempDir()
	// Cloud Storage on loopback: the storage client reads gs://BUCKET/OBJECT from
	// STORAGE_EMULATOR_HOST as GET /BUCKET/OBJECT (its XML API), served here from dir/gcs.
	gcs := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(dir, "gcs"))))
	defer gcs.Close()
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(gcs.URL, "http://"))
	pool, addr := startWorkerPool(t)
	ext := []string{"--environment_type=EXTERNAL", "--environment_config=" + addr}
	jobServer := freePort(t)
	startChild(t, "prism", strconv.Itoa(jobServer))
	endpoint := fmt.Sprintf("localhost:%d", jobServer)
	waitListening(t, endpoint)

	nmf := filepath.Join(dir, "nmf")
	selectOK(t, "generate", "--model", "nmf", "--shape", "12x10", "--rank", "2", "--rate", "0.5", "--out", nmf)
	const gsData = "gs://stirank-test/nmf"
	if err := os.MkdirAll(filepath.Join(dir, "gcs", "stirank-test"), 0o755); err != nil {
		t.Fatal(err)
	}
	selectOK(t, "generate", "--model", "nmf", "--shape", "12x10", "--rank", "2", "--rate", "0.5", "--out", filepath.Join(dir, "gcs", "stirank-test", "nmf"))
	isX, w2, w1, _, _, _ := isData(t, dir)
	// A copy of this binary with one byte more: the same code, another build as far as the
	// pool can tell.
	other := filepath.Join(dir, "other-build")
	if err := os.WriteFile(other, append(readFile(t, os.Args[0]), 0), 0o755); err != nil {
		t.Fatal(err)
	}

	// run runs a command on the pool with poolFlags and compares its evidence.json with the
	// in-process run's (made once per command line).
	inProcess := map[string]string{}
	run := func(name string, args []string, poolFlags ...string) {
		t.Helper()
		key := strings.Join(args, " ")
		if inProcess[key] == "" {
			inProcess[key] = filepath.Join(dir, name+"-in")
			selectOK(t, append(args, "--out", inProcess[key])...)
		}
		out := filepath.Join(dir, name+"-pool")
		stdout := selectOK(t, append(append(args, "--out", out), poolFlags...)...)
		if m := readCount.FindStringSubmatch(stdout); m == nil || m[1] == "0" {
			t.Errorf("%s: the workers read no dataset themselves; stdout:\n%s", name, stdout)
		}
		if !bytes.Equal(withoutCommand(t, filepath.Join(inProcess[key], pipelines.EvidenceJSON)), withoutCommand(t, filepath.Join(out, pipelines.EvidenceJSON))) {
			t.Errorf("%s: evidence.json differs between the in-process run and the worker pool's", name)
		}
	}
	sel := append([]string{"select", "--data", nmf, "--rate", "0.5", "--ranks", "1-3", "--seed", "5", "--no-report"}, cheap...)
	run("select", sel, ext...)
	run("select-gs", append([]string{"select", "--data", gsData, "--rate", "0.5", "--ranks", "1-2", "--no-report"}, cheap...), ext...)
	// The same binary as the command of a PROCESS environment, which prism starts per job (in
	// a script that keeps its output out of the test's).
	processLog, command := filepath.Join(dir, "process.log"), filepath.Join(dir, "process.sh")
	script := fmt.Sprintf("#!/bin/sh\n%s=stirank exec %s \"$@\" >>%s 2>&1\n", roleEnv, os.Args[0], processLog)
	if err := os.WriteFile(command, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	run("select-process", sel, "--environment_type=PROCESS", fmt.Sprintf(`--environment_config={"command": %q}`, command))
	if len(readers(string(readFile(t, processLog)))[nmf]) == 0 {
		t.Errorf("the PROCESS environment's worker did not read %s:\n%s", nmf, readFile(t, processLog))
	}
	run("select-job-server", sel, append([]string{"--runner=universal", "--endpoint=" + endpoint}, ext...)...)
	run("chib", append([]string{"chib", "--data", nmf, "--rate", "0.5", "--ranks", "1-2", "--no-report"}, cheapChib...), ext...)
	run("ais", append([]string{"ais", "--data", nmf, "--rate", "0.5", "--ranks", "1-2", "--no-report"}, cheapAIS...), ext...)
	run("dictionary", []string{"dictionary", "--data", isX, "--dict", "two=" + w2, "--dict", w1, "--method", "ais",
		"--particles", "20", "--stages", "50", "--replicas", "2", "--no-report"}, ext...)
	before := pool.output(t)
	run("other-build", sel, append([]string{"--worker_binary=" + other}, ext...)...)
	if !strings.Contains(strings.TrimPrefix(pool.output(t), before), "the job staged another binary") {
		t.Errorf("the job that staged another build did not run it:\n%s", pool.output(t))
	}

	// reanalyze: two versions of a growing dataset, each analysed in process and on the pool
	// into state directories of their own; the second resumes from the first's chain states,
	// which the workers read from the state directory.
	files := growingCP(t, []int{8, 10, 12}, 2, 3)
	data := filepath.Join(dir, "growing")
	states := map[string]string{"in": filepath.Join(dir, "state-in"), "pool": filepath.Join(dir, "state-pool")}
	re := append([]string{"reanalyze", "--data", data, "--rate", "0.5", "--ranks", "2-3", "--no-report"}, cheap...)
	for k, file := range files {
		if k == 0 {
			selectOK(t, "import", "--in", file, "--out", data)
		} else {
			selectOK(t, "append", "--data", data, "--in", file)
		}
		selectOK(t, append(re, "--state", states["in"])...)
		stdout := selectOK(t, append(append(re, "--state", states["pool"]), ext...)...)
		if m := readCount.FindStringSubmatch(stdout); m == nil || m[1] == "0" || (k > 0) != strings.Contains(stdout, "warm-started") {
			t.Errorf("reanalyze of version %d on the pool: stdout:\n%s", k+1, stdout)
		}
		latest := func(state string) string { return filepath.Join(state, "latest", pipelines.EvidenceJSON) }
		if !bytes.Equal(withoutCommand(t, latest(states["in"])), withoutCommand(t, latest(states["pool"]))) {
			t.Errorf("reanalyze of version %d: latest/evidence.json differs between the in-process run and the worker pool's", k+1)
		}
	}

	// Every job had a worker process of its own, never this one, and each read its data.
	got := readers(pool.output(t))
	pids := map[int]bool{}
	for _, src := range []string{nmf, gsData, isX, w2, w1, data} {
		if len(got[src]) == 0 {
			t.Errorf("no worker process read %s", src)
		}
		for pid := range got[src] {
			pids[pid] = true
		}
	}
	if len(pids) < 2 || pids[os.Getpid()] {
		t.Errorf("worker processes %v (the launcher is %d)", pids, os.Getpid())
	}
	// The pool waits for its workers once they are stopped: none stays a zombie.
	deadline := time.Now().Add(5 * time.Second)
	for z := zombies(t, pool.cmd.Process.Pid); len(z) > 0; z = zombies(t, pool.cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Errorf("the pool's workers %v are zombies", z)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// zombies lists the children of process parent that ended and were not waited for.
func zombies(t *testing.T, parent int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, name := range stats {
		b, err := os.ReadFile(name)
		if err != nil {
			continue // the process ended meanwhile
		}
		// pid (comm) state ppid …, where comm may hold spaces and parentheses.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) > 1 && fields[0] == "Z" && fields[1] == strconv.Itoa(parent) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(name)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestWorkerPoolKill kills the worker process of a job mid-run (once it has read its data, so
// its bundle is under way). prism (v2.77) does not retry the bundle: the job fails with one line
// naming the lost worker, leaving no output directory, and, for reanalyze, the state directory as
// it was; a rerun on the same pool gives the in-process run's results.
func TestWorkerPoolKill(t *testing.T) {
	pool, addr := startWorkerPool(t)
	ext := []string{"--environment_type=EXTERNAL", "--environment_config=" + addr}
	dir := t.TempDir()
	// killed runs args with the pool's flags, kills the worker process that reads data, and
	// returns the exit code and stderr of the run.
	killed := func(data string, args []string) (int, string) {
		t.Helper()
		start := len(pool.output(t))
		type result struct {
			code           int
			stdout, stderr string
		}
		done := make(chan result, 1)
		go func() {
			code, stdout, stderr := selectRun(t, append(args, ext...)...)
			done <- result{code, stdout, stderr}
		}()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if pids := readers(pool.output(t)[start:])[data]; len(pids) > 0 {
				for pid := range pids {
					if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
						t.Errorf("killing worker %d: %v", pid, err)
					}
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no worker read %s within 30 s", data)
			}
			time.Sleep(10 * time.Millisecond)
		}
		r := <-done
		if r.code != 1 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "worker disconnected") || r.stdout != "" {
			t.Errorf("%s with its worker killed: exit %d, stdout %q, stderr %q; want exit 1 and one line naming the lost worker", args[0], r.code, r.stdout, r.stderr)
		}
		return r.code, r.stderr
	}

	data := filepath.Join(dir, "nmf")
	selectOK(t, "generate", "--model", "nmf", "--shape", "12x10", "--rank", "2", "--rate", "0.5", "--out", data)
	sel := append([]string{"select", "--data", data, "--rate", "0.5", "--ranks", "1-3", "--no-report"}, cheap...)
	out := filepath.Join(dir, "out")
	killed(data, append(sel, "--out", out))
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the killed run left %s (%v)", out, err)
	}
	want := filepath.Join(dir, "in-process")
	selectOK(t, append(sel, "--out", want)...)
	selectOK(t, append(append(sel, "--out", out), ext...)...)
	if !bytes.Equal(withoutCommand(t, filepath.Join(want, pipelines.EvidenceJSON)), withoutCommand(t, filepath.Join(out, pipelines.EvidenceJSON))) {
		t.Errorf("select: the rerun after the kill differs from the in-process run")
	}

	// reanalyze: a committed first version, then a run on the second killed, then its rerun.
	files := growingCP(t, []int{8, 10, 12}, 2, 3)
	grown := filepath.Join(dir, "growing")
	ref, state := filepath.Join(dir, "state-ref"), filepath.Join(dir, "state")
	re := append([]string{"reanalyze", "--data", grown, "--rate", "0.5", "--ranks", "2-3", "--no-report"}, cheap...)
	selectOK(t, "import", "--in", files[0], "--out", grown)
	selectOK(t, append(re, "--state", ref)...)
	selectOK(t, append(append(re, "--state", state), ext...)...)
	selectOK(t, "append", "--data", grown, "--in", files[1])
	selectOK(t, append(re, "--state", ref)...)
	current := readFile(t, filepath.Join(state, "current.json"))
	history := readFile(t, filepath.Join(state, "history.csv"))
	killed(grown, append(re, "--state", state))
	checkState(t, state)
	if !bytes.Equal(current, readFile(t, filepath.Join(state, "current.json"))) || !bytes.Equal(history, readFile(t, filepath.Join(state, "history.csv"))) {
		t.Errorf("the killed reanalyze changed the committed run of the state directory")
	}
	selectOK(t, append(append(re, "--state", state), ext...)...)
	if !bytes.Equal(withoutCommand(t, filepath.Join(ref, "latest", pipelines.EvidenceJSON)), withoutCommand(t, filepath.Join(state, "latest", pipelines.EvidenceJSON))) {
		t.Errorf("reanalyze: the rerun after the kill differs from the in-process run")
	}
}

// TestWorkerPoolBadConfig: a pool that is not there, a port that serves something else and a
// pool without an address each give one line, a non-zero exit and no output directory; so do a
// worker pool's own bad flags and a port already taken.
func TestWorkerPoolBadConfig(t *testing.T) {
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	for _, tc := range []struct {
		name string
		code int
		args []string
		want string
	}{
		{"no pool", 1, []string{"--environment_type=EXTERNAL", fmt.Sprintf("--environment_config=localhost:%d", freePort(t))}, "cannot reach the worker pool"},
		{"not a pool", 1, []string{"--environment_type=EXTERNAL", "--environment_config=" + strings.TrimPrefix(web.URL, "http://")}, "is not a Beam worker pool"},
		{"no address", 2, []string{"--environment_type=EXTERNAL"}, "--environment_config=HOST:PORT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			code, stdout, stderr := selectRun(t, append(append([]string{"select", "--out", out}, cheap...), tc.args...)...)
			if code != tc.code || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d (want %d), stdout %q, stderr %q (want one line with %q)", code, tc.code, stdout, stderr, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s left behind (%v)", out, err)
			}
		})
	}
	for _, tc := range []struct {
		name string
		code int
		args []string
		want string
	}{
		{"port 0", 2, []string{"--port", "0"}, "--port 0"},
		{"stray argument", 2, []string{"extra"}, "extra"},
		{"port taken", 1, []string{"--port", web.URL[strings.LastIndex(web.URL, ":")+1:]}, "address already in use"},
	} {
		t.Run("worker-pool "+tc.name, func(t *testing.T) {
			code, stdout, stderr := selectRun(t, append([]string{"worker-pool"}, tc.args...)...)
			if code != tc.code || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d (want %d), stdout %q, stderr %q (want one line with %q)", code, tc.code, stdout, stderr, tc.want)
			}
		})
	}
}

// TestPortableDryRun prints the job a Flink job server would receive, without one.
func TestPortableDryRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	stdout := selectOK(t, append([]string{"select", "--ranks", "1-2", "--out", out, "--runner=flink", "--environment_type=EXTERNAL",
		"--environment_config=localhost:1", "--dry_run"}, cheap...)...)
	if !strings.Contains(stdout, "FanOut") || !strings.Contains(stdout, "beam:env:external:v1") {
		t.Errorf("the dry run printed no pipeline with the fan-out on an external environment:\n%.2000s", stdout)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a dry run left %s (%v)", out, err)
	}
}
