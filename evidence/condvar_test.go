package evidence

import (
	"math"
	"testing"

	"github.com/stirank/stirank/rng"
)

// condSummary summarises records ℓ = a + b + c of independent parts whose conditional means given
// all but the first and all but the second are b + c and a + c, with conditional variances sa²
// and sb² (a ~ N(0, sa²), b ~ N(0, sb²), c ~ N(0, sc²)): two factors' conditional moments after
// one Stein-like variate z.
func condSummary(r interface{ NormFloat64() float64 }, n int, sa, sb, sc float64) ChainSummary {
	y := make([]float64, n)
	z := [][]float64{make([]float64, n), make([]float64, n), make([]float64, n)}
	for i := range y {
		a, b, c := sa*r.NormFloat64(), sb*r.NormFloat64(), sc*r.NormFloat64()
		y[i] = a + b + c
		z[0][i] = r.NormFloat64() // a variate that explains nothing
		z[1][i] = (b + c) - y[i]
		z[2][i] = (a + c) - y[i]
	}
	s := steinSummary(y, z)
	s.CondVar, s.CondVarM2 = []float64{sa * sa, sb * sb}, []float64{0, 0}
	return s
}

// The law of total variance estimates a rung's Var_t[ℓ] without bias and with the noise of the
// factor it conditions on removed: with factor 0 carrying most of the variance (the one condFactor
// must take), rungs of two chains of 50 records average to sa² + sb² + sc² within their standard
// error, both ways, and the total variance's spread over rungs is a fraction of the sample
// variance's; the squared standard error it reports for itself, that of Gaussian conditional
// means (as a plain rung's is that of Gaussian records), matches that spread.
func TestTotalVariance(t *testing.T) {
	r := rng.New(1, 7)
	const rungs, n = 4000, 50
	const sa, sb, sc = 3.0, 1.0, 0.5
	want := sa*sa + sb*sb + sc*sc
	var total, sample, reported []float64
	for range rungs {
		cs := []ChainSummary{condSummary(r, n, sa, sb, sc), condSummary(r, n, sa, sb, sc)}
		if k, ok := condFactor(cs); !ok || k != 0 {
			t.Fatalf("conditioned on factor %d (ok %v), want 0", k, ok)
		}
		rung := combineRung(0.5, cs)
		total = append(total, rung.VarLogLik)
		reported = append(reported, rung.varSE2)
		sample = append(sample, (cs[0].M2+cs[1].M2+n*(cs[0].Mean-cs[1].Mean)*(cs[0].Mean-cs[1].Mean)/2)/(2*n-1))
	}
	mt, vt, _ := Summarize(total)
	ms, vs, _ := Summarize(sample)
	mr, _, _ := Summarize(reported)
	sdt, sds := math.Sqrt(vt/(rungs-1)), math.Sqrt(vs/(rungs-1))
	t.Logf("Var_t[ℓ] = %.3f: total variance %.3f (sd %.3f over rungs, reported %.3f), sample variance %.3f (sd %.3f)", want, mt, sdt, math.Sqrt(mr), ms, sds)
	for _, c := range []struct {
		name     string
		mean, sd float64
	}{{"total variance", mt, sdt}, {"sample variance", ms, sds}} {
		if math.Abs(c.mean-want) > 4*c.sd/math.Sqrt(rungs) {
			t.Errorf("%s averages %.4f ± %.4f, want %.4f", c.name, c.mean, c.sd/math.Sqrt(rungs), want)
		}
	}
	if sdt > sds/3 {
		t.Errorf("the total variance spreads by %.3f over rungs, the sample variance by %.3f", sdt, sds)
	}
	if ratio := math.Sqrt(mr) / sdt; ratio < 0.8 || ratio > 1.25 {
		t.Errorf("reported standard error %.3f against a spread of %.3f", math.Sqrt(mr), sdt)
	}
	// A chain without conditional moments leaves the rung's plain sample variance.
	cs := []ChainSummary{condSummary(r, n, sa, sb, sc), condSummary(r, n, sa, sb, sc)}
	cs[1].CondVar, cs[1].CondVarM2 = nil, nil
	if rung := combineRung(0.5, cs); rung.varSE2 != 0 {
		t.Errorf("a rung with a chain without conditional moments took the total variance")
	}
}
