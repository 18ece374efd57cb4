package sti

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/samplers"
	"github.com/stirank/stirank/tensor"
)

// Problem is a dataset prepared for one model and configuration (its cells ordered by block when
// the parts schedule needs it). It is read-only and shared by every chain that runs on it.
type Problem struct {
	Spec   models.Spec
	Config Config
	// Data holds the cells in the order the schedules address them.
	Data    *tensor.Sparse
	Blocked *tensor.Blocked // non-nil when the parts schedule is used
	// size is how much the data concentrate the posterior: the total count for Poisson models,
	// the number of observations for the Gaussian (see Resumption.Start).
	size   float64
	kernel samplers.Kernel
	modes  sync.Map // rank → *rankMode
	models sync.Map // rank → *rankModel
}

// rankModel is the model of one rank, built once per problem: models are immutable and shared
// by the rank's chains (building one sums log Γ(x+1) over every cell).
type rankModel struct {
	once sync.Once
	m    models.Model
	err  error
}

// model returns the model of rank R bound to the problem's data.
func (p *Problem) model(R int) (models.Model, error) {
	v, _ := p.models.LoadOrStore(R, &rankModel{})
	rm := v.(*rankModel)
	rm.once.Do(func() { rm.m, rm.err = p.Spec.Build(p.Data, R) })
	return rm.m, rm.err
}

// NewProblem validates the data against the model and prepares them for the configuration.
func NewProblem(data *tensor.Sparse, spec models.Spec, cfg Config) (*Problem, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	order, _ := spec.Order()
	if data.Order() != order {
		return nil, fmt.Errorf("model %s needs a %d-way tensor, the data are %d-way", spec.Name, order, data.Order())
	}
	if data.NNZ() == 0 {
		return nil, tensor.ErrEmpty
	}
	if err := data.Validate(spec.Counts()); err != nil {
		return nil, err
	}
	kernel, _ := samplers.ByName(cfg.Sampler)
	if _, ok := kernel.(samplers.MALA); ok && (cfg.Blocks > 1 || (cfg.Subsample > 0 && cfg.Subsample < data.NNZ())) {
		return nil, fmt.Errorf("the mala sampler needs every cell at every step: drop --blocks/--subsample or choose another sampler")
	}
	p := &Problem{Spec: spec, Config: cfg, Data: data, kernel: kernel, size: float64(data.NNZ())}
	if spec.Counts() {
		p.size = data.Sum()
	}
	if cfg.Blocks > 1 {
		if !spec.Factored() {
			return nil, fmt.Errorf("the %s model has no factor blocks; use a subsample instead of blocks", spec.Name)
		}
		b, err := tensor.Block(data, cfg.Blocks)
		if err != nil {
			return nil, err
		}
		p.Blocked, p.Data = b, b.Sparse
	}
	return p, nil
}

// ChainID names one chain of a sweep.
type ChainID struct {
	Rank, TIndex, Chain int
}

// Purposes of the random streams of a chain, so that no two uses share a stream.
const (
	streamInit = iota + 1
	streamSchedule
	streamNoise
	streamEndStep
	streamMode
)

// work is the size of a unit's share of a step: cells read plus parameters moved.
func (u unit) work() int {
	n := u.cells.Len()
	for _, r := range u.params {
		n += r[1] - r[0]
	}
	return n
}

// unit is the work one goroutine does in a step: the cells it reads and the parameter ranges it
// owns (and alone updates). Units of one step own disjoint ranges.
type unit struct {
	cells  models.Cells
	params [][2]int
}

// chain holds the state of one running chain.
type chain struct {
	p      *Problem
	m      models.Model
	id     ChainID
	t      float64
	kernel samplers.Kernel
	state  samplers.State

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
	// per-unit partial results, summed in unit order so the total does not depend on scheduling
	partLL, partHat, partDot, partFull []float64
	cellEvals                          int64

	// MALA: the current and proposed points, the proposal's evaluator, and the step size, adapted
	// towards acceptance rate malaTarget during burn-in and frozen afterwards.
	mala bool
	// burnin is the number of steps before the chain records: Config.Burnin, or WarmBurnin for a
	// chain that resumes from a saved state (warm).
	burnin int
	warm   bool
	// newRows are the parameter ranges of the rows a warm chain's saved state did not have.
	newRows [][2]int
	// frozenMetric holds the metric fixed after burn-in (the LM noise is only right for a metric
	// that does not change between the two steps that share a draw).
	frozenMetric bool
	cur, prop    *samplers.Point
	eprop        models.Eval
	ll           [2]float64 // full-data log-likelihood at cur and prop
	malaEps      float64
	accepted     int
	roundPos     int
	order        []int
}

