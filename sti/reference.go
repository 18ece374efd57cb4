package sti

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/rng"
)

// ReferencePath, set as Config.Reference, moves the integral from the power posteriors
// p(θ) p(X | θ)^t to the path π_t ∝ q(θ)^(1−t) (p(θ) p(X | θ))^t from a reference q fitted to
// the posterior (the generalised stepping-stone path of Fan et al. 2011), for the Poisson models
// with exponential priors (models.Info.ExpPoissonRates). Each replica of a rank (Config.Chains of
// them) first fits its own q: a Gibbs run at t = 1 from the best of 4 prior runs of 50 sweeps,
// Burnin sweeps, each ended by a matrix's shears and transfer moves, which let it reach the basins
// a split component's rows spread over, then Sweeps more, plain, whose draws, balanced along
// their components' scale orbits,
// moment-match a Gamma to every factor entry; the product is spread back along the orbits and
// symmetrised over the components' relabelings (baselines.ReferenceFit). Then one chain per rung
// of Config.Ladder draws its start from q and runs Config.Steps sweeps of slice sampling on the
// exact conditionals of π_t, each ended by scale moves, a matrix's shears and transfer moves
// (Config.Burnin of them
// discarded), recording
// log p(X | θ) + log p(θ) − log q(θ), whose mean is d/dt log Z(t); the corrected trapezoid in t
// (evidence.Ladder.PathRule) integrates it to log p(X | R) − log 1.
//
// On the power path f(t) changes by orders of magnitude near t = 0 and, on large informative data,
// changes phase: chains started from one mode of t = 1 do not relax at small t, and the integral
// came out 9–43 nats high at ranks 3–6 of a 257×275 speech spectrogram (README). From q, whose mass
// already lies where the posterior's does, f(t) is smooth and the chains at every t start where
// their target is. What the path cannot reach is a basin the replica's Gibbs run did not find:
// evidence.CombineReferencePath keeps the replicas of the best basin and lists the others.
type ReferencePath struct {
	Burnin int `json:"burnin"`
	Sweeps int `json:"sweeps"`
	// Width is the slice sampler's initial interval, in log-factor units.
	Width float64 `json:"width"`
}

// Validate checks the configuration.
func (a ReferencePath) Validate() error {
	switch {
	case a.Burnin < 0:
		return fmt.Errorf("reference: burn-in %d must not be negative", a.Burnin)
	case a.Sweeps < 2:
		return fmt.Errorf("reference: %d sweeps cannot fit a variance, want at least 2", a.Sweeps)
	case !(a.Width > 0) || math.IsInf(a.Width, 0):
		return fmt.Errorf("reference: slice width %v must be positive and finite", a.Width)
	}
	return nil
}

// DefaultReference returns the configuration of the path from a reference (Config.Reference) for a
// model with exponential priors: 4 replicas per rank, each fitting its reference to 1 000 Gibbs
// sweeps after 1 000 of burn-in, then one chain of 120 sweeps (30 of burn-in) at each of the 28
// temperatures of the path:6 ladder (evidence.Path: a sigmoid:6 ladder of 20, dense at both ends
// of the path, and 7 rungs more toward t = 1). That is 4 × (200 + 2 000 + 28 × 120) = 22 240
// steps per rank, 58 % of the power ladder's 38 400, but a
// slice-sampling sweep evaluates every entry's conditional about six times, each a pass over its
// row's cells and, from a reference, sums over its grid, where a Gibbs sweep splits the counts
// once: with the check (Config.Check, which the command line sets within CheckSteps), ranks 3–6
// of a 257×275 spectrogram took six times the default's wall time, ranks 1–10 of the embedded
// default thirty-three and of the ICASSP set seventy-four (README).
func DefaultReference(model string) Config {
	c := Default(model)
	c.Ladder, c.FitLadder, c.Rank1, c.Allocate = evidence.Path(20, 6), false, nil, false
	c.Gibbs, c.Truncate, c.Stein, c.SteinBelow = false, false, false, 0
	c.Starts, c.StartSteps, c.StartEM, c.Descent, c.Relax, c.Ascent = 0, 0, 0, 0, 0, 0
	c.Chains, c.Steps, c.Burnin, c.WarmBurnin, c.SettleSteps = 4, 120, 30, 0, 0
	c.Reference = &ReferencePath{Burnin: baselines.DefaultReferenceBurnin, Sweeps: 1000, Width: 1}
	return c
}

// PathSteps is the steps per rank of c's path from a reference: each replica's fit (its start
// tournament, burn-in and sweeps), then its chain at every rung.
func (c Config) PathSteps() int {
	return c.Chains * (baselines.ReferenceStartSweeps + c.Reference.Burnin + c.Reference.Sweeps + len(c.Ladder)*c.Steps)
}

// CheckSteps is what the path of DefaultReference(model) leaves to its check (Config.Check) of
// twice SGMCMCSteps per rank: 54 560 steps, where the default ladder's chains take 66 thousand on
// a matrix and 75 on a 3-way tensor (Config.Within cuts their records).
func CheckSteps(model string) int { return 2*SGMCMCSteps - DefaultReference(model).PathSteps() }

