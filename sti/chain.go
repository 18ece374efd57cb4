package sti

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/progress"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/samplers"
	"github.com/stirank/stirank/tensor"
)

// Problem is a dataset prepared for one model and configuration (its cells ordered by block when
// the parts schedule needs it). It is read-only and shared by every task that runs on it: every
// stage of a rank (StartRank, Extend, RunChain, …) computes what it needs from its own inputs, so
// a retried task recomputes nothing another task owns.
type Problem struct {
	Spec   models.Spec
	Config Config
	// Data holds the cells in the order the schedules address them.
	Data    *tensor.Sparse
	Blocked *tensor.Blocked // non-nil when the parts schedule is used
	// size is how much the data concentrate the posterior: the total count for Poisson models,
	// the number of observations for the Gaussian (see State.Size).
	size float64
	// split is the number of counts a Gibbs sweep at t = 1 splits per stored cell (sweepCost), 0
	// for chains on an SG-MCMC kernel, whose steps cost the same at every t.
	split   float64
	sampler samplers.Sampler
	// rank1 is the exact rank-1 curve log Z(t) and powerVariance the model's exact
	// Var_t[log p(X | θ)] (models.Info.PowerVariance), either of which allocates each rank's
	// records to its rungs (Config.Allocate, Records); both nil for Steps − Burnin at every rung.
	rank1         func(t float64) (float64, error)
	powerVariance func(data *tensor.Sparse, R int, s models.Spec) (func(t float64) float64, error)
	// atRank1 is the configuration of rank 1's chains when Config.Rank1 gives them their own
	// (Config.AtRank, its ladder fitted as Config.Ladder is), nil when they run Config.
	atRank1 *Config
	// build, when set, builds the model of a rank instead of Spec (a test's model).
	build func(R int) (models.Model, error)
}

