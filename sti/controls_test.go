package sti

import (
	"math"
	"testing"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// The control variates have mean zero under every power posterior, whatever the centre (a wrong
// gradient, a missing Jacobian or a wrong dimension moves them by a unit or more); at rank 1,
// where the power posteriors are close to Gaussian, the Stein variates remove most of the
// records' variance, and near the prior the factors' parts and the gradient's sum remove more than
// their sum, the single variate of the χ² fluctuation, does. The rank-1 conditional expectations
// remove more at every temperature, most near the prior (a seventh of the standard error at
// t = 0.001, two fifths at 0.01, two thirds at 0.2 and 1).
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
		for _, temp := range []float64{0.001, 0.01, 0.2, 1} {
			mv := newMover(m)
			cv := newControls(mv, mode)
			theta := append([]float64(nil), mode...)
			acc := make([]float64, mv.blocks())
			for range 200 {
				mv.move(r, temp, 1, nil, theta, acc)
			}
			const batches, per = 40, 100
			var ls []float64
			for range batches {
				for range per {
					ll := mv.move(r, temp, 1, nil, theta, acc)
					ls = append(ls, ll)
					cv.record(temp, theta, ll)
				}
			}
			n, p := len(ls), cv.p
			z := make([][]float64, p)
			sum := make([]float64, n)
			for k := range n {
				for q := range p {
					z[q] = append(z[q], cv.z[k*p+q])
					if q < cv.stein-1 {
						sum[k] += cv.z[k*p+q]
					}
				}
			}
			for q, zq := range z {
				zm, zse := meanSE(batchMeans(zq, batches))
				if math.Abs(zm) > 4*zse {
					t.Errorf("R=%d t=%g: variate %d's mean is %.3f ± %.3f, not 0", R, temp, q, zm, zse)
				}
			}
			// Slopes from the whole run are fine for a variance ratio.
			_, lse := meanSE(batchMeans(ls, batches))
			_, one := meanSE(batchMeans(controlled(ls, [][]float64{sum}), batches))
			_, all := meanSE(batchMeans(controlled(ls, z[:cv.stein]), batches))
			_, rb := meanSE(batchMeans(controlled(ls, z), batches))
			t.Logf("R=%d t=%g: standard error of the mean %.4g plain, %.4g with the summed variate, %.4g with all %d Stein variates, %.4g with the %d conditional expectations too", R, temp, lse, one, all, cv.stein, rb, p-cv.stein)
			if R == 1 && temp >= 0.2 && lse < 3*all {
				t.Errorf("R=%d t=%g: the variates cut the standard error only from %.4g to %.4g", R, temp, lse, all)
			}
			if R == 1 && rb > 0.8*all {
				t.Errorf("R=%d t=%g: the conditional expectations cut the standard error only from %.4g to %.4g", R, temp, all, rb)
			}
			if R == 1 && temp <= 0.01 && all > 0.75*one {
				t.Errorf("R=%d t=%g: all the variates leave a standard error of %.4g, the summed one %.4g", R, temp, all, one)
			}
		}
	}
}

// batchMeans returns the means of n equal batches of x.
func batchMeans(x []float64, n int) []float64 {
	out := make([]float64, n)
	for k, v := range x {
		out[k*n/len(x)] += v * float64(n) / float64(len(x))
	}
	return out
}

// controlled returns y less its least-squares combination of the variates z.
func controlled(y []float64, z [][]float64) []float64 {
	p := len(z)
	my, _ := meanSE(y)
	mz := make([]float64, p)
	for q := range z {
		mz[q], _ = meanSE(z[q])
	}
	m2, co := make([]float64, p*p), make([]float64, p)
	for k := range y {
		for q := range z {
			co[q] += (y[k] - my) * (z[q][k] - mz[q])
			for w := range z {
				m2[q*p+w] += (z[q][k] - mz[q]) * (z[w][k] - mz[w])
			}
		}
	}
	beta := evidence.LeastSquares(m2, co)
	out := make([]float64, len(y))
	for k := range y {
		out[k] = y[k]
		for q, b := range beta {
			out[k] -= b * z[q][k]
		}
	}
	return out
}

// meanSE is the mean of x and its standard error for independent x.
func meanSE(x []float64) (float64, float64) {
	m, m2, _ := evidence.Summarize(x)
	return m, math.Sqrt(m2 / float64(len(x)-1) / float64(len(x)))
}

// A positive parameterisation has a boundary where Stein's identity fails, and a chain without
// its rank's mode has no centre: neither carries the Stein variates. The rank-1 Gibbs kernel's
// conditional expectations need neither; at rank 2 there are none.
func TestControlsNeedWhatTheirIdentitiesDo(t *testing.T) {
	d, rates := poissonData(t, []int{6, 5}, 1, 0.5, 5)
	for _, scale := range []models.Param{models.LogScale, models.Direct} {
		for _, R := range []int{1, 2} {
			m, err := models.PoissonSpec("nmf", rates, scale).Build(d, R)
			if err != nil {
				t.Fatal(err)
			}
			center := make([]float64, m.Dim())
			for _, c := range [][]float64{center, nil} {
				cv := newControls(newMover(m), c)
				stein, rb := 0, 0
				if cv != nil {
					stein, rb = cv.stein, cv.p-cv.stein
				}
				wantStein, wantRB := 0, 0
				if c != nil && !m.Positive() {
					wantStein = 3
				}
				if R == 1 {
					wantRB = 2
				}
				if stein != wantStein || rb != wantRB || (cv == nil) != (wantStein+wantRB == 0) {
					t.Errorf("%v scale, rank %d, centre %v: %d Stein variates and %d conditional expectations, want %d and %d", scale, R, c != nil, stein, rb, wantStein, wantRB)
				}
			}
		}
	}
}