// validateReference checks what the path from a reference needs of the rest of c.
func (c Config) validateReference() error {
	if err := c.Reference.Validate(); err != nil {
		return err
	}
	switch {
	case c.Annealing != nil:
		return fmt.Errorf("reference: the path from a reference and the annealing are two ways to start the chains: choose one")
	case c.FitLadder || c.Allocate || c.Rank1 != nil:
		return fmt.Errorf("reference: the path from a reference has its own ladder: it does not fit, allocate or set rank 1's")
	case c.Gibbs || c.Stein || c.Starts > 0 || c.Descent > 0:
		return fmt.Errorf("reference: the path's chains start from their reference and slice-sample: no Gibbs kernel, control variates, mode search or descent")
	}
	return nil
}

// Reference-path streams: a replica's fit, and a chain's start and sweeps.
const (
	streamReferenceFit = iota + 200
	streamPath
)

// FitReference fits the reference of replica replica at rank (Config.Reference) from the
// stream (seed, rank, replica).
func (p *Problem) FitReference(ctx context.Context, rank, replica int) (baselines.ReferenceFit, error) {
	a := p.Config.Reference
	if a == nil || p.base == nil {
		return baselines.ReferenceFit{}, fmt.Errorf("rank %d, replica %d: the configuration has no reference path", rank, replica)
	}
	r := rng.New(p.Config.Seed, streamReferenceFit, uint64(rank), uint64(replica))
	fit, err := p.base.FitReference(ctx, r, rank, a.Burnin, a.Sweeps)
	if err != nil {
		return fit, fmt.Errorf("rank %d, replica %d: %w", rank, replica, err)
	}
	return fit, nil
}

// RunPath runs chain id at rung id.TIndex of the ladder on the path from fit, replica id.Chain's
// reference, from the stream (seed, rank, temperature index, chain).
func (p *Problem) RunPath(ctx context.Context, id ChainID, fit baselines.ReferenceFit) (evidence.ChainSummary, error) {
	cfg := p.Config
	sum := evidence.ChainSummary{Rank: id.Rank, TIndex: id.TIndex, Chain: id.Chain}
	if cfg.Reference == nil || p.base == nil {
		return sum, fmt.Errorf("the configuration has no reference path")
	}
	if id.TIndex < 0 || id.TIndex >= len(cfg.Ladder) {
		return sum, fmt.Errorf("temperature index %d is off the ladder of %d", id.TIndex, len(cfg.Ladder))
	}
	if fit.Rank != id.Rank {
		return sum, fmt.Errorf("the reference was fitted at rank %d", fit.Rank)
	}
	sum.T = cfg.Ladder[id.TIndex]
	r := rng.New(cfg.Seed, streamPath, uint64(id.Rank), uint64(id.TIndex), uint64(id.Chain))
	c, err := p.base.RunPath(ctx, r, fit, sum.T, cfg.Reference.Width, cfg.Burnin, cfg.Steps-cfg.Burnin)
	if err != nil {
		return sum, err
	}
	sum.Steps, sum.CellEvals = c.Sweeps, c.CellEvals
	return p.summarize(ctx, sum, c.Divergence, c.Records, nil)
}

// pathPrice is a rank's PathSweepSeconds, timed once.
type pathPrice struct {
	once      sync.Once
	fit, path float64
}

// PathSweepSeconds is what a sweep of the Gibbs run that fits a reference (fit) and a sweep of a
// chain on the path from it (path) take at rank, in seconds, for the progress plan. A plan that
// priced both alike extrapolated the fits' speed to the chains: a sweep on the path
// slice-samples every entry, about 6.6 evaluations of its row's cells and of q's grid sums each,
// where a Gibbs sweep splits the counts once, and the ETA of ranks 1–10 of the embedded default
// said 26 s with 4 min 31 s to go. It is timed once per rank, on a reference sketched from 20
// Gibbs sweeps after 20 of burn-in from one prior draw (baselines.Problem.SketchReference) on a
// stream of its own, the shorter of two runs of each kind: a Gibbs sweep, and a path chain of one sweep at t = 1/2. The
// times depend on the machine and on what else runs on it; they price the progress line only
// and change no result. Both are 1 where they cannot be timed.
func (p *Problem) PathSweepSeconds(rank int) (fit, path float64) {
	v, _ := p.pathPrices.LoadOrStore(rank, &pathPrice{})
	pp := v.(*pathPrice)
	pp.once.Do(func() { pp.fit, pp.path = p.timePathSweep(rank) })
	return pp.fit, pp.path
}

// timePathSweep times PathSweepSeconds.
func (p *Problem) timePathSweep(rank int) (float64, float64) {
	if p.base == nil || p.Config.Reference == nil {
		return 1, 1
	}
	ctx := context.Background()
	r := rng.New(p.Config.Seed, streamReferenceFit, uint64(rank), streamCost)
	fit, err := p.base.SketchReference(ctx, r, rank, 20)
	if err != nil {
		return 1, 1
	}
	start := p.base.NewFactors(rank)
	p.base.SamplePrior(r, start)
	g := baselines.NewGibbs(p.base, start)
	gibbs := timed(func() { g.Sweep(r) })
	path := timed(func() { _, err = p.base.RunPath(ctx, r, fit, 0.5, p.Config.Reference.Width, 1, 0) })
	if err != nil || !(gibbs > 0) || !(path > 0) || math.IsInf(gibbs, 0) || math.IsInf(path, 0) {
		return 1, 1
	}
	return gibbs, path
}
