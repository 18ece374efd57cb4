package sti

import (
	"math"
	"testing"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// The Stein variate has mean zero under every power posterior, whatever the centre (a wrong
// gradient, a missing Jacobian or a wrong dimension moves it by a unit or more), and at rank 1,
// where the power posteriors are close to Gaussian, it removes most of the records' variance.
func TestSteinVariate(t *testing.T) {
	d, rates := poissonData(t, []int{30, 20}, 2, 0.5, 5)
	for _, R := range []int{1, 2} {
		m, err := models.PoissonSpec("nmf", rates, models.LogScale).Build(d, R)
		if err != nil {
			t.Fatal(err)
		}
		mode := make([]float64, m.Dim())
		r := rng.New(1, uint64(R))
		m.SamplePrior(r, mode)
		aug := m.(models.Augmentable).NewAugmented()
		for range 300 {
			aug.Ascend(1, mode)
		}
		for _, temp := range []float64{0.01, 0.2, 1} {
			mv := newMover(m)
			cv := newStein(mv, mode)
			theta := append([]float64(nil), mode...)
			acc := make([]float64, mv.blocks())
			for range 200 {
				mv.move(r, temp, 1, nil, theta, acc)
			}
			const batches, per = 40, 100
			var zb, lb, cb []float64
			var ls []float64
			for range batches {
				for range per {
					ls = append(ls, mv.move(r, temp, 1, nil, theta, acc))
					cv.record(temp, theta)
				}
			}
			z := cv.z
			// The slope from the whole run is fine for a variance ratio.
			beta := slope(ls, z)
			for b := range batches {
				zs, l, c := 0.0, 0.0, 0.0
				for k := b * per; k < (b+1)*per; k++ {
					zs += z[k] / per
					l += ls[k] / per
					c += (ls[k] - beta*z[k]) / per
				}
				zb, lb, cb = append(zb, zs), append(lb, l), append(cb, c)
			}
			zm, zse := meanSE(zb)
			_, lse := meanSE(lb)
			_, cse := meanSE(cb)
			t.Logf("R=%d t=%g: z̄ = %.3f ± %.3f (d = %d); standard error of the mean %.4g plain, %.4g controlled", R, temp, zm, zse, m.Dim(), lse, cse)
			if math.Abs(zm) > 4*zse {
				t.Errorf("R=%d t=%g: the variate's mean is %.3f ± %.3f, not 0", R, temp, zm, zse)
			}
			if R == 1 && temp >= 0.2 && lse < 3*cse {
				t.Errorf("R=%d t=%g: the variate cut the standard error only from %.4g to %.4g", R, temp, lse, cse)
			}
		}
	}
}

func slope(y, z []float64) float64 {
	my, _ := meanSE(y)
	mz, _ := meanSE(z)
	co, v := 0.0, 0.0
	for k := range y {
		co += (y[k] - my) * (z[k] - mz)
		v += (z[k] - mz) * (z[k] - mz)
	}
	return co / v
}

// meanSE is the mean of x and its standard error for independent x.
func meanSE(x []float64) (float64, float64) {
	m, m2, _ := evidence.Summarize(x)
	return m, math.Sqrt(m2 / float64(len(x)-1) / float64(len(x)))
}

// A positive parameterisation has a boundary where Stein's identity fails, and a chain without
// its rank's mode has no centre: neither carries the variate.
func TestSteinNeedsAnUnboundedParameterisationAndACentre(t *testing.T) {
	d, rates := poissonData(t, []int{6, 5}, 1, 0.5, 5)
	for _, scale := range []models.Param{models.LogScale, models.Direct} {
		m, err := models.PoissonSpec("nmf", rates, scale).Build(d, 1)
		if err != nil {
			t.Fatal(err)
		}
		center := make([]float64, m.Dim())
		if got := newStein(newMover(m), center) != nil; got != !m.Positive() {
			t.Errorf("%v scale: variate %v", scale, got)
		}
		if newStein(newMover(m), nil) != nil {
			t.Errorf("%v scale: a variate without a centre", scale)
		}
	}
}
