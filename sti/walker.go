package sti

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/stirank/stirank/internal/par"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/samplers"
)

// Walker is one chain of a problem at one rank: θ in the model's sampling parameterisation, the
// kernel and its state, the chain's random streams, and the temperature t of the power posterior
// p(θ) p(X | θ)^t it targets. Every estimator that moves θ with the model's gradients drives one:
// RunChain and Resume walk at a fixed rung, the mode search and the settling of new rows ascend.
// A walker is not safe for concurrent use; its steps run the blocks of a part on several
// goroutines themselves.
//
// Step k of a walk (k counts from 1 since the walker was made) adapts while k ≤ the burn-in
// (SetBurnin): the step size follows the burn-in schedule, the kernel adapts, the metric follows θ
// and, for kernels that freeze it, is held from the last burn-in step on.
type Walker struct {
	p     *Problem
	m     models.Model
	id    ChainID
	t     float64
	state samplers.State

	theta, grad, metric, gamma []float64
	e                          models.Eval

	// Control variates: the reference point, its evaluator, Σ_n ℓ_n and Σ_n ∇ℓ_n there, and
	// scratch for the subsample's gradient at the reference.
	cv              bool
	hat             []float64
	ehat            models.Eval
	hatLL           float64
	hatGrad, hatBuf []float64

	// parts[p] are the units of part p (or of the single subsample/whole-data step).
	parts   [][]unit
	scale   float64 // N/|S| weight of a subsampled sum (the number of parts, for parts)
	sub     samplers.Subsample
	perm    []int32
	sched   *rng.Stream
	streams []*rng.Stream
	// chunkStreams[i] are the noise streams of the chunks of unit i's long parameter ranges.
	chunkStreams [][]*rng.Stream
	// per-unit partial results, summed in unit order so the total does not depend on scheduling
	partLL, partHat, partDot, partFull []float64
	cellEvals                          int64
	roundPos                           int
	order                              []int

	// burnin is the number of steps that adapt, and schedule their step sizes.
	burnin   int
	schedule samplers.StepSchedule

	// Metropolis–Hastings kernels: the current and proposed points, the proposal's evaluator,
	// the full-data log-likelihood at both, and the step size, tuned during burn-in.
	cur, prop *samplers.Point
	eprop     models.Eval
	ll        [2]float64
	mhEps     float64
}

// unit is the work one goroutine does in a step: the cells it reads and the parameter ranges it
// owns (and alone updates). Units of one step own disjoint ranges.
type unit struct {
	cells  models.Cells
	params [][2]int
}

// work is the size of a unit's share of a step: cells read plus parameters moved.
func (u unit) work() int {
	n := u.cells.Len()
	for _, r := range u.params {
		n += r[1] - r[0]
	}
	return n
}

// Divergence reports a non-finite value in a chain: where, and what.
type Divergence struct {
	ID   ChainID
	T    float64
	Step int
	What string
}

func (d *Divergence) Error() string {
	return fmt.Sprintf("rank %d, t=%.6g (temperature %d), chain %d, step %d: %s",
		d.ID.Rank, d.T, d.ID.TIndex, d.ID.Chain, d.Step, d.What)
}

// NewWalker returns a walker for chain id at the temperature of its rung, with θ = 0 (set it with
// SetTheta or SamplePrior) and the configured burn-in.
func (p *Problem) NewWalker(id ChainID) (*Walker, error) {
	l := p.RankConfig(id.Rank).Ladder
	if id.TIndex < 0 || id.TIndex >= len(l) {
		return nil, fmt.Errorf("temperature index %d outside rank %d's ladder of %d", id.TIndex, id.Rank, len(l))
	}
	m, err := p.model(id.Rank)
	if err != nil {
		return nil, err
	}
	return newWalker(p, m, id, l[id.TIndex]), nil
}

// chainWalker returns the walker that runs chain id: NewWalker's, except for a Gibbs chain at
// t > 0, which moves θ by the model's data-augmentation kernel alone (walk) and gets a walker with
// θ only: no gradient, metric, kernel state or evaluator, buffers of the parameters' size (7 MB
// each at rank 11 of a 10⁶-non-zero CP tensor) that it would never use.
func (p *Problem) chainWalker(id ChainID) (*Walker, error) {
	cfg := p.RankConfig(id.Rank)
	if !cfg.Gibbs || id.TIndex < 0 || id.TIndex >= len(cfg.Ladder) || cfg.Ladder[id.TIndex] == 0 {
		return p.NewWalker(id)
	}
	m, err := p.model(id.Rank)
	if err != nil {
		return nil, err
	}
	w := &Walker{p: p, m: m, id: id, t: cfg.Ladder[id.TIndex], theta: make([]float64, m.Dim())}
	w.SetBurnin(cfg.Burnin)
	return w, nil
}

