package sti

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// benchChain runs one chain of rank 10 for 200 steps at t = 1 and reports steps per second.
func benchChain(b *testing.B, d *tensor.Sparse, spec models.Spec, sampler string, blocks int, cv bool) {
	benchChainAt(b, d, spec, sampler, blocks, cv, 10)
}

// benchChainAt is benchChain at rank R.
func benchChainAt(b *testing.B, d *tensor.Sparse, spec models.Spec, sampler string, blocks int, cv bool, R int) {
	cfg := DefaultSGMCMC(spec.Name)
	cfg.Sampler = sampler
	cfg.Blocks = blocks
	cfg.ControlVariates = cv
	cfg.Steps, cfg.Burnin, cfg.Start, cfg.StartSteps = 200, 100, PriorStart, 0
	cfg.Ladder = evidence.Ladder{0, 1}
	if sampler == "sgld" || sampler == "psgld" {
		// The papers' schedule (a/k)^b with a scaled so steps are stable on these data.
		cfg.StepA, cfg.StepDecay = 1e-9, 0.51
		spec = spec.With("param", models.Word(models.Direct.String()))
	}
	p, err := NewProblem(d, spec, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	steps := 0
	for i := range b.N {
		s, _, err := p.RunChain(context.Background(), ChainID{Rank: R, TIndex: 1, Chain: i}, nil)
		if err != nil {
			b.Fatal(err)
		}
		steps += s.Steps
	}
	b.ReportMetric(float64(steps)/time.Since(start).Seconds(), "steps/s")
}

// benchGibbs runs one chain of rank R on the model's Gibbs kernel (Config.Gibbs) from a prior
// draw, 10 sweeps of burn-in and 10 recorded at t = 0.5, and reports sweeps per second.
func benchGibbs(b *testing.B, d *tensor.Sparse, spec models.Spec, R int) {
	cfg := Default(spec.Name)
	cfg.Steps, cfg.Burnin, cfg.Rank1 = 20, 10, nil
	cfg = cfg.With(SteinName, false)
	cfg.Ladder = evidence.Ladder{0, 0.5, 1}
	p, err := NewProblem(d, spec, cfg)
	if err != nil {
		b.Fatal(err)
	}
	m, err := p.model(R)
	if err != nil {
		b.Fatal(err)
	}
	theta := make([]float64, m.Dim())
	m.SamplePrior(rng.New(1, uint64(R)), theta)
	b.ResetTimer()
	start := time.Now()
	sweeps := 0
	for i := range b.N {
		_, s, err := p.Extend(context.Background(), ChainID{Rank: R, TIndex: 1, Chain: i}, p.Doublings(R), &ChainState{Theta: theta})
		if err != nil {
			b.Fatal(err)
		}
		sweeps += s.Sweeps
	}
	b.ReportMetric(float64(sweeps)/time.Since(start).Seconds(), "sweeps/s")
}

var (
	nmfOnce, cpOnce, speechOnce sync.Once
	nmf100x75                   *tensor.Sparse
	cp1e6                       *tensor.Sparse
	speech                      *tensor.Sparse
)

// BenchmarkStepNMF100x75 is the ICASSP NMF workload: 100×75, λ = 5, R = 10, B = 5.
func BenchmarkStepNMF100x75(b *testing.B) {
	nmfOnce.Do(func() { nmf100x75, _ = poissonData(b, []int{100, 75}, 6, 5, 1) })
	spec := models.PoissonSpec("nmf", []float64{5, 5}, models.LogScale)
	for _, c := range []struct {
		name    string
		sampler string
		blocks  int
		cv      bool
	}{{"sgld/B=5", "sgld", 5, false}, {"psgld/B=5", "psgld", 5, false}, {"lmsgld/B=5/cv", "lmsgld", 5, true}, {"lmsgld/B=1", "lmsgld", 1, false}} {
		b.Run(c.name, func(b *testing.B) { benchChain(b, nmf100x75, spec, c.sampler, c.blocks, c.cv) })
	}
	b.Run("gibbs", func(b *testing.B) { benchGibbs(b, nmf100x75, spec, 10) })
}

// BenchmarkStepCP1e6 is a sparse tensor of about 10⁶ non-zeros in a 40000×40000×1500 shape
// (the SPL 2018 Facebook size), R = 10, B = 12, generated without enumerating its 2.4·10¹² cells.
func BenchmarkStepCP1e6(b *testing.B) {
	// Mean total count R·Π_m(n_m/λ) = 10⁶ for λ = (R·I·J·K/10⁶)^(1/3).
	rate := math.Cbrt(10 * 40000 * 40000 * 1500 / 1e6)
	cpOnce.Do(func() { cp1e6, _ = poissonData(b, []int{40000, 40000, 1500}, 10, rate, 1) })
	b.Logf("%d non-zeros", cp1e6.NNZ())
	spec := models.PoissonSpec("cp", []float64{rate, rate, rate}, models.LogScale)
	for _, c := range []struct {
		name    string
		sampler string
		cv      bool
	}{{"sgld/B=12", "sgld", false}, {"psgld/B=12", "psgld", false}, {"lmsgld/B=12/cv", "lmsgld", true}} {
		b.Run(c.name, func(b *testing.B) { benchChain(b, cp1e6, spec, c.sampler, 12, c.cv) })
	}
	b.Run("gibbs", func(b *testing.B) { benchGibbs(b, cp1e6, spec, 10) })
}

// BenchmarkStepNMFSpeech is the ICASSP 2016 speech workload's shape: a 257×1661 count matrix
// (generated at rank 32 and rate 4: about 3.6·10⁵ non-zeros, as dense as espeak-ng speech at
// stirank import's default scale), R = 64, λ = 0.0004 as in the paper, all cells (B=1) and the
// paper's 8 blocks.
func BenchmarkStepNMFSpeech(b *testing.B) {
	speechOnce.Do(func() { speech, _ = poissonData(b, []int{257, 1661}, 32, 4, 1) })
	b.Logf("%d non-zeros", speech.NNZ())
	spec := models.PoissonSpec("nmf", []float64{0.0004, 0.0004}, models.LogScale)
	for _, c := range []struct {
		name   string
		blocks int
		cv     bool
	}{{"lmsgld/B=1", 1, false}, {"lmsgld/B=8/cv", 8, true}} {
		b.Run(c.name, func(b *testing.B) { benchChainAt(b, speech, spec, "lmsgld", c.blocks, c.cv, 64) })
	}
	b.Run("gibbs", func(b *testing.B) { benchGibbs(b, speech, spec, 64) })
}

// BenchmarkStoredZeros is one chain on the ICASSP 100×75 data as a table that lists every cell,
// zeros included, and as its non-zeros only: the two must run at the same speed.
func BenchmarkStoredZeros(b *testing.B) {
	nmfOnce.Do(func() { nmf100x75, _ = poissonData(b, []int{100, 75}, 6, 5, 1) })
	dense := listingZeros(b, nmf100x75)
	spec := models.PoissonSpec("nmf", []float64{5, 5}, models.LogScale)
	b.Run("listed", func(b *testing.B) { benchChain(b, dense, spec, "lmsgld", 1, false) })
	b.Run("nonzeros", func(b *testing.B) { benchChain(b, nmf100x75, spec, "lmsgld", 1, false) })
	b.Run("listed/gibbs", func(b *testing.B) { benchGibbs(b, dense, spec, 10) })
	b.Run("nonzeros/gibbs", func(b *testing.B) { benchGibbs(b, nmf100x75, spec, 10) })
}

// BenchmarkGaussSweep is the whole ICASSP Gaussian sweep: R = 1…20 with the defaults.
func BenchmarkGaussSweep(b *testing.B) {
	d := gaussData(b, 10, 10)
	for range b.N {
		sweep(b, d, models.GaussSpec(models.ICASSPGauss), Default("gauss"), ranks(1, 20))
	}
}
