package samplers_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/samplers"
)

func stdNormal(th, g []float64, _ *rand.Rand) float64 {
	g[0] = -th[0]
	return -th[0] * th[0] / 2
}

// The deterministic scheme (A = B = 0, exact gradients) is the generalised leapfrog of the
// Nosé–Poincaré Hamiltonian: it conserves H_NP ≈ 0 to second order in ε (halving ε divides the
// largest |H_NP| over 10⁵ steps by about four), which checks the implementation of eq. (7).
func TestNPHMCConservesEnergy(t *testing.T) {
	var h [2]float64
	for i, eps := range []float64{0.1, 0.05} {
		th := []float64{0.5}
		res := samplers.NPHMC{Eps: eps}.Sample(stdNormal, th, 100000, 0, rng.New(3), nil)
		if res.Failed {
			t.Fatalf("ε=%v: failed at step %d", eps, res.FailedAt)
		}
		h[i] = res.MaxAbsH
	}
	t.Logf("max |H_NP|: %.3g at ε=0.1, %.3g at ε=0.05", h[0], h[1])
	if r := h[0] / h[1]; r < 3.2 || r > 5 || h[0] > 0.05 {
		t.Errorf("max |H_NP| %.3g at ε=0.1, %.3g at ε=0.05 (ratio %.2f, want about 4)", h[0], h[1], r)
	}
}

// SG-NPHMC does not sample the target. Deterministic, it is not ergodic on a Gaussian (the
// variance of a 1-D standard normal comes out 0.84, set by the starting point). With the
// stochastic terms of eq. (7) — any A or B > 0, even 0.001 — the thermostat position s drifts to
// zero (the invariant density exp(−H_NP) puts its mass at large U and small s, see NPHMC) and the
// integrator breaks down (the implicit half step for q loses its real root, or s leaves (0, ∞))
// within 10⁵ steps; before that the moments are wrong.
func TestNPHMCDoesNotSampleTheTarget(t *testing.T) {
	th := []float64{0.5}
	var s2 float64
	var n int
	res := samplers.NPHMC{Eps: 0.05}.Sample(stdNormal, th, 200000, 1000, rng.New(3), func(x []float64) {
		s2 += x[0] * x[0]
		n++
	})
	v := s2 / float64(n)
	t.Logf("deterministic: variance %.3f (target 1), max |H_NP| %.3g", v, res.MaxAbsH)
	if res.Failed || math.Abs(v-1) < 0.1 {
		t.Errorf("deterministic NP: variance %.3f, failed %v: expected non-ergodic and wrong", v, res.Failed)
	}
	for _, ab := range [][2]float64{{1, 1}, {0.1, 0.1}, {0.01, 0.01}, {0.001, 0.001}, {0.1, 0}, {0, 0.1}} {
		th := []float64{0.5}
		res := samplers.NPHMC{Eps: 0.05, A: ab[0], B: ab[1]}.Sample(stdNormal, th, 300000, 0, rng.New(3), nil)
		t.Logf("A=%v B=%v: failed %v at step %d, s %.3g", ab[0], ab[1], res.Failed, res.FailedAt, res.S)
		if !res.Failed {
			t.Errorf("A=%v B=%v: the stochastic scheme ran 3·10⁵ steps (s = %.3g); expected the collapse of s", ab[0], ab[1], res.S)
		}
	}
}

// The θ-marginal that exp(−H_NP) implies has a polynomial tail: at U(θ) = θ²/2 in one dimension
// it decays like 1/θ² instead of e^{−θ²/2}.
func TestNPMarginalTail(t *testing.T) {
	h0 := 1.0
	f := func(x float64) float64 { return samplers.NPMarginal(x*x/2, h0, 1) }
	r1 := f(20) / f(10)
	r2 := f(40) / f(20)
	t.Logf("f(20)/f(10) = %.3f, f(40)/f(20) = %.3f (a 1/θ² tail gives 0.25; the target e^{−150})", r1, r2)
	if math.Abs(r1-0.25) > 0.03 || math.Abs(r2-0.25) > 0.02 {
		t.Errorf("tail ratios %.3f, %.3f, want about 0.25", r1, r2)
	}
}