// gibbsSweeps reports whether the problem's chains or annealing move θ by the model's Gibbs
// kernel: the chains under Config.Gibbs, and an annealing of a model that has one.
func (p *Problem) gibbsSweeps() bool {
	return p.Config.Gibbs || (p.Config.OwnLadders() && p.Spec.Gibbs())
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

// model returns the model of rank R bound to the problem's data. Models are immutable; each task
// builds its own (a Poisson model sums log Γ(x+1) over the cells, and shares the cells grouped
// by row with every other model of the data).
func (p *Problem) model(R int) (models.Model, error) {
	if p.build != nil {
		return p.build(R)
	}
	return p.Spec.Build(p.Data, R)
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
	if cfg.Blocks > 1 && spec.Params.Auto("rates") {
		// A part's steps move the rows of its blocks, never the rates past the factors.
		return nil, fmt.Errorf("--rate %s samples the rates with the whole factors: not with --blocks", models.AutoWord)
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
	return p, nil
}

// ChainID names one chain: its rank, its rung (TIndex) and its replica (Chain).
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
	if t > 0 && len(start) != m.Dim() {
		return sum, fmt.Errorf("rank %d, stage %d, chain %d: start has %d parameters, the model %d", id.Rank, id.TIndex, id.Chain, len(start), m.Dim())
	}
	if mv := newGibbsMover(m); mv != nil && t > 0 {
		per := mv.passes(1)
		s := &ChainState{Theta: slices.Clone(start)}
		r := rng.New(p.Config.Seed, uint64(id.Rank), uint64(id.TIndex), uint64(id.Chain), streamSweep)
		div := advance(ctx, mv, nil, r, t, cfg.Burnin/per, cfg.Steps/per-cfg.Burnin/per, s, func(sweep int) string {
			return fmt.Sprintf("rank %d, t=%.6g (stage %d), chain %d, sweep %d", id.Rank, t, id.TIndex, id.Chain, sweep)
		})
		sum.Steps, sum.CellEvals = mv.passes(s.Sweeps), mv.cellEvals()
		return p.summarize(ctx, sum, div, s.Records, s.Rates, nil)
	}
	w := newWalker(p, m, id, t)
	records := make([]float64, 0, cfg.Steps-cfg.Burnin)
	var div string
	if t == 0 {
		records, div = p.priorRecords(ctx, w, cfg.Steps-cfg.Burnin, records)
		sum.Steps = cfg.Steps - cfg.Burnin
	} else {
		w.SetTheta(start)
		records, div, sum.Steps = p.walk(ctx, w, false, nil, records)
	}
	sum.CellEvals = w.cellEvals
	return p.summarize(ctx, sum, div, records, nil, nil)
}

// summarize completes a chain's summary from its records unless it diverged: the configured
// post-processors (Config.Post) choose the records it keeps, which it summarises with the mean of
// the first half of them (evidence.ChainSummary.HalfMean) and the moments of the prior rates
// recorded with them where rates has them (ChainState.Rates), and then add their estimates from
// those records and from what cv recorded beside them.
func (p *Problem) summarize(ctx context.Context, sum evidence.ChainSummary, div string, records, rates []float64, cv *controls) (evidence.ChainSummary, error) {
	if err := ctx.Err(); err != nil {
		return sum, err
	}
	sum.Divergence = div
	if div != "" {
		return sum, nil
	}
	posts := p.RankConfig(sum.Rank).postProcessors()
	c := ChainRecords{All: records, controls: cv}
	for _, pp := range posts {
		c.First = pp.Keep(records, c.First)
	}
	d, kept := c.First, c.Kept()
	sum.Count = len(kept)
	sum.Mean, sum.M2, sum.ESS = evidence.Summarize(kept)
	if h := len(kept) / 2; h > 0 {
		sum.HalfMean, _, _ = evidence.Summarize(kept[:h])
		sum.HalfCount = h
	}
	for _, pp := range posts {
		pp.Summarize(c, &sum)
	}
	if len(rates) > 0 && len(kept) > 0 {
		k := len(rates) / len(records)
		sum.RateMean, sum.RateM2 = evidence.Moments(rates[d*k:], k)
	}
	return sum, nil
}

// advance sweeps mv's data-augmentation kernel at t on s's parameters, in place: burn sweeps
// whose log-likelihoods are not recorded (the last is read, where a divergence shows), then as
// many as add records more to s.Records, each with its control variates where cv has them. It
// counts its sweeps in s.Sweeps and returns a divergence, named by where, or "". At t = 1 it
// also records the prior rates of a hyperprior in s.Rates, where their draws are the posterior's.
func advance(ctx context.Context, mv *gibbsMover, cv *controls, r *rand.Rand, t float64, burn, records int, s *ChainState, where func(sweep int) string) string {
	acc := make([]float64, mv.blocks())
	rates, _ := mv.m.(models.SampledRates)
	per := mv.passes(1)
	sweeps := burn + max(0, records)
	for k := 1; k <= sweeps; k++ {
		if k%16 == 0 && ctx.Err() != nil {
			return ""
		}
		s.Sweeps++
		progress.Add(ctx, per)
		if k < burn {
			mv.moveOn(r, t, s.Theta, acc)
			continue
		}
		ll := mv.move(r, t, 1, nil, s.Theta, acc)
		if math.IsNaN(ll) || math.IsInf(ll, 1) {
			return fmt.Sprintf("%s: log-likelihood %v", where(s.Sweeps), ll)
		}
		if k == burn {
			continue
		}
		s.Records = append(s.Records, ll)
		if rates != nil && t == 1 {
			s.Rates = appendRates(s.Rates, rates, s.Theta)
		}
		if cv != nil {
			cv.record(t, s.Theta, ll)
			if cv.stein > 0 {
				progress.Add(ctx, 1)
			}
		}
	}
	return ""
}

// appendRates appends the prior rates of a hyperprior at θ and their product to dst (ChainState.Rates),
// nothing at fixed rates: the likelihood and the factors' priors leave the rates free along the
// factors' scale, so the data pin only the product, the scale of the prior's mean cell.
func appendRates(dst []float64, m models.SampledRates, theta []float64) []float64 {
	n := len(dst)
	if dst = m.AppendRates(dst, theta); len(dst) == n {
		return dst
	}
	prod := 1.0
	for _, v := range dst[n:] {
		prod *= v
	}
	return append(dst, prod)
}

// StateOf is the saved form of a chain of rank whose parameters are theta.
func (p *Problem) StateOf(rank int, theta []float64) (*models.State, error) {
	m, err := p.model(rank)
	if err != nil {
		return nil, err
	}
	return &models.State{Model: m.Name(), Rank: rank, Factors: m.Factors(), Theta: theta, Size: p.size}, nil
}

// RunChain runs chain id on the configured SG-MCMC kernel from start (its rank's mode, from
// StartRank) or, where start is nil, from a prior draw of its own, and summarises its records
// after Config.Burnin steps of burn-in. At t = 0 the records are independent prior draws. It
// returns the chain's final state, nil at t = 0 (prior draws carry no state) and after a
// divergence. A chain that produces a non-finite value stops and reports where in Divergence;
// errors are for bad set-ups only.
func (p *Problem) RunChain(ctx context.Context, id ChainID, start []float64) (evidence.ChainSummary, *models.State, error) {
	return p.runWalker(ctx, id, start, nil)
}

// Resume runs chain id like RunChain from the saved state from: the parameters of indices the
// state knows are copied, those of indices the data gained since are drawn from the prior and
// carried towards their conditional mode (settle), and the chain burns in for Config.WarmBurnin
// steps before it records. A state that ended near the power posterior of the data it was saved
// on is close to that of moderately grown data, so the short burn-in replaces most of the cold
// one.
func (p *Problem) Resume(ctx context.Context, id ChainID, from *models.State) (evidence.ChainSummary, *models.State, error) {
	return p.runWalker(ctx, id, nil, from)
}

// runWalker is RunChain from start, or Resume from a saved state.
func (p *Problem) runWalker(ctx context.Context, id ChainID, start []float64, from *models.State) (evidence.ChainSummary, *models.State, error) {
	cfg := p.RankConfig(id.Rank)
	if cfg.Gibbs {
		return evidence.ChainSummary{}, nil, fmt.Errorf("rank %d: Gibbs chains run in rounds (Extend)", id.Rank)
	}
	w, err := p.NewWalker(id)
	if err != nil {
		return evidence.ChainSummary{}, nil, err
	}
	sum := evidence.ChainSummary{Rank: id.Rank, TIndex: id.TIndex, T: w.t, Chain: id.Chain}
	records := make([]float64, 0, p.Records(id.Rank, id.TIndex))
	var div string
	if w.t == 0 {
		records, div = p.priorRecords(ctx, w, cfg.Steps-cfg.Burnin, records)
		sum.Steps = cfg.Steps - cfg.Burnin
	} else {
		var newRows [][2]int
		switch {
		case from != nil:
			if newRows, err = p.warmStart(w, from); err != nil {
				return sum, nil, fmt.Errorf("rank %d, temperature %d, chain %d: %w", id.Rank, id.TIndex, id.Chain, err)
			}
			sum.Warm = true
		case start != nil:
			if len(start) != len(w.theta) {
				return sum, nil, fmt.Errorf("rank %d, temperature %d, chain %d: start has %d parameters, the model %d", id.Rank, id.TIndex, id.Chain, len(start), len(w.theta))
			}
			w.SetTheta(start)
		default:
			w.SamplePrior(p.initStream(id))
		}
		records, div, sum.Steps = p.walk(ctx, w, from != nil, newRows, records)
	}
	sum.CellEvals = w.cellEvals
	sum, err = p.summarize(ctx, sum, div, records, nil, nil)
	if err != nil || div != "" || w.t == 0 {
		return sum, nil, err
	}
	return sum, &models.State{Model: w.m.Name(), Rank: id.Rank, Factors: w.m.Factors(), Theta: w.theta, Size: p.size}, nil
}

// warmStart sets the walker's parameters from a saved state and shortens its burn-in to the warm
// one. Parameters of rows the state does not have keep a prior draw from the chain's own stream;
// it returns their parameter ranges.
func (p *Problem) warmStart(w *Walker, s *models.State) ([][2]int, error) {
	w.SamplePrior(p.initStream(w.id))
	newRows, err := restore(w.m, s, w.theta)
	if err != nil {
		return nil, err
	}
	w.SetBurnin(p.RankConfig(w.id.Rank).warmBurnin())
	return newRows, nil
}

// restore copies the parameters a saved state s knows into theta, a point of model m, which
// keeps what it holds at the indices the data gained since; it returns their parameter ranges.
func restore(m models.Model, s *models.State, theta []float64) ([][2]int, error) {
	if s.Model != m.Name() || s.Rank != m.Rank() {
		return nil, fmt.Errorf("saved state is of model %s rank %d, not %s rank %d", s.Model, s.Rank, m.Name(), m.Rank())
	}
	var newRows [][2]int
	fs := m.Factors()
	switch {
	case fs == nil && s.Factors == nil:
		if len(s.Theta) != len(theta) {
			return nil, fmt.Errorf("saved state has %d parameters, the model %d", len(s.Theta), len(theta))
		}
		copy(theta, s.Theta)
	case len(fs) != len(s.Factors):
		return nil, fmt.Errorf("saved state has %d factors, the model %d", len(s.Factors), len(fs))
	default:
		for k, f := range fs {
			o := s.Factors[k]
			if o.Cols != f.Cols || o.Rows > f.Rows || o.Offset < 0 || o.Offset+o.Rows*o.Cols > len(s.Theta) {
				return nil, fmt.Errorf("saved state's mode-%d factor is %d×%d, the model's %d×%d: the data are not a growth of the data it was saved on",
					k, o.Rows, o.Cols, f.Rows, f.Cols)
			}
			copy(theta[f.Offset:], s.Theta[o.Offset:o.Offset+o.Rows*o.Cols])
			if lo, hi := f.Params(o.Rows, f.Rows); hi > lo {
				newRows = append(newRows, [2]int{lo, hi})
			}
		}
		// The parameters past the factors (a hyperprior's rates) carry over as they are.
		end, saved := factorsEnd(fs), factorsEnd(s.Factors)
		if len(theta)-end != len(s.Theta)-saved {
			return nil, fmt.Errorf("saved state has %d parameters past its factors, the model %d", len(s.Theta)-saved, len(theta)-end)
		}
		copy(theta[end:], s.Theta[saved:])
	}
	for i, v := range theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("saved state's parameter %d is %v", i, v)
		}
	}
	return newRows, nil
}