func newWalker(p *Problem, m models.Model, id ChainID, t float64) *Walker {
	cfg := p.Config
	dim := m.Dim()
	w := &Walker{
		p: p, m: m, id: id, t: t,
		theta: make([]float64, dim), grad: make([]float64, dim), e: m.NewEval(),
		sched: rng.NewStream(cfg.Seed, uint64(id.Rank), uint64(id.TIndex), uint64(id.Chain), streamSchedule),
	}
	w.SetBurnin(p.RankConfig(id.Rank).Burnin)
	caps := p.sampler.Caps
	w.state = p.sampler.Kernel.NewState(dim)
	if caps.MetropolisHastings {
		w.cur = &samplers.Point{Theta: w.theta, Grad: w.grad, Metric: make([]float64, dim), Gamma: make([]float64, dim)}
		w.prop = &samplers.Point{Theta: make([]float64, dim), Grad: make([]float64, dim), Metric: make([]float64, dim), Gamma: make([]float64, dim)}
		w.eprop = m.NewEval()
		w.mhEps = cfg.Step
	}
	if caps.UsesMetric || cfg.StartSteps > 0 || cfg.SettleSteps > 0 {
		w.metric, w.gamma = make([]float64, dim), make([]float64, dim)
	}
	whole := [][2]int{{0, dim}}
	n := m.NumCells()
	switch {
	case p.Blocked != nil:
		fs := m.Factors()
		parts := samplers.Parts{B: p.Blocked.Grid.B, Order: p.Data.Order()}
		bc := make([]int, parts.Order)
		for pt := range parts.Count() {
			var us []unit
			for b := range parts.B {
				parts.Block(pt, b, bc)
				lo, hi := p.Blocked.BlockCells(p.Blocked.Grid.Linear(bc))
				u := unit{cells: models.Cells{Lo: lo, Hi: hi}}
				for mode, r := range bc {
					plo, phi := fs[mode].Params(p.Blocked.Grid.Bounds[mode][r], p.Blocked.Grid.Bounds[mode][r+1])
					u.params = append(u.params, [2]int{plo, phi})
				}
				us = append(us, u)
			}
			w.parts = append(w.parts, us)
		}
		w.scale = float64(parts.Count())
	case cfg.Subsample > 0 && cfg.Subsample < n:
		w.sub = samplers.Subsample{N: n, Size: cfg.Subsample, Stratified: cfg.Stratified}
		w.perm = make([]int32, n)
		for i := range w.perm {
			w.perm[i] = int32(i)
		}
		w.parts = [][]unit{{{params: whole}}}
	default:
		w.parts = [][]unit{{{cells: models.Cells{Lo: 0, Hi: n}, params: whole}}}
		w.scale = 1
	}
	nu := len(w.parts[0])
	w.streams = make([]*rng.Stream, nu)
	w.chunkStreams = make([][]*rng.Stream, nu)
	for i := range w.streams {
		w.streams[i] = rng.NewStream(0)
	}
	for _, us := range w.parts {
		for i, u := range us {
			for _, r := range u.params {
				if chunks, _ := par.Chunks(r[1] - r[0]); chunks > 1 && w.chunkStreams[i] == nil {
					w.chunkStreams[i] = make([]*rng.Stream, par.MaxChunks)
					for c := range w.chunkStreams[i] {
						w.chunkStreams[i][c] = rng.NewStream(0)
					}
				}
			}
		}
	}
	w.partLL, w.partHat = make([]float64, nu), make([]float64, nu)
	w.partDot, w.partFull = make([]float64, nu), make([]float64, nu)
	// Control variates only pay when the step reads a subsample.
	w.cv = cfg.ControlVariates && (p.Blocked != nil || w.sub.N > 0)
	if w.cv {
		w.hat, w.hatGrad, w.hatBuf = make([]float64, dim), make([]float64, dim), make([]float64, dim)
		w.ehat = m.NewEval()
	}
	return w
}

