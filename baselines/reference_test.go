package baselines

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// referenceAIS is a short AIS from a fitted reference: 200 temperatures on the sigmoid schedule
// after 200 + 400 Gibbs sweeps.
func referenceAIS() AISConfig {
	c := DefaultAIS().FromReference(400)
	c.Temperatures, c.ReferenceBurnin = 200, 200
	return c
}

// From a fitted reference AIS is exact on tiny data, where the components switch labels all the
// time and the posterior's R! copies overlap: the symmetrised reference needs no assumption about
// them (q₀ alone with + log R! was 0.6–1.9 nats high here at ranks 2 and 3).
func TestReferenceAISExact(t *testing.T) {
	forTinyExact(t, func(name string, p *Problem, R int, exact float64) {
		got, se, _ := estimate(t, p, MethodAIS, R, 16, DefaultChib(), referenceAIS())
		t.Logf("%s R=%d exact %.4f | reference AIS %.4f ± %.4f", name, R, exact, got, se)
		if math.Abs(got-exact) > 3.5*se+0.01 {
			t.Errorf("%s R=%d: reference AIS %.4f ± %.4f, exact %.4f", name, R, got, se, exact)
		}
	})
}

// At t = 0 the path's distribution is the reference itself, which AIS draws exactly: a sweep and
// the scale moves from such a draw must leave it distributed as before. The statistics, symmetric
// in the labels, are each mode's Σ_k log(column sum) and Σ log F, whose mean change over a move
// must be zero; on a 12×3 matrix the scale moves' Jacobian (n1 − n2)·u is large, and the test fails
// without it.
func TestReferenceMovesKeepTheReference(t *testing.T) {
	const R, n = 2, 4000
	p := tinyProblem(t, 21, []int{12, 3}, R, 0.5)
	r := rng.New(5)
	fit, err := p.fitReference(context.Background(), r, R, 1, 0, 200, 400)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.newPathState(fit, 1)
	if err != nil {
		t.Fatal(err)
	}
	q := s.ref
	stats := func() []float64 {
		var v []float64
		for m := range p.order {
			cs := make([]float64, R)
			models.ColSums(s.f.F[m], R, cs)
			a, b := 0.0, 0.0
			for _, c := range cs {
				a += math.Log(c)
			}
			for _, f := range s.f.F[m] {
				b += math.Log(f)
			}
			v = append(v, a, b)
		}
		return v
	}
	var before, after [][]float64
	for range n {
		q.sample(r, s.f)
		s.refresh()
		before = append(before, stats())
		s.sweep(r, 0)
		s.pathMoves(r, 0)
		after = append(after, stats())
	}
	unmoved(t, before, after)
}

// unmoved checks that the mean change of every statistic from before[i] to after[i] over the draws
// i is zero within 4 of its standard errors: a move from an exact draw of its invariant
// distribution leaves each statistic's distribution as it was.
func unmoved(t *testing.T, before, after [][]float64) {
	t.Helper()
	n := len(before)
	for j := range before[0] {
		var x, diff []float64
		for i := range n {
			x, diff = append(x, before[i][j]), append(diff, after[i][j]-before[i][j])
		}
		md, vd := stat.MeanVariance(diff, nil)
		z := md / math.Sqrt(vd/float64(n))
		t.Logf("statistic %d: %.4f before, moved by %.4f on average (z = %.2f)", j, stat.Mean(x, nil), md, z)
		if math.Abs(z) > 4 {
			t.Errorf("statistic %d moved by %.4f on average (z = %.2f)", j, md, z)
		}
	}
}
