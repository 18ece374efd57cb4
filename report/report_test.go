package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stirank/stirank/pipelines"
	"github.com/stirank/stirank/runstate"
	"github.com/stirank/stirank/transforms"
)

// stored reads the regression outputs of every command (select, chib, ais, reanalyze): their
// numbers are real runs', which is what the figures must cope with.
func stored(t *testing.T) map[string]pipelines.Result {
	t.Helper()
	files, err := filepath.Glob("../cmd/stirank/testdata/regression/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no stored results: %v", err)
	}
	out := map[string]pipelines.Result{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r pipelines.Result
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = r
	}
	return out
}

// history is a reanalyze history of three runs ending with r, as a state directory holds it.
func history(r pipelines.Result) []runstate.HistoryRow {
	var rows []runstate.HistoryRow
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v := 1; v <= 3; v++ {
		for _, rr := range r.Ranks {
			rows = append(rows, runstate.HistoryRow{
				Time: t0.Add(time.Duration(v) * time.Hour), RunID: "run" + string(rune('0'+v)), DatasetVersion: v,
				Rank: rr.Rank, LogEvidence: float64(rr.LogEvidence) - float64(3-v)*40, StdErr: float64(rr.StdErr),
				PosteriorProb: float64(rr.PosteriorProb), ChosenRank: int(r.BestRank),
			})
		}
	}
	return rows
}

// timing is a timing.json for r's ranks but its last, which a run that lost it would show.
func timing(r pipelines.Result) pipelines.Timing {
	var t pipelines.Timing
	for i, rr := range r.Ranks[:len(r.Ranks)-1] {
		t.Ranks = append(t.Ranks, transforms.RankTime{Rank: rr.Rank, Tasks: 30, Seconds: 1.25 * float64(i+1), CPUSeconds: float64(i + 1)})
	}
	return t
}

func build(name string, r pipelines.Result) Report {
	var h []runstate.HistoryRow
	if strings.HasPrefix(name, "reanalyze") {
		h = history(r)
	}
	return Evidence(r, h, timing(r))
}

// TestTimingColumns: the diagnostics show each rank's tasks, wall and CPU seconds from
// timing.json, a dash for a rank it lacks, and no time columns without one.
func TestTimingColumns(t *testing.T) {
	r := stored(t)["select-default"]
	diagnostics := func(rep Report) *Table { return diagnosticsOf(t, rep) }
	tab := diagnostics(Evidence(r, nil, timing(r)))
	n := len(tab.Head)
	if !slices.Equal(tab.Head[n-3:], []string{"tasks", "wall s", "CPU s"}) {
		t.Fatalf("head %v", tab.Head)
	}
	if got := tab.Rows[1].Cells[n-3:]; !slices.Equal(got, []string{"30", "2.5", "2.0"}) {
		t.Errorf("rank %d: time cells %v", r.Ranks[1].Rank, got)
	}
	if got := tab.Rows[len(tab.Rows)-1].Cells[n-3:]; !slices.Equal(got, []string{"–", "–", "–"}) {
		t.Errorf("rank without a timing: %v", got)
	}
	if h := diagnostics(Evidence(r, nil, pipelines.Timing{})).Head; slices.Contains(h, "CPU s") || slices.Contains(h, "± start") {
		t.Errorf("time or start columns without timing.json or start allowances: %v", h)
	}
	// A run whose chains could not show their transient has its allowances beside the estimates.
	r = stored(t)["select-sghmc"]
	tab = diagnostics(Evidence(r, nil, pipelines.Timing{}))
	if i := slices.Index(tab.Head, "± start"); i < 0 || tab.Rows[0].Cells[i] != "75" {
		t.Errorf("start allowance: head %v, first row %v", tab.Head, tab.Rows[0].Cells)
	}
}