// ID is the chain the walker belongs to.
func (w *Walker) ID() ChainID { return w.id }

// Model is the model of the walker's rank.
func (w *Walker) Model() models.Model { return w.m }

// Temperature is the t of the power posterior the walker targets.
func (w *Walker) Temperature() float64 { return w.t }

// SetTemperature makes the walker target the power posterior at t from its next step on.
func (w *Walker) SetTemperature(t float64) { w.t = t }

// Theta is the walker's current point; the slice is the walker's own, to be read, not kept.
func (w *Walker) Theta() []float64 { return w.theta }

// SetTheta moves the walker to θ (copied).
func (w *Walker) SetTheta(theta []float64) { copy(w.theta, theta) }

// SamplePrior moves the walker to a draw from the prior.
func (w *Walker) SamplePrior(r *rand.Rand) { w.m.SamplePrior(r, w.theta) }

// SetBurnin sets how many steps of the walk adapt; their step sizes follow the configured
// schedule for a burn-in of that length.
func (w *Walker) SetBurnin(n int) {
	w.burnin = n
	w.schedule, _ = w.p.Config.schedule(n) // Config.Validate checked the schedule
}

// CellEvals is the number of per-cell likelihood evaluations the walker has made.
func (w *Walker) CellEvals() int64 { return w.cellEvals }

// LogLik returns the exact full-data log-likelihood log p(X | θ) at the walker's point: one pass
// over every cell.
func (w *Walker) LogLik() float64 {
	w.e.Prepare(w.theta)
	w.cellEvals += int64(models.PassCells(w.m))
	return models.LogLik(w.e, w.m)
}

// LogPosterior returns log p(θ) + log p(X | θ) at the walker's point, the score of a mode.
func (w *Walker) LogPosterior() float64 {
	w.e.Prepare(w.theta)
	w.cellEvals += int64(models.PassCells(w.m))
	return w.e.LogPrior(nil) + models.LogLik(w.e, w.m)
}

// Step performs step k of the walk with the problem's kernel and returns its record: the
// same-subsample estimate of log p(X | θ) at the point the step starts from (exact for kernels
// with a Metropolis–Hastings correction), unbiased because the subsample is drawn independently of
// that point. A non-finite value is a *Divergence.
func (w *Walker) Step(k int) (float64, error) {
	if w.p.sampler.MH != nil {
		return w.stepMH(k)
	}
	return w.move(k, w.schedule.At(k), w.p.sampler.Kernel)
}

// Ascend performs step k of preconditioned gradient ascent on the tempered log posterior with
// unit steps and clipped drift (samplers.Ascent): the search for a mode that opens a chain.
func (w *Walker) Ascend(k int) error {
	_, err := w.move(k, ascentSchedule.At(k), samplers.Ascent{})
	return err
}

var ascentSchedule = samplers.StepSchedule{A: 1, B: 1, Offset: 0, Burnin: 0}

func (w *Walker) divergence(step int, what string) error {
	return &Divergence{ID: w.id, T: w.t, Step: step, What: what}
}

// estimate returns the subsampled estimate of log p(X | θ) that steps record, at θ, without
// moving: the t = 0 records are scored with it.
func (w *Walker) estimate() float64 {
	w.e.Prepare(w.theta)
	us := w.chooseUnits()
	y := w.e.Dense(0, nil)
	for _, u := range us {
		y += w.scale * w.e.Cells(u.cells, 0, nil)
		w.cellEvals += int64(models.Reads(w.m, u.cells))
	}
	return y
}

// chooseUnits returns the units of the next step and sets the scale for random subsamples.
func (w *Walker) chooseUnits() []unit {
	switch {
	case w.sub.N > 0:
		k := w.sub.Batches()
		b := 0
		if w.sub.Stratified {
			if w.roundPos == 0 {
				w.sub.Permute(w.sched.Rand, w.perm)
			}
			b = w.roundPos
			w.roundPos = (w.roundPos + 1) % k
		}
		idx, scale := w.sub.Batch(w.perm, b, w.sched.Rand)
		w.scale = scale
		u := &w.parts[0][0]
		u.cells = models.Cells{Lo: 0, Hi: len(idx), Index: idx}
		return w.parts[0]
	case len(w.parts) > 1:
		np := len(w.parts)
		if !w.p.Config.Stratified {
			return w.parts[w.sched.IntN(np)]
		}
		if w.roundPos == 0 {
			if w.order == nil {
				w.order = make([]int, np)
			}
			for i := range w.order {
				w.order[i] = i
			}
			w.sched.Shuffle(np, func(i, j int) { w.order[i], w.order[j] = w.order[j], w.order[i] })
		}
		pt := w.order[w.roundPos]
		w.roundPos = (w.roundPos + 1) % np
		return w.parts[pt]
	}
	return w.parts[0]
}

