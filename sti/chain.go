package sti

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/par"
	"github.com/stirank/stirank/internal/progress"
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
	size float64
	// split is the number of counts a Gibbs sweep at t = 1 splits per stored cell (sweepCost), 0
	// for chains on an SG-MCMC kernel, whose steps cost the same at every t.
	split    float64
	sampler  samplers.Sampler
	modes    sync.Map // rank → *rankMode
	descents sync.Map // descentKey → *descent
	models   sync.Map // rank → *rankModel
	// rank1 is the exact rank-1 curve log Z(t) and powerVariance the model's exact
	// Var_t[log p(X | θ)] (models.Info.PowerVariance), either of which allocates each rank's
	// records to its rungs (Config.Allocate, rungVariance); both nil for Steps − Burnin at every
	// rung. records holds them by rank.
	rank1         func(t float64) (float64, error)
	powerVariance func(data *tensor.Sparse, R int, s models.Spec) (func(t float64) float64, error)
	records       sync.Map // rank → *rankRecords
	// rankPrices holds what each kind of step costs, by rank (prices), for the progress plan
	// and the chains' reports.
	rankPrices sync.Map // rank → *rankPrices
	// pathPrices holds what the sweeps of a path from a reference take, by rank
	// (PathSweepSeconds).
	pathPrices sync.Map // rank → *pathPrice
	// atRank1 is the configuration of rank 1's chains when Config.Rank1 gives them their own
	// (Config.AtRank, its ladder fitted as Config.Ladder is), nil when they run Config.
	atRank1 *Config
	// base is the problem the path from a reference runs on (Config.Reference); nil without one.
	base *baselines.Problem
}

// gibbsSweeps reports whether the problem's chains or annealing move θ by the model's Gibbs
// kernel: the chains under Config.Gibbs, and an annealing of a model that has one (the Gibbs
// models count).
func (p *Problem) gibbsSweeps() bool {
	return p.Config.Gibbs || (p.Config.Annealing != nil && p.Spec.Gibbs())
}

// top is the index of t = 1 on rank's ladder.
func (p *Problem) top(rank int) int { return len(p.RankConfig(rank).Ladder) - 1 }

