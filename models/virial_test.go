package models

import (
	"math"
	"testing"

	"github.com/stirank/stirank/rng"
)

// Virial is (θ − c)·∇[log p(θ) + t log p(X | θ)], the dot product of the gradient the samplers use
// with θ − c, for matrices, 3-way tensors, a fixed dictionary block, and data long enough to be
// summed in chunks on all cores.
func TestVirialMatchesTheGradient(t *testing.T) {
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
			want := 0.0
			for i, g := range grad {
				want += (theta[i] - c[i]) * g
			}
			got := e.(Virial).Virial(c, temp)
			if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
				t.Errorf("%s t=%g: virial %.12g, from the gradient %.12g", name, temp, got, want)
			}
		}
	}
	m, err := NewPoisson("nmf", long, 2, rates, Direct)
	if err != nil {
		t.Fatal(err)
	}
	e := m.NewEval()
	e.Prepare(make([]float64, m.Dim()))
	if v := e.(Virial).Virial(make([]float64, m.Dim()), 1); !math.IsNaN(v) {
		t.Errorf("direct parameterisation: virial %v, want NaN", v)
	}
}