// RunChain runs the chain id on the problem from the configured start and summarises its records.
// A chain that produces a non-finite value stops and reports where in Divergence; errors are for
// bad set-ups only.
func (p *Problem) RunChain(ctx context.Context, id ChainID) (evidence.ChainSummary, error) {
	sum, _, err := p.Resume(ctx, id, nil)
	return sum, err
}

// State is where a chain ended: its parameters in the model's sampling parameterisation and their
// layout, so that a later run on the same data, or on data grown by new rows, columns or slices,
// can resume from it (see Resume).
type State struct {
	// Model is the model's name and Rank its rank; Factors the factor layout of Theta (nil for
	// models whose parameters are not tied to data modes).
	Model   string
	Rank    int
	Factors []models.Factor
	Theta   []float64
	// Size is the size of the data the state was saved on (the problem's size, see Resumption.Start);
	// zero when unknown.
	Size float64
}

// Resume runs the chain id like RunChain, but when from is not nil the chain starts from that
// saved state instead of the configured start: the parameters of indices the state knows are
// copied, those of indices the data gained since are drawn from the prior, and the chain burns in
// for Config.WarmBurnin steps (no mode search) before it records. A state that ended near the
// power posterior of the data it was saved on is close to that of moderately grown data, so the
// short burn-in replaces both the mode search and most of the cold burn-in. Resume returns the
// chain's final state, nil at t = 0 (prior draws carry no state) and after a divergence.
func (p *Problem) Resume(ctx context.Context, id ChainID, from *State) (evidence.ChainSummary, *State, error) {
	cfg := p.Config
	if id.TIndex < 0 || id.TIndex >= len(cfg.Ladder) {
		return evidence.ChainSummary{}, nil, fmt.Errorf("temperature index %d outside the ladder of %d", id.TIndex, len(cfg.Ladder))
	}
	m, err := p.model(id.Rank)
	if err != nil {
		return evidence.ChainSummary{}, nil, err
	}
	c := newChain(p, m, id)
	sum := evidence.ChainSummary{Rank: id.Rank, TIndex: id.TIndex, T: c.t, Chain: id.Chain}
	records := make([]float64, 0, cfg.Steps-cfg.Burnin)
	var div string
	if c.t == 0 {
		records, div = c.priorRecords(ctx, cfg.Steps-cfg.Burnin, records)
		sum.Steps = cfg.Steps - cfg.Burnin
	} else {
		if from != nil {
			if err := c.warmStart(from); err != nil {
				return sum, nil, fmt.Errorf("rank %d, temperature %d, chain %d: %w", id.Rank, id.TIndex, id.Chain, err)
			}
			sum.Warm = true
		}
		records, div, sum.Steps = c.run(ctx, records)
	}
	if err := ctx.Err(); err != nil {
		return sum, nil, err
	}
	sum.CellEvals = c.cellEvals
	sum.Divergence = div
	if div != "" {
		return sum, nil, nil
	}
	sum.Count = len(records)
	sum.Mean, sum.M2, sum.ESS = evidence.Summarize(records)
	var final *State
	if c.t > 0 {
		final = &State{Model: m.Name(), Rank: id.Rank, Factors: m.Factors(), Theta: c.theta, Size: p.size}
	}
	return sum, final, nil
}