// TestRatesColumn: under the default hyperprior (select-default) the diagnostics show every
// rank's posterior prior rates as select prints the chosen rank's; at fixed rates there is no
// such column.
func TestRatesColumn(t *testing.T) {
	const head = "prior rates at t = 1 (by mode; product)"
	r := stored(t)["select-default"]
	tab := diagnosticsOf(t, Evidence(r, nil, pipelines.Timing{}))
	i := slices.Index(tab.Head, head)
	if i < 0 {
		t.Fatalf("head %v", tab.Head)
	}
	for k, rr := range r.Ranks {
		if len(rr.Rates) != 2 || rr.RateProduct == nil {
			t.Fatalf("rank %d: rates %v, product %v", rr.Rank, rr.Rates, rr.RateProduct)
		}
		want := fmt.Sprintf("%s, %s; %s", rr.Rates[0], rr.Rates[1], rr.RateProduct)
		if got := tab.Rows[k].Cells[i]; got != want {
			t.Errorf("rank %d: rates cell %q, want %q", rr.Rank, got, want)
		}
	}
	if h := diagnosticsOf(t, Evidence(stored(t)["select-sgld"], nil, pipelines.Timing{})).Head; slices.Contains(h, head) {
		t.Errorf("a rates column at fixed rates: %v", h)
	}
}

// diagnosticsOf is the report's diagnostics table.
func diagnosticsOf(t *testing.T, rep Report) *Table {
	t.Helper()
	for _, s := range rep.Sections {
		if s.Title == "Diagnostics" {
			return s.Table
		}
	}
	t.Fatal("no diagnostics table")
	return nil
}

// TestDeterministic writes the report of every stored result twice and wants the same files
// with the same bytes.
func TestDeterministic(t *testing.T) {
	for name, r := range stored(t) {
		t.Run(name, func(t *testing.T) {
			a, b := t.TempDir(), t.TempDir()
			na, err := build(name, r).Write(a)
			if err != nil {
				t.Fatal(err)
			}
			nb, err := build(name, r).Write(b)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(na, nb) || na[len(na)-1] != HTML {
				t.Fatalf("files %v, then %v", na, nb)
			}
			for _, n := range na {
				x, _ := os.ReadFile(filepath.Join(a, n))
				y, _ := os.ReadFile(filepath.Join(b, n))
				if len(x) == 0 || !bytes.Equal(x, y) {
					t.Errorf("%s: %d bytes, then %d different bytes", n, len(x), len(y))
				}
			}
			want := []string{"evidence.svg", "evidence.png"}
			if len(r.Ranks[0].Ladder) > 0 {
				want = append(want, "ft.svg", "ft.png")
			}
			if strings.HasPrefix(name, "reanalyze") {
				want = append(want, "history.svg", "history.png")
			}
			for _, w := range want {
				if !slices.Contains(na, w) {
					t.Errorf("no %s among %v", w, na)
				}
			}
		})
	}
}

// TestWellFormed parses the page as XML (the template keeps it XHTML-compatible), checks that it
// references only data URIs and the files it wrote, and that every SVG parses.
func TestWellFormed(t *testing.T) {
	for name, r := range stored(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			names, err := build(name, r).Write(dir)
			if err != nil {
				t.Fatal(err)
			}
			page, _ := os.ReadFile(filepath.Join(dir, HTML))
			refs := parseXML(t, HTML, page)
			if len(refs) == 0 {
				t.Fatal("the page references no figure")
			}
			for _, ref := range refs {
				if strings.HasPrefix(ref, "data:image/svg+xml;base64,") {
					continue
				}
				if !slices.Contains(names, ref) || ref == HTML {
					t.Errorf("the page references %q, not a file the report wrote (%v)", ref, names)
				}
			}
			for _, n := range names {
				if strings.HasSuffix(n, ".svg") {
					b, _ := os.ReadFile(filepath.Join(dir, n))
					parseXML(t, n, b)
				}
			}
		})
	}
}

// parseXML parses b strictly as XML and returns its src and href attributes.
func parseXML(t *testing.T, name string, b []byte) []string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var refs []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return refs
		}
		if err != nil {
			t.Fatalf("%s is not well-formed: %v", name, err)
		}
		if el, ok := tok.(xml.StartElement); ok {
			for _, a := range el.Attr {
				if a.Name.Local == "src" || (a.Name.Local == "href" && el.Name.Local == "a") {
					refs = append(refs, a.Value)
				}
			}
		}
	}
}