// factorsEnd is where the parameters of factors fs end.
func factorsEnd(fs []models.Factor) int {
	end := 0
	for _, f := range fs {
		end = max(end, f.Offset+f.Rows*f.Cols)
	}
	return end
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

// walk performs an SG-MCMC chain's burn-in and sampling from where the walker stands and returns
// the records after burn-in, a divergence and the steps spent. A warm walker first settles the
// rows it gained. Sampling starts after the burn-in, so the start changes how soon the records
// are right, not what they target.
func (p *Problem) walk(ctx context.Context, w *Walker, warm bool, newRows [][2]int, records []float64) ([]float64, string, int) {
	cfg := p.RankConfig(w.id.Rank)
	recorded := p.Records(w.id.Rank, w.id.TIndex)
	steps := w.burnin + recorded
	spent := 0
	if warm {
		n, err := w.settle(newRows, cfg.SettleSteps)
		spent += n
		progress.Add(ctx, n)
		if err != nil {
			return records, err.Error(), spent
		}
	}
	for k := 1; k <= steps; k++ {
		if k%64 == 0 && ctx.Err() != nil {
			return records, "", spent
		}
		y, err := w.Step(k)
		spent++
		progress.Add(ctx, 1)
		if err != nil {
			return records, err.Error(), spent
		}
		if k > w.burnin {
			records = append(records, y)
		}
	}
	for i, v := range w.theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return records, w.divergence(steps, fmt.Sprintf("parameter %d is %v", i, v)).Error(), spent
		}
	}
	return records, "", spent
}