// warmStart sets the chain's parameters from a saved state and shortens its burn-in. Parameters of
// rows the state does not have keep a prior draw from the chain's own stream.
func (c *chain) warmStart(s *State) error {
	if s.Model != c.m.Name() || s.Rank != c.m.Rank() {
		return fmt.Errorf("saved state is of model %s rank %d, not %s rank %d", s.Model, s.Rank, c.m.Name(), c.m.Rank())
	}
	cfg := c.p.Config
	c.m.SamplePrior(rng.New(cfg.Seed, uint64(c.id.Rank), uint64(c.id.TIndex), uint64(c.id.Chain), streamInit), c.theta)
	fs := c.m.Factors()
	switch {
	case fs == nil && s.Factors == nil:
		if len(s.Theta) != len(c.theta) {
			return fmt.Errorf("saved state has %d parameters, the model %d", len(s.Theta), len(c.theta))
		}
		copy(c.theta, s.Theta)
	case len(fs) != len(s.Factors):
		return fmt.Errorf("saved state has %d factors, the model %d", len(s.Factors), len(fs))
	default:
		for k, f := range fs {
			o := s.Factors[k]
			if o.Cols != f.Cols || o.Rows > f.Rows || o.Offset < 0 || o.Offset+o.Rows*o.Cols > len(s.Theta) {
				return fmt.Errorf("saved state's mode-%d factor is %d×%d, the model's %d×%d: the data are not a growth of the data it was saved on",
					k, o.Rows, o.Cols, f.Rows, f.Cols)
			}
			copy(c.theta[f.Offset:], s.Theta[o.Offset:o.Offset+o.Rows*o.Cols])
			if lo, hi := f.Params(o.Rows, f.Rows); hi > lo {
				c.newRows = append(c.newRows, [2]int{lo, hi})
			}
		}
	}
	for i, v := range c.theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("saved state's parameter %d is %v", i, v)
		}
	}
	c.warm = true
	c.burnin = cfg.warmBurnin()
	return nil
}

func newChain(p *Problem, m models.Model, id ChainID) *chain {
	cfg := p.Config
	dim := m.Dim()
	c := &chain{
		p: p, m: m, id: id, t: cfg.Ladder[id.TIndex], kernel: p.kernel,
		theta: make([]float64, dim), grad: make([]float64, dim), e: m.NewEval(), burnin: cfg.Burnin,
		sched: rng.NewStream(cfg.Seed, uint64(id.Rank), uint64(id.TIndex), uint64(id.Chain), streamSchedule),
	}
	c.state = c.kernel.NewState(dim)
	if _, ok := c.kernel.(samplers.MALA); ok {
		c.mala = true
		c.cur = &samplers.Point{Theta: c.theta, Grad: c.grad, Metric: make([]float64, dim), Gamma: make([]float64, dim)}
		c.prop = &samplers.Point{Theta: make([]float64, dim), Grad: make([]float64, dim), Metric: make([]float64, dim), Gamma: make([]float64, dim)}
		c.eprop = m.NewEval()
		c.malaEps = cfg.Step
	}
	if c.kernel.UsesMetric() || cfg.StartSteps > 0 || cfg.SettleSteps > 0 {
		c.metric, c.gamma = make([]float64, dim), make([]float64, dim)
		_, c.frozenMetric = c.kernel.(samplers.LMSGLD)
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
			c.parts = append(c.parts, us)
		}
		c.scale = float64(parts.Count())
	case cfg.Subsample > 0 && cfg.Subsample < n:
		c.sub = samplers.Subsample{N: n, Size: cfg.Subsample, Stratified: cfg.Stratified}
		c.perm = make([]int32, n)
		for i := range c.perm {
			c.perm[i] = int32(i)
		}
		c.parts = [][]unit{{{params: whole}}}
	default:
		c.parts = [][]unit{{{cells: models.Cells{Lo: 0, Hi: n}, params: whole}}}
		c.scale = 1
	}
	nu := len(c.parts[0])
	c.streams = make([]*rng.Stream, nu)
	for i := range c.streams {
		c.streams[i] = rng.NewStream(0)
	}
	c.partLL, c.partHat = make([]float64, nu), make([]float64, nu)
	c.partDot, c.partFull = make([]float64, nu), make([]float64, nu)
	// Control variates only pay when the step reads a subsample.
	c.cv = cfg.ControlVariates && (p.Blocked != nil || c.sub.N > 0)
	if c.cv {
		c.hat, c.hatGrad, c.hatBuf = make([]float64, dim), make([]float64, dim), make([]float64, dim)
		c.ehat = m.NewEval()
	}
	return c
}

