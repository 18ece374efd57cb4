package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stirank/stirank/internal/cputime"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// gibbsWorkload is one of the data sets and ranks of the engine's Gibbs benchmarks (package sti's
// BenchmarkStepCP1e6/gibbs, BenchmarkStepNMFSpeech/gibbs and BenchmarkStepNMF100x75/gibbs), drawn
// from the same seed, so that a sweep here is a step there without the engine around it.
type gibbsWorkload struct {
	name     string
	shape    []int
	drawRank int     // the rank the data are drawn at
	drawRate float64 // the prior rate of every mode they are drawn with
	rate     float64 // the model's prior rate of every mode
	R        int
	// fixed is the number of fixed components (ssnmf's dictionary, drawn from the prior of the
	// data's draw), 0 for none; R counts the free ones.
	fixed int

	once sync.Once
	data *tensor.Sparse
}

// cp1e6Rate makes the mean total count of the 40000×40000×1500 tensor drawn at rank 10
// R·Π_m(n_m/λ) = 10⁶.
var cp1e6Rate = math.Cbrt(10 * 40000 * 40000 * 1500 / 1e6)

var gibbsWorkloads = []*gibbsWorkload{
	{name: "cp-1e6", shape: []int{40000, 40000, 1500}, drawRank: 10, drawRate: cp1e6Rate, rate: cp1e6Rate, R: 10},
	{name: "nmf-speech", shape: []int{257, 1661}, drawRank: 32, drawRate: 4, rate: 0.0004, R: 64},
	{name: "nmf-icassp", shape: []int{100, 75}, drawRank: 6, drawRate: 5, rate: 5, R: 10},
	// The speech experiment's shape: a 257×291 spectrogram beside a 64-column dictionary, the
	// noise rank free.
	{name: "ssnmf-speech", shape: []int{257, 291}, drawRank: 32, drawRate: 4, rate: 0.0004, R: 4, fixed: 64},
}

// load draws the workload's data once.
func (w *gibbsWorkload) load(b *testing.B) *tensor.Sparse {
	w.once.Do(func() {
		rates := make([]float64, len(w.shape))
		for m := range rates {
			rates[m] = w.drawRate
		}
		var err error
		if w.data, _, err = GeneratePoisson(rng.New(1, 0xda7a), w.shape, w.drawRank, rates); err != nil {
			b.Fatal(err)
		}
	})
	if w.data == nil {
		b.Fatal("no data")
	}
	return w.data
}

// model is the workload's Poisson model in the log parameterisation, the engine's default.
func (w *gibbsWorkload) model(b *testing.B) *Poisson {
	d := w.load(b)
	rates := make([]float64, len(w.shape))
	for m := range rates {
		rates[m] = w.rate
	}
	var m *Poisson
	var err error
	if w.fixed > 0 {
		dict := make([]float64, w.shape[0]*w.fixed)
		r := rng.New(2, 0xd1c7)
		for i := range dict {
			dict[i] = r.ExpFloat64() / w.drawRate
		}
		m, err = NewPoissonFixed("ssnmf", d, w.R, rates, LogScale, dict, w.fixed)
	} else {
		m, err = NewPoisson([]string{"", "", "nmf", "cp"}[len(w.shape)], d, w.R, rates, LogScale)
	}
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// gibbsTemps are the temperatures the sweeps are timed at: the engine benchmarks' rung, where
// every count is rounded and the rows' moves are corrected by Metropolis–Hastings, and the
// posterior, where the kernel is the plain Gibbs sampler.
var gibbsTemps = []float64{0.5, 1}

// runGibbs runs each workload at each temperature, named workload/R=rank/t=temperature, with body,
// which returns a function that makes one sweep, and reports sweeps per second and the process's
// CPU time per sweep, which other work on a shared machine inflates less than the wall time.
func runGibbs(b *testing.B, body func(b *testing.B, w *gibbsWorkload, t float64) func()) {
	for _, w := range gibbsWorkloads {
		for _, t := range gibbsTemps {
			b.Run(fmt.Sprintf("%s/R=%d/t=%g", w.name, w.R, t), func(b *testing.B) {
				sweep := body(b, w, t)
				start, cpu := time.Now(), cputime.Now()
				n := 0
				for b.Loop() {
					sweep()
					n++
				}
				b.ReportMetric(float64(n)/time.Since(start).Seconds(), "sweeps/s")
				b.ReportMetric((cputime.Now()-cpu).Seconds()*1e3/float64(n), "cpu-ms/sweep")
			})
		}
	}
}

// warm returns the workload's model, its kernel (Augmented) three sweeps at t from a prior draw,
// the θ they left and the stream they drew from.
func (w *gibbsWorkload) warm(b *testing.B, t float64) (*Poisson, Augmented, []float64, *rand.Rand) {
	m := w.model(b)
	r := rng.New(62, 1)
	theta := make([]float64, m.Dim())
	m.SamplePrior(r, theta)
	k := m.NewAugmented()
	for range 3 {
		k.Sweep(r, t, theta, make([]float64, len(w.shape)))
	}
	return m, k, theta, r
}

// BenchmarkGibbsSweep times Sweep of the kernel on the engine's Gibbs workloads: one chain, every
// sweep from where the last left θ, as a chain's are.
func BenchmarkGibbsSweep(b *testing.B) {
	runGibbs(b, func(b *testing.B, w *gibbsWorkload, t float64) func() {
		_, k, theta, r := w.warm(b, t)
		acc := make([]float64, len(w.shape))
		return func() { k.Sweep(r, t, theta, acc) }
	})
}

// BenchmarkGibbsAscend times the kernel's EM sweeps (Ascend) on BenchmarkGibbsSweep's workloads,
// each from where the last left θ, as the mode search makes them.
func BenchmarkGibbsAscend(b *testing.B) {
	runGibbs(b, func(b *testing.B, w *gibbsWorkload, t float64) func() {
		_, k, theta, _ := w.warm(b, t)
		return func() { k.Ascend(t, theta) }
	})
}
