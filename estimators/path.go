package estimators

import (
	"context"
	"fmt"
	"math"

	"github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// PathName is the name the path estimator registers under.
const PathName = "path"

func init() {
	Register(PathName, func(model models.Spec, config []byte) (Estimator, error) {
		cfg, err := decodeConfig[PathConfig](config)
		return Path{Model: model, Config: cfg}, err
	})
}

// PathConfig configures thermodynamic integration along the path π_t ∝ q(θ)^(1−t) (p(θ)
// p(X | θ))^t from a reference q fitted to the posterior (the generalised stepping-stone path of
// Fan et al. 2011), for the Poisson models with exponential priors (baselines.ForModel). Each of
// Chains replicas of a rank fits its own q (baselines.Problem.FitReference: a Gibbs run at t = 1
// of ReferenceBurnin sweeps of burn-in and ReferenceSweeps more, whose draws moment-match a Gamma
// to every factor entry), then one chain per rung of Ladder draws its start from q and runs Steps
// sweeps of slice sampling on the exact conditionals of π_t (slice interval Width in log-factor
// units), Burnin of them discarded, recording log p(X | θ) + log p(θ) − log q(θ), whose mean is
// d/dt log Z(t); the corrected trapezoid in t (evidence.Ladder.PathRule) integrates it.
type PathConfig struct {
	Ladder          evidence.Ladder `json:"ladder"`
	Chains          int             `json:"chains"`
	Steps           int             `json:"steps"`
	Burnin          int             `json:"burnin"`
	ReferenceBurnin int             `json:"reference_burnin"`
	ReferenceSweeps int             `json:"reference_sweeps"`
	Width           float64         `json:"width"`
	Seed            uint64          `json:"seed"`
}

// DefaultPath is 4 replicas per rank, each fitting its reference to 1 000 Gibbs sweeps after
// 1 000 of burn-in, then one chain of 120 sweeps (30 of burn-in) at each of the 28 temperatures
// of the path:6 ladder (evidence.Path: a sigmoid:6 ladder of 20, dense at both ends of the path,
// and 7 rungs more toward t = 1). From q, whose mass already lies where the posterior's does,
// f(t) is smooth and every chain starts where its target is; what the path cannot reach is a
// basin the replica's Gibbs run did not find (evidence.CombineReferencePath).
func DefaultPath() PathConfig {
	return PathConfig{Ladder: evidence.Path(20, 6), Chains: 4, Steps: 120, Burnin: 30,
		ReferenceBurnin: baselines.DefaultReferenceBurnin, ReferenceSweeps: 1000, Width: 1, Seed: 1}
}

// Path is thermodynamic integration along the paths from references (PathConfig): each replica of
// a rank is a first-stage task that fits its reference and starts one follow-on chain per rung,
// which carries the fit.
type Path struct {
	Model  models.Spec
	Config PathConfig
}

var (
	_ Staged   = Path{}
	_ Expander = (*pathProblem)(nil)
)

func (e Path) Staged() bool { return true }

func (e Path) Validate() error {
	if err := e.Model.Validate(); err != nil {
		return err
	}
	return e.Config.Validate()
}

// Validate checks the configuration against itself.
func (c PathConfig) Validate() error {
	switch {
	case c.Chains < 1:
		return fmt.Errorf("path: %d replicas, want at least 1", c.Chains)
	case c.Steps < 2 || c.Burnin < 0 || c.Burnin >= c.Steps:
		return fmt.Errorf("path: %d steps with %d of burn-in", c.Steps, c.Burnin)
	case c.ReferenceBurnin < 0:
		return fmt.Errorf("path: reference burn-in %d must not be negative", c.ReferenceBurnin)
	case c.ReferenceSweeps < 2:
		return fmt.Errorf("path: %d reference sweeps cannot fit a variance, want at least 2", c.ReferenceSweeps)
	case !(c.Width > 0) || math.IsInf(c.Width, 0):
		return fmt.Errorf("path: slice width %v must be positive and finite", c.Width)
	}
	return c.Ladder.Validate()
}

func (e Path) Tasks(rank int) []Task {
	ts := make([]Task, e.Config.Chains)
	for q := range ts {
		ts[q] = Task{Rank: rank, Replica: q}
	}
	return ts
}

func (e Path) Prepare(data *tensor.Sparse) (Problem, error) {
	b, err := baselines.ForModel(data, e.Model)
	if err != nil {
		return nil, err
	}
	return &pathProblem{b: b, c: e.Config}, nil
}

// pathProblem is the path estimator bound to its data.
type pathProblem struct {
	b *baselines.Problem
	c PathConfig
}

// Path streams: a replica's fit, and a chain's start and sweeps.
const (
	streamReferenceFit = iota + 200
	streamPath
)

// referenceFit is the summary of a replica's fit of its reference, the first stage.
type referenceFit struct {
	Rank, Replica int
	Sweeps        int
	CellEvals     int64
}

// Expand fits replica t.Replica's reference at rank t.Rank, from the stream (seed, rank,
// replica), and starts one chain per rung of the ladder, each carrying the fit.
func (p *pathProblem) Expand(ctx context.Context, t Task) (Result, []Task, error) {
	r := rng.New(p.c.Seed, streamReferenceFit, uint64(t.Rank), uint64(t.Replica))
	fit, err := p.b.FitReference(ctx, r, t.Rank, p.c.ReferenceBurnin, p.c.ReferenceSweeps)
	if err != nil {
		return Result{}, nil, fmt.Errorf("rank %d, replica %d: %w", t.Rank, t.Replica, err)
	}
	res := Result{Task: t, Steps: fit.Sweeps, CellEvals: fit.CellEvals,
		Summary: Pack(referenceFit{Rank: t.Rank, Replica: t.Replica, Sweeps: fit.Sweeps, CellEvals: fit.CellEvals})}
	payload := Pack(fit)
	next := make([]Task, len(p.c.Ladder))
	for i := range next {
		next[i] = Task{Rank: t.Rank, Stage: 1, Index: i, Replica: t.Replica, Payload: payload}
	}
	return res, next, nil
}

// Run runs the chain at rung t.Index on the path from its replica's reference, from the stream
// (seed, rank, rung, replica).
func (p *pathProblem) Run(ctx context.Context, t Task) (Result, error) {
	fit, err := Unpack[baselines.ReferenceFit](t.Payload)
	if err != nil {
		return Result{}, fmt.Errorf("chain rank %d, temperature %d, replica %d: reference: %w", t.Rank, t.Index, t.Replica, err)
	}
	sum := evidence.ChainSummary{Rank: t.Rank, TIndex: t.Index, Chain: t.Replica}
	switch {
	case t.Index < 0 || t.Index >= len(p.c.Ladder):
		err = fmt.Errorf("temperature index %d is off the ladder of %d", t.Index, len(p.c.Ladder))
	case fit.Rank != t.Rank:
		err = fmt.Errorf("the reference was fitted at rank %d", fit.Rank)
	}
	if err == nil {
		sum.T = p.c.Ladder[t.Index]
		r := rng.New(p.c.Seed, streamPath, uint64(t.Rank), uint64(t.Index), uint64(t.Replica))
		var c baselines.PathChain
		if c, err = p.b.RunPath(ctx, r, fit, sum.T, p.c.Width, p.c.Burnin, p.c.Steps-p.c.Burnin); err == nil {
			sum.Steps, sum.CellEvals, sum.Divergence = c.Sweeps, c.CellEvals, c.Divergence
			if c.Divergence == "" {
				sum.Count = len(c.Records)
				sum.Mean, sum.M2, sum.ESS = evidence.Summarize(c.Records)
			}
		}
	}
	return chainResult(t, sum, err)
}

// Combine combines a rank's fits and the chains on their paths (evidence.CombineReferencePath),
// the fits' sweeps counted in the rank's steps.
func (e Path) Combine(rank int, results []Result) (evidence.RankEvidence, error) {
	first, rest := stages(results)
	fits, err := unpackAll[referenceFit](first)
	if err != nil {
		return evidence.RankEvidence{}, err
	}
	chains, err := unpackAll[evidence.ChainSummary](rest)
	if err != nil {
		return evidence.RankEvidence{}, err
	}
	re, err := evidence.CombineReferencePath(e.Config.Ladder, chains)
	for _, f := range fits {
		re.Steps += f.Sweeps
		re.CellEvals += f.CellEvals
	}
	return re, err
}
