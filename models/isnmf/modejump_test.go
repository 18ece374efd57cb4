package isnmf

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/stirank/stirank/internal/quad"
	"github.com/stirank/stirank/rng"
)

// The mode jump alone, on a bimodal target whose modes weigh 0.8 and 0.2 but are proposed with
// masses 0.5 and 0.5 and too narrow (the Laplace fit's usual faults), puts the chains into the
// modes in proportion and gives the target's mean: 4 000 chains of 40 jumps, each from η = 0,
// the heavy mode's centre.
func TestModeJumpRecoversModesInProportion(t *testing.T) {
	means := [][]float64{{0, 0}, {4, -3}}
	covs := []*mat.SymDense{mat.NewSymDense(2, []float64{1, 0.5, 0.5, 0.8}), mat.NewSymDense(2, []float64{0.4, -0.1, -0.1, 0.3})}
	logWeights := []float64{math.Log(0.8), math.Log(0.2)}
	invs := make([]mat.SymDense, 2)
	logDets := make([]float64, 2)
	for c := range covs {
		var chol mat.Cholesky
		chol.Factorize(covs[c])
		chol.InverseTo(&invs[c])
		logDets[c] = chol.LogDet()
	}
	// logTarget is the mixture of Gaussians on η = log h, as a density on h.
	logTarget := func(h []float64) float64 {
		eta := []float64{math.Log(h[0]), math.Log(h[1])}
		out := math.Inf(-1)
		for c, mu := range means {
			d := mat.NewVecDense(2, []float64{eta[0] - mu[0], eta[1] - mu[1]})
			out = quad.LogAddExp(out, logWeights[c]-0.5*logDets[c]-0.5*mat.Inner(d, &invs[c], d))
		}
		return out - eta[0] - eta[1]
	}
	q := &posteriorModes{logMass: []float64{math.Log(0.5), math.Log(0.5)}}
	for c, mu := range means {
		narrow := mat.NewSymDense(2, nil)
		narrow.ScaleSym(0.6, covs[c])
		q.mean = append(q.mean, mu)
		q.cov = append(q.cov, narrow)
	}
	jump := newModeJump(2, q)
	const chains = 4000
	var inSecond, mean0, mean1 float64
	for c := range chains {
		r := rng.New(21, uint64(c))
		h := []float64{1, 1}
		for range 40 {
			jump.move(r, h, logTarget)
		}
		if math.Log(h[0]) > 2 {
			inSecond++
		}
		mean0 += math.Log(h[0]) / chains
		mean1 += math.Log(h[1]) / chains
	}
	inSecond /= chains
	// The target's mass at η_0 > 2: mostly the light mode's, and the heavy mode's tail.
	above := func(c int) float64 { return math.Erfc((2-means[c][0])/math.Sqrt(2*covs[c].At(0, 0))) / 2 }
	want := 0.8*above(0) + 0.2*above(1)
	t.Logf("share at η_0 > 2 %.4f (target %.4f), mean η (%.4f, %.4f) (target (0.8, −0.6))", inSecond, want, mean0, mean1)
	// Binomial standard error of the share √(0.17·0.83/4000) = 0.006; the means' are about 0.03.
	if math.Abs(inSecond-want) > 0.02 || math.Abs(mean0-0.8) > 0.1 || math.Abs(mean1+0.6) > 0.1 {
		t.Errorf("share at η_0 > 2 %.4f (target %.4f), mean η (%.4f, %.4f) (target (0.8, −0.6))", inSecond, want, mean0, mean1)
	}
}