// RankConfig returns the configuration the chains of that rank run with, Config.AtRank(rank), at
// rank 1 with its ladder fitted to the data under Config.FitLadder.
func (p *Problem) RankConfig(rank int) Config {
	if rank == 1 && p.atRank1 != nil {
		return *p.atRank1
	}
	return p.Config.AtRank(rank)
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
	sampler, _ := samplers.New(cfg.Sampler, cfg.SamplerParams) // cfg.Validate made it once
	if sampler.Caps.MetropolisHastings && (cfg.Blocks > 1 || (cfg.Subsample > 0 && cfg.Subsample < data.NNZ())) {
		return nil, fmt.Errorf("the %s sampler needs every cell at every step: drop --blocks/--subsample or choose another sampler", sampler.Name)
	}
	p := &Problem{Spec: spec, Config: cfg, Data: data, sampler: sampler, size: float64(data.NNZ())}
	if spec.Counts() {
		p.size = data.Sum()
	}
	// A table exported with its zeros listed is the same data; its zeros only enter the dense
	// term. (All-zero data keep their cells: the engine needs at least one.)
	if spec.UnstoredZero() {
		if d := data.WithoutZeros(); d.NNZ() > 0 {
			data, p.Data = d, d
		}
	}
	if cfg.Gibbs && !spec.Gibbs() {
		return nil, fmt.Errorf("the %s model has no Gibbs kernel", spec.Name)
	}
	if p.gibbsSweeps() {
		p.split = p.size / float64(p.Data.NNZ())
	}
	fit := cfg.FitLadder && slices.Equal(cfg.Ladder, evidence.Power(len(cfg.Ladder)-1, evidence.DefaultPower))
	if cfg.Rank1 != nil {
		r1 := cfg.AtRank(1)
		p.atRank1 = &r1
	}
	if fit || cfg.Allocate || (cfg.FitLadder && cfg.Rank1 != nil) {
		logZ, err := rank1Curve(data, spec)
		if err != nil {
			return nil, err
		}
		if fit && logZ != nil {
			if p.Config.Ladder, err = fitLadder(logZ, len(cfg.Ladder)-1); err != nil {
				return nil, err
			}
		}
		if cfg.FitLadder && p.atRank1 != nil && logZ != nil {
			// Rank 1's ladder is the default power ladder of its own length (Config.AtRank).
			if p.atRank1.Ladder, err = fitLadder(logZ, cfg.Rank1.Rungs); err != nil {
				return nil, err
			}
		}
		if cfg.Allocate {
			p.rank1 = logZ
		}
	}
	if info, _ := models.Lookup(spec.Name); cfg.Allocate && p.rank1 == nil {
		p.powerVariance = info.PowerVariance
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
	if cfg.Reference != nil {
		var err error
		if p.base, err = baselines.ForModel(p.Data, spec); err != nil {
			return nil, fmt.Errorf("reference: %w", err)
		}
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
	streamSweep
	streamDescent
	streamCost
	streamAscent
)

// initStream is the stream chain id draws its prior draws from.
func (p *Problem) initStream(id ChainID) *rand.Rand {
	return rng.New(p.Config.Seed, uint64(id.Rank), uint64(id.TIndex), uint64(id.Chain), streamInit)
}

// RunChain runs the chain id on the problem from the configured start and summarises its records.
// A chain that produces a non-finite value stops and reports where in Divergence; errors are for
// bad set-ups only.
func (p *Problem) RunChain(ctx context.Context, id ChainID) (evidence.ChainSummary, error) {
	sum, _, err := p.Resume(ctx, id, nil)
	return sum, err
}

// RunFrom runs chain id at temperature t from start (a draw of the power posterior at t from an
// annealing stage, Problem.Anneal) and summarises its records: Config.Burnin steps of burn-in,
// then Config.Steps − Config.Burnin recorded. At t = 0 the records are independent prior draws
// and start is not used. Chain id names the chain's streams; its TIndex is the stage's index in
// its replica's ladder, not an index into Config.Ladder.
//
// A model with a data-augmentation kernel (models.Augmentable) runs that kernel, the annealing's,
// instead of the configured SG-MCMC sampler, with Steps and Burnin counted in full passes over the
// data (a sweep of NMF is four). The SG-MCMC kernels' discretisation bias grows with the number of
// parameters: on a 100×75 NMF their records pulled the integral 5–10 nats below long AIS runs at
// ranks 5 and 8, where the populations alone were within half a nat.
func (p *Problem) RunFrom(ctx context.Context, id ChainID, t float64, start []float64) (evidence.ChainSummary, error) {
	cfg := p.Config
	m, err := p.model(id.Rank)
	if err != nil {
		return evidence.ChainSummary{}, err
	}
	sum := evidence.ChainSummary{Rank: id.Rank, TIndex: id.TIndex, T: t, Chain: id.Chain}
	records := make([]float64, 0, cfg.Steps-cfg.Burnin)
	if t > 0 && len(start) != m.Dim() {
		return sum, fmt.Errorf("rank %d, stage %d, chain %d: start has %d parameters, the model %d", id.Rank, id.TIndex, id.Chain, len(start), m.Dim())
	}
	var div string
	if mv := newGibbsMover(m); mv != nil && t > 0 {
		per := mv.passes(1)
		records, div, sum.Steps = p.sweep(ctx, mv, nil, id, t, append([]float64(nil), start...), cfg.Burnin/per, cfg.Steps/per, records)
		sum.Steps *= per
		sum.CellEvals = mv.cellEvals()
		return p.summarize(ctx, sum, div, records, nil)
	}
	w := newWalker(p, m, id, t)
	if t == 0 {
		records, div = p.priorRecords(ctx, w, cfg.Steps-cfg.Burnin, records)
		sum.Steps = cfg.Steps - cfg.Burnin
	} else {
		w.SetTheta(start)
		records, _, div, sum.Steps = p.walk(ctx, w, true, nil, records)
	}
	sum.CellEvals = w.cellEvals
	return p.summarize(ctx, sum, div, records, nil)
}

// summarize completes a chain's summary from its records unless it diverged.
func (p *Problem) summarize(ctx context.Context, sum evidence.ChainSummary, div string, records []float64, cv *controls) (evidence.ChainSummary, error) {
	if err := ctx.Err(); err != nil {
		return sum, err
	}
	sum.Divergence = div
	if div != "" {
		return sum, nil
	}
	sum.Count = len(records)
	sum.Mean, sum.M2, sum.ESS = evidence.Summarize(records)
	if cv != nil {
		cv.summarize(records, &sum)
	}
	return sum, nil
}

// sweep runs the mover's data-augmentation kernel on θ, in place, at t for n sweeps, recording
// log p(X | θ) after every sweep past the first burn, and returns the records, a divergence and
// the sweeps made. With Config.Truncate the records before the end of the start's transient
// (evidence.Truncation) are dropped; no sweeps replace them, so that a chain makes the sweeps
// ChainSteps counts and a rank's steps never pass its plan. The burn-in reads its log-likelihood
// at its last sweep only, where a divergence in it shows.
func (p *Problem) sweep(ctx context.Context, mv *gibbsMover, cv *controls, id ChainID, t float64, theta []float64, burn, n int, records []float64) ([]float64, string, int) {
	r := rng.New(p.Config.Seed, uint64(id.Rank), uint64(id.TIndex), uint64(id.Chain), streamSweep)
	acc := make([]float64, mv.blocks())
	base, made, per := len(records), 0, mv.passes(1)
	pr := p.reportPrices(ctx, id.Rank)
	run := func(sweeps int, record bool) string {
		for range sweeps {
			if made%16 == 15 && ctx.Err() != nil {
				return ""
			}
			made++
			read := record || made >= burn // the burn-in reads its last sweep's only
			ll := math.NaN()
			if read {
				ll = mv.move(r, t, 1, nil, theta, acc)
			} else {
				mv.moveOn(r, t, theta, acc)
			}
			progress.AddAt(ctx, per, pr.sweep(t, read))
			if !read {
				continue
			}
			if math.IsNaN(ll) || math.IsInf(ll, 1) {
				return fmt.Sprintf("rank %d, t=%.6g (rung %d), chain %d, sweep %d: log-likelihood %v", id.Rank, t, id.TIndex, id.Chain, made, ll)
			}
			if record {
				records = append(records, ll)
				if cv != nil {
					cv.record(t, theta, ll)
					if cv.stein > 0 { // the Stein variates' pass, a step of the chain's
						progress.AddAt(ctx, 1, pr.stein)
					}
				}
			}
		}
		return ""
	}
	if div := run(burn, false); div != "" || ctx.Err() != nil {
		return records, div, made
	}
	if div := run(n-burn, true); div != "" || ctx.Err() != nil {
		return records, div, made
	}
	if p.Config.Truncate {
		if d := evidence.Truncation(records[base:]); d > 0 {
			records = append(records[:base], records[base+d:]...)
			if cv != nil {
				cv.drop(d)
			}
		}
	}
	return records, "", made
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
	cfg := p.RankConfig(id.Rank)
	w, err := p.chainWalker(id)
	if err != nil {
		return evidence.ChainSummary{}, nil, err
	}
	sum := evidence.ChainSummary{Rank: id.Rank, TIndex: id.TIndex, T: w.t, Chain: id.Chain}
	records := make([]float64, 0, p.Records(id.Rank, id.TIndex))
	var div string
	var cv *controls
	if w.t == 0 {
		records, div = p.priorRecords(ctx, w, cfg.Steps-cfg.Burnin, records)
		sum.Steps = cfg.Steps - cfg.Burnin
	} else {
		var newRows [][2]int
		if from != nil {
			if newRows, err = p.warmStart(w, from); err != nil {
				return sum, nil, fmt.Errorf("rank %d, temperature %d, chain %d: %w", id.Rank, id.TIndex, id.Chain, err)
			}
			sum.Warm = true
		}
		records, cv, div, sum.Steps = p.walk(ctx, w, from != nil, newRows, records)
		if div == "" && cfg.phaseCheck(id, from != nil) {
			ascent, at, passes, cells, err := p.ascend(ctx, id.Rank)
			if err != nil {
				div = err.Error()
			}
			sum.Ascent, sum.AscentFrom = ascent, at
			sum.Steps += passes
			w.cellEvals += cells
		}
	}
	sum.CellEvals = w.cellEvals
	sum, err = p.summarize(ctx, sum, div, records, cv)
	if err != nil || div != "" {
		return sum, nil, err
	}
	var final *State
	if w.t > 0 {
		final = &State{Model: w.m.Name(), Rank: id.Rank, Factors: w.m.Factors(), Theta: w.theta, Size: p.size}
	}
	return sum, final, nil
}

// warmStart sets the walker's parameters from a saved state and shortens its burn-in to the warm
// one. Parameters of rows the state does not have keep a prior draw from the chain's own stream;
// it returns their parameter ranges.
func (p *Problem) warmStart(w *Walker, s *State) ([][2]int, error) {
	if s.Model != w.m.Name() || s.Rank != w.m.Rank() {
		return nil, fmt.Errorf("saved state is of model %s rank %d, not %s rank %d", s.Model, s.Rank, w.m.Name(), w.m.Rank())
	}
	w.SamplePrior(p.initStream(w.id))
	var newRows [][2]int
	fs := w.m.Factors()
	switch {
	case fs == nil && s.Factors == nil:
		if len(s.Theta) != len(w.theta) {
			return nil, fmt.Errorf("saved state has %d parameters, the model %d", len(s.Theta), len(w.theta))
		}
		copy(w.theta, s.Theta)
	case len(fs) != len(s.Factors):
		return nil, fmt.Errorf("saved state has %d factors, the model %d", len(s.Factors), len(fs))
	default:
		for k, f := range fs {
			o := s.Factors[k]
			if o.Cols != f.Cols || o.Rows > f.Rows || o.Offset < 0 || o.Offset+o.Rows*o.Cols > len(s.Theta) {
				return nil, fmt.Errorf("saved state's mode-%d factor is %d×%d, the model's %d×%d: the data are not a growth of the data it was saved on",
					k, o.Rows, o.Cols, f.Rows, f.Cols)
			}
			copy(w.theta[f.Offset:], s.Theta[o.Offset:o.Offset+o.Rows*o.Cols])
			if lo, hi := f.Params(o.Rows, f.Rows); hi > lo {
				newRows = append(newRows, [2]int{lo, hi})
			}
		}
	}
	for i, v := range w.theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("saved state's parameter %d is %v", i, v)
		}
	}
	w.SetBurnin(p.RankConfig(w.id.Rank).warmBurnin())
	return newRows, nil
}

