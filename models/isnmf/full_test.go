package isnmf

import (
	"math"
	"testing"

	"github.com/stirank/stirank/internal/quad"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/samplers/smc"
)

// FullAIS against quadrature at rank 1 on F = 2 features and N = 3 columns: given w the columns
// are independent with the K = 1 evidence each, so p(X) = ∫∫ p(w_1) p(w_2) Π_n p(x_n | w) dw, a
// two-dimensional integral over log w.
func TestFullAISMatchesQuadrature(t *testing.T) {
	for _, powers := range []bool{false, true} {
		r := rng.New(21)
		full := &Full{F: 2, N: 3, R: 1, Powers: powers, WShape: 2, WRate: 1.5, HShape: 1.5, HScale: 1}
		m, err := New(2, 1, []float64{1.3, 0.4}, full.HShape, full.HScale, powers)
		if err != nil {
			t.Fatal(err)
		}
		full.X = m.Sample(r, full.N)
		jac := 0.0
		if powers {
			jac = Powers.LogJacobian(full.F)
		}
		logPrior := func(eta float64) float64 {
			lg, _ := math.Lgamma(full.WShape)
			return full.WShape*math.Log(full.WRate) - lg + full.WShape*eta - full.WRate*math.Exp(eta)
		}
		want := quad.LogIntegral(func(e1 float64) float64 {
			return logPrior(e1) + quad.LogIntegral(func(e2 float64) float64 {
				w := []float64{math.Exp(e1), math.Exp(e2)}
				mw, _ := New(2, 1, w, full.HShape, full.HScale, powers)
				l := logPrior(e2)
				for _, x := range full.X {
					z, _ := mw.LogEvidenceK1(x)
					l += z + jac
				}
				return l
			})
		})
		logZ := make([]float64, 8)
		for i := range logZ {
			logZ[i] = FullAIS(full, Budget{Particles: 100, Stages: 400}, rng.New(22, uint64(i))).LogZ
		}
		got, se := smc.Combine(logZ)
		if math.Abs(got-want) > 0.05 || math.Abs(got-want) > 4*se+0.01 {
			t.Errorf("powers=%v: AIS %.4f ± %.4f, quadrature %.4f", powers, got, se, want)
		}
	}
}
