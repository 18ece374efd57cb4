package sti

import (
	"fmt"
	"math"
	"slices"

	"github.com/stirank/stirank/evidence"
)

// Bounds of Config.Allocate's records per rung, as fractions of Steps − Burnin: every rung keeps a
// quarter of them, so that its mean, its variance, its Stein slopes and its transient test still
// rest on tens of records where the curve says it matters little, and none takes more than four
// times, so that no chain runs far longer than the others of its rank.
const (
	recordFloor = 0.25
	recordCap   = 4
)

// splitCost is what splitting one count costs in a Gibbs sweep, in stored cells' worth of the
// sweep's other work: on the embedded default (42 counts a cell) a sweep at rank 5 took 47 µs at
// t = 10⁻⁴ and 299 µs at t = 1, on the 257×275 speech spectrogram (7.5 a cell) at rank 3 2.1 and
// 3.6 ms, on the ICASSP 100×75 NMF (1.1 a cell) at rank 5 76 and 95 µs (one core, a scratch
// timing of the kernel).
const splitCost = 0.15

// Records is the number of records of rank R's chains at rung ti of the ladder: Steps − Burnin,
// or with Config.Allocate that rung's share (allocateRecords); a rank whose allocation fails
// (which its start stage reports) and an annealed one count what a uniform ladder records.
func (p *Problem) Records(R, ti int) int {
	cfg := p.RankConfig(R)
	if cfg.OwnLadders() {
		// An annealed replica runs its chains on a ladder of its own, not the configuration's.
		return cfg.Steps - cfg.Burnin
	}
	rs, err := p.rankRecords(R)
	if err != nil {
		return cfg.Steps - cfg.Burnin
	}
	return rs[ti]
}

// rankRecords is the number of records of rank R's chains at every rung of its ladder (Records).
// It reads the exact curve at every rung, which a start stage does once for all its chains.
func (p *Problem) rankRecords(R int) ([]int, error) {
	cfg := p.RankConfig(R)
	n := cfg.Steps - cfg.Burnin
	if p.rank1 == nil && p.powerVariance == nil {
		return slices.Repeat([]int{n}, len(cfg.Ladder)), nil
	}
	variance, err := p.rungVariance(R)
	if err != nil {
		return nil, fmt.Errorf("rank %d: allocating the records to the rungs: %w", R, err)
	}
	rs, err := allocateRecords(variance, cfg.Ladder, R, n, p.split)
	if err != nil {
		return nil, fmt.Errorf("rank %d: allocating the records to the rungs: %w", R, err)
	}
	return rs, nil
}

// rungVariance returns v(t) = Var_t[log p(X | θ)] at rank R as the allocation reads it: the exact
// rank-1 curve read at t/R where the model has one (rank1, allocateRecords), otherwise the
// model's own exact curve at rank R (powerVariance).
func (p *Problem) rungVariance(R int) (func(t float64) (float64, error), error) {
	if p.rank1 == nil {
		v, err := p.powerVariance(p.Data, R, p.Spec)
		if err != nil {
			return nil, err
		}
		return func(t float64) (float64, error) { return v(t), nil }, nil
	}
	return func(t float64) (float64, error) {
		v1, err := curvature(p.rank1, t/float64(R))
		return v1 / float64(R), err
	}, nil
}

// allocateRecords returns the records each rung of ladder l gets at rank R (Config.Allocate),
// where a uniform ladder would give each n, from the rungs' variances v(t) of log p(X | θ)
// (rungVariance) on data with eventsPerCell counts per stored cell.
//
// The integral's variance is Σ_i (wf_i² s_i² + 2 wv_i² v_i²)/n_i over the rungs, wf and wv the
// rule's weights (evidence.Ladder.Rule), s_i² the variance of a rung's mean per record and v_i
// the rung's variance of log p(X | θ). For records that cost c_i each it is least, at a given
// cost in all, with n_i ∝ √(wf_i² s_i² + 2 wv_i² v_i²)/√c_i (Neyman's allocation with costs).
// With s_i² = v_i = Var_t[log p(X | θ)] of the exact curve that is known before any chain runs
// and is the same on every worker. At rank R each component explains about 1/R of the counts,
// and a Poisson likelihood tempered by t is one of counts t·x, so a component at t is informed as
// the rank-1 model is at t/R: t²·v_R(t), half the number of parameters the data inform, is about
// R·(t/R)²·v_1(t/R), and the allocation reads v_1 at t/R. Applied to the per-rung variances of
// runs with uniform records it left 1/2.1–1/2.4 of their within-chain variance at ranks 2–10 of
// the ICASSP 100×75 NMF, 1/1.3–1/1.4 on the embedded default, the 257×275 speech spectrogram and
// a 120×100×40 CP tensor, and 1/1.5 at rank 2 of the Facebook-size tensor; v_1 read at t
// instead, 1/1.7–1/1.9 and 1/1.1–1/1.4 (README at fb09484). The records' cost is sweepCost with
// eventsPerCell counts split per stored cell at t = 1 (0 for steps that cost the same at every
// t); they cost what a uniform ladder's do, and are no more in all.
// Records leave the rungs near t = 0, where the prior dominates and the rule's weights are tiny,
// for those where the likelihood takes over. The rung at t = 0 (prior draws) keeps n.
func allocateRecords(variance func(t float64) (float64, error), l evidence.Ladder, R, n int, eventsPerCell float64) ([]int, error) {
	wf, wv := l.Rule()
	K := len(l) - 1
	share := make([]float64, len(l)) // √(variance per record / cost per record)
	cost := make([]float64, len(l))
	var sumShare, sumCost, sumCostShare float64
	for i := 1; i < len(l); i++ {
		v, err := variance(l[i])
		if err != nil {
			return nil, err
		}
		cost[i] = sweepCost(l[i], R, eventsPerCell)
		share[i] = math.Sqrt((wf[i]*wf[i]*v + 2*wv[i]*wv[i]*v*v) / cost[i])
		sumShare += share[i]
		sumCost += cost[i]
		sumCostShare += cost[i] * share[i]
	}
	out := make([]int, len(l))
	for i := range out {
		out[i] = n
	}
	if !(sumShare > 0) {
		return out, nil
	}
	// n_i = n·(floor + (1 − floor)·scale·share_i): the floor's share costs and counts what it
	// would uniformly, and scale makes the rest cost the same, or count the same where that is
	// fewer records.
	scale := min(sumCost/sumCostShare, float64(K)/sumShare)
	for i := 1; i < len(l); i++ {
		r := recordFloor + (1-recordFloor)*scale*share[i]
		out[i] = max(2, int(math.Round(min(r, recordCap)*float64(n))))
	}
	return out, nil
}

// sweepCost is what a sweep at t of rank R costs, in sweeps at t = 0: 1 + splitCost·t·split
// with split counts per stored cell, 1 at rank 1 (its sweeps read the margins).
func sweepCost(t float64, R int, split float64) float64 {
	if R == 1 {
		return 1
	}
	return 1 + splitCost*t*split
}

// curvature is d²log Z/dt² at t > 0 by central differences, at least 0. Near t = 0 rounding
// swamps it (log Z(t) ≈ log Z(0) + t·f(0) carries a variance below its rounding), and the rule's
// weights there are so small that what it returns hardly matters.
func curvature(logZ func(float64) (float64, error), t float64) (float64, error) {
	_, _, v, err := evidence.Derivatives(logZ, t, t*1e-3)
	if err != nil || !(v > 0) || math.IsInf(v, 1) {
		return 0, err
	}
	return v, nil
}
