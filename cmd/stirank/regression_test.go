package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// updateRegression rewrites the stored outputs of TestRegression. Numbers may change only on
// purpose: run `go test ./cmd/stirank -run TestRegression -update-regression` and say why in the commit.
var updateRegression = flag.Bool("update-regression", false, "rewrite the stored outputs of TestRegression")

// drawnRate is the prior rate the embedded datasets were drawn with: the cases that give it guard
// the fixed-rate paths, select-default the default prior (--rate auto).
const drawnRate = "0.3"

// regressionCases are command lines whose evidence numbers are stored under testdata/regression:
// every model, every kernel, the parts and subsample schedules, Chib and AIS, on the embedded and
// generated datasets, at budgets small enough for the unit suite.
var regressionCases = []struct {
	name string
	args []string
}{
	{"select-default", []string{"select", "--ranks", "2-4"}},
	{"select-gauss", []string{"select", "--data", "embedded:gauss5000r5", "--ranks", "4-6"}},
	{"select-cp-blocks", append([]string{"select", "--data", "embedded:cp10x15x20r3", "--rate", "0.5", "--ranks", "2-3", "--blocks", "2"}, cheap...)},
	{"select-nmf-subsample", append([]string{"select", "--rate", drawnRate, "--data", "embedded:nmf30x20r3", "--ranks", "2-3", "--subsample", "100"}, cheap...)},
	{"select-gauss-mala", append([]string{"select", "--data", "embedded:gauss5000r5", "--ranks", "5", "--sampler", "mala", "--subsample", "0"}, cheap...)},
	{"select-sgld", append([]string{"select", "--rate", drawnRate, "--ranks", "3", "--sampler", "sgld", "--step", "0.0005"}, cheap...)},
	{"select-psgld", append([]string{"select", "--rate", drawnRate, "--ranks", "3", "--sampler", "psgld", "--step", "0.0001"}, cheap...)},
	{"select-rsgld", append([]string{"select", "--rate", drawnRate, "--ranks", "3", "--sampler", "rsgld"}, cheap...)},
	{"select-sghmc", append([]string{"select", "--rate", drawnRate, "--ranks", "3", "--sampler", "sghmc", "--step", "0.0005"}, cheap...)},
	{"select-sgnht", append([]string{"select", "--rate", drawnRate, "--ranks", "3", "--sampler", "sgnht", "--step", "0.0005"}, cheap...)},
	{"select-sghmc-em", append([]string{"select", "--rate", drawnRate, "--ranks", "3", "--sampler", "sghmc-em", "--step", "0.0005"}, cheap...)},
	{"select-sgnht-em", append([]string{"select", "--rate", drawnRate, "--ranks", "3", "--sampler", "sgnht-em", "--step", "0.0005"}, cheap...)},
	{"select-sgnphmc", append([]string{"select", "--rate", drawnRate, "--ranks", "3", "--sampler", "sgnphmc", "--step", "0.0005"}, cheap...)},
	{"select-sgnphmc-em", append([]string{"select", "--rate", drawnRate, "--ranks", "3", "--sampler", "sgnphmc-em", "--step", "0.0005"}, cheap...)},
	{"chib-nmf", append([]string{"chib", "--rate", drawnRate, "--data", "embedded:nmf30x20r3", "--ranks", "2-3"}, cheapChib...)},
	{"ais-cp", append([]string{"ais", "--data", "embedded:cp10x15x20r3", "--rate", "0.5", "--ranks", "2", "--replicas", "2"}, cheapAIS...)},
	{"ais-reference", append([]string{"ais", "--rate", drawnRate, "--data", "embedded:nmf30x20r3", "--ranks", "3", "--replicas", "2", "--reference-burnin", "100", "--reference-sweeps", "100"}, cheapAIS...)},
	{"select-reference", []string{"select", "--rate", drawnRate, "--reference", "--ranks", "2-3", "--temperatures", "6", "--steps", "60", "--burnin", "20"}},
	{"select-anneal", []string{"select", "--rate", drawnRate, "--anneal", "--ranks", "2", "--particles", "16", "--steps", "40"}},
}

// regressionNumbers is what TestRegression compares: every number of evidence.json that the
// estimators compute, none of what describes the run.
type regressionNumbers struct {
	BestRank    int               `json:"best_rank"`
	Ranks       []json.RawMessage `json:"ranks"`
	Steps       int64             `json:"steps"`
	CellEvals   int64             `json:"cell_evals"`
	Divergences []string          `json:"divergences"`
}

// TestRegression runs stirank select, chib and ais on the regression cases and compares the
// numbers they write, bit for bit, with the stored ones: a refactor must not move them, and a
// change that does must update them deliberately (-update-regression).
func TestRegression(t *testing.T) {
	// The commands reset every flag of the process to its default (runners.ResetFlags).
	update := *updateRegression
	for _, tc := range regressionCases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append(append([]string{}, tc.args...), "--out", out)
			if tc.args[0] == "select" && !strings.Contains(strings.Join(tc.args, " "), "--quiet") {
				args = append(args, "--quiet")
			}
			selectOK(t, args...)
			compareRegression(t, tc.name, strings.Join(tc.args, " "), filepath.Join(out, "evidence.json"), update)
		})
	}
	// Warm starts: a re-analysis of grown data resumes every chain from the states of the run
	// before (rung mapping, settling of new rows, the basin check).
	t.Run("reanalyze-warm", func(t *testing.T) {
		state, args := reanalyzeTwice(t)
		compareRegression(t, "reanalyze-warm", strings.Join(args, " "), filepath.Join(state, "latest", "evidence.json"), update)
	})
}

// compareRegression compares the numbers of the evidence.json file with those stored under name,
// or stores them when update is set.
func compareRegression(t *testing.T, name, command, file string, update bool) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var got regressionNumbers
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	gotJSON, err := json.MarshalIndent(got, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	stored := filepath.Join("testdata", "regression", name+".json")
	if update {
		if err := os.MkdirAll(filepath.Dir(stored), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(stored, append(gotJSON, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(stored)
	if err != nil {
		t.Fatalf("%v (run with -update-regression to store the outputs)", err)
	}
	if !bytes.Equal(bytes.TrimSpace(want), gotJSON) {
		t.Errorf("stirank %s: numbers differ from %s:\n%s", command, stored, firstDifference(string(want), string(gotJSON)))
	}
}

// firstDifference shows the first line where two texts differ.
func firstDifference(want, got string) string {
	w, g := strings.Split(strings.TrimSpace(want), "\n"), strings.Split(strings.TrimSpace(got), "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			return "line " + strconv.Itoa(i+1) + ":\n  stored: " + w[i] + "\n  now:    " + g[i]
		}
	}
	return "lengths differ: stored " + strconv.Itoa(len(w)) + " lines, now " + strconv.Itoa(len(g))
}