// refresh moves the control-variate reference to the current point: one full pass over the data.
func (w *Walker) refresh() {
	copy(w.hat, w.theta)
	w.ehat.Prepare(w.hat)
	clear(w.hatGrad)
	w.hatLL = w.ehat.Cells(models.Cells{Lo: 0, Hi: w.m.NumCells()}, 1, w.hatGrad)
	w.cellEvals += int64(models.PassCells(w.m))
}

// move performs step k with a gradient kernel at step size eps and returns its record.
func (w *Walker) move(k int, eps float64, kernel samplers.Kernel) (float64, error) {
	cfg := w.p.Config
	if w.cv && (k-1)%cfg.CVRefresh == 0 {
		w.refresh()
		if math.IsNaN(w.hatLL) || math.IsInf(w.hatLL, 0) {
			return 0, w.divergence(k, fmt.Sprintf("full-data log-likelihood is %v", w.hatLL))
		}
	}
	us := w.chooseUnits()
	w.e.Prepare(w.theta)
	clear(w.grad)
	w.e.LogPrior(w.grad)
	y := w.e.Dense(w.t, w.grad)
	frozen := w.p.sampler.Caps.FreezesMetric
	if w.metric != nil && (k <= w.burnin || !frozen) {
		w.e.Metric(w.t, w.metric, w.gamma)
		if k == w.burnin && frozen {
			// A constant metric has no divergence term.
			clear(w.gamma)
		}
	}
	adapt := k <= w.burnin
	if len(us) == 1 || us[0].work() < parallelCells {
		for i := range us {
			w.work(i, us[i], k, kernel, eps, adapt)
		}
	} else {
		var wg sync.WaitGroup
		wg.Add(len(us))
		for i := range us {
			go func() {
				defer wg.Done()
				w.work(i, us[i], k, kernel, eps, adapt)
			}()
		}
		wg.Wait()
	}
	s := w.streams[0]
	s.Reset(cfg.Seed, uint64(w.id.Rank), uint64(w.id.TIndex), uint64(w.id.Chain), streamEndStep, uint64(k))
	kernel.EndStep(w.state, adapt, s.Rand)
	for i := range us {
		w.cellEvals += int64(models.Reads(w.m, us[i].cells))
		if w.cv {
			w.cellEvals += int64(models.Reads(w.m, us[i].cells))
			y += w.partFull[i] + w.scale*(w.partLL[i]-w.partHat[i]-w.partDot[i])
		} else {
			y += w.scale * w.partLL[i]
		}
	}
	if w.cv {
		y += w.hatLL
	}
	if math.IsNaN(y) || math.IsInf(y, 0) {
		return 0, w.divergence(k, fmt.Sprintf("log-likelihood record is %v", y))
	}
	return y, nil
}

// parallelCells is the unit size (cells plus parameters) below which the units of a part run on
// one goroutine: smaller units cost less than the goroutine hand-off. (A variable so tests can
// force either path.)
var parallelCells = 4096

