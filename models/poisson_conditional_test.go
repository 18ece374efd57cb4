package models

import (
	"math"
	"testing"

	"github.com/stirank/stirank/internal/draw"
	"github.com/stirank/stirank/rng"
)

// At rank 1 the kernel's conditional means and variances of the log-likelihood are those of factor
// k's rows drawn afresh from their Gamma conditional with the other factors where a sweep left
// them, evaluated by the evaluator: near the prior and near the posterior, for a matrix and a
// tensor, in both parameterisations. A wrong term (the digamma's t, ρ_k's t, the rows' count in
// E[Σ F], the covariance of log F and F) moves a mean or a variance by many standard errors
// (checked).
func TestConditionals(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape []int
		param Param
	}{{"nmf", []int{6, 5}, LogScale}, {"nmf", []int{6, 5}, Direct}, {"cp", []int{4, 3, 5}, LogScale}} {
		rates := make([]float64, len(c.shape))
		for m := range rates {
			rates[m] = 0.3
		}
		data, _, err := GeneratePoisson(rng.New(7, 1), c.shape, 1, rates)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewPoisson(c.name, data, 1, rates, c.param)
		if err != nil {
			t.Fatal(err)
		}
		rb, ok := m.NewAugmented().(RaoBlackwell)
		if !ok {
			t.Fatalf("%v: the rank-1 kernel gives no conditional expectations", c.shape)
		}
		m2, err := NewPoisson(c.name, data, 2, rates, c.param)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m2.NewAugmented().(RaoBlackwell); ok {
			t.Fatalf("%v: the rank-2 kernel claims conditional expectations", c.shape)
		}
		k := rb.(Augmented)
		e := m.NewEval()
		for _, temp := range []float64{0.01, 0.5, 1} {
			r := rng.New(7, 2, uint64(c.param))
			theta := make([]float64, m.Dim())
			m.SamplePrior(r, theta)
			acc := make([]float64, len(c.shape))
			for range 50 {
				k.Sweep(r, temp, theta, acc)
			}
			got, gotVar := make([]float64, len(c.shape)), make([]float64, len(c.shape))
			rb.Conditionals(temp, got, gotVar)
			for f, fac := range m.Factors() {
				p := 1.0
				for j, g := range m.Factors() {
					if j != f {
						s := 0.0
						for i := range g.Rows {
							s += value(m, theta, j, i)
						}
						p *= s
					}
				}
				const n = 40000
				draws := append([]float64(nil), theta...)
				var sum, sum2, sum4 float64
				lls := make([]float64, 0, n)
				for range n {
					for i := range fac.Rows {
						v := draw.Gamma(r, 1+temp*m.margins[f][i], rates[f]+temp*p)
						if m.Param == LogScale {
							v = math.Log(v)
						}
						draws[fac.Offset+i] = v
					}
					e.Prepare(draws)
					ll := LogLik(e, m)
					lls = append(lls, ll)
					sum += ll
				}
				mean := sum / n
				for _, ll := range lls {
					d := (ll - mean) * (ll - mean)
					sum2 += d
					sum4 += d * d
				}
				variance := sum2 / (n - 1)
				se := math.Sqrt(variance / n)
				// The standard error of a sample variance: √((μ₄ − σ⁴)/n).
				seVar := math.Sqrt((sum4/n - variance*variance) / n)
				if math.Abs(got[f]-mean) > 5*se+1e-9*math.Abs(mean) {
					t.Errorf("%v %v t=%v factor %d: conditional expectation %.4f, its Monte Carlo mean %.4f ± %.4f", c.shape, c.param, temp, f, got[f], mean, se)
				}
				if math.Abs(gotVar[f]-variance) > 5*seVar {
					t.Errorf("%v %v t=%v factor %d: conditional variance %.4f, its Monte Carlo variance %.4f ± %.4f", c.shape, c.param, temp, f, gotVar[f], variance, seVar)
				}
			}
		}
	}
}

// value is F_k[i] of a rank-1 model's θ.
func value(m *Poisson, theta []float64, k, i int) float64 {
	v := theta[m.factors[k].Offset+i]
	if m.Param == LogScale {
		return math.Exp(v)
	}
	return v
}

// ψ′ at values known in closed form or to many digits, and its recurrence across the switch to
// the series at 10.
func TestTrigamma(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{
		{1, math.Pi * math.Pi / 6},
		{0.5, math.Pi * math.Pi / 2},
		{2, math.Pi*math.Pi/6 - 1},
		{10, 0.10516633568168575},
		{100, 0.010050166663333571},
	} {
		if got := trigamma(c.x); math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("ψ′(%v) = %.17g, want %.17g", c.x, got, c.want)
		}
	}
	for _, x := range []float64{9.5, 9.999, 10, 10.5} {
		if got, want := trigamma(x), trigamma(x+1)+1/(x*x); math.Abs(got-want) > 1e-13 {
			t.Errorf("ψ′(%v) = %.17g, ψ′(%v) + 1/%v² = %.17g", x, got, x+1, x, want)
		}
	}
}
