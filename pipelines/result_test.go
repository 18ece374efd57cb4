package pipelines

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/transforms"
)

func testMeta() Meta {
	es, err := estimators.NewSpec(estimators.STIName, sti.Default("nmf"))
	if err != nil {
		panic(err)
	}
	return Meta{
		Model:     models.PoissonSpec("nmf", []float64{0.3, 0.3}, models.LogScale),
		Estimator: es,
		Data:      DataInfo{Source: "x", Checksum: "abc", Shape: []int{3, 4}, Cells: 5},
		Ranks:     []int{1, 2, 3},
	}
}

func TestResultDivergedRank(t *testing.T) {
	ranks := []evidence.RankEvidence{
		{Rank: 3, LogEvidence: -110, StdErr: 1, Steps: 10, Rungs: []evidence.Rung{{T: 0, MeanLogLik: -200}, {T: 1, MeanLogLik: -100}}},
		{Rank: 1, LogEvidence: -100, StdErr: 1, Steps: 10},
		{Rank: 2, LogEvidence: math.NaN(), StdErr: math.NaN(), Steps: 4, Diverged: []string{"rank 2, t=1 (temperature 1), chain 0, step 3: log-likelihood record is NaN"}},
	}
	r, err := NewResult(testMeta(), ranks)
	if err != nil {
		t.Fatal(err)
	}
	if r.BestRank != 1 || r.Steps != 24 || len(r.Divergences) != 1 || r.Ranks[1].Rank != 2 || len(r.Ranks[1].Diverged) != 1 {
		t.Errorf("result: %+v", r)
	}
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"log_evidence": null`) || !strings.Contains(string(js), `"posterior_prob": null`) {
		t.Errorf("diverged rank not null in JSON:\n%s", js)
	}
	back, err := ParseResult(js)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(back.Ranks[1].LogEvidence)) || back.Ranks[0].LogEvidence != -100 || back.Ranks[2].Ladder[1].MeanLogLik != -100 {
		t.Errorf("round trip: %+v", back.Ranks)
	}
	csv := string(r.CSV())
	if !strings.Contains(csv, "\n2,,,,") || !strings.HasSuffix(csv, ",10,0\n") {
		t.Errorf("csv:\n%s", csv)
	}
	if tab := r.Table(); !strings.Contains(tab, "diverged") || !verdictIs(tab, 1) {
		t.Errorf("table:\n%s", tab)
	}
	// A rank missing or estimated twice is an error.
	if _, err := NewResult(testMeta(), ranks[:2]); err == nil {
		t.Error("missing rank accepted")
	}
	if _, err := NewResult(testMeta(), append(ranks, ranks[0])); err == nil {
		t.Error("duplicate rank accepted")
	}
}

func TestWriteResult(t *testing.T) {
	ctx := context.Background()
	r, err := NewResult(testMeta(), []evidence.RankEvidence{{Rank: 1, LogEvidence: -3}, {Rank: 2, LogEvidence: -1}, {Rank: 3, LogEvidence: -2}})
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "a", "out")
	if err := CheckOutDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	timing := Timing{Ranks: []transforms.RankTime{{Rank: 1, Tasks: 4, Seconds: 1.5, CPUSeconds: 1.25}}}
	if err := WriteResult(ctx, dir, r, timing); err != nil {
		t.Fatal(err)
	}
	// Writing the same result again (a retried bundle) succeeds, even with another timing, which
	// does not replace the first; a different result does not.
	if err := WriteResult(ctx, dir, r, Timing{}); err != nil {
		t.Errorf("rewrite: %v", err)
	}
	if got, err := ReadTiming(dir); err != nil || !reflect.DeepEqual(got, timing) {
		t.Errorf("timing read back: %+v, %v; want %+v", got, err, timing)
	}
	r2 := r
	r2.Seed++
	if err := WriteResult(ctx, dir, r2, timing); err == nil {
		t.Error("overwrote a different result")
	}
	if err := CheckOutDir(ctx, dir); err == nil {
		t.Error("CheckOutDir accepts a directory holding results")
	}
	got, err := ReadResult(ctx, dir)
	if err != nil || got.BestRank != 2 || got.Seed != r.Seed {
		t.Errorf("read back: %+v, %v", got, err)
	}
	ents, _ := os.ReadDir(filepath.Join(parent, "a"))
	if len(ents) != 1 {
		t.Errorf("temporary directories left behind: %v", ents)
	}
	// An empty directory is replaced.
	empty := filepath.Join(parent, "empty")
	os.Mkdir(empty, 0o755)
	if err := CheckOutDir(ctx, empty); err != nil {
		t.Fatal(err)
	}
	if err := WriteResult(ctx, empty, r, Timing{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(empty, EvidenceCSV)); err != nil {
		t.Error(err)
	}
	// A directory written before timings were recorded has none, which is no error.
	if got, err := ReadTiming(parent); err != nil || len(got.Ranks) != 0 {
		t.Errorf("timing of a directory without timing.json: %+v, %v", got, err)
	}
}

// Rank 0 is a rank (ssnmf's dictionary alone): chosen, it is written as 0 and read back as 0;
// with no estimate at all best_rank is null, and reads back as none.
func TestResultBestRankZero(t *testing.T) {
	meta := testMeta()
	meta.Ranks = []int{0, 1, 2}
	r, err := NewResult(meta, []evidence.RankEvidence{{Rank: 0, LogEvidence: -10}, {Rank: 1, LogEvidence: -12}, {Rank: 2, LogEvidence: -13}})
	if err != nil {
		t.Fatal(err)
	}
	if best, ok := r.Best(); r.BestRank != 0 || !ok || best.Rank != 0 || float64(best.LogEvidence) != -10 {
		t.Errorf("best rank %d, %+v, %v; want 0", r.BestRank, best, ok)
	}
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseResult(js)
	if err != nil || !strings.Contains(string(js), `"best_rank": 0,`) || back.BestRank != 0 {
		t.Errorf("best rank read back %d, %v, from\n%s", back.BestRank, err, js)
	}
	if tab := back.Table(); !verdictIs(tab, 0) {
		t.Errorf("table:\n%s", tab)
	}

	nan := math.NaN()
	none, err := NewResult(meta, []evidence.RankEvidence{{Rank: 0, LogEvidence: nan, Diverged: []string{"a"}}, {Rank: 1, LogEvidence: nan, Diverged: []string{"b"}}, {Rank: 2, LogEvidence: nan, Diverged: []string{"c"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := none.Best(); ok || none.BestRank != NoRank {
		t.Errorf("every rank diverged, best rank %d", none.BestRank)
	}
	js, err = none.JSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err = ParseResult(js)
	if _, ok := back.Best(); err != nil || ok || !strings.Contains(string(js), `"best_rank": null,`) || back.BestRank != NoRank {
		t.Errorf("best rank read back %d, %v, from\n%s", back.BestRank, err, js)
	}
	if tab := back.Table(); !strings.HasSuffix(tab, "best rank: none (every rank diverged)\n") {
		t.Errorf("table:\n%s", tab)
	}
}

// evidence.json of older versions wrote best_rank 0 for none (their ranks started at 1): it
// still reads as none, and so does a file without best_rank; their chosen ranks read unchanged.
func TestResultReadsOlderBestRank(t *testing.T) {
	const diverged = `{"model": "nmf", "method": "sti", "best_rank": 0,
 "ranks": [{"rank": 1, "log_evidence": null, "stderr": null, "posterior_prob": null, "diverged": ["rank 1, t=1, chain 0, step 3: NaN"], "ladder": []},
           {"rank": 2, "log_evidence": null, "stderr": null, "posterior_prob": null, "diverged": ["rank 2, t=1, chain 1, step 5: NaN"], "ladder": []}],
 "divergences": ["rank 1, t=1, chain 0, step 3: NaN", "rank 2, t=1, chain 1, step 5: NaN"]}`
	for name, js := range map[string]string{
		"best_rank 0":  diverged,
		"no best_rank": strings.Replace(diverged, `"best_rank": 0,`, "", 1),
	} {
		r, err := ParseResult([]byte(js))
		if _, ok := r.Best(); err != nil || ok || r.BestRank != NoRank {
			t.Errorf("%s: best rank %d, %v; want none", name, r.BestRank, err)
		}
		if tab := r.Table(); !strings.HasSuffix(tab, "best rank: none (every rank diverged)\n") {
			t.Errorf("%s: table:\n%s", name, tab)
		}
	}
	chosen := `{"model": "nmf", "best_rank": 2, "ranks": [{"rank": 1, "log_evidence": -20, "posterior_prob": 0.1}, {"rank": 2, "log_evidence": -18, "posterior_prob": 0.9}]}`
	if r, err := ParseResult([]byte(chosen)); err != nil || r.BestRank != 2 {
		t.Errorf("best rank %d, %v; want 2", r.BestRank, err)
	}
}

// The ranks a selection may try start at the model's smallest: 0 for ssnmf, 1 for the others.
func TestValidateRanksByModel(t *testing.T) {
	for _, c := range []struct {
		ranks []int
		model string
		ok    bool
	}{
		{[]int{0, 1, 2}, "ssnmf", true},
		{[]int{0}, "ssnmf", true},
		{[]int{-1, 1}, "ssnmf", false},
		{[]int{0, 1}, "nmf", false},
		{[]int{1, 2}, "nmf", true},
		{[]int{0}, "gauss", false},
		{[]int{0, 0}, "ssnmf", false},
	} {
		if err := validateRanks(c.ranks, c.model); (err == nil) != c.ok {
			t.Errorf("ranks %v of %s: %v", c.ranks, c.model, err)
		}
	}
}

// verdictIs reports whether table ends with the verdict of rank: a last line "best rank: R, …".
func verdictIs(table string, rank int) bool {
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	return strings.HasPrefix(lines[len(lines)-1], fmt.Sprintf("best rank: %d, ", rank))
}

// The verdict says what was chosen, how sure it is and what to do when it is not: a race that
// could not leave a rank behind names it and asks for twice the command line's budget; a choice
// separated from every other rank says so; a choice at the highest rank tried asks for more.
func TestVerdict(t *testing.T) {
	rounds := []evidence.RoundEstimate{{Round: 0}}
	race := []evidence.RankEvidence{
		{Rank: 1, LogEvidence: -130, StdErr: 1, Rounds: rounds},
		{Rank: 2, LogEvidence: -120, StdErr: 1, Rounds: rounds},
		{Rank: 3, LogEvidence: -100, StdErr: 1, Rounds: rounds},
		{Rank: 4, LogEvidence: -101, StdErr: 1, Rounds: rounds},
	}
	meta := testMeta()
	meta.Ranks = []int{1, 2, 3, 4}
	meta.Command = []string{"stirank", "select", "--budget", "2", "--out", "o"}
	standing := evidence.Decide(evidence.Standing{}, race, 0)
	r, err := NewRaceResult(meta, race, &standing)
	if err != nil {
		t.Fatal(err)
	}
	want := "best rank: 3, but not settled: rank 4 lies within 3 standard errors of it (p(R|X) = 0.731 takes the estimates as exact); to tell them apart, run again with --budget 4."
	if got := r.Verdict(); got != want || !strings.HasSuffix(r.Table(), want+"\n") {
		t.Errorf("unresolved race:\n got %s\nwant %s\n%s", got, want, r.Table())
	}
	// A near rank the race left behind on earlier estimates runs no more at any budget: the
	// verdict asks for more replicas.
	early := slices.Clone(race)
	early[3].LogEvidence = -110
	left := evidence.Decide(evidence.Standing{}, early, 0)
	if r, err = NewRaceResult(meta, race, &left); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Verdict(), "to tell them apart, run again with --chains 4 (the race left rank 4 behind on earlier estimates)."; !strings.HasSuffix(got, want) {
		t.Errorf("near rank left behind:\n got %s\nwant …%s", got, want)
	}
	race[3].LogEvidence = -110
	standing = evidence.Decide(evidence.Standing{}, race, 0)
	if r, err = NewRaceResult(meta, race, &standing); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Verdict(), "best rank: 3, p(R|X) > 0.999: every other rank lies more than 3 standard errors below it."; got != want {
		t.Errorf("settled:\n got %s\nwant %s", got, want)
	}
	meta.Ranks = []int{1, 2, 3}
	if r, err = NewResult(meta, race[:3]); err != nil {
		t.Fatal(err)
	}
	if got := r.Verdict(); !strings.HasSuffix(got, "; it is the highest rank tried: add higher ranks to --ranks.") {
		t.Errorf("best at the highest rank: %s", got)
	}
}

// An estimate whose chains cannot yet show their transient carries an allowance, either way: the
// table shows it beside the standard error, and a rank below the best by more than their noise
// but not by their allowances is near; the verdict asks for the ranks the race left behind so to
// run on their own.
func TestStartAllowance(t *testing.T) {
	rounds := []evidence.RoundEstimate{{Round: 0}}
	few := []evidence.Rung{{T: 0}, {T: 0.5, ESS: 4, Chains: 2}, {T: 1, ESS: 4, Chains: 2}}
	many := []evidence.Rung{{T: 0}, {T: 0.5, ESS: 40, Chains: 2}, {T: 1, ESS: 40, Chains: 2}}
	race := []evidence.RankEvidence{
		{Rank: 1, LogEvidence: -1000, StdErr: 1, ModeParams: 300, Rungs: many, Rounds: rounds},
		{Rank: 2, LogEvidence: -1100, StdErr: 1, ModeParams: 400, Rungs: few, Rounds: rounds},
		{Rank: 3, LogEvidence: -1300, StdErr: 1, ModeParams: 500, Rungs: few, Rounds: rounds},
	}
	meta := testMeta()
	meta.Ranks = []int{1, 2, 3}
	standing := evidence.Decide(evidence.Standing{}, race, 0)
	r, err := NewRaceResult(meta, race, &standing)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ranks[0].StartAllowance != 0 || r.Ranks[1].StartAllowance != 200 || r.Ranks[2].StartAllowance != 250 {
		t.Errorf("start allowances %v, %v and %v, want 0, 200 and 250", r.Ranks[0].StartAllowance, r.Ranks[1].StartAllowance, r.Ranks[2].StartAllowance)
	}
	table := r.Table()
	if !strings.Contains(table, "± start") || !strings.Contains(table, " 200 ") || !strings.Contains(table, "either way") {
		t.Errorf("the table does not show the allowance:\n%s", table)
	}
	want := "best rank: 1, but not settled: rank 2 lies within 3 standard errors and their start allowances (± start) of it (p(R|X) > 0.999 takes the estimates as exact); to tell them apart, run again with --ranks 2 (the race left rank 2 behind before its chains could show their transient)."
	if got := r.Verdict(); got != want {
		t.Errorf("a left rank's allowance:\n got %s\nwant %s", got, want)
	}
	// The best's own allowance counts as well, in a race (which does not leave rank 2 behind)
	// as in a single estimate.
	race[0].Rungs, race[1].Rungs = few, many
	standing = evidence.Decide(evidence.Standing{}, race, 0)
	if !standing.Live(2) || standing.Live(3) {
		t.Errorf("the race left rank 2 behind within its leader's allowance, or kept rank 3 beyond it: %+v", standing)
	}
	if r, err = NewResult(meta, race); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Verdict(), "best rank: 1, but not settled: ranks 2 and 3 lie within 3 standard errors and their start allowances (± start) of it"; !strings.HasPrefix(got, want) {
		t.Errorf("the best's allowance:\n got %s\nwant %s…", got, want)
	}
}

// A race widens the error bar of the ranks it left behind by their largest move from any earlier
// round (evidence.RankEvidence.Left), and not the live leader's.
func TestRaceResultWidensLeftRanks(t *testing.T) {
	rounds := func(last float64) []evidence.RoundEstimate {
		// The estimate fell by 540 and turned back by 40 (beyond a noise of 1): an excursion.
		return []evidence.RoundEstimate{{Round: 0, LogEvidence: last + 500, StdErr: 1, Steps: 10}, {Round: 1, LogEvidence: last - 40, StdErr: 1, Steps: 20}, {Round: 2, LogEvidence: last, StdErr: 1, Steps: 40}}
	}
	// A racing rank's standard error holds its RoundDrift (estimators.STI).
	se := math.Hypot(1, evidence.RoundDrift(rounds(0)))
	race := []evidence.RankEvidence{
		{Rank: 1, LogEvidence: -1000, StdErr: se, Rounds: rounds(-1000)},
		{Rank: 2, LogEvidence: -5000, StdErr: se, Rounds: rounds(-5000)},
	}
	meta := testMeta()
	meta.Ranks = []int{1, 2}
	standing := evidence.Decide(evidence.Standing{}, race, 2)
	r, err := NewRaceResult(meta, race, &standing)
	if err != nil {
		t.Fatal(err)
	}
	if float64(r.Ranks[0].StdErr) != se || r.Ranks[1].StdErr < 499 || race[1].StdErr != se {
		t.Errorf("stderr: leader %v (want %v), left rank %v (want ≥ 499), its evidence's %v (want %[2]v, unchanged)", r.Ranks[0].StdErr, se, r.Ranks[1].StdErr, race[1].StdErr)
	}
}

// A leader the race let go while its chains still moved (evidence.Standing.Continues) shows its
// allowance, says why and how to refine it, and stays the settled choice.
func TestRaceResultLetsALeaderGo(t *testing.T) {
	rounds := func(v float64) []evidence.RoundEstimate {
		return []evidence.RoundEstimate{{Round: 0, LogEvidence: v, StdErr: 10}, {Round: 3, LogEvidence: v, StdErr: 10, Drift: 5}}
	}
	race := []evidence.RankEvidence{
		{Rank: 1, LogEvidence: -1000, StdErr: 10, Drift: 5, ModeParams: 300, FullRound: 7, Round: 3, Rounds: rounds(-1000)},
		{Rank: 2, LogEvidence: -5000, StdErr: 10, ModeParams: 400, FullRound: 7, Round: 0, Rounds: rounds(-5000)[:1]},
	}
	meta := testMeta()
	meta.Ranks = []int{1, 2}
	standing := evidence.Decide(evidence.Standing{}, race, 0)
	r, err := NewRaceResult(meta, race, &standing)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Ranks[0].LetGo || r.Ranks[0].StartAllowance != 150 || r.Ranks[1].LetGo {
		t.Errorf("let go %v, %v, allowance %v: want rank 1 let go with 150", r.Ranks[0].LetGo, r.Ranks[1].LetGo, r.Ranks[0].StartAllowance)
	}
	if table := r.Table(); !strings.Contains(table, "run it alone (--ranks 1)") {
		t.Errorf("the table does not say the leader was let go:\n%s", table)
	}
	if got := r.Verdict(); !strings.HasPrefix(got, "best rank: 1, p(R|X)") {
		t.Errorf("verdict %q, want a settled choice of rank 1", got)
	}
}