// priorRecords fills records at t = 0, where the power posterior is the prior: independent prior
// draws, each scored with the same subsampled estimator the chains use.
func (p *Problem) priorRecords(ctx context.Context, w *Walker, n int, records []float64) ([]float64, string) {
	r := p.initStream(w.id)
	for k := 1; k <= n; k++ {
		if k%64 == 0 && ctx.Err() != nil {
			return records, ""
		}
		w.SamplePrior(r)
		y := w.estimate()
		progress.Add(ctx, 1)
		if math.IsNaN(y) || math.IsInf(y, 0) {
			return records, w.divergence(k, fmt.Sprintf("log-likelihood record is %v", y)).Error()
		}
		records = append(records, y)
	}
	return records, ""
}

// walk performs burn-in and sampling and returns the records after burn-in, the control variate
// they carry (nil without any: see controls), a divergence and the steps spent. A warm walker starts
// where warmStart put it, with the rows it gained settled first; otherwise, with Starts > 0, from
// its rank's mode (see Problem.mode), and else from a prior draw. Sampling starts after the
// burn-in, so the start changes how soon the records are right, not what they target.
func (p *Problem) walk(ctx context.Context, w *Walker, warm bool, newRows [][2]int, records []float64) ([]float64, *controls, string, int) {
	cfg := p.RankConfig(w.id.Rank)
	recorded, err := p.recordsAt(w.id.Rank, w.id.TIndex)
	if err != nil {
		return records, nil, err.Error(), 0
	}
	steps := w.burnin + recorded
	spent := 0
	var center []float64 // the rank's mode (controls), searched before any chain runs
	gibbs := cfg.Gibbs   // NewProblem checked that the model has the kernel
	switch {
	case warm && gibbs:
		// A sweep draws the rows the state did not have from their conditionals at once.
		if cfg.Stein && cfg.Starts > 0 {
			// The basin check searched the grown data's mode before the rank's chains ran
			// (Resumption.warmBasin): the centre of a cold chain, as good for a warm one.
			m, err := p.mode(ctx, w.id.Rank)
			if err != nil {
				return records, nil, err.Error(), spent
			}
			center = m.theta
		}
	case warm:
		n, err := w.settle(newRows, cfg.SettleSteps)
		spent += n
		progress.Add(ctx, n)
		if err != nil {
			return records, nil, err.Error(), spent
		}
	case cfg.Starts > 0:
		m, err := p.mode(ctx, w.id.Rank)
		if err != nil {
			return records, nil, err.Error(), spent
		}
		if w.id.Chain == 0 && w.id.TIndex == len(cfg.Ladder)-1 {
			// The search is shared by the rank's chains; one of them accounts for it.
			spent += m.steps
			w.cellEvals += m.cellEvals
		}
		start := m.theta
		center = start
		if gibbs && cfg.Descent > 0 {
			theta, passes, cells, err := p.descentStart(ctx, w.id)
			if err != nil {
				return records, nil, err.Error(), spent
			}
			start = theta
			spent += passes
			w.cellEvals += cells
		}
		w.SetTheta(start)
	default:
		w.SamplePrior(p.initStream(w.id))
	}
	if gibbs {
		mv := newGibbsMover(w.m)
		var cv *controls
		if cfg.Stein {
			cv = newControls(mv, center)
		}
		records, div, n := p.sweep(ctx, mv, cv, w.id, w.t, w.theta, w.burnin, steps, records)
		w.cellEvals += mv.cellEvals()
		spent += mv.passes(n)
		if cv != nil {
			spent += cv.passes
		}
		return records, cv, div, spent
	}
	for k := 1; k <= steps; k++ {
		if k%64 == 0 && ctx.Err() != nil {
			return records, nil, "", spent
		}
		y, err := w.Step(k)
		spent++
		progress.Add(ctx, 1)
		if err != nil {
			return records, nil, err.Error(), spent
		}
		if k > w.burnin {
			records = append(records, y)
		}
	}
	for i, v := range w.theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return records, nil, w.divergence(steps, fmt.Sprintf("parameter %d is %v", i, v)).Error(), spent
		}
	}
	return records, nil, "", spent
}

