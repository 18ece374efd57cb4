package models

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stirank/stirank/internal/cputime"
	"github.com/stirank/stirank/rng"
)

// BenchmarkGibbsMoves times, on each of BenchmarkGibbsSweep's workloads at t = 0.5, every part of
// a sweep that is not its Gibbs moves, and the passes a chain's records add, and reports each as
// a fraction of a whole Sweep timed in the same run (CPU time, "of-sweep"): the shear moves of a
// matrix; the transfer moves as a sweep makes them (the Gram matrices and the search for ridge
// pairs, which random data seldom have) and with every pair tried (their pass over the cells); the
// rescaling; the write of θ from the values; the Stein variates' pass of the kernel's evaluator;
// and, on the rank-1 model of the same data, the Rao–Blackwell conditionals (of its sweep); and,
// under the hyperprior of --rate auto, the rates' and scales' moves (of that model's sweep).
func BenchmarkGibbsMoves(b *testing.B) {
	const t = 0.5
	for _, w := range gibbsWorkloads {
		// setup returns the kernel after three sweeps from a prior draw, its θ and its stream.
		setup := func(b *testing.B, R int, auto bool) (*poissonAugmented, []float64, *rand.Rand) {
			m := w.model(b)
			var err error
			switch {
			case auto:
				// The hyperprior keeps a fixed block (ssnmf), whose dictionary pins the scale.
				var prior RatePrior
				if m.kFixed > 0 {
					prior, err = AutoPriorFixed(m.Data, R, &Dictionary{Rows: m.Data.Shape[0], Cols: m.kFixed, Values: m.fixed})
				} else {
					prior, err = AutoPrior(m.Data, R)
				}
				if err == nil {
					m, err = NewPoissonFixedPrior(m.Name(), m.Data, R, prior, LogScale, m.fixed, m.kFixed)
				}
			case R != m.R:
				m, err = NewPoisson(m.Name(), m.Data, R, m.Rates, LogScale)
			}
			if err != nil {
				b.Fatal(err)
			}
			r := rng.New(62, 1)
			theta := make([]float64, m.Dim())
			m.SamplePrior(r, theta)
			a := m.newAugmented(R == 1)
			for range 3 {
				a.Sweep(r, t, theta, make([]float64, len(w.shape)))
			}
			return a, theta, r
		}
		moves := []struct {
			name string
			rank int
			auto bool
			move func(a *poissonAugmented, theta []float64, r *rand.Rand) func()
		}{
			{"shear", w.R, false, func(a *poissonAugmented, _ []float64, r *rand.Rand) func() {
				return func() { a.m.shear(r, a.f, a.colsum, a.lam) }
			}},
			{"pairs", w.R, false, func(a *poissonAugmented, _ []float64, r *rand.Rand) func() {
				return func() { a.transfer(r.Uint64(), t) }
			}},
			{"transfer-every-pair", w.R, false, func(a *poissonAugmented, _ []float64, r *rand.Rand) func() {
				return func() {
					defer func(c float64) { transferCos = c }(transferCos)
					transferCos = -1
					a.transfer(r.Uint64(), t)
				}
			}},
			{"rescale", w.R, false, func(a *poissonAugmented, theta []float64, r *rand.Rand) func() {
				return func() { a.m.rescale(r, theta, a.f, a.colsum, a.scratch, a.lam, a.free) }
			}},
			{"store", w.R, false, func(a *poissonAugmented, theta []float64, _ *rand.Rand) func() {
				return func() {
					for _, moved := range a.moved {
						for i := range moved {
							moved[i] = true
						}
					}
					a.store(theta)
				}
			}},
			{"stein", w.R, false, func(a *poissonAugmented, theta []float64, r *rand.Rand) func() {
				e := a.NewEval().(*poissonEval)
				center := make([]float64, len(theta))
				a.m.SamplePrior(r, center)
				z := make([]float64, len(w.shape)+1)
				return func() {
					e.Prepare(theta)
					e.SteinVariates(center, t, z)
				}
			}},
			{"raoblackwell", 1, false, func(a *poissonAugmented, _ []float64, _ *rand.Rand) func() {
				rb := newRank1Augmented(a)
				mean, variance := make([]float64, len(w.shape)), make([]float64, len(w.shape))
				return func() { rb.Conditionals(t, mean, variance) }
			}},
			{"hyperprior", w.R, true, func(a *poissonAugmented, theta []float64, r *rand.Rand) func() {
				return func() { a.m.drawRates(r, t, theta, a.f, a.colsum, a.scratch, a.lam) }
			}},
		}
		for _, mv := range moves {
			if mv.name == "shear" && len(w.shape) != 2 {
				continue // a tensor has no shear moves
			}
			b.Run(w.name+"/"+mv.name, func(b *testing.B) {
				a, theta, r := setup(b, mv.rank, mv.auto)
				move := mv.move(a, theta, r)
				// A whole Sweep's CPU time, over sweeps enough for half a second.
				acc := make([]float64, len(w.shape))
				sweeps, start := 0, cputime.Now()
				for sweeps < 3 || cputime.Now()-start < 500*time.Millisecond {
					a.Sweep(r, t, theta, acc)
					sweeps++
				}
				sweep := (cputime.Now() - start).Seconds() / float64(sweeps)
				n, cpu := 0, cputime.Now()
				for b.Loop() {
					move()
					n++
				}
				b.ReportMetric((cputime.Now()-cpu).Seconds()/float64(n)/sweep, "of-sweep")
			})
		}
	}
}
