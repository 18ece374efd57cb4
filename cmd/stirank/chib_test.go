package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stirank/stirank/pipelines"
)

// baselineRun runs one stirank command line in this process.
func baselineRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func baselineOK(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := baselineRun(t, args...)
	if code != 0 {
		t.Fatalf("stirank %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return stdout
}

// Short runs for tests of the plumbing.
var (
	cheapChib = []string{"--burnin", "200", "--samples", "400", "--reduced-burnin", "20", "--reduced-samples", "200", "--starts", "1"}
	cheapAIS  = []string{"--temperatures", "200"}
)

// TestBaselineCommands runs stirank chib and stirank ais on generated NMF and CP datasets through
// the Beam pipeline: evidence.json in stirank select's shape (pipelines.ReadResult reads it) with
// the method and its configuration, evidence.csv, the table on stdout, estimates of the two
// methods that agree, and bit-identical reruns.
func TestBaselineCommands(t *testing.T) {
	dir := t.TempDir()
	nmf := filepath.Join(dir, "nmf")
	baselineOK(t, "generate", "--model", "nmf", "--shape", "6x5", "--rank", "2", "--rate", "1", "--seed", "3", "--out", nmf)
	cp := filepath.Join(dir, "cp")
	baselineOK(t, "generate", "--model", "cp", "--shape", "4x3x3", "--rank", "2", "--rate", "1", "--seed", "3", "--out", cp)
	for _, data := range []string{nmf, cp} {
		est := map[string]pipelines.Result{}
		for _, method := range []string{"chib", "ais"} {
			out := filepath.Join(dir, filepath.Base(data)+"-"+method)
			args := append([]string{method, "--data", data, "--ranks", "1-3", "--rate", "1", "--out", out}, map[string][]string{"chib": cheapChib, "ais": cheapAIS}[method]...)
			stdout := baselineOK(t, args...)
			if !strings.Contains(stdout, "best rank: ") || !strings.HasPrefix(stdout, method+", ") {
				t.Errorf("%s stdout: %q", method, stdout)
			}
			r, err := pipelines.ReadResult(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			if r.Method != method || r.BestRank == pipelines.NoRank || len(r.Ranks) != 3 || r.Model != map[string]string{nmf: "nmf", cp: "cp"}[data] {
				t.Errorf("%s: method %q, best %d, %d ranks, model %q", method, r.Method, r.BestRank, len(r.Ranks), r.Model)
			}
			// The configuration recorded is the method's, with the flags given.
			var recorded map[string]any
			if err := r.DecodeConfig(&recorded); err != nil || recorded["seed"] != float64(1) ||
				(method == "chib") != (recorded["reduced_samples"] != nil) || (method == "ais") != (recorded["temperatures"] != nil) {
				t.Errorf("%s: configuration recorded: %v (%v)", method, recorded, err)
			}
			if _, err := os.Stat(filepath.Join(out, pipelines.EvidenceCSV)); err != nil {
				t.Error(err)
			}
			est[method] = r
			// A rerun from the same seed writes the same file.
			again := out + "-again"
			baselineOK(t, append(args[:len(args):len(args)], "--out", again)...)
			a := withoutCommand(t, filepath.Join(out, pipelines.EvidenceJSON))
			b := withoutCommand(t, filepath.Join(again, pipelines.EvidenceJSON))
			if !bytes.Equal(a, b) {
				t.Errorf("%s: rerun wrote a different evidence.json", method)
			}
		}
		for i := range 3 {
			c, a := est["chib"].Ranks[i], est["ais"].Ranks[i]
			tol := 4*math.Hypot(float64(c.StdErr), float64(a.StdErr)) + 0.5
			if d := math.Abs(float64(c.LogEvidence - a.LogEvidence)); d > tol {
				t.Errorf("%s rank %d: chib %.2f ± %.2f, ais %.2f ± %.2f", filepath.Base(data), c.Rank, c.LogEvidence, c.StdErr, a.LogEvidence, a.StdErr)
			}
		}
	}
}

func TestBaselineBadInput(t *testing.T) {
	dir := t.TempDir()
	gauss := filepath.Join(dir, "gauss")
	baselineOK(t, "generate", "--model", "gauss", "--shape", "20", "--rank", "2", "--out", gauss)
	for _, tc := range []struct {
		name, cmd string
		code      int
		args      []string
		want      string
	}{
		{"no out", "chib", 2, nil, "--out"},
		{"bad ranks", "chib", 2, []string{"--ranks", "3-1"}, "--ranks"},
		{"zero rank", "ais", 2, []string{"--ranks", "0-2"}, "--ranks 0-2: rank 0 is not a model of nmf"},
		{"replicas", "ais", 2, []string{"--replicas", "0"}, "--replicas"},
		{"gauss data", "chib", 1, []string{"--data", gauss}, "nmf"},
		{"gauss model", "ais", 2, []string{"--model", "gauss"}, "gauss"},
		{"model vs data", "chib", 1, []string{"--model", "cp"}, "3-way"},
		{"rate and rates", "chib", 2, []string{"--rate", "1", "--rates", "1,1"}, "--rate"},
		{"samples", "chib", 2, []string{"--samples", "1"}, "samples"},
		{"paper and burnin", "chib", 2, []string{"--paper", "--burnin", "10"}, "--paper"},
		{"schedule", "ais", 2, []string{"--schedule", "cubic:3"}, "--schedule"},
		{"schedule value", "ais", 2, []string{"--schedule", "power:-1"}, "--schedule"},
		{"temperatures", "ais", 2, []string{"--temperatures", "0"}, "temperatures"},
		{"reference burn-in alone", "ais", 2, []string{"--reference-burnin", "10"}, "--reference-burnin needs --reference-sweeps"},
		{"reference rank", "ais", 2, []string{"--reference-sweeps", "10", "--ranks", "2-13"}, "--ranks 2-13: AIS from a reference runs up to rank 12"},
		{"reference sweeps", "ais", 2, []string{"--reference-sweeps", "1"}, "reference burn-in 1000 and sweeps 1"},
		{"unknown flag", "ais", 2, []string{"--colour", "red"}, "colour"},
		{"unknown runner", "chib", 2, []string{"--runner", "spaceship"}, "spaceship"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := []string{tc.cmd, "--out", out}
			if tc.name == "no out" {
				args = []string{tc.cmd}
			}
			code, stdout, stderr := baselineRun(t, append(args, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, stderr)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "stirank "+tc.cmd+": ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q: want one line mentioning %q", stderr, tc.want)
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
