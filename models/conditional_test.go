package models

import (
	"math"
	"testing"

	"github.com/stirank/stirank/rng"
)

// Conditional's terms are the tempered log posterior split by rows of one factor: changing one row
// changes t·log p(X | θ) + log p(θ) by exactly the change of that row's term; its gradient is the
// full gradient restricted to the factor; and it returns log p(X | θ). Rescale leaves the
// likelihood unchanged. Checked for NMF and CP, in both parameterisations.
func TestConditionalSplitsByRows(t *testing.T) {
	for _, shape := range [][]int{{7, 5}, {4, 5, 3}} {
		for _, param := range []Param{LogScale, Direct} {
			rates := make([]float64, len(shape))
			for i := range rates {
				rates[i] = 0.7 + 0.2*float64(i)
			}
			d, _, err := GeneratePoisson(rng.New(5, 1), shape, 2, rates)
			if err != nil {
				t.Fatal(err)
			}
			m, err := NewPoisson("test", d, 3, rates, param)
			if err != nil {
				t.Fatal(err)
			}
			r := rng.New(5, 2)
			theta := make([]float64, m.Dim())
			m.SamplePrior(r, theta)
			e := m.NewEval()
			const temp = 0.6
			target := func(th []float64) float64 {
				e.Prepare(th)
				return temp*LogLik(e, m) + e.LogPrior(nil)
			}
			full := make([]float64, m.Dim())
			e.Prepare(theta)
			LogLikGrad(e, m, temp, full)
			e.LogPrior(full)
			for k, f := range m.Factors() {
				terms := make([]float64, f.Rows)
				grad := make([]float64, f.Rows*f.Cols)
				e.Prepare(theta)
				ll := e.(Conditionals).Conditional(k, temp, terms, grad)
				if want := LogLik(e, m); math.Abs(ll-want) > 1e-9*math.Abs(want) {
					t.Errorf("%v %v factor %d: log-likelihood %v, want %v", shape, param, k, ll, want)
				}
				for j, g := range grad {
					if math.Abs(g-full[f.Offset+j]) > 1e-9*(1+math.Abs(g)) {
						t.Fatalf("%v %v factor %d: gradient %d is %v, full gradient %v", shape, param, k, j, g, full[f.Offset+j])
					}
				}
				i := f.Rows / 2
				moved := append([]float64(nil), theta...)
				lo, hi := f.Params(i, i+1)
				for j := lo; j < hi; j++ {
					moved[j] *= 1.1
				}
				after := make([]float64, f.Rows)
				e.Prepare(moved)
				e.(Conditionals).Conditional(k, temp, after, grad)
				want := target(moved) - target(theta)
				if got := after[i] - terms[i]; math.Abs(got-want) > 1e-8*(1+math.Abs(want)) {
					t.Errorf("%v %v factor %d: row %d's term changed by %v, the target by %v", shape, param, k, i, got, want)
				}
			}
			e.Prepare(theta)
			before := LogLik(e, m)
			m.Rescale(r, theta)
			e.Prepare(theta)
			if after := LogLik(e, m); math.Abs(after-before) > 1e-9*math.Abs(before) {
				t.Errorf("%v %v: rescaling changed log p(X | θ) from %v to %v", shape, param, before, after)
			}
		}
	}
}

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
