package baselines

import (
	"math"
	"slices"
	"testing"

	"github.com/stirank/stirank/rng"
)

// At t = 0 the path's distribution is the reference, which q.sample draws exactly: the transfers
// from such a draw must leave it distributed as before. The reference's two components are alike
// (the same Gamma of shape 20 for every row in both), as a component split in two is, so most
// draws have a pair to move. The statistics are each mode's Σ log F and the largest share
// min(F[i, a], F[i, b]) / (F[i, a] + F[i, b]) of a row, which the moves change; a move without
// q's term (flat along the line at t = 0) fails it.
func TestTransferKeepsTheReference(t *testing.T) {
	const R, n = 2, 4000
	shape := []int{6, 3, 3}
	p := tinyProblem(t, 9, shape, 1, 0.5)
	r := rng.New(6)
	s, err := p.newPathState(alikeFit(shape, R), 1)
	if err != nil {
		t.Fatal(err)
	}
	q := s.ref
	stats := func() []float64 {
		var v []float64
		for m := range p.order {
			logs, share := 0.0, 0.0
			for i := 0; i < len(s.f.F[m]); i += R {
				a, b := s.f.F[m][i], s.f.F[m][i+1]
				logs += math.Log(a) + math.Log(b)
				share = max(share, min(a, b)/(a+b))
			}
			v = append(v, logs, share)
		}
		return v
	}
	var before, after [][]float64
	moved := 0
	for range n {
		q.sample(r, s.f)
		s.refresh()
		before = append(before, stats())
		old := slices.Clone(s.f.F[0])
		s.transferMoves(r, 0)
		if !slices.Equal(old, s.f.F[0]) {
			moved++
		}
		after = append(after, stats())
	}
	t.Logf("%d of %d draws moved", moved, n)
	if moved < n/4 {
		t.Fatalf("only %d of %d draws had a pair to move", moved, n)
	}
	unmoved(t, before, after)
}

// alikeFit is a reference of R alike components on a tensor of the given shape: the same Gamma of
// shape 20 for every row in each.
func alikeFit(shape []int, R int) ReferenceFit {
	fit := ReferenceFit{Rank: R}
	d := len(shape) - 1
	for m, rows := range shape {
		fit.Alpha, fit.Beta = append(fit.Alpha, make([]float64, rows*R)), append(fit.Beta, make([]float64, rows*R))
		for i := range rows {
			mean := 0.5 + float64((i+m)%3)
			for k := range R {
				fit.Alpha[m][i*R+k], fit.Beta[m][i*R+k] = 20, 20/mean
			}
		}
	}
	for range R {
		cov := make([]float64, d*d)
		for a := range d {
			cov[a*d+a] = 0.01
		}
		fit.OrbitMean, fit.OrbitCov = append(fit.OrbitMean, make([]float64, d)), append(fit.OrbitCov, cov)
	}
	return fit
}

// transferLog, the permanent expanded along the two moved rows with beginPair's minors, is log q
// at the moved point as a reference refreshed there computes it.
func TestTransferLogMatchesTheReference(t *testing.T) {
	shape := []int{5, 4, 3}
	p := tinyProblem(t, 9, shape, 1, 0.5)
	r := rng.New(8)
	for _, R := range []int{2, 3, 5} {
		fit := alikeFit(shape, R)
		q, err := p.newReference(fit)
		if err != nil {
			t.Fatal(err)
		}
		moved, err := p.newReference(fit)
		if err != nil {
			t.Fatal(err)
		}
		f, g := p.NewFactors(R), p.NewFactors(R)
		for trial := range 20 {
			q.sample(r, f)
			m, i := trial%len(shape), r.IntN(shape[trial%len(shape)])
			a := r.IntN(R)
			b := (a + 1 + r.IntN(R-1)) % R
			xa, xb := f.F[m][i*R+a]*math.Exp(r.NormFloat64()), f.F[m][i*R+b]*math.Exp(r.NormFloat64())
			q.beginPair(a, b)
			got := q.transferLog(f, m, i, a, b, xa, xb)
			g.CopyFrom(f)
			g.F[m][i*R+a], g.F[m][i*R+b] = xa, xb
			moved.refresh(g)
			if want := moved.logDensity(); math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
				t.Errorf("R=%d, mode %d, row %d, pair (%d, %d): transferLog %.12g, log q there %.12g", R, m, i, a, b, got, want)
			}
		}
	}
}