// priorRecords fills records at t = 0, where the power posterior is the prior: independent prior
// draws, each scored with the same subsampled estimator the chains use.
func (c *chain) priorRecords(ctx context.Context, n int, records []float64) ([]float64, string) {
	r := rng.New(c.p.Config.Seed, uint64(c.id.Rank), uint64(c.id.TIndex), uint64(c.id.Chain), streamInit)
	for k := 1; k <= n; k++ {
		if k%64 == 0 && ctx.Err() != nil {
			return records, ""
		}
		c.m.SamplePrior(r, c.theta)
		c.e.Prepare(c.theta)
		us := c.chooseUnits()
		y := c.e.Dense(0, nil)
		for _, u := range us {
			y += c.scale * c.e.Cells(u.cells, 0, nil)
			c.cellEvals += int64(u.cells.Len())
		}
		if math.IsNaN(y) || math.IsInf(y, 0) {
			return records, c.divergence(k, fmt.Sprintf("log-likelihood record is %v", y))
		}
		records = append(records, y)
	}
	return records, ""
}

func (c *chain) divergence(step int, what string) string {
	return fmt.Sprintf("rank %d, t=%.6g (temperature %d), chain %d, step %d: %s",
		c.id.Rank, c.t, c.id.TIndex, c.id.Chain, step, what)
}

// chooseUnits returns the units of the next step and sets the scale for random subsamples.
func (c *chain) chooseUnits() []unit {
	switch {
	case c.sub.N > 0:
		k := c.sub.Batches()
		b := 0
		if c.sub.Stratified {
			if c.roundPos == 0 {
				c.sub.Permute(c.sched.Rand, c.perm)
			}
			b = c.roundPos
			c.roundPos = (c.roundPos + 1) % k
		}
		idx, scale := c.sub.Batch(c.perm, b, c.sched.Rand)
		c.scale = scale
		u := &c.parts[0][0]
		u.cells = models.Cells{Lo: 0, Hi: len(idx), Index: idx}
		return c.parts[0]
	case len(c.parts) > 1:
		np := len(c.parts)
		if !c.p.Config.Stratified {
			return c.parts[c.sched.IntN(np)]
		}
		if c.roundPos == 0 {
			if c.order == nil {
				c.order = make([]int, np)
			}
			for i := range c.order {
				c.order[i] = i
			}
			c.sched.Shuffle(np, func(i, j int) { c.order[i], c.order[j] = c.order[j], c.order[i] })
		}
		pt := c.order[c.roundPos]
		c.roundPos = (c.roundPos + 1) % np
		return c.parts[pt]
	}
	return c.parts[0]
}

// refresh moves the control-variate reference to the current point: one full pass over the data.
func (c *chain) refresh() {
	copy(c.hat, c.theta)
	c.ehat.Prepare(c.hat)
	clear(c.hatGrad)
	c.hatLL = c.ehat.Cells(models.Cells{Lo: 0, Hi: c.m.NumCells()}, 1, c.hatGrad)
	c.cellEvals += int64(c.m.NumCells())
}

// run performs burn-in and sampling and returns the records after burn-in and the steps spent.
// A warm chain starts where warmStart put it; otherwise, with Starts > 0, from its rank's mode (see
// Problem.mode), and else from a prior draw. Sampling starts after the burn-in, so the start
// changes how soon the records are right, not what they target.
func (c *chain) run(ctx context.Context, records []float64) ([]float64, string, int) {
	cfg := c.p.Config
	sched, _ := cfg.schedule(c.burnin)
	steps := c.burnin + cfg.Steps - cfg.Burnin
	spent := 0
	switch {
	case c.warm:
		n, div := c.settleNewRows()
		spent += n
		if div != "" {
			return records, div, spent
		}
	case cfg.Starts > 0:
		m, err := c.p.mode(ctx, c.id.Rank)
		if err != nil {
			return records, err.Error(), spent
		}
		copy(c.theta, m.theta)
		if c.id.Chain == 0 && c.id.TIndex == len(cfg.Ladder)-1 {
			// The search is shared by the rank's chains; one of them accounts for it.
			spent += m.steps
			c.cellEvals += m.cellEvals
		}
	default:
		c.m.SamplePrior(rng.New(cfg.Seed, uint64(c.id.Rank), uint64(c.id.TIndex), uint64(c.id.Chain), streamInit), c.theta)
	}
	for k := 1; k <= steps; k++ {
		if k%64 == 0 && ctx.Err() != nil {
			return records, "", spent
		}
		y, div := c.step(k, sched, c.kernel)
		spent++
		if div != "" {
			return records, div, spent
		}
		if k > c.burnin {
			records = append(records, y)
		}
	}
	for i, v := range c.theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return records, c.divergence(steps, fmt.Sprintf("parameter %d is %v", i, v)), spent
		}
	}
	return records, "", spent
}

