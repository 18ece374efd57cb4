package sti

import (
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/models"
)

// mover is the annealing stage's kernel: Metropolis-adjusted moves that leave the power posterior
// at t invariant. A mover owns its evaluator's scratch and serves one particle at a time.
type mover interface {
	// blocks is the number of parameter blocks with a step size of their own.
	blocks() int
	// move carries θ through sweeps at temperature t with step sizes step (one per block), adds
	// the mean acceptance probability of each block to acc and returns log p(X | θ) at the end.
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
	if c, ok := e.(models.Conditionals); ok && m.Factors() != nil {
		rm := &rowMALA{m: m, e: e, c: c, prop: make([]float64, d), g: make([]float64, d),
			gamma: make([]float64, d), gProp: make([]float64, d)}
		rm.rescale, _ = m.(models.Rescaler)
		for _, f := range m.Factors() {
			rm.terms = growTo(rm.terms, f.Rows)
			rm.termsProp = growTo(rm.termsProp, f.Rows)
			rm.grad = growTo(rm.grad, f.Rows*f.Cols)
			rm.gradProp = growTo(rm.gradProp, f.Rows*f.Cols)
		}
		return rm
	}
	return &fullMALA{m: m, e: e, prop: make([]float64, d), grad: make([]float64, d), gradProp: make([]float64, d),
		g: make([]float64, d), gProp: make([]float64, d), gamma: make([]float64, d)}
}

func growTo(s []float64, n int) []float64 {
	if len(s) < n {
		return make([]float64, n)
	}
	return s
}

// rowMALA is Metropolis-within-Gibbs over the factors of a factor model: a sweep proposes new
// values for every row of a factor at once by preconditioned Langevin (the model's diagonal
// metric at the current and at the proposed row, so the proposal is position-dependent and the
// Hastings ratio uses both), accepts or rejects each row on its own conditional, and moves to the
// next factor; then the components are rescaled along the directions the likelihood does not see
// (models.Rescaler). A factor's rows are independent given the others, so the acceptance of a row
// depends on the rank, not on the number of rows.
type rowMALA struct {
	m       models.Model
	e       models.Eval
	c       models.Conditionals
	rescale models.Rescaler

	prop, g, gamma, gProp            []float64
	terms, termsProp, grad, gradProp []float64
	cells                            int64
}

func (rm *rowMALA) blocks() int { return len(rm.m.Factors()) }

func (rm *rowMALA) passes(sweeps int) int { return 2*len(rm.m.Factors())*sweeps + 1 }

func (rm *rowMALA) cellEvals() int64 { return rm.cells }

func (rm *rowMALA) logLik(theta []float64) float64 {
	rm.e.Prepare(theta)
	rm.cells += int64(rm.m.NumCells())
	return models.LogLik(rm.e, rm.m)
}

