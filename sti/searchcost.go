package sti

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/stirank/stirank/internal/progress"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// costT is the temperature of the sweeps searchCosts times: near 0, where a sweep's pass costs 1
// (sweepCost).
const costT = 1e-3

// searchCosts returns what a step of the mode search's ascent and a pass of its EM sweeps cost
// in the units of the Gibbs chains' steps (a pass of a sweep near t = 0, sweepCost), timed on a
// prior draw of the rank before the search. The plan counts them at 1, near enough on small data
// (an ascent step took the time of 2 passes and an EM pass of 1.2 on the ICASSP 100×75 NMF at
// rank 5) but not on large data with many components, whose sweeps take their inner products
// with gonum's vectorised floats.Dot: on the speech-size spectrogram at rank 64 an ascent step
// took the time of 8 passes and an EM pass of 5, and at a tenth of the rank's run, still in the
// search, its ETA said 3.3 times the time left. Timing one of each is cheap next to the search;
// it draws from a stream of its own and leaves every result as it was. Without a progress
// reporter, or for chains that do not run the Gibbs kernel (whose steps are ascent-like), the
// costs stay 1.
func (p *Problem) searchCosts(ctx context.Context, rank int) (ascent, em float64) {
	if !p.Config.Gibbs || !progress.Reporting(ctx) {
		return 1, 1
	}
	w, err := p.NewWalker(ChainID{Rank: rank, TIndex: p.top(rank), Chain: -1})
	if err != nil {
		return 1, 1
	}
	a, ok := w.m.(models.Augmentable)
	if !ok {
		return 1, 1
	}
	w.SamplePrior(rng.New(p.Config.Seed, uint64(rank), streamCost))
	k := a.NewAugmented()
	r := rng.New(p.Config.Seed, uint64(rank), streamCost, 1)
	acc := make([]float64, len(w.m.Factors()))
	theta := slices.Clone(w.theta)
	order := len(w.m.Factors())
	pass := timed(func() { k.Sweep(r, costT, theta, acc) }) / float64(sweepPasses(order)) / p.SweepCost(costT, rank)
	step := timed(func() { w.Ascend(1) })
	emPass := timed(func() { k.Ascend(1, w.theta) }) / float64(emPasses(order))
	if !(pass > 0) || !(step > 0) || !(emPass > 0) {
		return 1, 1
	}
	return step / pass, emPass / pass
}

// timed returns the shorter of two runs of f, in seconds: the first may still be allocating.
func timed(f func()) float64 {
	best := math.Inf(1)
	for range 2 {
		start := time.Now()
		f()
		best = min(best, time.Since(start).Seconds())
	}
	return best
}
