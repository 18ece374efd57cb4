package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/pipelines"
	"github.com/stirank/stirank/report"
)

// withoutCommand returns the evidence.json file with its command line removed: reruns that
// differ only in where they write (--out, --state) or how (--runner) must agree on the rest.
func withoutCommand(t *testing.T, file string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(readFile(t, file), &m); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if _, ok := m["command"]; !ok {
		t.Errorf("%s records no command line", file)
	}
	delete(m, "command")
	b, err := json.Marshal(m) // sorted keys
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReport checks that select writes the report into OUTDIR by default and not with
// --no-report, that stirank report writes the same page later, and that evidence.json records
// the command line.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	args := append([]string{"select", "--rate", drawnRate, "--ranks", "2-3"}, cheap...)
	with, without := filepath.Join(dir, "with"), filepath.Join(dir, "without")
	if stdout := selectOK(t, append(args, "--out", with)...); !verdictIs(stdout, 3) {
		t.Errorf("stdout:\n%s", stdout)
	}
	for _, n := range []string{report.HTML, "evidence.svg", "evidence.png", "ft.svg", "ft.png"} {
		if _, err := os.Stat(filepath.Join(with, n)); err != nil {
			t.Error(err)
		}
	}
	r := readResult(t, with)
	if got := strings.Join(r.Command, " "); got != "stirank "+strings.Join(args, " ")+" --out "+with {
		t.Errorf("command line recorded: %q", got)
	}
	selectOK(t, append(args, "--out", without, "--no-report")...)
	if _, err := os.Stat(filepath.Join(without, report.HTML)); !os.IsNotExist(err) {
		t.Errorf("--no-report: %v", err)
	}
	// stirank report renders what select rendered, from evidence.json and timing.json; from
	// evidence.json alone, without the time columns.
	page := string(readFile(t, filepath.Join(with, report.HTML)))
	if !strings.Contains(page, "<th>CPU s</th>") {
		t.Error("the report has no time columns")
	}
	for _, files := range [][]string{{"evidence.json", "timing.json"}, {"evidence.json"}} {
		again := filepath.Join(dir, strings.Join(files, "+"))
		if err := os.MkdirAll(again, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(again, f), readFile(t, filepath.Join(with, f)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		selectOK(t, "report", again)
		got := string(readFile(t, filepath.Join(again, report.HTML)))
		if timed := len(files) == 2; timed && got != page {
			t.Error("stirank report wrote a different page than select")
		} else if !timed && strings.Contains(got, "<th>CPU s</th>") {
			t.Error("a report without timing.json has time columns")
		}
	}
	if code, _, _ := selectRun(t, "report"); code != 2 {
		t.Errorf("report without OUTDIR: exit %d", code)
	}
}

// TestReanalyzeReport checks that reanalyze commits the report with the run, showing the history
// of every run including this one, and that stirank report on STATEDIR/latest finds the history.
func TestReanalyzeReport(t *testing.T) {
	state, _ := reanalyzeTwice(t)
	latest := filepath.Join(state, "latest")
	page := string(readFile(t, filepath.Join(latest, report.HTML)))
	if !strings.Contains(page, "<h2>History</h2>") || strings.Count(page, "<td>v000002-") != 1 || strings.Count(page, "<td>v000001-") != 1 {
		t.Errorf("latest/report.html does not show both runs in its history")
	}
	if _, err := os.Stat(filepath.Join(latest, "history.svg")); err != nil {
		t.Error(err)
	}
	// timing.json has every rank of the run, whichever of its passes ran it.
	timing, err := pipelines.ReadTiming(latest)
	if err != nil {
		t.Fatal(err)
	}
	var ranks []int
	for _, rt := range timing.Ranks {
		ranks = append(ranks, rt.Rank)
	}
	var want []int
	for _, rr := range readResult(t, latest).Ranks {
		want = append(want, rr.Rank)
	}
	if !slices.Equal(ranks, want) {
		t.Errorf("latest/timing.json has ranks %v, the run %v", ranks, want)
	}
	os.Remove(filepath.Join(latest, report.HTML))
	selectOK(t, "report", latest)
	if string(readFile(t, filepath.Join(latest, report.HTML))) != page {
		t.Error("stirank report on STATEDIR/latest wrote a different page than reanalyze")
	}
}
