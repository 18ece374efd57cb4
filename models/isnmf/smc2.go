package isnmf

import (
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/samplers/smc"
)

// SMC2 grows the problem in both directions (Dikmen & Cemgil §3.2): it starts, like SMC1, from
// the collapsed dictionary but on one feature only, and then brings in the features one at a time
// and moves the columns out (as in SMC1, kept column, order and references included) between
// them, until every column and every feature is in. The column moves share columnShare of
// Budget.Stages evenly and the feature entries the rest, each step shorter where the conditional
// ESS would fall below Budget.CESS, the steps chosen by a pilot run that the run then follows
// (piloted); the particles move as in SMC1, mode jump included. The first feature is the one of
// largest power and each next one the remaining feature whose magnitude is closest to the last
// one's.
//
// The paper alternates a column and a feature until the columns run out, so every column moves
// while at most K features are in, where the masked posterior is broad and its mass shifts
// between columns faster than the moves follow, whatever the particles or stages (docs/isnmf.md).
// Here column i moves out once i·F/K features are in.
//
// A feature comes in by raising its likelihood term from the power 0 to 1 over its steps, with its
// own (masked) dictionary row. The paper instead brings it in whole at once, with a copy of the
// previous feature's row that then moves to its own (eq. 19); that jump is one importance step of
// the full term, and on the paper's synthetic data (K = 2, complex, 1 000 stages, 8 replicas) it
// left a per-run spread of 0.23 nat where the tempered entry leaves 0.10.
type SMC2 struct{ Budget }

func init() { register("smc2", func(b Budget) Method { return SMC2{b} }) }

func (SMC2) Name() string { return "smc2" }

// Estimate grows the problem from one feature and one column to x and W.
func (s SMC2) Estimate(m *Model, x []float64, r *rand.Rand) smc.Result {
	cols, feats := findModes(m, x, fullTarget(m)).contributionOrder(m), featureOrder(x)
	// events lists the segments: a column to move out (≥ 0) or a feature f to bring in (−1 − f).
	var events []int
	next := 1
	for j := 1; j < m.F; j++ {
		for ; next < m.K && next*m.F <= j*m.K; next++ {
			events = append(events, cols[next])
		}
		events = append(events, -1-feats[j])
	}
	for ; next < m.K; next++ {
		events = append(events, cols[next])
	}
	moves := make([]int, len(events))
	for i, ev := range events {
		moves[i] = max(ev, -1)
	}
	frac := make([]float64, m.K)
	mask := func(at position, t *target) {
		clear(frac)
		frac[cols[0]] = 1
		clear(t.power)
		t.power[feats[0]] = 1
		for i, ev := range events {
			if ev >= 0 {
				frac[ev] = at.share(i)
			} else {
				t.power[-1-ev] = at.share(i)
			}
		}
		maskRows(m, frac, cols[0], t.d, 0, m.F)
	}
	p := newPath(m, x, withReferences(m, x, mask, moves))
	p.segments = len(events)
	p.addJumps(func(s int) []float64 {
		if events[s] >= 0 {
			return columnGrid
		}
		return []float64{0, 1}
	})
	cfg := s.adaptive(p.segments)
	if m.K > 1 && m.F > 1 {
		cfg.MaxSteps = make([]float64, len(events))
		for i, ev := range events {
			if ev >= 0 {
				cfg.MaxSteps[i] = math.Min(1, float64(m.K-1)/(columnShare*float64(s.Stages)))
			} else {
				cfg.MaxSteps[i] = math.Min(1, float64(m.F-1)/((1-columnShare)*float64(s.Stages)))
			}
		}
	}
	return piloted(segmentPath{p}, cfg, r)
}

// piloted is one run of a segmented path on cfg. With a conditional ESS target a pilot run of
// pilotShare·cfg.Particles particles, on a stream of its own drawn from r, first chooses the
// schedule that the run then follows (smc.AdaptiveConfig.Schedule): a schedule chosen from the
// particles it then weights biases the estimate upward, and SMC2 pays that on each of its ~F
// segments. A pilot that fails fails the run.
func piloted(path smc.Segmented, cfg smc.AdaptiveConfig, r *rand.Rand) smc.Result {
	if cfg.CESS == 0 {
		return smc.RunAdaptive(path, cfg, r)
	}
	pilotCfg := cfg
	pilotCfg.Particles = max(1, int(math.Round(pilotShare*float64(cfg.Particles))))
	pilot := smc.RunAdaptive(path, pilotCfg, rand.New(rand.NewPCG(r.Uint64(), r.Uint64())))
	if pilot.Divergence != "" {
		return pilot
	}
	cfg.Schedule = pilot.Schedule
	return smc.RunAdaptive(path, cfg, r)
}

// pilotShare is the size of SMC2's pilot as a share of its particles: with half as many the
// pilot's noisier schedule left SMC2 0.020 nat high on average at F = 200, K = 4 and up to 0.095
// per column, with as many 0.003 and 0.061 (docs/isnmf.md).
const pilotShare = 1.0

// columnShare is the share of Budget.Stages SMC2 spends moving its columns out, the rest going to
// bringing its features in: a column's move is where the posterior's mass shifts between modes,
// and an even share over all K−1+F−1 segments gave each column 5 stages at F = 200.
const columnShare = 0.75

// featureOrder starts from the feature of largest power and goes on to the remaining feature
// whose magnitude |x_f| is closest to the last one's.
func featureOrder(x []float64) []int {
	F := len(x)
	order := make([]int, 0, F)
	used := make([]bool, F)
	first := 0
	for f := range F {
		if x[f] > x[first] {
			first = f
		}
	}
	order, used[first] = append(order, first), true
	for len(order) < F {
		last := math.Sqrt(x[order[len(order)-1]])
		best, gap := -1, math.Inf(1)
		for f := range F {
			if g := math.Abs(math.Sqrt(x[f]) - last); !used[f] && g < gap {
				best, gap = f, g
			}
		}
		order, used[best] = append(order, best), true
	}
	return order
}
