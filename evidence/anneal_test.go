package evidence

import (
	"math"
	"testing"
)

// annealed returns a replica whose population says f(t) = f1 at every temperature of a
// three-rung ladder, and whose first increment is 0.5·f1, so its integral is f1, with SMC
// estimate logZ.
func annealed(replica int, f1, logZ float64) AnnealSummary {
	return AnnealSummary{Rank: 2, Replica: replica, T: []float64{0, 0.5, 1}, Mean: []float64{f1, f1, f1},
		Var: []float64{0, 0, 0}, ESS: []float64{10, 10, 10}, LogZ: logZ, FirstLogZ: 0.5 * f1}
}

// When the integral and the SMC estimate agree, the standard error is the integral's; when they
// differ by much more than their standard errors explain (a mode one of them missed), the
// difference enters the standard error and the rank is flagged. A chain at a stage pools with the
// population by effective sample size.
func TestCombineAnnealedDisagreement(t *testing.T) {
	agree, err := CombineAnnealed([]AnnealSummary{annealed(0, -100, -100.5), annealed(1, -101, -100.5)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if agree.LogEvidence != -100.5 || agree.TIStdErr != 0.5 || agree.StdErr != agree.TIStdErr || agree.Disagree {
		t.Errorf("agreeing estimates: %+v", agree)
	}
	apart, err := CombineAnnealed([]AnnealSummary{annealed(0, -100, -110), annealed(1, -101, -110)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := math.Sqrt(0.25 + 9.5*9.5 - 0.25)
	if !apart.Disagree || math.Abs(apart.StdErr-want) > 1e-12 || apart.SMC != -110 {
		t.Errorf("estimates 9.5 nats apart: stderr %v (want %v), disagree %v", apart.StdErr, want, apart.Disagree)
	}
	chain := ChainSummary{Rank: 2, TIndex: 1, T: 0.5, Chain: 0, Count: 100, Mean: -90, M2: 0, ESS: 30}
	pooled, err := CombineAnnealed([]AnnealSummary{annealed(0, -100, -100)}, []ChainSummary{chain})
	if err != nil {
		t.Fatal(err)
	}
	// f(0.5) = (10·(−100) + 30·(−90))/40 = −92.5; the trapezoid is (−100 − 92.5)/4 + (−92.5 − 100)/4.
	if got := pooled.Trapezoid; math.Abs(got+96.25) > 1e-12 {
		t.Errorf("pooled trapezoid %v, want −96.25", got)
	}
	// The integral reads the first increment on [0, 0.5], not the population at t = 0: a prior
	// whose log-likelihood has no mean or variance leaves it where it was.
	heavy := annealed(0, -100, -100)
	heavy.Mean[0], heavy.Var[0] = -1e9, 1e18
	if got, err := CombineAnnealed([]AnnealSummary{heavy}, nil); err != nil || got.LogEvidence != -100 {
		t.Errorf("with the prior's f(0) −1e9 and v(0) 1e18: integral %v (%v), want −100", got.LogEvidence, err)
	}
	if _, err := CombineAnnealed([]AnnealSummary{annealed(0, -100, -100)}, []ChainSummary{{Rank: 2, TIndex: 1, T: 0.4, Chain: 0, Count: 1}}); err == nil {
		t.Error("a chain off its replica's ladder was accepted")
	}
}
