package sti

import (
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/samplers"
)

// mover is the annealing stage's kernel: moves that leave the power posterior at t exactly
// invariant. A mover owns its scratch and serves one particle at a time.
type mover interface {
	// blocks is the number of parameter blocks with a step size of their own.
	blocks() int
	// move carries θ through sweeps at temperature t with step sizes step (one per block, MALA's
	// ε; a kernel without steps ignores them), adds the mean acceptance probability of each block
	// to acc and returns log p(X | θ) at the end.
	move(r *rand.Rand, t float64, sweeps int, step []float64, theta, acc []float64) float64
	// logLik returns log p(X | θ).
	logLik(theta []float64) float64
	// passes is the number of full passes over the data that move makes for sweeps sweeps.
	passes(sweeps int) int
	// cellEvals counts the cells read so far.
	cellEvals() int64
	// base is the model and evaluator the mover holds.
	base() *moverBase
	// forget drops what the mover keeps of the θ it last moved (models.Augmented.Forget): a
	// mover shared by particles calls it before each particle's moves.
	forget()
}

// newMover returns the model's data-augmentation kernel where it has one (models.Augmentable),
// else MALA on the whole parameter.
func newMover(m models.Model) mover {
	if gm := newGibbsMover(m); gm != nil {
		return gm
	}
	base := moverBase{m: m, e: m.NewEval()}
	d := m.Dim()
	point := func() *samplers.Point {
		return &samplers.Point{Grad: make([]float64, d), Metric: make([]float64, d), Gamma: make([]float64, d)}
	}
	fm := &fullMALA{moverBase: base, cur: point(), prop: point()}
	fm.prop.Theta = make([]float64, d)
	return fm
}

// moverBase is what both movers hold: the model, an evaluator and the count of cells read.
type moverBase struct {
	m     models.Model
	e     models.Eval
	cells int64
}

func (b *moverBase) cellEvals() int64 { return b.cells }

func (b *moverBase) base() *moverBase { return b }

// forget: MALA derives everything from θ at every move.
func (b *moverBase) forget() {}

func (b *moverBase) logLik(theta []float64) float64 {
	b.e.Prepare(theta)
	b.cells += int64(models.PassCells(b.m))
	return models.LogLik(b.e, b.m)
}

// gibbsMover sweeps the model's data-augmentation kernel (models.Augmented), which needs no step
// size.
type gibbsMover struct {
	moverBase
	k   models.Augmented
	acc []float64
}

// newGibbsMover returns the model's data-augmentation kernel, nil if it has none.
func newGibbsMover(m models.Model) *gibbsMover {
	a, ok := m.(models.Augmentable)
	if !ok {
		return nil
	}
	k := a.NewAugmented()
	return &gibbsMover{moverBase: moverBase{m: m, e: k.NewEval()}, k: k, acc: make([]float64, len(m.Factors()))}
}

func (gm *gibbsMover) blocks() int { return len(gm.acc) }

func (gm *gibbsMover) forget() { gm.k.Forget() }

// passes counts the kernel's two reads of the cells per factor; the last of them gives the
// likelihood.
func (gm *gibbsMover) passes(sweeps int) int { return models.SweepPasses(len(gm.acc)) * sweeps }

func (gm *gibbsMover) move(r *rand.Rand, t float64, sweeps int, _ []float64, theta, acc []float64) float64 {
	ll := math.NaN()
	for s := range sweeps {
		if s < sweeps-1 {
			gm.k.Move(r, t, theta, gm.acc)
		} else {
			ll = gm.k.Sweep(r, t, theta, gm.acc)
		}
		for b, a := range gm.acc {
			acc[b] += a / float64(sweeps)
		}
	}
	gm.cells += int64(gm.passes(sweeps)) * int64(models.PassCells(gm.m))
	return ll
}

// moveOn is one sweep of move whose log-likelihood is not read (models.Augmented.Move).
func (gm *gibbsMover) moveOn(r *rand.Rand, t float64, theta, acc []float64) {
	gm.k.Move(r, t, theta, gm.acc)
	for b, a := range gm.acc {
		acc[b] += a
	}
	gm.cells += int64(gm.passes(1)) * int64(models.PassCells(gm.m))
}

// fullMALA is MALA on the whole parameter (samplers.MALA with the model's position-dependent
// diagonal metric, and its Hastings correction), for models without a data-augmentation kernel.
type fullMALA struct {
	moverBase
	cur, prop *samplers.Point
}

// propose writes MALA's proposal from the current point into the proposal.
func (fm *fullMALA) propose(r *rand.Rand, eps float64) {
	copy(fm.prop.Theta, fm.cur.Theta)
	samplers.MALA{}.Update(nil, samplers.Input{Theta: fm.prop.Theta, Grad: fm.cur.Grad, Metric: fm.cur.Metric,
		Gamma: fm.cur.Gamma, Lo: 0, Hi: len(fm.prop.Theta), Eps: eps, Rand: r})
}

// outside reports whether the proposal leaves a non-negative parameterisation, where the target
// is zero.
func (fm *fullMALA) outside() bool {
	if fm.m.Positive() {
		for _, v := range fm.prop.Theta {
			if v < 0 {
				return true
			}
		}
	}
	return false
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
	fm.cells += int64(models.PassCells(fm.m))
	return ll
}

func (fm *fullMALA) move(r *rand.Rand, t float64, sweeps int, step []float64, theta, acc []float64) float64 {
	eps := step[0]
	fm.cur.Theta = theta
	ll := fm.target(fm.cur, t)
	for s := 0; s < sweeps; s++ {
		fm.propose(r, eps)
		if fm.outside() {
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