// settleNewRows carries the parameters of the rows a warm chain's saved state did not have (prior
// draws) to the mode of the chain's power posterior with every other parameter held where the
// state left it: SettleSteps steps of ascent that move those rows only, on all cells. A prior draw
// is many e-folds from where the data put a row, and a short burn-in alone does not bring a
// growth of half the data or more into equilibrium: on CP data that doubled, a 50-step warm burn-in
// from prior draws left R = 2…5 29 nats (RMS) off, 7 after settling (bench/engine -workload warm,
// measured before and after settling was added). The conditional mode is a start that the
// burn-in then turns into a sample. It returns the steps
// spent and a divergence, if any.
func (c *chain) settleNewRows() (int, string) {
	n := c.p.Config.SettleSteps
	if len(c.newRows) == 0 || n == 0 {
		return 0, ""
	}
	parts, sub, cv, scale, burnin := c.parts, c.sub, c.cv, c.scale, c.burnin
	c.parts = [][]unit{{{cells: models.Cells{Lo: 0, Hi: c.m.NumCells()}, params: c.newRows}}}
	c.sub, c.cv, c.scale, c.burnin = samplers.Subsample{}, false, 1, n // the metric follows every step
	defer func() { c.parts, c.sub, c.cv, c.scale, c.burnin = parts, sub, cv, scale, burnin }()
	for k := 1; k <= n; k++ {
		if _, div := c.ascend(k); div != "" {
			return k, div
		}
	}
	return n, ""
}

// rankMode is the start point shared by the chains of a rank.
type rankMode struct {
	once      sync.Once
	theta     []float64
	score     float64 // the log posterior at theta
	steps     int
	cellEvals int64
	err       error
}

// mode returns the start of every chain of a rank: the best of Starts prior draws, each carried
// StartSteps steps of preconditioned ascent on the posterior (t = 1) and scored by its log
// posterior. A prior draw can fall into the basin of a local mode of negligible mass (two
// components sharing one source, another missing) that a chain at high t never leaves; on large
// counts such modes are many nats apart and only a search over many starts finds the dominant one.
// One search per rank, shared by its chains at every temperature (at low t they leave the mode
// within a few relaxation times), costs far less than one per chain. It depends only on the seed
// and the rank, so every worker that computes it gets the same point.
func (p *Problem) mode(ctx context.Context, rank int) (*rankMode, error) {
	v, _ := p.modes.LoadOrStore(rank, &rankMode{})
	rm := v.(*rankMode)
	rm.once.Do(func() {
		m, err := p.model(rank)
		if err != nil {
			rm.err = err
			return
		}
		id := ChainID{Rank: rank, TIndex: len(p.Config.Ladder) - 1, Chain: -1}
		c := newChain(p, m, id)
		best := math.Inf(-1)
		for s := range p.Config.Starts {
			m.SamplePrior(rng.New(p.Config.Seed, uint64(rank), streamMode, uint64(s)), c.theta)
			for k := 1; k <= p.Config.StartSteps; k++ {
				if k%64 == 0 && ctx.Err() != nil {
					rm.err = ctx.Err()
					return
				}
				if _, div := c.ascend(k); div != "" {
					rm.err = fmt.Errorf("mode search, start %d: %s", s, div)
					return
				}
				rm.steps++
			}
			c.e.Prepare(c.theta)
			score := c.e.LogPrior(nil) + models.LogLik(c.e, m)
			c.cellEvals += int64(m.NumCells())
			if score > best {
				best = score
				rm.theta = append(rm.theta[:0], c.theta...)
				rm.score = score
			}
		}
		rm.cellEvals = c.cellEvals
		if rm.theta == nil {
			rm.err = fmt.Errorf("mode search for rank %d found no start with a finite log posterior", rank)
		}
	})
	if rm.err != nil {
		return nil, rm.err
	}
	return rm, nil
}

