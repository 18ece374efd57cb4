package models

import (
	"math"
	"testing"

	"github.com/stirank/stirank/internal/draw"
	"github.com/stirank/stirank/rng"
)

// At rank 1 the kernel's conditional expectations of the log-likelihood are those of factor k's
// rows drawn afresh from their Gamma conditional with the other factors where a sweep left them,
// averaged by the evaluator: near the prior and near the posterior, for a matrix and a tensor, in
// both parameterisations. A wrong term (the digamma's t, ρ_k's t, the rows' count in E[Σ F]) moves
// an expectation by many standard errors (checked).
func TestConditionalLogLiks(t *testing.T) {
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
			got := make([]float64, len(c.shape))
			rb.ConditionalLogLiks(temp, got)
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
				var sum, sum2 float64
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
					sum += ll
					sum2 += ll * ll
				}
				mean := sum / n
				se := math.Sqrt((sum2/n - mean*mean) / n)
				if math.Abs(got[f]-mean) > 5*se+1e-9*math.Abs(mean) {
					t.Errorf("%v %v t=%v factor %d: conditional expectation %.4f, its Monte Carlo mean %.4f ± %.4f", c.shape, c.param, temp, f, got[f], mean, se)
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
