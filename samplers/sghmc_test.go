package samplers_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stirank/stirank/samplers"
	st "github.com/stirank/stirank/samplers/samplertest"
)

// checkMoments compares a run with the target's exact moments: every coordinate's mean within
// tolMean posterior standard deviations, its variance within a relative tolVar.
func checkMoments(t *testing.T, name string, res st.Result, k st.Known, tolMean, tolVar float64) {
	t.Helper()
	checkMomentsSE(t, name, res, k, tolMean, tolVar, 0)
}

// checkMomentsSE widens each tolerance to se times the run's batch-means standard error when that
// is larger (for slowly mixing runs).
func checkMomentsSE(t *testing.T, name string, res st.Result, k st.Known, tolMean, tolVar, se float64) {
	t.Helper()
	mu, cov := k.Mean(), k.Cov()
	d := len(mu)
	for i := range d {
		sd := math.Sqrt(cov[i*d+i])
		dm := (res.Mean[i] - mu[i]) / sd
		rv := res.Cov[i*d+i]/cov[i*d+i] - 1
		t.Logf("%s θ%d: mean %+.3f sd off (±%.3f), variance %+.3f relative (±%.3f)", name, i, dm, res.SEMean[i]/sd, rv, res.SEVar[i]/cov[i*d+i])
		tolMean, tolVar := math.Max(tolMean, se*res.SEMean[i]/sd), math.Max(tolVar, se*res.SEVar[i]/cov[i*d+i])
		if !(math.Abs(dm) <= tolMean) {
			t.Errorf("%s θ%d: mean %.5g, want %.5g (off by %.3f sd, tolerance %.2f)", name, i, res.Mean[i], mu[i], dm, tolMean)
		}
		if !(math.Abs(rv) <= tolVar) {
			t.Errorf("%s θ%d: variance %.5g, want %.5g (relative error %+.3f, tolerance %.2f)", name, i, res.Cov[i*d+i], cov[i*d+i], rv, tolVar)
		}
	}
}

func em(src samplers.MStepSource) samplers.MassEM { return samplers.MassEM{On: true, Source: src} }

// kernels are the underdamped samplers with their defaults.
var kernels = []samplers.Kernel{
	samplers.SGHMC{},
	samplers.SGNHT{},
	samplers.SGHMC{EM: em(samplers.Forces)},
	samplers.SGNHT{EM: em(samplers.Forces)},
	samplers.SGNPHMC{},
	samplers.SGNPHMC{EM: em(samplers.Forces)},
}

// With exact gradients every sampler matches the moments of the correlated 2-D Gaussian (ρ = 0.95,
// standard deviations 1 and 3, metric the Gershgorin bound) to 0.1 sd in the mean and 6% in the
// variance, at ε = 0.5 and at ε = 1 (BAOAB is exact for Gaussians at any stable step; the
// tolerances are Monte Carlo error: the slow direction has ω ≈ 0.16 for the fixed-mass kernels).
func TestCorrelatedGaussian(t *testing.T) {
	for _, k := range kernels {
		for _, eps := range []float64{0.5, 1} {
			res := st.Run{Kernel: k, Target: st.Correlated2D(), Steps: 200000, Burnin: 2000, Eps: eps, Ranges: 2, Parallel: true, Seed: 7}.Do()
			checkMoments(t, fmt.Sprintf("%s ε=%v", kernelName(k), eps), res, st.Correlated2D(), 0.1, 0.06)
		}
	}
}

// On N(0, 1/λ) with the metric 1/λ the BAOAB splitting samples the exact variance at every stable
// step (εω < 2), where the Euler discretisation of Chen et al. is off at O(ε); with friction 1 the
// relative error stays within 2% up to ε = 1.5.
func TestBAOABExactOnGaussian(t *testing.T) {
	g := &st.Gaussian{Mu: []float64{0}, Sigma: []float64{0.25}}
	for _, eps := range []float64{0.25, 1, 1.5} {
		res := st.Run{Kernel: samplers.SGHMC{}, Target: g, Steps: 300000, Burnin: 1000, Eps: eps, Seed: 3}.Do()
		if rv := res.Cov[0]/0.25 - 1; math.Abs(rv) > 0.02 {
			t.Errorf("ε=%v: variance %.4f, want 0.25 (relative error %+.3f)", eps, res.Cov[0], rv)
		}
	}
}

// noisyEM is the Forces M-step told the gradient noise.
func noisyEM(v float64) samplers.MassEM {
	return samplers.MassEM{On: true, ForceNoise: v}
}

