package isnmf

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/stirank/stirank/internal/quad"
)

// modeJump is an independence Metropolis–Hastings move on η = log h whose proposal is a mixture
// of multivariate t distributions, one at each mode of a posterior with its Laplace covariance
// (posteriorModes). The slice and Gibbs sweeps move a particle within the mode it is in, so on a
// multimodal posterior the population keeps whatever proportions of the modes the path led it
// into, and SMC1 and SMC2 were off by as much as the proportions were; a jump proposes wherever
// the modes are, and its acceptance ratio at the current target moves the particles between them
// until the proportions are the target's. It leaves any target invariant, whatever the modes.
type modeJump struct {
	k         int
	mean      [][]float64
	chol      [][]float64 // lower Cholesky factor of each component's scale matrix, k×k
	logNorm   []float64   // the log weight and normalising constant of each component
	cumWeight []float64   // cumulative component weights, for drawing one
	dev, eta  []float64   // work
	next      []float64
}

// jumpDF is the proposal's degrees of freedom: tails heavier than the Laplace fit's, so that the
// proposal covers a tempered target wider or more skewed than the mode it was fitted at.
const jumpDF = 4

// newModeJump returns the move proposing from the modes of qs. Each component weighs half its
// Laplace mass and half an equal share: the Laplace masses are what the target's modes weigh only
// roughly, and a mode they make light must still be proposed often enough to be found.
func newModeJump(k int, qs ...*posteriorModes) *modeJump {
	j := &modeJump{k: k, dev: make([]float64, k), eta: make([]float64, k), next: make([]float64, k)}
	var weights []float64
	n := 0
	for _, q := range qs {
		n += len(q.mean)
	}
	for _, q := range qs {
		for c, mu := range q.mean {
			var chol mat.Cholesky
			if !chol.Factorize(q.cov[c]) {
				continue
			}
			var l mat.TriDense
			chol.LTo(&l)
			flat := make([]float64, k*k)
			var logDet float64
			for a := range k {
				for b := 0; b <= a; b++ {
					flat[a*k+b] = l.At(a, b)
				}
				logDet += math.Log(flat[a*k+a])
			}
			w := 0.5*math.Exp(q.logMass[c])/float64(len(qs)) + 0.5/float64(n)
			lgn, _ := math.Lgamma((jumpDF + float64(k)) / 2)
			lgd, _ := math.Lgamma(jumpDF / 2)
			j.mean = append(j.mean, mu)
			j.chol = append(j.chol, flat)
			j.logNorm = append(j.logNorm, math.Log(w)+lgn-lgd-float64(k)/2*math.Log(jumpDF*math.Pi)-logDet)
			weights = append(weights, w)
		}
	}
	total := floats.Sum(weights)
	var acc float64
	for _, w := range weights {
		acc += w / total
		j.cumWeight = append(j.cumWeight, acc)
	}
	for c := range j.logNorm {
		j.logNorm[c] -= math.Log(total)
	}
	return j
}

// logProposal is the log density of the mixture at η.
func (j *modeJump) logProposal(eta []float64) float64 {
	k := j.k
	out := math.Inf(-1)
	for c, mu := range j.mean {
		// |L⁻¹(η − μ)|² by forward substitution.
		l := j.chol[c]
		var q float64
		for a := range k {
			s := eta[a] - mu[a]
			for b := range a {
				s -= l[a*k+b] * j.dev[b]
			}
			j.dev[a] = s / l[a*k+a]
			q += j.dev[a] * j.dev[a]
		}
		v := j.logNorm[c] - (jumpDF+float64(k))/2*math.Log1p(q/jumpDF)
		out = quad.LogAddExp(out, v)
	}
	return out
}

// move proposes η' from the mixture and accepts it with probability
// min(1, π(h')|h'| q(η) / π(h)|h| q(η')) for the target's log density logTarget on h (the
// Jacobian |h| = Π_k h_k takes it to η).
func (j *modeJump) move(r *rand.Rand, h []float64, logTarget func(h []float64) float64) {
	if len(j.mean) == 0 {
		return
	}
	k := j.k
	c := 0
	for u := r.Float64(); c < len(j.cumWeight)-1 && u > j.cumWeight[c]; c++ {
	}
	var chi float64
	for range jumpDF {
		z := r.NormFloat64()
		chi += z * z
	}
	scale := math.Sqrt(jumpDF / chi)
	mu, l := j.mean[c], j.chol[c]
	for a := range k {
		j.dev[a] = r.NormFloat64()
	}
	next := j.next
	for a := range k {
		s := mu[a]
		for b := 0; b <= a; b++ {
			s += l[a*k+b] * j.dev[b] * scale
		}
		next[a] = math.Exp(s)
		j.eta[a] = s
	}
	logNext := logTarget(next) + floats.Sum(j.eta) - j.logProposal(j.eta)
	for a := range k {
		j.eta[a] = math.Log(h[a])
	}
	logHere := logTarget(h) + floats.Sum(j.eta) - j.logProposal(j.eta)
	if d := logNext - logHere; d >= 0 || math.Log(r.Float64()) < d {
		copy(h, next)
	}
}