// work evaluates unit i's cells at the current point (the record and the gradient are evaluated at
// θ_{k−1}, which is independent of the step's subsample, so the record is unbiased for
// log p(X | θ_{k−1})) and then moves the unit's parameters.
func (w *Walker) work(i int, u unit, k int, kernel samplers.Kernel, eps float64, adapt bool) {
	wt := w.t * w.scale
	w.partLL[i] = w.e.Cells(u.cells, wt, w.grad)
	if w.cv {
		for _, r := range u.params {
			clear(w.hatBuf[r[0]:r[1]])
		}
		w.partHat[i] = w.ehat.Cells(u.cells, 1, w.hatBuf)
		var dot, full float64
		for _, r := range u.params {
			for j := r[0]; j < r[1]; j++ {
				d := w.theta[j] - w.hat[j]
				dot += w.hatBuf[j] * d
				full += w.hatGrad[j] * d
				w.grad[j] += w.t * (w.hatGrad[j] - w.scale*w.hatBuf[j])
			}
		}
		w.partDot[i], w.partFull[i] = dot, full
	}
	s := w.streams[i]
	s.Reset(w.p.Config.Seed, uint64(w.id.Rank), uint64(w.id.TIndex), uint64(w.id.Chain), streamNoise, uint64(k), uint64(i))
	in := samplers.Input{
		Theta: w.theta, Grad: w.grad, Metric: w.metric, Gamma: w.gamma,
		Eps: eps, N: w.m.NumCells(), Mirror: w.m.Positive(), Adapt: adapt, Rand: s.Rand,
		MaxDrift: w.m.DriftScale(),
	}
	for j, r := range u.params {
		chunks, _ := par.Chunks(r[1] - r[0])
		if chunks == 1 {
			in.Lo, in.Hi = r[0], r[1]
			kernel.Update(w.state, in)
			continue
		}
		// A long range is cut by its length alone, each chunk with a stream of its own, so
		// the draws do not depend on the number of cores.
		cs := w.chunkStreams[i]
		par.For(r[1]-r[0], func(c, lo, hi int) {
			cs[c].Reset(w.p.Config.Seed, uint64(w.id.Rank), uint64(w.id.TIndex), uint64(w.id.Chain), streamNoise, uint64(k), uint64(i), uint64(j), uint64(c))
			cin := in
			cin.Lo, cin.Hi, cin.Rand = r[0]+lo, r[0]+hi, cs[c].Rand
			kernel.Update(w.state, cin)
		})
	}
}

// evaluate fills pt (whose Theta is set) using evaluator e: the tempered log posterior, its
// gradient, the metric, and the full-data log-likelihood, which it returns.
func (w *Walker) evaluate(e models.Eval, pt *samplers.Point) float64 {
	e.Prepare(pt.Theta)
	clear(pt.Grad)
	lp := e.LogPrior(pt.Grad)
	ll := e.Dense(w.t, pt.Grad) + e.Cells(models.Cells{Lo: 0, Hi: w.m.NumCells()}, w.t, pt.Grad)
	e.Metric(w.t, pt.Metric, pt.Gamma)
	pt.LogPost = lp + w.t*ll
	w.cellEvals += int64(models.PassCells(w.m))
	return ll
}

// stepMH performs one Metropolis-adjusted step: the kernel's Update over every coordinate is the
// proposal. Its record is the exact log-likelihood of the state the step starts from. The first
// step of a walk (k = 1) evaluates the starting point first.
func (w *Walker) stepMH(k int) (float64, error) {
	if k == 1 {
		w.ll[0] = w.evaluate(w.e, w.cur)
		if math.IsNaN(w.cur.LogPost) || math.IsInf(w.cur.LogPost, 0) {
			return 0, w.divergence(k, fmt.Sprintf("log posterior at the start is %v", w.cur.LogPost))
		}
	}
	y := w.ll[0]
	s := w.streams[0]
	s.Reset(w.p.Config.Seed, uint64(w.id.Rank), uint64(w.id.TIndex), uint64(w.id.Chain), streamNoise, uint64(k))
	copy(w.prop.Theta, w.cur.Theta)
	w.p.sampler.Kernel.Update(w.state, samplers.Input{
		Theta: w.prop.Theta, Grad: w.cur.Grad, Metric: w.cur.Metric, Gamma: w.cur.Gamma,
		Lo: 0, Hi: len(w.theta), Eps: w.mhEps, N: w.m.NumCells(), Adapt: k <= w.burnin, Rand: s.Rand,
	})
	w.ll[1] = w.evaluate(w.eprop, w.prop)
	acc := 0.0
	if !math.IsNaN(w.prop.LogPost) && !math.IsInf(w.prop.LogPost, 0) {
		acc = math.Min(1, math.Exp(w.p.sampler.MH.LogAccept(w.cur, w.prop, w.mhEps)))
	}
	if s.Float64() < acc {
		w.cur, w.prop = w.prop, w.cur
		w.e, w.eprop = w.eprop, w.e
		w.ll[0], w.ll[1] = w.ll[1], w.ll[0]
		w.theta, w.grad = w.cur.Theta, w.cur.Grad
	}
	if k <= w.burnin {
		// Robbins–Monro on log ε towards the target acceptance rate.
		w.mhEps *= math.Exp((acc - w.p.sampler.MH.TargetAccept()) / math.Sqrt(float64(k)+10))
	}
	return y, nil
}