// TestDiverged checks that a rank whose chains diverged is flagged in the diagnostics, explained
// and marked in the figure.
func TestDiverged(t *testing.T) {
	r := stored(t)["select-default"]
	r.Ranks = slices.Clone(r.Ranks)
	bad := "rank 4, t = 0.25, chain 1: NaN at step 17"
	r.Ranks[2].LogEvidence, r.Ranks[2].StdErr, r.Ranks[2].PosteriorProb = pipelines.Float(math.NaN()), pipelines.Float(math.NaN()), pipelines.Float(math.NaN())
	r.Ranks[2].Diverged = []string{bad}
	r.Divergences = []string{bad}
	rep := Evidence(r, nil, pipelines.Timing{})
	var diag *Table
	for _, s := range rep.Sections {
		if s.Title == "Diagnostics" {
			diag = s.Table
		}
	}
	if diag == nil {
		t.Fatal("no diagnostics table")
	}
	row := diag.Rows[2]
	if !row.Flag || len(row.Notes) == 0 || !strings.Contains(row.Notes[0], "rank 4: 1 chains produced NaN/Inf") || row.Cells[1] != "–" {
		t.Errorf("diverged rank 4: %+v", row)
	}
	files, page, err := rep.Render()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte(`<tr class="flag"><td>4</td>`)) || !bytes.Contains(page, []byte(bad)) {
		t.Error("the page does not highlight rank 4 or name its diverged chain")
	}
	for _, f := range files {
		if f.Name == "evidence.svg" && !bytes.Contains(f.Data, []byte("diverged (no estimate)")) {
			t.Error("the evidence figure does not mark the diverged rank")
		}
		if f.Name == "ft.svg" && !bytes.Contains(f.Data, []byte("rank 4 (diverged)")) {
			t.Error("the f(t) figure does not mark the diverged rank")
		}
	}
}

// A report whose best rank is 0 (ssnmf's dictionary alone) says so, rings rank 0 and draws its
// rank axis from 0.
func TestChosenRankZero(t *testing.T) {
	r, err := pipelines.ParseResult([]byte(`{"model": "ssnmf", "method": "sti", "best_rank": 0, "ranks": [
 {"rank": 0, "log_evidence": -495.5, "stderr": 0.3, "posterior_prob": 0.9, "ladder": []},
 {"rank": 1, "log_evidence": -497.8, "stderr": 0.4, "posterior_prob": 0.09, "ladder": []},
 {"rank": 2, "log_evidence": -500.1, "stderr": 0.5, "posterior_prob": 0.01, "ladder": []}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rep := Evidence(r, nil, pipelines.Timing{})
	if !strings.HasPrefix(rep.Summary, "Best rank: 0 (log p(X | R) = -495.50") {
		t.Errorf("summary %q", rep.Summary)
	}
	files, _, err := rep.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name == "evidence.svg" && !bytes.Contains(f.Data, []byte("chosen rank 0")) {
			t.Error("the evidence figure does not ring rank 0")
		}
	}
	p := newPlot("", "rank", "")
	rankAxes(r, p)
	ticks := p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max)
	if p.X.Min > -0.5 || len(ticks) != 3 || ticks[0].Value != 0 || ticks[0].Label != "0" {
		t.Errorf("rank axis from %v, ticks %+v; want rank 0 on it", p.X.Min, ticks)
	}
}

// The evidence.json of an older version whose ranks all diverged says best_rank 0, which meant
// none: its report still says no rank has an estimate and rings none.
func TestOlderResultWithoutEstimate(t *testing.T) {
	r, err := pipelines.ParseResult([]byte(`{"model": "nmf", "method": "sti", "best_rank": 0, "ranks": [
 {"rank": 1, "log_evidence": null, "stderr": null, "posterior_prob": null, "diverged": ["rank 1, t=1, chain 0, step 3: NaN"], "ladder": []},
 {"rank": 2, "log_evidence": null, "stderr": null, "posterior_prob": null, "diverged": ["rank 2, t=1, chain 1, step 5: NaN"], "ladder": []}],
 "divergences": ["rank 1, t=1, chain 0, step 3: NaN", "rank 2, t=1, chain 1, step 5: NaN"]}`))
	if err != nil {
		t.Fatal(err)
	}
	rep := Evidence(r, nil, pipelines.Timing{})
	if rep.Summary != "No rank has an estimate: every rank diverged." {
		t.Errorf("summary %q", rep.Summary)
	}
	files, _, err := rep.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name == "evidence.svg" && (bytes.Contains(f.Data, []byte("chosen rank")) || !bytes.Contains(f.Data, []byte("diverged (no estimate)"))) {
			t.Error("the evidence figure rings a rank, or does not mark the diverged ones")
		}
	}
}