// ChainSteps is the number of sampler steps RunChain (warm false) or Resume from a saved state
// (warm true) reports for chain id: prior draws at t = 0; otherwise the burn-in and the recorded
// steps, plus, for the cold chain that accounts for it, the rank's mode search, and for a warm
// one the steps that settle new rows (which it spends only when the data gained rows).
func (cfg Config) ChainSteps(id ChainID, warm bool) int {
	if cfg.Ladder[id.TIndex] == 0 {
		return cfg.Steps - cfg.Burnin
	}
	if warm {
		return cfg.SettleSteps + cfg.warmBurnin() + cfg.Steps - cfg.Burnin
	}
	n := cfg.Steps
	if cfg.Starts > 0 && id.Chain == 0 && id.TIndex == len(cfg.Ladder)-1 {
		n += cfg.Starts * cfg.StartSteps
	}
	return n
}

// ascend performs step k of the search for a mode that opens a chain: preconditioned gradient
// ascent with unit steps and clipped drift (see samplers.Ascent).
func (c *chain) ascend(k int) (float64, string) {
	return c.step(k, samplers.StepSchedule{A: 1, B: 1, Offset: 0, Burnin: 0}, samplers.Ascent{})
}

// step performs step k of a run with the given kernel and returns its log-likelihood record, or a
// description of a divergence.
func (c *chain) step(k int, sched samplers.StepSchedule, kernel samplers.Kernel) (float64, string) {
	cfg := c.p.Config
	if _, ok := kernel.(samplers.MALA); ok {
		return c.stepMALA(k)
	}
	if c.cv && (k-1)%cfg.CVRefresh == 0 {
		c.refresh()
		if math.IsNaN(c.hatLL) || math.IsInf(c.hatLL, 0) {
			return 0, c.divergence(k, fmt.Sprintf("full-data log-likelihood is %v", c.hatLL))
		}
	}
	us := c.chooseUnits()
	c.e.Prepare(c.theta)
	clear(c.grad)
	c.e.LogPrior(c.grad)
	y := c.e.Dense(c.t, c.grad)
	if c.metric != nil && (k <= c.burnin || !c.frozenMetric) {
		c.e.Metric(c.t, c.metric, c.gamma)
		if k == c.burnin && c.frozenMetric {
			// A constant metric has no divergence term.
			clear(c.gamma)
		}
	}
	eps := sched.At(k)
	adapt := k <= c.burnin
	if len(us) == 1 || us[0].work() < parallelCells {
		for i := range us {
			c.work(i, us[i], k, kernel, eps, adapt)
		}
	} else {
		var wg sync.WaitGroup
		wg.Add(len(us))
		for i := range us {
			go func() {
				defer wg.Done()
				c.work(i, us[i], k, kernel, eps, adapt)
			}()
		}
		wg.Wait()
	}
	if se, ok := kernel.(samplers.StepEnder); ok {
		s := c.streams[0]
		s.Reset(cfg.Seed, uint64(c.id.Rank), uint64(c.id.TIndex), uint64(c.id.Chain), streamEndStep, uint64(k))
		se.EndStep(c.state, adapt, s.Rand)
	}
	if k == 1 && kernel == c.kernel {
		if s, ok := c.state.(samplers.Seer); ok {
			s.MarkSeen()
		}
	}
	for i := range us {
		c.cellEvals += int64(us[i].cells.Len())
		if c.cv {
			c.cellEvals += int64(us[i].cells.Len())
			y += c.partFull[i] + c.scale*(c.partLL[i]-c.partHat[i]-c.partDot[i])
		} else {
			y += c.scale * c.partLL[i]
		}
	}
	if c.cv {
		y += c.hatLL
	}
	if math.IsNaN(y) || math.IsInf(y, 0) {
		return 0, c.divergence(k, fmt.Sprintf("log-likelihood record is %v", y))
	}
	return y, ""
}

// malaTarget is the acceptance rate MALA's step size is tuned to during burn-in (Roberts &
// Rosenthal 1998 give 0.574 as optimal in high dimension).
const malaTarget = 0.574