// settle carries the parameters of rows a warm walker's saved state did not have (prior draws) to
// the mode of its power posterior with every other parameter held where the state left it: n
// steps of ascent that move those rows only, on all cells. A prior draw is many e-folds from where
// the data put a row, and a short burn-in alone does not bring a growth of half the data or more
// into equilibrium: on CP data that doubled, a 50-step warm burn-in from prior draws left R = 2…5
// 29 nats (RMS) off, 7 after settling (bench/engine -workload warm, measured before and after
// settling was added). The conditional mode is a start that the burn-in then turns into a sample.
// It returns the steps spent.
func (w *Walker) settle(rows [][2]int, n int) (int, error) {
	if len(rows) == 0 || n == 0 {
		return 0, nil
	}
	parts, sub, cv, scale, burnin := w.parts, w.sub, w.cv, w.scale, w.burnin
	w.parts = [][]unit{{{cells: models.Cells{Lo: 0, Hi: w.m.NumCells()}, params: rows}}}
	w.sub, w.cv, w.scale, w.burnin = samplers.Subsample{}, false, 1, n // the metric follows every step
	defer func() { w.parts, w.sub, w.cv, w.scale, w.burnin = parts, sub, cv, scale, burnin }()
	for k := 1; k <= n; k++ {
		if err := w.Ascend(k); err != nil {
			return k, err
		}
	}
	return n, nil
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
// posterior after a few sweeps of EM where the model has them (emAscend, startEMScreen), the best of
// them then carried through the rest of StartEM's sweeps. On the ICASSP 100×75 NMF at rank 3, 300
// EM sweeps took the 16 starts to modes up to 6 nats apart, and the start best after the ascent
// alone was not the best after EM. A prior draw can fall into the basin of a local mode of
// negligible mass (two components sharing one source, another missing) that a chain at high t
// never leaves; on large counts such modes are many nats apart and only a search over many starts
// finds the dominant one. One search per rank, shared by its chains at every temperature (at low
// t they leave the mode within a few relaxation times), costs far less than one per chain. It
// depends only on the seed and the rank, so every worker that computes it gets the same point.
func (p *Problem) mode(ctx context.Context, rank int) (*rankMode, error) {
	v, _ := p.modes.LoadOrStore(rank, &rankMode{})
	rm := v.(*rankMode)
	rm.once.Do(func() {
		pr := p.reportPrices(ctx, rank)
		ascent, em := pr.ascent, pr.em
		// The starts are independent, each on its own walker and streams, so they run on all
		// cores: the search is the one serial stage of a rank, and the rank's other tasks wait
		// for it.
		type start struct {
			theta []float64
			score float64
			steps int
			cells int64
			err   error
		}
		starts := make([]start, p.Config.Starts)
		par.Tasks(len(starts), func(s int) {
			st := &starts[s]
			w, err := p.NewWalker(ChainID{Rank: rank, TIndex: p.top(rank), Chain: -1})
			if err != nil {
				st.err = err
				return
			}
			w.SamplePrior(rng.New(p.Config.Seed, uint64(rank), streamMode, uint64(s)))
			for k := 1; k <= p.Config.StartSteps; k++ {
				if k%64 == 0 && ctx.Err() != nil {
					st.err = ctx.Err()
					return
				}
				if err := w.Ascend(k); err != nil {
					st.err = fmt.Errorf("mode search, start %d: %w", s, err)
					return
				}
				st.steps++
				progress.AddAt(ctx, 1, ascent)
			}
			passes, err := w.emAscend(ctx, p.Config.screenEM(), em)
			st.steps += passes
			st.theta, st.score, st.cells, st.err = w.theta, w.LogPosterior(), w.cellEvals, err
		})
		best := math.Inf(-1)
		for _, st := range starts {
			if st.err != nil {
				rm.err = st.err
				return
			}
			rm.steps += st.steps
			rm.cellEvals += st.cells
			if st.score > best {
				best, rm.theta, rm.score = st.score, st.theta, st.score
			}
		}
		if rm.theta == nil {
			rm.err = fmt.Errorf("mode search for rank %d found no start with a finite log posterior", rank)
			return
		}
		w, err := p.NewWalker(ChainID{Rank: rank, TIndex: p.top(rank), Chain: -1})
		if err != nil {
			rm.err = err
			return
		}
		w.SetTheta(rm.theta)
		passes, err := w.emAscend(ctx, p.Config.StartEM-p.Config.screenEM(), em)
		if err != nil {
			rm.err = err
			return
		}
		if passes > 0 {
			rm.steps += passes
			copy(rm.theta, w.theta)
			rm.score = w.LogPosterior()
		}
		rm.cellEvals += w.cellEvals
	})
	if rm.err != nil {
		return nil, rm.err
	}
	return rm, nil
}

// emAscend carries the walker's θ the given number of EM sweeps towards a mode of the posterior
// when its model has a data-augmentation kernel (models.Augmentable), counts the cells they read
// and returns the passes over the data they made, each reported at that cost (progress.AddAt).
func (w *Walker) emAscend(ctx context.Context, sweeps int, cost float64) (int, error) {
	a, ok := w.m.(models.Augmentable)
	if !ok || sweeps == 0 {
		return 0, nil
	}
	k := a.NewAugmented()
	for range sweeps {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		k.Ascend(1, w.theta)
		progress.AddAt(ctx, emPasses(len(w.m.Factors())), cost)
	}
	passes := sweeps * emPasses(len(w.m.Factors()))
	w.cellEvals += int64(passes) * int64(models.PassCells(w.m))
	return passes, nil
}

// startEMScreen is the number of EM sweeps every start of the mode search gets before the starts
// are compared; the best gets the rest of Config.StartEM. Most of what EM changes in a start's
// log posterior it changes early, and the search costs a sixth of what full EM of every start would.
const startEMScreen = 50

// screenEM is the number of EM sweeps of every start of the mode search.
func (c Config) screenEM() int { return min(c.StartEM, startEMScreen) }

// emPasses is the number of passes over the data an EM sweep of a model with that many factors
// makes: one per factor.
func emPasses(factors int) int { return factors }

// basinPlan is the steps of a rank's basin check (Resumption.warmBasin) and what they cost at
// those prices: each replica's saved state settled on the rows the data gained and carried by
// StartSteps ascent steps and StartEM EM sweeps.
func (cfg Config) basinPlan(order int, pr prices) (int, float64) {
	settle, ascent, em := cfg.Chains*cfg.SettleSteps, cfg.Chains*cfg.StartSteps, cfg.Chains*cfg.StartEM*emPasses(order)
	return settle + ascent + em, float64(settle) + float64(ascent)*pr.ascent + float64(em)*pr.em
}

// ChainSteps is the number of sampler steps RunChain (warm false) or Resume from a saved state
// (warm true) reports for chain id of a model of the given order, with Steps − Burnin records at
// every rung (see Problem.ChainSteps for the records Config.Allocate gives): prior draws at t = 0;
// otherwise the burn-in and the recorded steps, plus the pass of each record's control variate
// (Config.Stein, with a mode search), for the cold chains that account for them the rank's mode
// search and the replica's descent (Config.Descent), and for a warm one the steps that settle new
// rows (which it spends only when the data gained rows) and, for the one that accounts for its
// rank's mode search, that search and the basin check (Resumption.warmBasin). A Gibbs sweep
// counts as the passes over the data it makes, the unit of a full-data step, so that progress
// estimates weigh sweeps and steps alike. A chain makes exactly these steps: Config.Truncate
// drops records and sweeps none to replace them.
func (cfg Config) ChainSteps(id ChainID, warm bool, order int) int {
	cfg = cfg.AtRank(id.Rank)
	n, _ := cfg.chainPlan(id, warm, order, cfg.Steps-cfg.Burnin, unitPrices)
	return n
}

// ChainSteps is Config.ChainSteps for the problem's chains, which record Records(id.Rank,
// id.TIndex), and ChainWork what those steps cost in all, each at the price the chain reports it
// at (progress.AddAt): its rank's prices, timed when first asked for.
func (p *Problem) ChainSteps(id ChainID, warm bool) int {
	n, _ := p.chainPlan(id, warm, unitPrices)
	return n
}

// ChainWork is the cost of chain id's steps (see ChainSteps).
func (p *Problem) ChainWork(id ChainID, warm bool) float64 {
	_, w := p.chainPlan(id, warm, p.prices(id.Rank))
	return w
}

// chainPlan is ChainSteps and ChainWork at those prices.
func (p *Problem) chainPlan(id ChainID, warm bool, pr prices) (int, float64) {
	order, _ := p.Spec.Order()
	cfg := p.RankConfig(id.Rank)
	return cfg.chainPlan(id, warm, order, p.Records(id.Rank, id.TIndex), pr)
}

// chainPlan is ChainSteps for a chain that records that many steps, and what they cost at those
// prices.
func (cfg Config) chainPlan(id ChainID, warm bool, order, records int, pr prices) (int, float64) {
	if cfg.Ladder[id.TIndex] == 0 {
		return records, float64(records)
	}
	t := cfg.Ladder[id.TIndex]
	per := sweepPasses(order)
	// sweeps is the price of n sweeps at u of which the last reads its log-likelihood (the
	// end of a burn-in, a relaxation or a rung of a walk) and of records more that all do.
	sweeps := func(u float64, n, records int) float64 {
		w := float64(records) * pr.sweep(u, true)
		if n > 0 {
			w += float64(n-1)*pr.sweep(u, false) + pr.sweep(u, true)
		}
		return float64(per) * w
	}
	stein := cfg.Stein && cfg.Starts > 0 // a pass per record (the Stein variates of controls)
	// search adds the rank's mode search (Problem.mode), which the first replica's chain at t = 1
	// accounts for, and for a warm one the basin check that it accounts for too (basinPlan).
	search := func(n int, w float64) (int, float64) {
		if cfg.Starts == 0 || id.Chain != 0 || id.TIndex != len(cfg.Ladder)-1 {
			return n, w
		}
		ascent := cfg.Starts * cfg.StartSteps
		em := (cfg.Starts*cfg.screenEM() + cfg.StartEM - cfg.screenEM()) * emPasses(order)
		if warm {
			bn, bw := cfg.basinPlan(order, pr)
			n, w = n+bn, w+bw
		}
		return n + ascent + em, w + float64(ascent)*pr.ascent + float64(em)*pr.em
	}
	if cfg.Gibbs && warm {
		n := (cfg.warmBurnin() + records) * per
		w := sweeps(t, cfg.warmBurnin(), records)
		if stein {
			n += records
			w += float64(records) * pr.stein
		}
		return search(n, w)
	}
	if warm {
		n := cfg.SettleSteps + cfg.warmBurnin() + records
		return search(n, float64(n))
	}
	n := cfg.Burnin + records
	w := float64(n)
	if cfg.Gibbs {
		n *= per
		w = sweeps(t, cfg.Burnin, records)
		if stein {
			n += records
			w += float64(records) * pr.stein
		}
	}
	n, w = search(n, w)
	if cfg.Gibbs && cfg.Starts > 0 && cfg.Descent > 0 && id.TIndex == len(cfg.Ladder)-1 {
		// The replica's walk: its relaxation at t = 1, then Descent sweeps at every rung above 0.
		n += (cfg.Relax + cfg.Descent*(len(cfg.Ladder)-1)) * per
		w += sweeps(1, cfg.Relax, 0)
		for _, u := range cfg.Ladder[1:] {
			w += sweeps(u, cfg.Descent, 0)
		}
	}
	if cfg.phaseCheck(id, false) {
		// The phase check's ascent: Ascent sweeps at every rung from phaseRung up, the last
		// half of them reading their log-likelihoods (ascend).
		read := cfg.ascentReads()
		for _, u := range cfg.Ladder[cfg.phaseRung():] {
			n += cfg.Ascent * per
			w += float64(per) * (float64(cfg.Ascent-read)*pr.sweep(u, false) + float64(read)*pr.sweep(u, true))
		}
	}
	return n, w
}

// phaseCheck says whether chain id, warm or not, runs its rank's phase check (Config.Ascent): the
// first replica's cold chain at t = 1 of Gibbs chains that start from descents.
func (cfg Config) phaseCheck(id ChainID, warm bool) bool {
	return cfg.Gibbs && cfg.Starts > 0 && cfg.Descent > 0 && cfg.Ascent > 0 && !warm &&
		id.Chain == 0 && id.TIndex == len(cfg.Ladder)-1
}