// settle carries the parameters of rows a warm walker's saved state did not have (prior draws) to
// the mode of its power posterior with every other parameter held where the state left it: n
// steps of ascent that move those rows only, on all cells. A prior draw is many e-folds from where
// the data put a row, and a short burn-in alone does not bring a growth of half the data or more
// into equilibrium. The conditional mode is a start that the burn-in then turns into a sample. It
// returns the steps spent.
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

// emPasses is the number of passes over the data an EM sweep of a model with that many factors
// makes: one per factor.
func emPasses(factors int) int { return factors }

// ChainSteps is the number of sampler steps an SG-MCMC chain id (RunChain, or Resume when warm)
// of a model of the given order reports, with Steps − Burnin records at every rung: prior draws
// at t = 0; otherwise its burn-in and records, and for a warm chain the steps that settle new
// rows (which it spends only when the data gained rows). A chain on its replica's own ladder
// (RunFrom) counts Steps, whatever its temperature, which only its start stage knows.
func (cfg Config) ChainSteps(id ChainID, warm bool) int {
	cfg = cfg.AtRank(id.Rank)
	records := cfg.Steps - cfg.Burnin
	switch {
	case cfg.OwnLadders():
		return cfg.Steps
	case cfg.Ladder[id.TIndex] == 0:
		return records
	case warm:
		return cfg.SettleSteps + cfg.warmBurnin() + records
	}
	return cfg.Burnin + records
}