// evaluate fills pt (whose Theta is set) using evaluator e: the tempered log posterior, its
// gradient, the metric, and the full-data log-likelihood, which it returns.
func (c *chain) evaluate(e models.Eval, pt *samplers.Point) float64 {
	e.Prepare(pt.Theta)
	clear(pt.Grad)
	lp := e.LogPrior(pt.Grad)
	ll := e.Dense(c.t, pt.Grad) + e.Cells(models.Cells{Lo: 0, Hi: c.m.NumCells()}, c.t, pt.Grad)
	e.Metric(c.t, pt.Metric, pt.Gamma)
	pt.LogPost = lp + c.t*ll
	c.cellEvals += int64(c.m.NumCells())
	return ll
}

// stepMALA performs one Metropolis-adjusted step. Its record is the exact log-likelihood of the
// state the step starts from. A step of a new run (k = 1) evaluates the starting point first.
func (c *chain) stepMALA(k int) (float64, string) {
	cfg := c.p.Config
	if k == 1 {
		c.ll[0] = c.evaluate(c.e, c.cur)
		if math.IsNaN(c.cur.LogPost) || math.IsInf(c.cur.LogPost, 0) {
			return 0, c.divergence(k, fmt.Sprintf("log posterior at the start is %v", c.cur.LogPost))
		}
	}
	y := c.ll[0]
	s := c.streams[0]
	s.Reset(cfg.Seed, uint64(c.id.Rank), uint64(c.id.TIndex), uint64(c.id.Chain), streamNoise, uint64(k))
	mala := samplers.MALA{}
	mala.Propose(c.cur, c.malaEps, s.Rand, c.prop.Theta)
	c.ll[1] = c.evaluate(c.eprop, c.prop)
	acc := 0.0
	if !math.IsNaN(c.prop.LogPost) && !math.IsInf(c.prop.LogPost, 0) {
		acc = math.Min(1, math.Exp(mala.LogAccept(c.cur, c.prop, c.malaEps)))
	}
	if s.Float64() < acc {
		c.cur, c.prop = c.prop, c.cur
		c.e, c.eprop = c.eprop, c.e
		c.ll[0], c.ll[1] = c.ll[1], c.ll[0]
		c.theta, c.grad = c.cur.Theta, c.cur.Grad
		c.accepted++
	}
	if k <= c.burnin {
		// Robbins–Monro on log ε towards the target acceptance rate.
		c.malaEps *= math.Exp((acc - malaTarget) / math.Sqrt(float64(k)+10))
	}
	return y, ""
}

// parallelCells is the unit size (cells plus parameters) below which the units of a part run on
// one goroutine: smaller units cost less than the goroutine hand-off. (A variable so tests can
// force either path.)
var parallelCells = 4096

// work evaluates unit i's cells at the current point (the record and the gradient are evaluated at
// θ_{k−1}, which is independent of the step's subsample, so the record is unbiased for
// log p(X | θ_{k−1})) and then moves the unit's parameters.
func (c *chain) work(i int, u unit, k int, kernel samplers.Kernel, eps float64, adapt bool) {
	w := c.t * c.scale
	c.partLL[i] = c.e.Cells(u.cells, w, c.grad)
	if c.cv {
		for _, r := range u.params {
			clear(c.hatBuf[r[0]:r[1]])
		}
		c.partHat[i] = c.ehat.Cells(u.cells, 1, c.hatBuf)
		var dot, full float64
		for _, r := range u.params {
			for j := r[0]; j < r[1]; j++ {
				d := c.theta[j] - c.hat[j]
				dot += c.hatBuf[j] * d
				full += c.hatGrad[j] * d
				c.grad[j] += c.t * (c.hatGrad[j] - c.scale*c.hatBuf[j])
			}
		}
		c.partDot[i], c.partFull[i] = dot, full
	}
	s := c.streams[i]
	s.Reset(c.p.Config.Seed, uint64(c.id.Rank), uint64(c.id.TIndex), uint64(c.id.Chain), streamNoise, uint64(k), uint64(i))
	in := samplers.Input{
		Theta: c.theta, Grad: c.grad, Metric: c.metric, Gamma: c.gamma,
		Eps: eps, N: c.m.NumCells(), Mirror: c.m.Positive(), Adapt: adapt, Rand: s.Rand,
	}
	if adapt {
		in.MaxDrift = c.m.DriftScale()
	}
	for _, r := range u.params {
		in.Lo, in.Hi = r[0], r[1]
		kernel.Update(c.state, in)
	}
}
