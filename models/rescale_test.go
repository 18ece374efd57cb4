package models

import (
	"math"
	"testing"

	"github.com/stirank/stirank/rng"
)

// The Gibbs kernel's rescale leaves the prior invariant: prior draws stay prior draws after it, so
// the mean of a column sum of each factor stays Rows/rate (a wrong Jacobian of the scaling moves
// it); and the values and column sums it scales with θ stay those of θ.
func TestRescaleKeepsThePrior(t *testing.T) {
	for _, param := range []Param{LogScale, Direct} {
		shape, rates := []int{6, 2}, []float64{0.5, 2}
		d, _, err := GeneratePoisson(rng.New(9, 1), shape, 1, rates)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewPoisson("test", d, 1, rates, param)
		if err != nil {
			t.Fatal(err)
		}
		r := rng.New(9, 2)
		theta := make([]float64, m.Dim())
		kernel := m.newAugmented(true)
		const n = 20000
		var sum [2]float64
		for range n {
			m.SamplePrior(r, theta)
			kernel.load(theta)
			m.rescale(r, theta, kernel.f, kernel.colsum, kernel.scratch, m.Rates, kernel.free)
			for k, f := range m.Factors() {
				cs := 0.0
				for i := range f.Rows {
					v := theta[f.Offset+i]
					if param == LogScale {
						v = math.Exp(v)
					}
					sum[k] += v
					cs += v
					if kept := m.valueRow(kernel.f, k, i)[0]; math.Abs(kept-v) > 1e-12*v {
						t.Fatalf("%v: factor %d row %d: value %v kept, θ gives %v", param, k, i, kept, v)
					}
				}
				if math.Abs(kernel.colsum[k][0]-cs) > 1e-12*cs {
					t.Fatalf("%v: factor %d: column sum %v kept, θ gives %v", param, k, kernel.colsum[k][0], cs)
				}
			}
		}
		for k, f := range m.Factors() {
			mean, want := sum[k]/n, float64(f.Rows)/rates[k]
			// A column sum is Gamma(Rows, rate): standard deviation √Rows/rate.
			if se := math.Sqrt(float64(f.Rows)) / rates[k] / math.Sqrt(n); math.Abs(mean-want) > 5*se {
				t.Errorf("%v: factor %d's column sums average %.4f after rescaling, the prior %.4f (se %.4f)", param, k, mean, want, se)
			}
		}
	}
}
