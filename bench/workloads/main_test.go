package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stirank/stirank/io/tensorio"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// stirank builds this checkout's stirank once for the tests that run it.
func stirank(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "workloads-test-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "stirank")
		out, err := exec.Command("go", "build", "-o", builtBin, "github.com/stirank/stirank/cmd/stirank").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// dense reads the matrix of dataset dir into a row-major slice.
func dense(t *testing.T, dir string) ([]int, []float64) {
	t.Helper()
	d, err := tensorio.Read(context.Background(), dir, tensorio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x := d.Tensor
	m := make([]float64, x.Shape[0]*x.Shape[1])
	for n, v := range x.Values {
		m[int(x.Coords[0][n])*x.Shape[1]+int(x.Coords[1][n])] += v
	}
	return x.Shape, m
}

// The CSV lists every cell of the matrix once, zeros included, and imports back to the same
// matrix with every cell stored.
func TestDenseCSVRoundTrip(t *testing.T) {
	bin, dir := stirank(t), t.TempDir()
	src, csv, back := filepath.Join(dir, "src"), filepath.Join(dir, "m.csv"), filepath.Join(dir, "back")
	if out, err := exec.Command(bin, "generate", "--model", "nmf", "--shape", "10x8", "--rank", "2", "--rate", "5", "--seed", "3", "--out", src).CombinedOutput(); err != nil {
		t.Fatalf("generate: %v\n%s", err, out)
	}
	m, err := tensorio.ReadManifest(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if m.Cells >= 80 {
		t.Fatalf("the generated matrix stores %d of its 80 cells: it has no zeros to list", m.Cells)
	}
	if err := writeDenseCSV(context.Background(), src, csv); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
	if lines[0] != "i,j,value" || len(lines) != 81 {
		t.Fatalf("want header i,j,value and 80 cells, have %q and %d lines", lines[0], len(lines)-1)
	}
	seen := map[[2]int]bool{}
	for _, l := range lines[1:] {
		var i, j int
		var v float64
		if _, err := fmt.Sscanf(l, "%d,%d,%g", &i, &j, &v); err != nil || i < 0 || i >= 10 || j < 0 || j >= 8 || seen[[2]int{i, j}] {
			t.Fatalf("line %q: not a new cell of the 10x8 matrix (%v)", l, err)
		}
		seen[[2]int{i, j}] = true
	}
	if out, err := exec.Command(bin, "import", "--in", csv, "--shape", "10x8", "--out", back).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if m, err := tensorio.ReadManifest(context.Background(), back); err != nil || m.Cells != 80 {
		t.Fatalf("the import stores %v cells, want all 80 (%v)", m.Cells, err)
	}
	shapeA, a := dense(t, src)
	shapeB, b := dense(t, back)
	if fmt.Sprint(shapeA) != fmt.Sprint(shapeB) {
		t.Fatalf("shape %v became %v", shapeA, shapeB)
	}
	for k := range a {
		if a[k] != b[k] {
			t.Fatalf("cell (%d, %d) was %g, imported %g", k/8, k%8, a[k], b[k])
		}
	}
}

// A tiny real select run is timed and read: its choice and rank 1's estimate come from its
// evidence.json, rank 1's exact value from its --exact line, and a failed run's row holds
// stirank's one-line error.
func TestTimeRun(t *testing.T) {
	bin, dir := stirank(t), t.TempDir()
	out := filepath.Join(dir, "out")
	r := timeRun(context.Background(), bin, []string{"--data", "embedded:default", "--ranks", "1-2", "--steps", "60", "--burnin", "20", "--chains", "1", "--no-report"}, "unused", out, 0)
	if r.err != "" {
		t.Fatalf("run failed: %s", r.err)
	}
	if r.wall <= 0 || r.cpu <= 0 || r.rssKB < 1000 {
		t.Errorf("wall %v, CPU %v, peak RSS %d KB: not measured", r.wall, r.cpu, r.rssKB)
	}
	b, err := os.ReadFile(filepath.Join(out, "evidence.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		BestRank int `json:"best_rank"`
		Ranks    []struct {
			Rank        int     `json:"rank"`
			LogEvidence float64 `json:"log_evidence"`
			StdErr      float64 `json:"stderr"`
		} `json:"ranks"`
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	o := r.res
	if o.chosen != ev.BestRank || !o.hasRank1 || ev.Ranks[0].Rank != 1 || o.est != ev.Ranks[0].LogEvidence || o.se != ev.Ranks[0].StdErr {
		t.Errorf("read chosen %d, rank 1 %v ± %v; evidence.json has %d, %+v", o.chosen, o.est, o.se, ev.BestRank, ev.Ranks)
	}
	if !o.hasExact || math.Abs(o.est-o.exact) > 3*o.se+1 || rank1Cell(o) == "" || strings.Contains(rank1Cell(o), "✗") {
		t.Errorf("rank 1: estimate %v ± %v, exact %v (found %v): want within 3 se + 1", o.est, o.se, o.exact, o.hasExact)
	}
	bad := timeRun(context.Background(), bin, []string{"--data", "DIR/none", "--ranks", "1"}, dir, filepath.Join(dir, "bad"), 0)
	if !strings.HasPrefix(bad.err, "stirank select: ") || strings.Contains(bad.err, "\n") || !strings.Contains(bad.err, "none") {
		t.Errorf("a run on a missing dataset says %q, want stirank's one-line error", bad.err)
	}
	slow := timeRun(context.Background(), bin, []string{"--data", "embedded:default", "--ranks", "1-4"}, dir, filepath.Join(dir, "slow"), 50*time.Millisecond)
	if !strings.Contains(slow.err, "-limit") {
		t.Errorf("a run stopped at its limit says %q", slow.err)
	}
}

func TestParseEvidenceNoRank(t *testing.T) {
	o, err := parseEvidence([]byte(`{"best_rank": null, "unresolved": [2, 3], "ranks": [{"rank": 1, "log_evidence": null, "stderr": null}]}`))
	if err != nil || o.chosen != -1 || o.hasRank1 || fmt.Sprint(o.unresolved) != "[2 3]" {
		t.Errorf("parsed %+v, %v: want no choice, no rank 1, unresolved 2 3", o, err)
	}
}

// judge holds a row to every part of its target and names what it misses.
func TestJudge(t *testing.T) {
	good := outcome{chosen: 1, hasRank1: true, est: -100, se: 1, hasExact: true, exact: -103.9}
	ok := row{runs: 1, wall: 2 * time.Second, cpuWall: 1.8, rssKB: 1 << 20, res: good}
	full := target{wall: 3 * time.Second, rssKB: 4 << 20, cpuWall: 1.7, rank1: true, ratioOf: "icassp", ratio: 1.1}
	with := func(f func(*row)) row { r := ok; f(&r); return r }
	for _, c := range []struct {
		name string
		t    target
		rw   row
		ref  time.Duration
		want string
	}{
		{"all met", full, ok, 2 * time.Second, "met"},
		{"no target", target{}, ok, 0, "—"},
		{"no target, failed", target{}, with(func(r *row) { r.failed = 1 }), 0, "—"},
		{"slow", full, with(func(r *row) { r.wall = 4 * time.Second }), 4 * time.Second, "not: wall 4.0 s > 3.0 s"},
		{"ratio", full, ok, 1800 * time.Millisecond, "not: 1.11× icassp > 1.1×"},
		{"no reference", full, ok, 0, "not: no icassp run to compare with"},
		{"memory", full, with(func(r *row) { r.rssKB = 5 << 20 }), 2 * time.Second, "not: peak RSS 5.00 GB > 4.00 GB"},
		{"one core", full, with(func(r *row) { r.cpuWall = 1.2 }), 2 * time.Second, "not: CPU/wall 1.20 < 1.7"},
		{"rank 1 off", full, with(func(r *row) { r.res.exact = -104.1 }), 2 * time.Second, "not: rank 1 beyond 3 se + 1 of exact"},
		{"rank 1 unknown", full, with(func(r *row) { r.res.hasExact = false }), 2 * time.Second, "not: rank 1 has no estimate or no exact value"},
		{"two misses", full, with(func(r *row) { r.wall = 4 * time.Second; r.cpuWall = 1 }), 4 * time.Second, "not: wall 4.0 s > 3.0 s; CPU/wall 1.00 < 1.7"},
		{"failed", full, with(func(r *row) { r.runs, r.failed = 2, 1 }), 2 * time.Second, "not: 1 of 2 runs failed"},
		{"not run", full, row{}, 0, "not run"},
	} {
		if got := judge(c.t, c.rw, c.ref); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// The table's medians, ratios and the icassp-csv target come from the runs of each binary.
func TestTable(t *testing.T) {
	ws, err := selectWorkloads("icassp-csv")
	if err != nil || len(ws) != 2 || ws[0].name != "icassp" || ws[1].name != "icassp-csv" {
		t.Fatalf("-only icassp-csv runs %v (%v), want icassp and icassp-csv", ws, err)
	}
	if _, err := selectWorkloads("icassp,nope"); err == nil {
		t.Error("-only accepted a workload that does not exist")
	}
	bs := []binary{{"old", "/old"}, {"new", "/new"}}
	res := outcome{chosen: 3, hasRank1: true, est: -10, se: 1, hasExact: true, exact: -10}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	results := map[string]map[string][]run{
		"icassp": {"old": {{wall: sec(10), cpu: sec(10), res: res}}, "new": {{wall: sec(1), cpu: sec(2), res: res}}},
		"icassp-csv": {
			"old": {{wall: sec(700), cpu: sec(700), res: res}, {wall: sec(720), cpu: sec(720), res: res}, {err: "stirank select: boom"}},
			"new": {{wall: sec(1.05), cpu: sec(2), res: res}, {wall: sec(1.2), cpu: sec(2), res: res}, {wall: sec(0.9), cpu: sec(2), res: res}},
		},
	}
	rows := table(ws, bs, results, map[string]bool{"icassp": true, "icassp-csv": true})
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	oldCSV, newCSV := rows[2], rows[3]
	if oldCSV.wall != sec(710) || oldCSV.failed != 1 || oldCSV.firstErr != "stirank select: boom" || !strings.HasPrefix(oldCSV.met, "not: 1 of 3 runs failed") {
		t.Errorf("old icassp-csv row %+v", oldCSV)
	}
	if newCSV.wall != sec(1.05) || math.Abs(newCSV.vsFirst-1.05/710) > 1e-12 || newCSV.met != "met" {
		t.Errorf("new icassp-csv row: median %v, ÷ old %v, %q; want 1.05 s, %v, met", newCSV.wall, newCSV.vsFirst, newCSV.met, 1.05/710)
	}
	var b strings.Builder
	printTable(&b, "intro", bs, rows, true)
	if !strings.Contains(b.String(), "| icassp-csv | new | 1.1 s | 0.00148 | 2.0 s | 1.90 | 0 MB | 3 (3) | none | +0.00 ± 1.00 | ≤ 3.0 s, ≤ 1.1× icassp | met |") {
		t.Errorf("markdown table:\n%s", b.String())
	}
}
