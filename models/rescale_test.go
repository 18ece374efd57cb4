package models

import (
	"math"
	"testing"

	"github.com/stirank/stirank/rng"
)

// Rescale leaves the prior invariant: prior draws stay prior draws after it, so the mean of a
// column sum of each factor stays Rows/rate (a wrong Jacobian of the scaling moves it).
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
		const n = 20000
		var sum [2]float64
		for range n {
			m.SamplePrior(r, theta)
			m.Rescale(r, theta)
			for k, f := range m.Factors() {
				for i := range f.Rows {
					sum[k] += m.value(theta[f.Offset+i])
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
