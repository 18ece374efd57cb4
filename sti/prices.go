package sti

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/stirank/stirank/internal/progress"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// costT is the temperature of the sweep whose pass is the prices' unit: near 0, where a sweep
// splits next to nothing.
const costT = 1e-3

// priceGrid holds the temperatures below 1 at which prices times a sweep; a sweep between two of
// them costs what the straight line between their prices gives, one below costT or above the
// last what the nearest gives. Below 1 a sweep splits about t·x counts of a cell of x and takes
// the Metropolis–Hastings ratio of the cells whose t·x it rounded, so its cost rises with t; at
// t = 1 nothing is rounded, and it is timed apart.
var priceGrid = []float64{costT, 0.1, 0.3, 0.6, 0.9}

// prices is what each kind of step of a rank's chains and mode search costs in the progress
// plan's unit, a pass of a Gibbs sweep at costT, timed once per rank before the plan or a
// chain's report needs it (Problem.prices). A plan that counted every step at one price
// extrapolated the speed of a run's first steps to the rest: on the Facebook-size tensor at rank
// 2 a pass of a sweep at t = 0.3–0.6 took 1.4–1.7 units, at t = 1 1.3, a record's Stein variates
// 1.3–1.8 (at rank 5 an ascent step of the mode search 4–6), and on the speech-size spectrogram
// at rank 64 an ascent step 3–8 and an EM pass 2–5, so the ETA at a tenth of those runs said 0.64 and 3.3
// times the time left (README, Output). The times depend on the machine and on what else runs
// on it; they price the progress line only and change no result.
type prices struct {
	below  []float64 // a pass of a sweep at priceGrid[i]
	at1    float64   // a pass of a sweep at t = 1 that does not read its log-likelihood
	read1  float64   // a pass of a sweep at t = 1 that does
	stein  float64   // a record's control variates (controls.record): the Stein variates' pass
	ascent float64   // a step of the mode search's ascent
	em     float64   // a pass of an EM sweep (models.Augmented.Ascend)
	// unit is the unit's time in seconds; 0 for unit prices, which are not timed.
	unit float64
}

// unitPrices counts every step at 1 (Config.ChainSteps, chains on an SG-MCMC kernel).
var unitPrices = prices{below: []float64{1}, at1: 1, read1: 1, stein: 1, ascent: 1, em: 1}

// rankPrices is a rank's prices, timed once.
type rankPrices struct {
	once sync.Once
	pr   prices
}

// sweep is the price of a pass of a Gibbs sweep at t; read says the sweep reads its
// log-likelihood, which below t = 1 costs nothing more (the ratio takes the same logarithms).
func (pr prices) sweep(t float64, read bool) float64 {
	switch {
	case t >= 1 && read:
		return pr.read1
	case t >= 1:
		return pr.at1
	case len(pr.below) == 1 || t <= priceGrid[0]:
		return pr.below[0]
	}
	i, _ := slices.BinarySearch(priceGrid, t)
	if i == len(priceGrid) {
		return pr.below[i-1]
	}
	u := (t - priceGrid[i-1]) / (priceGrid[i] - priceGrid[i-1])
	return pr.below[i-1] + u*(pr.below[i]-pr.below[i-1])
}

// prices returns rank's prices: unit prices for chains that do not run the Gibbs kernel, whose
// steps cost alike, and otherwise each kind timed on a prior draw of the rank, on streams of its
// own, the shorter of two runs each: 14 sweeps, 2 passes of the Stein variates, 2 ascent steps
// and 2 EM sweeps, where a matrix's rank spends the passes of about 18 600 sweeps by default.
func (p *Problem) prices(rank int) prices {
	v, _ := p.rankPrices.LoadOrStore(rank, &rankPrices{})
	rp := v.(*rankPrices)
	rp.once.Do(func() { rp.pr = p.timePrices(rank) })
	return rp.pr
}

// UnitSeconds is the time in seconds of the progress plan's unit at rank (prices), for a plan
// that prices other work beside its chains' (a path from a reference with this problem as its
// check); 0 where the chains' steps are not timed.
func (p *Problem) UnitSeconds(rank int) float64 { return p.prices(rank).unit }

// SweepPrice is what a pass over the data of a Gibbs sweep of rank at t that reads its
// log-likelihood costs in the progress plan's unit (prices): that of an annealing's chains.
func (p *Problem) SweepPrice(t float64, rank int) float64 { return p.prices(rank).sweep(t, true) }

// reportPrices is what a chain of rank reports its steps at: the rank's prices when ctx has a
// progress reporter, and without one (nothing to report to) unit prices, with nothing timed.
func (p *Problem) reportPrices(ctx context.Context, rank int) prices {
	if !progress.Reporting(ctx) {
		return unitPrices
	}
	return p.prices(rank)
}

// timePrices times rank's steps (prices).
func (p *Problem) timePrices(rank int) prices {
	if !p.gibbsSweeps() {
		return unitPrices // the chains' and the annealing's steps cost alike
	}
	m, err := p.model(rank)
	if err != nil {
		return unitPrices
	}
	// At t = 1, outside any ladder: an annealing has none before it runs.
	w := newWalker(p, m, ChainID{Rank: rank, Chain: -1}, 1)
	a, ok := w.m.(models.Augmentable)
	if !ok {
		return unitPrices
	}
	w.SamplePrior(rng.New(p.Config.Seed, uint64(rank), streamCost))
	mv := newGibbsMover(w.m)
	r := rng.New(p.Config.Seed, uint64(rank), streamCost, 1)
	acc := make([]float64, mv.blocks())
	per := float64(mv.passes(1))
	sweep := func(t float64, read bool) float64 {
		theta := slices.Clone(w.theta)
		if read {
			return timed(func() { mv.move(r, t, 1, nil, theta, acc) }) / per
		}
		return timed(func() { mv.moveOn(r, t, theta, acc) }) / per
	}
	unit := sweep(costT, false)
	pr := prices{below: make([]float64, len(priceGrid)), stein: 1, unit: unit}
	pr.below[0] = 1
	for i, t := range priceGrid[1:] {
		pr.below[i+1] = sweep(t, false) / unit
	}
	pr.at1, pr.read1 = sweep(1, false)/unit, sweep(1, true)/unit
	if cv := newControls(mv, w.theta); cv != nil {
		theta := slices.Clone(w.theta)
		pr.stein = timed(func() { cv.record(costT, theta, 0) }) / unit
	}
	k := a.NewAugmented()
	pr.ascent = timed(func() { w.Ascend(1) }) / unit
	pr.em = timed(func() { k.Ascend(1, w.theta) }) / float64(emPasses(len(w.m.Factors()))) / unit
	for _, v := range append(slices.Clone(pr.below), pr.at1, pr.read1, pr.stein, pr.ascent, pr.em) {
		if !(v > 0) || math.IsInf(v, 0) {
			return unitPrices
		}
	}
	return pr
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
