package sti

import (
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/samplers"
)

// mover is the annealing stage's kernel: Metropolis-adjusted moves that leave the power posterior
// at t invariant. A mover owns its evaluator's scratch and serves one particle at a time. Both
// movers propose by samplers.MALA (the model's position-dependent diagonal metric) and use its
// Hastings correction.
type mover interface {
	// blocks is the number of parameter blocks with a step size of their own.
	blocks() int
	// move carries θ through sweeps at temperature t with step sizes step (one per block, MALA's
	// ε), adds the mean acceptance probability of each block to acc and returns log p(X | θ) at
	// the end.
	move(r *rand.Rand, t float64, sweeps int, step []float64, theta, acc []float64) float64
	// logLik returns log p(X | θ).
	logLik(theta []float64) float64
	// passes is the number of full passes over the data that move makes for sweeps sweeps.
	passes(sweeps int) int
	// cellEvals counts the cells read so far.
	cellEvals() int64
}

// newMover returns the row-wise kernel for factor models whose evaluator splits by rows
// (models.Conditionals), and MALA on the whole parameter for the others.
func newMover(m models.Model) mover {
	e := m.NewEval()
	d := m.Dim()
	point := func() *samplers.Point {
		return &samplers.Point{Grad: make([]float64, d), Metric: make([]float64, d), Gamma: make([]float64, d)}
	}
	base := moverBase{m: m, e: e, cur: point(), prop: point()}
	base.prop.Theta = make([]float64, d)
	if c, ok := e.(models.Conditionals); ok && m.Factors() != nil {
		rm := &rowMALA{moverBase: base, c: c}
		rm.rescale, _ = m.(models.Rescaler)
		for _, f := range m.Factors() {
			rm.terms = growTo(rm.terms, f.Rows)
			rm.termsProp = growTo(rm.termsProp, f.Rows)
		}
		return rm
	}
	return &fullMALA{moverBase: base}
}

func growTo(s []float64, n int) []float64 {
	if len(s) < n {
		return make([]float64, n)
	}
	return s
}

// moverBase is what both movers hold: the model, an evaluator, the current point and the
// proposal, and the count of cells read.
type moverBase struct {
	m         models.Model
	e         models.Eval
	cur, prop *samplers.Point
	cells     int64
}

func (b *moverBase) cellEvals() int64 { return b.cells }

func (b *moverBase) logLik(theta []float64) float64 {
	b.e.Prepare(theta)
	b.cells += int64(b.m.NumCells())
	return models.LogLik(b.e, b.m)
}

// propose writes MALA's proposal from the current point over coordinates [lo, hi) into the
// proposal, which equals the current point elsewhere.
func (b *moverBase) propose(r *rand.Rand, lo, hi int, eps float64) {
	copy(b.prop.Theta, b.cur.Theta)
	samplers.MALA{}.Update(nil, samplers.Input{Theta: b.prop.Theta, Grad: b.cur.Grad, Metric: b.cur.Metric,
		Gamma: b.cur.Gamma, Lo: lo, Hi: hi, Eps: eps, Rand: r})
}

// outside reports whether the proposal leaves a non-negative parameterisation over [lo, hi), where
// the target is zero.
func (b *moverBase) outside(lo, hi int) bool {
	if b.m.Positive() {
		for _, v := range b.prop.Theta[lo:hi] {
			if v < 0 {
				return true
			}
		}
	}
	return false
}

// rowMALA is Metropolis-within-Gibbs over the factors of a factor model: a sweep proposes new
// values for every row of a factor at once, accepts or rejects each row on its own conditional
// (the Hastings ratio over that row's coordinates), and moves to the next factor; then the
// components are rescaled along the directions the likelihood does not see (models.Rescaler). A
// factor's rows are independent given the others, so the acceptance of a row depends on the
// rank, not on the number of rows.
type rowMALA struct {
	moverBase
	c                models.Conditionals
	rescale          models.Rescaler
	terms, termsProp []float64
}

