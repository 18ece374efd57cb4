package sti

import (
	"math"
	"testing"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
)

// On a 250×250 matrix with counts in the hundreds the default ladder's rule misses the exact
// rank-1 evidence by more than half a nat on its own exact curve, and the fitted ladder brings
// that within the tolerance; a small matrix keeps the default, and so do a model without an
// exact rank-1 curve, a configuration that does not ask for the fit and a ladder other than the
// default.
func TestFitLadder(t *testing.T) {
	power6 := evidence.Power(30, evidence.DefaultPower)
	for _, c := range []struct {
		name      string
		shape     []int
		rate      float64
		steeper   bool
		minError6 float64
	}{
		{"30x20", []int{30, 20}, 1, false, 0},
		{"250x250 counts in the hundreds", []int{250, 250}, 0.1, true, 0.3},
	} {
		d, rates := poissonData(t, c.shape, 2, c.rate, 3)
		spec := models.PoissonSpec("nmf", rates, models.LogScale)
		p, err := NewProblem(d, spec, Default("nmf"))
		if err != nil {
			t.Fatal(err)
		}
		logZ, err := models.Rank1LogPower(d, rates)
		if err != nil {
			t.Fatal(err)
		}
		e6, err := power6.RuleError(logZ)
		if err != nil {
			t.Fatal(err)
		}
		e, err := p.Config.Ladder.RuleError(logZ)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: first rung %.3g, rule error %.3f (power:6 %.3f)", c.name, p.Config.Ladder[1], e, e6)
		if got := p.Config.Ladder[1] < power6[1]; got != c.steeper || len(p.Config.Ladder) != 31 {
			t.Errorf("%s: fitted first rung %v against power:6's %v, %d rungs", c.name, p.Config.Ladder[1], power6[1], len(p.Config.Ladder))
		}
		if math.Abs(e) > LadderTolerance || math.Abs(e6) < c.minError6 {
			t.Errorf("%s: rule error %.3f fitted, %.3f with power:6", c.name, e, e6)
		}
		// Rank 1's twice as many rungs (Config.Rank1) are fitted to the same tolerance.
		l1 := p.RankConfig(1).Ladder
		if e1, err := l1.RuleError(logZ); err != nil || len(l1) != 61 || math.Abs(e1) > LadderTolerance {
			t.Errorf("%s: rank 1's ladder of %d rungs has rule error %.3f (%v)", c.name, len(l1), e1, err)
		}
		cfg := Default("nmf")
		cfg.FitLadder = false
		if p, err := NewProblem(d, spec, cfg); err != nil || p.Config.Ladder[1] != power6[1] {
			t.Errorf("%s: the ladder moved without FitLadder (%v)", c.name, err)
		}
		cfg.FitLadder, cfg.Ladder = true, evidence.Power(30, 5)
		if p, err := NewProblem(d, spec, cfg); err != nil || p.Config.Ladder[1] != cfg.Ladder[1] {
			t.Errorf("%s: a ladder other than the default was fitted (%v)", c.name, err)
		}
	}
	cfg := Default("gauss")
	cfg.FitLadder = true
	p, err := NewProblem(gaussData(t, 5, 1), models.GaussSpec(models.ICASSPGauss), cfg)
	if err != nil || p.Config.Ladder[1] != power6[1] {
		t.Errorf("a model without an exact rank-1 curve had its ladder fitted (%v)", err)
	}
}
