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