func (rm *rowMALA) move(r *rand.Rand, t float64, sweeps int, step []float64, theta, acc []float64) float64 {
	positive := rm.m.Positive()
	for s := 0; s < sweeps; s++ {
		for k, f := range rm.m.Factors() {
			eps := step[k]
			lo, hi := f.Params(0, f.Rows)
			R := f.Cols
			rm.e.Prepare(theta)
			rm.c.Conditional(k, t, rm.terms, rm.grad)
			rm.e.Metric(t, rm.g, rm.gamma)
			copy(rm.prop, theta)
			for j := lo; j < hi; j++ {
				g := rm.g[j]
				rm.prop[j] = theta[j] + 0.5*eps*eps*g*rm.grad[j-lo] + eps*math.Sqrt(g)*r.NormFloat64()
			}
			rm.e.Prepare(rm.prop)
			rm.c.Conditional(k, t, rm.termsProp, rm.gradProp)
			rm.e.Metric(t, rm.gProp, rm.gamma)
			rm.cells += 2 * int64(rm.m.NumCells())
			accepted := 0.0
			for i := range f.Rows {
				a, b := lo+i*R, lo+(i+1)*R
				logA := rm.termsProp[i] - rm.terms[i]
				bad := math.IsNaN(logA)
				for j := a; j < b; j++ {
					if positive && rm.prop[j] < 0 {
						bad = true
					}
					// log q(θ | θ') − log q(θ' | θ)
					fw := rm.prop[j] - theta[j] - 0.5*eps*eps*rm.g[j]*rm.grad[j-lo]
					bw := theta[j] - rm.prop[j] - 0.5*eps*eps*rm.gProp[j]*rm.gradProp[j-lo]
					logA += -bw*bw/(2*eps*eps*rm.gProp[j]) - 0.5*math.Log(rm.gProp[j]) +
						fw*fw/(2*eps*eps*rm.g[j]) + 0.5*math.Log(rm.g[j])
				}
				if bad || math.IsNaN(logA) {
					continue
				}
				p := math.Exp(min(logA, 0))
				accepted += p
				if r.Float64() < p {
					copy(theta[a:b], rm.prop[a:b])
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

// fullMALA is MALA on the whole parameter, preconditioned by the model's diagonal metric, for
// models whose parameters do not split into conditionally independent rows.
type fullMALA struct {
	m                    models.Model
	e                    models.Eval
	prop, grad, gradProp []float64
	g, gProp, gamma      []float64
	cells                int64
}

func (fm *fullMALA) blocks() int { return 1 }

func (fm *fullMALA) passes(sweeps int) int { return sweeps + 1 }

func (fm *fullMALA) cellEvals() int64 { return fm.cells }

func (fm *fullMALA) logLik(theta []float64) float64 {
	fm.e.Prepare(theta)
	fm.cells += int64(fm.m.NumCells())
	return models.LogLik(fm.e, fm.m)
}

// target returns t·log p(X | θ) + log p(θ) and log p(X | θ) at θ and writes the gradient and the
// metric of the former.
func (fm *fullMALA) target(t float64, theta, grad, g []float64) (float64, float64) {
	fm.e.Prepare(theta)
	clear(grad)
	ll := models.LogLikGrad(fm.e, fm.m, t, grad)
	lp := fm.e.LogPrior(grad)
	fm.e.Metric(t, g, fm.gamma)
	fm.cells += int64(fm.m.NumCells())
	return t*ll + lp, ll
}

func (fm *fullMALA) move(r *rand.Rand, t float64, sweeps int, step []float64, theta, acc []float64) float64 {
	eps := step[0]
	positive := fm.m.Positive()
	cur, ll := fm.target(t, theta, fm.grad, fm.g)
	for s := 0; s < sweeps; s++ {
		bad := false
		for j := range theta {
			fm.prop[j] = theta[j] + 0.5*eps*eps*fm.g[j]*fm.grad[j] + eps*math.Sqrt(fm.g[j])*r.NormFloat64()
			bad = bad || (positive && fm.prop[j] < 0)
		}
		if bad {
			continue
		}
		next, llNext := fm.target(t, fm.prop, fm.gradProp, fm.gProp)
		logA := next - cur
		for j := range theta {
			fw := fm.prop[j] - theta[j] - 0.5*eps*eps*fm.g[j]*fm.grad[j]
			bw := theta[j] - fm.prop[j] - 0.5*eps*eps*fm.gProp[j]*fm.gradProp[j]
			logA += -bw*bw/(2*eps*eps*fm.gProp[j]) - 0.5*math.Log(fm.gProp[j]) +
				fw*fw/(2*eps*eps*fm.g[j]) + 0.5*math.Log(fm.g[j])
		}
		if math.IsNaN(logA) {
			continue
		}
		p := math.Exp(min(logA, 0))
		acc[0] += p / float64(sweeps)
		if r.Float64() < p {
			copy(theta, fm.prop)
			fm.grad, fm.gradProp = fm.gradProp, fm.grad
			fm.g, fm.gProp = fm.gProp, fm.g
			cur, ll = next, llNext
		}
	}
	return ll
}
