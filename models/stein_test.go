package models

import (
	"math"
	"testing"

	"github.com/stirank/stirank/rng"
)

// The Stein variates are, factor by factor, (θ_k − c_k)·g_k + d_k and Σ g with g = ∇[log p(θ) +
// t log p(X | θ)], the gradient the samplers use, for matrices, 3-way tensors, a fixed dictionary
// block, and data long enough to be summed in chunks on all cores.
func TestSteinVariatesMatchTheGradient(t *testing.T) {
	build := smallPoissonModels(t, 9)
	rates := []float64{0.5, 0.5}
	long, _, err := GeneratePoisson(rng.New(9, 3), []int{120, 100}, 3, rates)
	if err != nil {
		t.Fatal(err)
	}
	if long.NNZ() <= 1<<13 {
		t.Fatalf("%d cells: too few to be cut into chunks", long.NNZ())
	}
	build["long"] = func() (*Poisson, error) { return NewPoisson("nmf", long, 4, rates, LogScale) }
	for name, b := range build {
		m, err := b()
		if err != nil {
			t.Fatal(err)
		}
		theta, c := make([]float64, m.Dim()), make([]float64, m.Dim())
		m.SamplePrior(rng.New(9, 4), theta)
		m.SamplePrior(rng.New(9, 5), c)
		e := m.NewEval()
		e.Prepare(theta)
		for _, temp := range []float64{0, 0.01, 1} {
			grad := make([]float64, m.Dim())
			e.LogPrior(grad)
			LogLikGrad(e, m, temp, grad)
			fs := m.Factors()
			want := make([]float64, len(fs)+1)
			for k, f := range fs {
				want[k] = float64(f.Rows * f.Cols)
				for i := f.Offset; i < f.Offset+f.Rows*f.Cols; i++ {
					want[k] += (theta[i] - c[i]) * grad[i]
					want[len(fs)] += grad[i]
				}
			}
			got := make([]float64, len(want))
			e.(SteinVariates).SteinVariates(c, temp, got)
			for k := range want {
				if math.Abs(got[k]-want[k]) > 1e-9*(1+math.Abs(want[k])) {
					t.Errorf("%s t=%g: variate %d %.12g, from the gradient %.12g", name, temp, k, got[k], want[k])
				}
			}
		}
	}
	m, err := NewPoisson("nmf", long, 2, rates, Direct)
	if err != nil {
		t.Fatal(err)
	}
	e := m.NewEval()
	e.Prepare(make([]float64, m.Dim()))
	z := make([]float64, 3)
	e.(SteinVariates).SteinVariates(make([]float64, m.Dim()), 1, z)
	for _, v := range z {
		if !math.IsNaN(v) {
			t.Errorf("direct parameterisation: variates %v, want NaN", z)
		}
	}
}

// BenchmarkSteinVariates is one record's variates (a pass over the cells) on a speech-size
// 257×1661 matrix at rank 32 and a 100×75 one at rank 10.
func BenchmarkSteinVariates(b *testing.B) {
	for _, c := range []struct {
		name  string
		shape []int
		R     int
	}{{"257x1661/R32", []int{257, 1661}, 32}, {"100x75/R10", []int{100, 75}, 10}} {
		b.Run(c.name, func(b *testing.B) {
			rates := []float64{0.3, 0.3}
			data, _, err := GeneratePoisson(rng.New(3, 1), c.shape, 4, rates)
			if err != nil {
				b.Fatal(err)
			}
			m, err := NewPoisson("nmf", data, c.R, rates, LogScale)
			if err != nil {
				b.Fatal(err)
			}
			theta, center := make([]float64, m.Dim()), make([]float64, m.Dim())
			m.SamplePrior(rng.New(3, 2), theta)
			m.SamplePrior(rng.New(3, 3), center)
			e := m.NewEval()
			e.Prepare(theta)
			z := make([]float64, len(m.Factors())+1)
			b.ResetTimer()
			for range b.N {
				e.(SteinVariates).SteinVariates(center, 0.5, z)
			}
		})
	}
}
