package pipelines

import (
	"math"
	"strings"
	"testing"
)

// TestDiagnose checks each issue on a rank built to raise it alone, and the table's '!' and
// footnote for it.
func TestDiagnose(t *testing.T) {
	ladder := func(means ...float64) []Rung {
		var g []Rung
		for i, m := range means {
			g = append(g, Rung{T: float64(i) / float64(len(means)-1), MeanLogLik: Float(m), StdErr: 1, ESS: 50, Chains: 2})
		}
		return g
	}
	healthy := RankResult{Rank: 1, LogEvidence: -10, StdErr: 1, StdErrWithin: 0.8, Ladder: ladder(-30, -20, -10)}
	cases := []struct {
		kind string
		edit func(rr *RankResult)
		// says is in the last issue's message.
		says string
	}{
		{"", func(*RankResult) {}, ""},
		{"diverged", func(rr *RankResult) {
			rr.LogEvidence, rr.Diverged = Float(math.NaN()), []string{"rank 1, t = 0.5, chain 0: NaN at step 3"}
		}, ""},
		{"disagree", func(rr *RankResult) {
			rr.Replicas, rr.TIStdErr, rr.SMC, rr.SMCStdErr, rr.Disagree = 3, 1, -20, 1, true
		}, ""},
		{"low-ess", func(rr *RankResult) { rr.Ladder[1].ESS = 4 }, ""},
		{"spread", func(rr *RankResult) { rr.StdErr = 5 }, ""},
		// The phase check's share of the stderr is not the replicas' spread.
		{"phase", func(rr *RankResult) {
			rr.Hysteresis, rr.Phase, rr.StdErr = 40, true, Float(math.Sqrt(1+40*40/12.0))
		}, ""},
		{"phase,spread", func(rr *RankResult) {
			rr.Hysteresis, rr.Phase, rr.StdErr = 40, true, Float(math.Sqrt(25+40*40/12.0))
		}, ""},
		{"decreasing", func(rr *RankResult) { rr.Ladder = ladder(-30, -10, -20) }, ""},
		// A path's references that miss the posterior send the user to the default's estimate.
		{"uncovered", func(rr *RankResult) { rr.Uncovered = true }, "a run without --reference"},
		// Records still drifting widen the error bar, and are not the replicas' spread.
		{"drift", func(rr *RankResult) { rr.StdErr, rr.Drift = Float(math.Hypot(1, 20)), 20 }, "still drift"},
		// A rank the race left behind stopped early on purpose: its few records raise nothing.
		{"", func(rr *RankResult) { rr.Ladder = ladder(-30, -10, -20); rr.Left = "after round 0" }, ""},
	}
	for _, tc := range cases {
		rr := healthy
		rr.Ladder = append([]Rung(nil), healthy.Ladder...)
		tc.edit(&rr)
		d := rr.Diagnose()
		var kinds []string
		for _, is := range d.Issues {
			kinds = append(kinds, is.Kind)
		}
		if got := strings.Join(kinds, ","); got != tc.kind {
			t.Errorf("%s: issues %q", tc.kind, got)
		}
		if tc.says != "" && !strings.Contains(d.Issues[len(d.Issues)-1].Detail, tc.says) {
			t.Errorf("%s: %q does not say %q", tc.kind, d.Issues[len(d.Issues)-1].Detail, tc.says)
		}
		if tc.kind == "disagree" && rr.Replicas > 0 && math.Abs(d.Gap-10/math.Sqrt2) > 1e-12 {
			t.Errorf("TI–SMC gap %v standard errors, want %v", d.Gap, 10/math.Sqrt2)
		}
		tab := Result{Ranks: []RankResult{rr}, BestRank: 1}.Table()
		flagged := strings.Contains(tab, " !\n") && strings.Contains(tab, "\n! rank 1: ")
		if flagged != (tc.kind != "") {
			t.Errorf("%s: table\n%s", tc.kind, tab)
		}
	}
}