// meanNoise is the metric-scaled gradient noise of a target at its mean, averaged over coordinates.
func meanNoise(t st.Target) float64 {
	v := st.GradNoise(t, t.(st.Known).Mean(), 20000, 1)
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// The paper's §4.1: the mean μ and precision τ of 5000 N(0, 1) points (flat prior on μ, W(τ|1,1) on
// τ), minibatches of 100 scaled by N/100 with no control variates — a gradient noise about 50 times
// the metric-scaled curvature per coordinate. τ is sampled directly, mirrored at zero. SGHMC needs
// the noise estimate B̂ = 50 and a friction that can absorb it (γ = 5 at ε = 0.05); SGNHT finds the
// friction itself. Mean within 0.15 sd, variance within 10%. The -EM variants are told the noise
// (ForceNoise), but a noise fifty times the signal leaves the forces' second moment a poor
// estimate of the curvature: the learnt inverse mass comes out 6–10 times too small (valid, but
// slow — the positions would do worse still, shrinking the mass as the chain slows), so for them
// the tolerances widen to three batch-means standard errors where those are larger.
func TestNormalGammaPosterior(t *testing.T) {
	ng := st.NewNormalGamma(5000, 100, 1)
	b := meanNoise(ng)
	if b < 45 || b > 55 {
		t.Fatalf("metric-scaled gradient noise %.1f, expected about 50", b)
	}
	for _, k := range []samplers.Kernel{
		samplers.SGHMC{Friction: 5, NoiseVar: b},
		samplers.SGNHT{A: 1},
		samplers.SGHMC{Friction: 5, NoiseVar: b, EM: noisyEM(b)},
		samplers.SGNHT{A: 1, EM: noisyEM(b)},
		samplers.SGNPHMC{Friction: 1}, // the thermostat absorbs the noise it is not told
		samplers.SGNPHMC{Friction: 1, EM: noisyEM(b)},
	} {
		res := st.Run{Kernel: k, Target: ng, Steps: 400000, Burnin: 5000, Eps: 0.05, Ranges: 2, Parallel: true, Noisy: true, Seed: 11}.Do()
		se := 0.0
		if strings.HasSuffix(kernelName(k), "-em") {
			se = 3
		}
		checkMomentsSE(t, kernelName(k), res, ng, 0.15, 0.10, se)
	}
}

// Without B̂ the same SGHMC run is visibly too hot: the variance is inflated by the unabsorbed
// gradient noise (about 1 + ε·B/(2γ) = 1.25 here) — what the thermostat of SGNHT corrects.
func TestSGHMCWithoutNoiseEstimateIsHot(t *testing.T) {
	ng := st.NewNormalGamma(5000, 100, 1)
	res := st.Run{Kernel: samplers.SGHMC{Friction: 5}, Target: ng, Steps: 150000, Burnin: 5000, Eps: 0.05, Ranges: 2, Noisy: true, Seed: 11}.Do()
	for i := range 2 {
		if r := res.Cov[i*2+i] / ng.Cov()[i*2+i]; r < 1.12 {
			t.Errorf("θ%d: variance ratio %.3f without B̂, expected the noise to inflate it", i, r)
		}
	}
}

// Non-negativity by reflection: Exp(2) sampled in θ ≥ 0 with a constant gradient; only the
// boundary keeps the chain in place. Mirroring with the momentum reflected gives the right mean
// and variance (to 5% / 10%) at a step that moves 0.05 of the scale.
func TestMirrorReflectsMomentum(t *testing.T) {
	for _, k := range kernels {
		res := st.Run{Kernel: k, Target: st.Exponential{Rate: 2}, Steps: 400000, Burnin: 2000, Eps: 0.1, Seed: 5}.Do()
		checkMoments(t, kernelName(k), res, st.Exponential{Rate: 2}, 0.05, 0.10)
		if res.Mean[0] < 0 {
			t.Errorf("%s: negative mean", kernelName(k))
		}
	}
}

// Bayesian logistic regression on the paper's §4.2 synthetic data (2000 points, N(0, 10I) prior),
// minibatches of 100 without control variates (metric-scaled noise about 4), against the
// quadrature reference: mean within 0.15 sd and variance within 12%.
func TestLogisticRegression(t *testing.T) {
	lr := st.NewLogistic(2000, 100, 1)
	b := meanNoise(lr)
	for _, k := range []samplers.Kernel{
		samplers.SGHMC{Friction: 2, NoiseVar: b},
		samplers.SGNHT{},
		samplers.SGHMC{Friction: 2, NoiseVar: b, EM: noisyEM(b)},
		samplers.SGNHT{EM: noisyEM(b)},
		samplers.SGNPHMC{},
		samplers.SGNPHMC{EM: noisyEM(b)},
	} {
		res := st.Run{Kernel: k, Target: lr, Steps: 100000, Burnin: 3000, Eps: 0.1, Ranges: 2, Parallel: true, Noisy: true, Seed: 13}.Do()
		checkMoments(t, kernelName(k), res, lr, 0.15, 0.12)
	}
}

// The kernels draw only from the streams they are given, so cutting θ into ranges updated from
// separate goroutines gives the same numbers as updating them in turn.
func TestParallelRangesAreDeterministic(t *testing.T) {
	for _, k := range kernels {
		g := st.Correlated2D()
		a := st.Run{Kernel: k, Target: g, Steps: 3000, Burnin: 1000, Eps: 0.7, Ranges: 2, Seed: 1}.Do()
		b := st.Run{Kernel: k, Target: g, Steps: 3000, Burnin: 1000, Eps: 0.7, Ranges: 2, Parallel: true, Seed: 1}.Do()
		for i := range a.Final {
			if a.Final[i] != b.Final[i] {
				t.Errorf("%s: serial %v, parallel %v", kernelName(k), a.Final, b.Final)
				break
			}
		}
	}
}

// kernelName names a kernel in test logs: its type, and -em when it learns its mass.
func kernelName(k samplers.Kernel) string {
	name := strings.ToLower(strings.TrimPrefix(fmt.Sprintf("%T", k), "samplers."))
	if h, ok := k.(samplers.SGHMC); ok && h.EM.On {
		name += "-em"
	}
	if h, ok := k.(samplers.SGNPHMC); ok && h.EM.On {
		name += "-em"
	}
	if h, ok := k.(samplers.SGNHT); ok && h.EM.On {
		name += "-em"
	}
	return name
}
