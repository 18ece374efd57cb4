package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/pipelines"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/testdata"
)

// selectRun runs one stirank command line in this process and returns its exit code and output.
func selectRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// selectOK runs a command line that must succeed and returns its stdout.
func selectOK(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := selectRun(t, args...)
	if code != 0 {
		t.Fatalf("stirank %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return stdout
}

func readResult(t *testing.T, dir string) pipelines.Result {
	t.Helper()
	r, err := pipelines.ReadResult(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// cheap is a small configuration for tests of the plumbing rather than of the estimates.
var cheap = []string{"--temperatures", "6", "--ladder", "power:4", "--steps", "60", "--burnin", "20", "--quiet"}

// TestSelectRecoversRank selects the rank of the embedded NMF and CP test datasets (true rank
// 3) through the whole command with the default configuration (sti.Default): embedded Parquet
// data, the Beam pipeline on prism, evidence.json, evidence.csv and the table. The first case is
// the command with no flags but --out, as a new user would run it.
func TestSelectRecoversRank(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model string
		args  []string
	}{
		{"default", "nmf", []string{"--ranks", "1-5"}},
		{"nmf30x20r3", "nmf", []string{"--data", "embedded:nmf30x20r3", "--ranks", "1-5"}},
		{"cp10x15x20r3", "cp", []string{"--data", "embedded:cp10x15x20r3", "--rate", "0.5", "--ranks", "2-4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			stdout := selectOK(t, append([]string{"select", "--out", out, "--quiet"}, tc.args...)...)
			t.Log("\n" + stdout)
			if !verdictIs(stdout, 3) {
				t.Errorf("stdout does not end with the verdict of rank 3:\n%s", stdout)
			}
			r := readResult(t, out)
			if r.BestRank != 3 || r.Model != tc.model {
				t.Errorf("best rank %d of %s, want 3 of %s", r.BestRank, r.Model, tc.model)
			}
			var cfg sti.Config
			if err := r.DecodeConfig(&cfg); err != nil {
				t.Fatal(err)
			}
			for _, rr := range r.Ranks {
				if rr.Rank != 3 && !(rr.PosteriorProb < 0.05) {
					t.Errorf("rank %d has posterior probability %v", rr.Rank, rr.PosteriorProb)
				}
				// The small sets' exact rank-1 curves need no steeper ladder than the default,
				// which at rank 1 has twice the rungs (sti.Config.Rank1).
				T := 30
				if rr.Rank == 1 {
					T = 60
				}
				if want := evidence.Power(T, evidence.DefaultPower); len(rr.Ladder) != T+1 || rr.Ladder[1].T != want[1] || rr.Ladder[T-1].T != want[T-1] {
					t.Errorf("rank %d: %d rungs, want the %d of power:6", rr.Rank, len(rr.Ladder), T+1)
				}
			}
			if r.Data.Checksum == "" || r.Seed != 1 || r.Method != "sti" || cfg.Sampler != "lmsgld" || len(cfg.Ladder) != 31 || !cfg.FitLadder || cfg.Rank1 == nil || cfg.Rank1.Rungs != 60 ||
				r.LadderSpec != "power:6 to 16 fitted to the data with 30 temperatures, 60 at rank 1" || r.Steps <= 0 {
				t.Errorf("result lacks provenance: %+v", r)
			}
			csv, err := os.ReadFile(filepath.Join(out, pipelines.EvidenceCSV))
			if err != nil {
				t.Fatal(err)
			}
			if lines := strings.Count(string(csv), "\n"); lines != len(r.Ranks)+1 {
				t.Errorf("evidence.csv has %d lines, want %d", lines, len(r.Ranks)+1)
			}
		})
	}
}

// On a 120×120 matrix with counts in the hundreds the workers fit a steeper ladder than the
// default's (sti.Config.FitLadder), every rank's rungs are where its chains ran, and a --ladder
// given is run as given, at rank 1 too.
func TestSelectFitsTheLadder(t *testing.T) {
	data := filepath.Join(t.TempDir(), "d")
	mustExec(t, "generate", "--model", "nmf", "--shape", "120x120", "--rank", "2", "--rate", "0.1", "--seed", "3", "--out", data)
	short := []string{"--data", data, "--rate", "0.1", "--ranks", "1", "--steps", "4", "--burnin", "1", "--chains", "1", "--descent", "0", "--quiet"}
	power6 := evidence.Power(30, evidence.DefaultPower)
	for _, c := range []struct {
		name   string
		args   []string
		fitted bool
	}{
		{"default", nil, true},
		{"given", []string{"--ladder", "power:6"}, false},
	} {
		out := filepath.Join(t.TempDir(), "out")
		selectOK(t, append(append([]string{"select", "--out", out, "--no-report"}, short...), c.args...)...)
		r := readResult(t, out)
		var cfg sti.Config
		if err := r.DecodeConfig(&cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.FitLadder != c.fitted || strings.Contains(r.LadderSpec, "fitted") != c.fitted {
			t.Errorf("%s: fit_ladder %v, ladder_spec %q", c.name, cfg.FitLadder, r.LadderSpec)
		}
		if cfg.Start != sti.ModesStart || cfg.Descent != 0 {
			t.Errorf("%s: --descent 0 runs the %q start stage with %d sweeps a rung, not every chain from its mode", c.name, cfg.Start, cfg.Descent)
		}
		// --steps, like any ladder or chain length given, applies to rank 1 too.
		if cfg.Rank1 != nil || strings.Contains(r.LadderSpec, "rank 1") {
			t.Errorf("%s: rank 1 kept a budget of its own (%+v, %q)", c.name, cfg.Rank1, r.LadderSpec)
		}
		for _, rr := range r.Ranks {
			if len(rr.Ladder) != 31 || (rr.Ladder[1].T < power6[1]) != c.fitted || rr.Ladder[30].T != 1 {
				t.Errorf("%s: rank %d ran %d rungs, the first above 0 at %v (power:6: %v)", c.name, rr.Rank, len(rr.Ladder), rr.Ladder[1].T, power6[1])
			}
		}
	}
}

// --start names the stage every rank's chains start from: the modes stage on nmf's Gibbs chains,
// and the annealed one, which is --anneal; -h -all lists every registered stage.
func TestSelectStartNamesTheStage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{append([]string{"--start", "modes"}, cheap...), sti.ModesStart},
		{[]string{"--start", "anneal", "--particles", "16", "--steps", "40", "--quiet"}, sti.AnnealStart},
	} {
		out := filepath.Join(t.TempDir(), "out")
		selectOK(t, append([]string{"select", "--out", out, "--no-report", "--ranks", "2"}, c.args...)...)
		r := readResult(t, out)
		var cfg sti.Config
		if err := r.DecodeConfig(&cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.Start != c.want || (c.want == sti.AnnealStart) != (r.Ranks[0].Replicas > 0) {
			t.Errorf("--start %s ran the %q stage (%d annealed replicas)", c.want, cfg.Start, r.Ranks[0].Replicas)
		}
	}
	all := helpOf(t, "select", "-h", "-all")
	for _, name := range sti.StartNames() {
		if !regexp.MustCompile(`-start string\n[^\n]*` + name).MatchString(all) {
			t.Errorf("select -h -all does not list the start stage %s under --start", name)
		}
	}
}

// --time sizes round 0 by the time and the ranks (sti.TimedRoundWork), which the run's evidence.json
// records in its configuration; without it the configuration leaves round 0 to its default.
func TestSelectTimeSizesRoundZero(t *testing.T) {
	for _, c := range []struct {
		args []string
		want float64
	}{
		{[]string{"--time", "10s"}, sti.TimedRoundWork(10, 2)},
		{nil, 0},
	} {
		out := filepath.Join(t.TempDir(), "out")
		selectOK(t, append(append([]string{"select", "--out", out, "--no-report", "--ranks", "2,3"}, cheap...), c.args...)...)
		var cfg sti.Config
		if err := readResult(t, out).DecodeConfig(&cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.RoundWork != c.want {
			t.Errorf("select %v: round work %v, want %v", c.args, cfg.RoundWork, c.want)
		}
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// goBuild builds a main package into dir and returns the binary's path.
func goBuild(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		goCmd = "go"
	}
	build := exec.Command(goCmd, "build", "-o", bin, pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// startPrism builds Beam's prism command and starts it as a standalone job server on a loopback
// port; it is stopped when the test ends.
func startPrism(t *testing.T) string {
	t.Helper()
	bin := goBuild(t, t.TempDir(), "prism", "github.com/apache/beam/sdks/v2/go/cmd/prism")
	port := freePort(t)
	cmd := exec.Command(bin, fmt.Sprintf("--job_port=%d", port), "--serve_http=false", "--log_level=error")
	// The workers it starts run here (Beam's boot loader writes pipeline_options.json into its
	// working directory).
	cmd.Dir = t.TempDir()
	startProcess(t, "prism job server", cmd)
	endpoint := fmt.Sprintf("localhost:%d", port)
	waitListening(t, endpoint)
	return endpoint
}

// workerEnvironment builds what a PROCESS environment needs to start stirank as a separate
// worker process: Beam's Go boot loader (which fetches the worker binary from the job server
// and starts it with --worker), a stirank binary to be that worker, and a wrapper for the boot
// loader that strips the quotes prism 2.77 puts around --id (prism passes --id='ID' to the
// command without a shell, so the boot loader would see the quotes as part of the ID), and that
// gives it a directory of the test's own to stage the binary in (its default, /tmp/staged, is
// shared by every run on the machine and never emptied).
func workerEnvironment(t *testing.T) (bootCommand, workerBinary string) {
	t.Helper()
	dir := t.TempDir()
	boot := goBuild(t, dir, "boot", "github.com/apache/beam/sdks/v2/go/container")
	worker := goBuild(t, dir, "stirank", "github.com/stirank/stirank/cmd/stirank")
	// A worker may still be ending when the test ends, so the staging directory is removed
	// without failing the test (t.TempDir would).
	persist, err := os.MkdirTemp("", "stirank-boot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(persist) })
	wrapper := filepath.Join(dir, "boot.sh")
	script := "#!/bin/sh\nfor a in \"$@\"; do\n  shift\n  set -- \"$@\" \"$(printf '%s' \"$a\" | sed \"s/^--id='\\(.*\\)'$/--id=\\1/\")\"\ndone\nexec " + boot + " \"$@\" --semi_persist_dir=" + persist + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// The boot loader copies the worker binary into a directory of its own under /tmp (its
	// staging directory may be mounted noexec) and never removes it: every run of this test
	// left 140 MB there, and a machine that runs the suite often filled its disk.
	start := time.Now().Add(-time.Second)
	t.Cleanup(func() { removeWorkerCopies(t, worker, start) })
	return wrapper, worker
}

// removeWorkerCopies removes the directories /tmp/bin* made since start that hold a copy of the
// worker binary, the boot loader's copies of it.
func removeWorkerCopies(t *testing.T, worker string, start time.Time) {
	want, err := os.ReadFile(worker)
	if err != nil {
		t.Error(err)
		return
	}
	dirs, _ := filepath.Glob("/tmp/bin*")
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.ModTime().Before(start) {
			continue
		}
		copied := filepath.Join(d, "worker")
		if fi, err := os.Stat(copied); err != nil || fi.Size() != int64(len(want)) {
			continue
		}
		if got, err := os.ReadFile(copied); err == nil && bytes.Equal(got, want) {
			if err := os.RemoveAll(d); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestSelectRunners runs the same selection on in-process prism; on a standalone prism job
// server through --runner=universal, with a loopback worker and with stirank started as a
// separate worker process by Beam's boot loader (the path Dataflow and Flink workers take); and
// on the direct runner: the numbers in evidence.json must be the same.
func TestSelectRunners(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	selectOK(t, "generate", "--model", "nmf", "--shape", "12x10", "--rank", "2", "--rate", "0.5", "--out", data)
	args := append([]string{"select", "--data", data, "--rate", "0.5", "--ranks", "1-3", "--seed", "5"}, cheap...)
	outs := map[string]string{}
	run := func(name string, extra ...string) pipelines.Result {
		out := filepath.Join(dir, name)
		outs[name] = out
		selectOK(t, append(append(append([]string{}, args...), "--out", out), extra...)...)
		return readResult(t, out)
	}
	want := run("prism")
	endpoint := startPrism(t)
	boot, worker := workerEnvironment(t)
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"universal", []string{"--runner=universal", "--endpoint=" + endpoint, "--environment_type=LOOPBACK"}},
		{"worker-process", []string{"--runner=universal", "--endpoint=" + endpoint, "--environment_type=PROCESS",
			`--environment_config={"command": "` + boot + `"}`, "--worker_binary=" + worker}},
		{"direct", []string{"--runner=direct"}},
		// After runs with other flags, the default runner is prism in this process again.
		{"prism-again", nil},
	} {
		got := run(tc.name, tc.flags...)
		// The command lines differ in --out and the runner flags; the rest must not.
		got.Command = want.Command
		if !reflect.DeepEqual(got, want) {
			gj, _ := json.Marshal(got.Ranks)
			wj, _ := json.Marshal(want.Ranks)
			t.Errorf("%s: evidence differs from prism's:\n%s\n%s", tc.name, gj, wj)
		}
		a := withoutCommand(t, filepath.Join(outs[tc.name], pipelines.EvidenceJSON))
		b := withoutCommand(t, filepath.Join(outs["prism"], pipelines.EvidenceJSON))
		if !bytes.Equal(a, b) {
			t.Errorf("%s: evidence.json differs from prism's byte for byte", tc.name)
		}
	}
}

// TestSelectDataflowDryRun prints the Dataflow job without submitting it.
func TestSelectDataflowDryRun(t *testing.T) {
	code, stdout, stderr := selectRun(t, "select", "--ranks", "1-2", "--out", "gs://bucket/out",
		"--runner=dataflow", "--dry_run", "--project=demo", "--region=us-central1",
		"--staging_location=gs://bucket/staging", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var job struct {
		Name, ProjectID, Type string
		Environment           map[string]any
	}
	if err := json.Unmarshal([]byte(stdout), &job); err != nil {
		t.Fatalf("stdout is not a JSON job: %v\n%.500s", err, stdout)
	}
	if job.ProjectID != "demo" || job.Type != "JOB_TYPE_BATCH" || job.Environment == nil {
		t.Errorf("job: %+v", job)
	}
	// Local paths cannot reach Dataflow workers.
	code, _, stderr = selectRun(t, "select", "--out", filepath.Join(t.TempDir(), "out"),
		"--runner=dataflow", "--dry_run", "--project=demo", "--region=us-central1", "--staging_location=gs://bucket/staging")
	if code != 2 || !strings.Contains(stderr, "gs://") {
		t.Errorf("local --out with dataflow: exit %d, %q", code, stderr)
	}
}

// TestSelectBadInput: every bad flag or dataset gives one line on stderr, a non-zero exit code
// and no output directory.
func TestSelectBadInput(t *testing.T) {
	dir := t.TempDir()
	gauss := filepath.Join(dir, "gauss")
	selectOK(t, "generate", "--model", "gauss", "--shape", "50", "--rank", "2", "--out", gauss)
	corrupt := filepath.Join(dir, "corrupt")
	selectOK(t, "generate", "--model", "nmf", "--shape", "6x5", "--rank", "2", "--out", corrupt)
	shards, _ := filepath.Glob(filepath.Join(corrupt, "data", "*.parquet"))
	if len(shards) == 0 {
		t.Fatal("no shard written")
	}
	if err := os.WriteFile(shards[0], []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	notEmpty := filepath.Join(dir, "full")
	os.MkdirAll(notEmpty, 0o755)
	os.WriteFile(filepath.Join(notEmpty, "x"), nil, 0o644)

	for _, tc := range []struct {
		name string
		code int
		args []string
		want string
	}{
		{"no out", 2, []string{}, "--out"},
		{"bad ranks", 2, []string{"--ranks", "3-1"}, "--ranks"},
		{"zero rank", 2, []string{"--ranks", "0-2"}, "--ranks 0-2: rank 0 is not a model of nmf"},
		{"zero rank of gauss", 2, []string{"--data", gauss, "--ranks", "0"}, "--ranks 0: rank 0 is not a model of gauss"},
		{"junk ranks", 2, []string{"--ranks", "a"}, "--ranks"},
		{"unknown model", 2, []string{"--model", "pca"}, "pca"},
		{"model vs data", 1, []string{"--model", "cp"}, "3-way"},
		{"gauss flag on nmf", 2, []string{"--mu", "3"}, "--mu"},
		{"rate and rates", 2, []string{"--rate", "1", "--rates", "1,1"}, "--rate"},
		{"rates count", 2, []string{"--rates", "1,2,3"}, "--rates"},
		{"negative rate", 2, []string{"--rate", "-1"}, "rate"},
		{"bad param", 2, []string{"--param", "cube"}, "cube"},
		{"bad ladder", 2, []string{"--ladder", "cubic"}, "ladder"},
		{"ladder list", 2, []string{"--ladder", "list:0,0.5,0.4,1"}, "ladder"},
		{"bad sampler", 2, []string{"--sampler", "hmc"}, "hmc"},
		{"burnin", 2, []string{"--steps", "50", "--burnin", "50"}, "burn"},
		{"chains", 2, []string{"--chains", "0"}, "chains"},
		{"negative descent", 2, []string{"--descent", "-1"}, "--descent"},
		{"budget not a power of two", 2, []string{"--budget", "3"}, "--budget 3: want a power of two"},
		{"negative time", 2, []string{"--time", "-5m"}, "--time -5m0s: want a positive duration"},
		{"time without rounds", 2, []string{"--reference", "--time", "1m"}, "--time applies to a race"},
		{"descent with SG-MCMC", 2, []string{"--sampler", "lmsgld", "--descent", "5"}, "--descent"},
		{"descent on gauss", 2, []string{"--data", gauss, "--descent", "5"}, "--descent"},
		{"stein with SG-MCMC", 2, []string{"--sampler", "lmsgld", "--stein=false"}, "--stein"},
		{"reference on gauss", 2, []string{"--data", gauss, "--reference"}, "--reference runs on"},
		{"reference and anneal", 2, []string{"--reference", "--anneal"}, "not both"},
		{"unknown start", 2, []string{"--start", "nope"}, `--start "nope": no such start stage (there are ` + strings.Join(sti.StartNames(), ", ")},
		{"start and anneal", 2, []string{"--anneal", "--start", "modes"}, "not both"},
		{"start and descent", 2, []string{"--start", "modes", "--descent", "5"}, "not both"},
		{"descent start on gauss", 2, []string{"--data", gauss, "--start", "descent"}, `start stage "descent"`},
		{"start with reference", 2, []string{"--reference", "--start", "prior"}, "--start"},
		{"reference under auto", 2, []string{"--reference"}, "give --rate R"},
		{"reference with SG-MCMC", 2, []string{"--reference", "--sampler", "lmsgld"}, "--reference"},
		{"subsample and blocks", 2, []string{"--subsample", "10", "--blocks", "2"}, "--subsample"},
		{"blocks on gauss", 2, []string{"--data", gauss, "--blocks", "2"}, "--blocks"},
		{"unknown flag", 2, []string{"--colour", "red"}, "colour"},
		{"stray argument", 2, []string{"extra"}, "extra"},
		{"unknown runner", 2, []string{"--runner", "spaceship"}, "spaceship"},
		{"universal without endpoint", 2, []string{"--runner", "universal"}, "--endpoint"},
		{"no job server", 1, []string{"--runner", "universal", "--endpoint", fmt.Sprintf("localhost:%d", freePort(t))}, "job server"},
		{"missing data", 2, []string{"--data", filepath.Join(dir, "nothing")}, "nothing"},
		{"missing embedded data", 2, []string{"--data", "embedded:nothing"}, "nothing"},
		{"not a dataset", 1, []string{"--data", dir}, "manifest"},
		{"corrupt shard", 1, []string{"--data", corrupt}, "shard"},
		{"out not empty", 2, []string{"--out", notEmpty}, "not empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"select", "--out", out}, cheap...)
			if tc.name == "no out" {
				args = []string{"select"}
			}
			code, stdout, stderr := selectRun(t, append(args, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, stderr)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "stirank select: ") {
				t.Errorf("stderr is not one line: %q", stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not mention %q", stderr, tc.want)
			}
			if stdout != "" {
				t.Errorf("stdout: %q", stdout)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was created", out)
			}
		})
	}
}

// TestSelectFailureLeavesNoOutDir: a run that fails inside the pipeline (every chain diverges)
// exits 1 with one line and leaves no output directory.
func TestSelectFailureLeavesNoOutDir(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := selectRun(t, "select", "--ranks", "1", "--temperatures", "2", "--chains", "1",
		"--steps", "20", "--burnin", "2", "--step", "1e6", "--sampler", "sgld", "--param", "direct", "--out", out, "--quiet")
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "diverged") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was created", out)
	}
}

func TestParseRanks(t *testing.T) {
	for in, want := range map[string][]int{
		"1-10":    {1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		"1,3,5":   {1, 3, 5},
		"2-4,8":   {2, 3, 4, 8},
		"8, 2-3":  {2, 3, 8},
		"3,3,2-3": {2, 3},
		"7":       {7},
		"0":       {0},
		"0-2":     {0, 1, 2},
	} {
		got, err := parseRanks(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parseRanks(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "-1-2", "4-2", "1-", "x", "1,,2", "1-2-3"} {
		if got, err := parseRanks(in); err == nil {
			t.Errorf("parseRanks(%q) = %v, want an error", in, got)
		}
	}
}

func TestProgressLine(t *testing.T) {
	if got := compactRanks([]int{1, 2, 3, 5, 7, 8}); got != "1-3,5,7-8" {
		t.Errorf("compactRanks: %q", got)
	}
}

// TestSelectExact: --exact prints the exact evidence of rank 1 of the embedded default data
// (Poisson NMF) and the estimate's distance from it, nothing for rank 2, which has none, and the
// table still ends with the best rank.
func TestSelectExact(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	stdout := selectOK(t, append([]string{"select", "--ranks", "1-2", "--exact", "--no-report", "--out", out}, cheap...)...)
	ds, err := tensorio.ReadFS(testdata.FS, testdata.Default, tensorio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := readResult(t, out)
	// The exact value under the run's prior, the default hyperprior's.
	if !r.Prior.Auto("rates") {
		t.Errorf("prior %v, want the default %s", r.Prior, models.AutoWord)
	}
	info, err := models.Lookup(r.Model)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := info.Exact(ds.Tensor, 1, models.Spec{Name: r.Model, Params: r.Prior})
	if err != nil {
		t.Fatal(err)
	}
	d := float64(r.Ranks[0].LogEvidence) - exact
	want := fmt.Sprintf("exact log p(X|R=1) = %.2f; estimate − exact = %+.2f (%+.1f s.e.)\n", exact, d, d/float64(r.Ranks[0].StdErr))
	if !strings.Contains(stdout, want) || strings.Contains(stdout, "R=2") || !verdictIs(stdout, int(r.BestRank)) {
		t.Errorf("stdout:\n%s\nwant the line\n%s", stdout, want)
	}
}

// TestListedZerosChangeNothing runs the default race on a count matrix imported from a CSV that
// lists every cell, zeros included, as most exports do, and from one that lists its non-zeros
// only: the same numbers to the last bit and the same work, whatever the file held.
func TestListedZerosChangeNothing(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d")
	mustExec(t, "generate", "--model", "nmf", "--shape", "12x9", "--rank", "2", "--rate", "0.5", "--seed", "4", "--out", data)
	cells := readDataset(t, data).Tensor
	full, sparse := filepath.Join(dir, "full.csv"), filepath.Join(dir, "sparse.csv")
	var all, nz strings.Builder
	all.WriteString("i,j,value\n")
	nz.WriteString("i,j,value\n")
	value := map[[2]int]float64{}
	for n := range cells.NNZ() {
		ix := cells.Index(n, nil)
		value[[2]int{ix[0], ix[1]}] = cells.Values[n]
	}
	for i := range 12 {
		for j := range 9 {
			v := value[[2]int{i, j}]
			fmt.Fprintf(&all, "%d,%d,%g\n", i, j, v)
			if v != 0 {
				fmt.Fprintf(&nz, "%d,%d,%g\n", i, j, v)
			}
		}
	}
	if err := os.WriteFile(full, []byte(all.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sparse, []byte(nz.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var results []pipelines.Result
	for _, in := range []string{full, sparse} {
		ds, out := in+".d", in+".out"
		mustExec(t, "import", "--in", in, "--out", ds)
		selectOK(t, "select", "--data", ds, "--ranks", "1-3", "--rate", "0.5", "--temperatures", "8", "--steps", "40", "--burnin", "8", "--quiet", "--no-report", "--out", out)
		results = append(results, readResult(t, out))
	}
	if results[0].Data.Cells != 108 || results[1].Data.Cells == 108 {
		t.Fatalf("stored cells %d and %d: the first file should list all 108", results[0].Data.Cells, results[1].Data.Cells)
	}
	for i, a := range results[0].Ranks {
		b := results[1].Ranks[i]
		if a.LogEvidence != b.LogEvidence || a.StdErr != b.StdErr || a.Steps != b.Steps || a.Round != b.Round || a.Left != b.Left {
			t.Errorf("rank %d: %v ± %v in %d steps (round %d, %q) with the zeros listed, %v ± %v in %d (round %d, %q) without",
				a.Rank, a.LogEvidence, a.StdErr, a.Steps, a.Round, a.Left, b.LogEvidence, b.StdErr, b.Steps, b.Round, b.Left)
		}
	}
}

// verdictIs reports whether stdout ends with the verdict of rank: a last line "best rank: R, …".
func verdictIs(stdout string, rank int) bool {
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	return strings.HasPrefix(lines[len(lines)-1], fmt.Sprintf("best rank: %d, ", rank))
}