func (rm *rowMALA) blocks() int { return len(rm.m.Factors()) }

func (rm *rowMALA) passes(sweeps int) int { return 2*len(rm.m.Factors())*sweeps + 1 }

// conditional evaluates the tempered conditional of factor k at pt: per-row terms, gradient and
// metric.
func (rm *rowMALA) conditional(pt *samplers.Point, k int, t float64, terms []float64) {
	lo, hi := rm.m.Factors()[k].Params(0, rm.m.Factors()[k].Rows)
	rm.e.Prepare(pt.Theta)
	rm.c.Conditional(k, t, terms, pt.Grad[lo:hi])
	rm.e.Metric(t, pt.Metric, pt.Gamma)
	rm.cells += int64(rm.m.NumCells())
}

func (rm *rowMALA) move(r *rand.Rand, t float64, sweeps int, step []float64, theta, acc []float64) float64 {
	rm.cur.Theta = theta
	for s := 0; s < sweeps; s++ {
		for k, f := range rm.m.Factors() {
			eps := step[k]
			lo, hi := f.Params(0, f.Rows)
			rm.conditional(rm.cur, k, t, rm.terms)
			rm.propose(r, lo, hi, eps)
			rm.conditional(rm.prop, k, t, rm.termsProp)
			accepted := 0.0
			for i := range f.Rows {
				a, b := f.Params(i, i+1)
				if rm.outside(a, b) {
					continue
				}
				logA := rm.termsProp[i] - rm.terms[i] + samplers.MALA{}.LogProposalRatio(rm.cur, rm.prop, a, b, eps)
				if math.IsNaN(logA) {
					continue
				}
				p := math.Exp(min(logA, 0))
				accepted += p
				if r.Float64() < p {
					copy(theta[a:b], rm.prop.Theta[a:b])
				}
			}
			acc[k] += accepted / float64(f.Rows) / float64(sweeps)
		}
		if rm.rescale != nil {
			rm.rescale.Rescale(r, theta)
		}
	}
	return rm.logLik(theta)
}

// fullMALA is MALA on the whole parameter, for models whose parameters do not split into
// conditionally independent rows.
type fullMALA struct {
	moverBase
}

func (fm *fullMALA) blocks() int { return 1 }

func (fm *fullMALA) passes(sweeps int) int { return sweeps + 1 }

// target evaluates the tempered log posterior at pt, with its gradient and metric, and returns
// log p(X | θ).
func (fm *fullMALA) target(pt *samplers.Point, t float64) float64 {
	fm.e.Prepare(pt.Theta)
	clear(pt.Grad)
	ll := models.LogLikGrad(fm.e, fm.m, t, pt.Grad)
	pt.LogPost = t*ll + fm.e.LogPrior(pt.Grad)
	fm.e.Metric(t, pt.Metric, pt.Gamma)
	fm.cells += int64(fm.m.NumCells())
	return ll
}

func (fm *fullMALA) move(r *rand.Rand, t float64, sweeps int, step []float64, theta, acc []float64) float64 {
	eps := step[0]
	fm.cur.Theta = theta
	ll := fm.target(fm.cur, t)
	for s := 0; s < sweeps; s++ {
		fm.propose(r, 0, len(theta), eps)
		if fm.outside(0, len(theta)) {
			continue
		}
		llProp := fm.target(fm.prop, t)
		logA := samplers.MALA{}.LogAccept(fm.cur, fm.prop, eps)
		if math.IsNaN(logA) {
			continue
		}
		p := math.Exp(min(logA, 0))
		acc[0] += p / float64(sweeps)
		if r.Float64() < p {
			// The proposal becomes the current point; the particle's θ takes its values.
			copy(theta, fm.prop.Theta)
			fm.cur, fm.prop = fm.prop, fm.cur
			fm.prop.Theta, fm.cur.Theta = fm.cur.Theta, theta
			ll = llProp
		}
	}
	return ll
}
