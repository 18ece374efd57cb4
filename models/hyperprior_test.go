package models

import (
	"math"
	"testing"

	"github.com/stirank/stirank/internal/quad"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// hyperData draws a small rank-1 count tensor of the given shape at rate 0.5.
func hyperData(t *testing.T, shape []int, seed uint64) *tensor.Sparse {
	t.Helper()
	rates := make([]float64, len(shape))
	for m := range rates {
		rates[m] = 0.5
	}
	data, _, err := GeneratePoisson(rng.New(seed, 7), shape, 1, rates)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// autoRank1 is the rank-1 Poisson model of data under --rate auto.
func autoRank1(t *testing.T, data *tensor.Sparse) *Poisson {
	t.Helper()
	prior, err := AutoPrior(data, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewPoissonPrior("nmf", data, 1, prior, LogScale)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// On a matrix the rank-1 evidence under the hyperprior agrees with the fixed-rate evidence
// integrated over both rates by nested quadrature in log λ (a path that shares none of its
// reductions: no closed form over a rate, no inner integral over λ_0).
func TestRank1HyperpriorMatchesQuadratureOverTheRates(t *testing.T) {
	data := hyperData(t, []int{4, 3}, 1)
	prior := RatePrior{Rates: []float64{0.6, 1.7}, Shape: 1.5}
	logZ, err := Rank1LogPowerPrior(data, prior)
	if err != nil {
		t.Fatal(err)
	}
	got, err := logZ(1)
	if err != nil {
		t.Fatal(err)
	}
	a := prior.Shape
	// logGamma is the log density of log λ when λ ~ Gamma(a, b).
	logGamma := func(v, b float64) float64 { return a*math.Log(b) - lgamma(a) + a*v - b*math.Exp(v) }
	want := quad.LogIntegral(func(v0 float64) float64 {
		return logGamma(v0, prior.Rates[0]) + quad.LogIntegral(func(v1 float64) float64 {
			z, err := Rank1LogEvidence(data, []float64{math.Exp(v0), math.Exp(v1)})
			if err != nil {
				t.Fatal(err)
			}
			return logGamma(v1, prior.Rates[1]) + z
		})
	})
	t.Logf("hyperprior rank-1 evidence %.9f, quadrature over the rates %.9f", got, want)
	if math.Abs(got-want) > 1e-6 {
		t.Errorf("hyperprior rank-1 evidence %.9f, quadrature over the rates %.9f", got, want)
	}
}

// A hyperprior concentrated on λ (shape 10⁹, mean λ) gives the evidence at the fixed rate λ, for
// a matrix and a 3-way tensor, and the tensor's value does not depend on the order of its modes
// though mode 0's rate is integrated differently from the others'.
func TestRank1HyperpriorLimitsAndModeOrder(t *testing.T) {
	for _, shape := range [][]int{{6, 4}, {4, 3, 5}} {
		data := hyperData(t, shape, 2)
		rates := []float64{0.4, 0.9, 1.3}[:len(shape)]
		fixed, err := Rank1LogEvidence(data, rates)
		if err != nil {
			t.Fatal(err)
		}
		const a = 1e9
		conc := RatePrior{Shape: a}
		for _, l := range rates {
			conc.Rates = append(conc.Rates, a/l)
		}
		logZ, err := Rank1LogPowerPrior(data, conc)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := logZ(1)
		if math.Abs(got-fixed) > 1e-4 {
			t.Errorf("%v: concentrated hyperprior %.6f, fixed rates %.6f", shape, got, fixed)
		}
		if len(shape) != 3 {
			continue
		}
		prior := RatePrior{Rates: []float64{0.5, 2, 1}, Shape: 1}
		logZ, _ = Rank1LogPowerPrior(data, prior)
		ref, _ := logZ(1)
		for _, perm := range [][]int{{1, 2, 0}, {2, 0, 1}, {1, 0, 2}} {
			d, _ := tensor.New([]int{shape[perm[0]], shape[perm[1]], shape[perm[2]]}, data.NNZ())
			for n, x := range data.Values {
				d.Append([]int{int(data.Coords[perm[0]][n]), int(data.Coords[perm[1]][n]), int(data.Coords[perm[2]][n])}, x)
			}
			p := RatePrior{Rates: []float64{prior.Rates[perm[0]], prior.Rates[perm[1]], prior.Rates[perm[2]]}, Shape: 1}
			logZ, _ := Rank1LogPowerPrior(d, p)
			v, _ := logZ(1)
			if math.Abs(v-ref) > 1e-7 {
				t.Errorf("modes in order %v: %.9f, in order 0 1 2: %.9f", perm, v, ref)
			}
		}
	}
}

// Under --rate auto the Gibbs kernel samples the rates with the factors: a long run at
// temperature t averages the log-likelihood to the exact f(t) = d log Z(t)/dt of the hyperprior's
// rank-1 evidence, for both kernels (the split moves and the rank-1 draws), a matrix and a tensor.
func TestAugmentedKernelKeepsThePowerPosteriorUnderAuto(t *testing.T) {
	for _, shape := range [][]int{{6, 5}, {4, 3, 3}} {
		data := hyperData(t, shape, 3)
		m := autoRank1(t, data)
		logZ, err := Rank1LogPowerPrior(data, m.hyper)
		if err != nil {
			t.Fatal(err)
		}
		for _, rank1 := range []bool{false, true} {
			for _, temp := range []float64{1.0 / 256, 0.25, 1} {
				h := temp / 1024
				hi, _ := logZ(temp + h)
				lo, _ := logZ(temp - h)
				want := (hi - lo) / (2 * h)
				r := rng.New(6, uint64(len(shape)))
				theta := make([]float64, m.Dim())
				m.SamplePrior(r, theta)
				k, e := m.newAugmented(rank1), m.NewEval()
				acc := make([]float64, len(shape))
				const burn, sweeps, batches = 500, 40000, 40
				means := make([]float64, batches)
				for s := range burn + sweeps {
					ll := k.Sweep(r, temp, theta, acc)
					if s%1000 == 0 {
						e.Prepare(theta)
						if w := LogLik(e, m); math.Abs(ll-w) > 1e-9*math.Abs(w) {
							t.Fatalf("%v t=%v sweep %d: Sweep's log-likelihood %v, the evaluator's %v", shape, temp, s, ll, w)
						}
					}
					if s >= burn {
						means[(s-burn)*batches/sweeps] += ll * batches / sweeps
					}
				}
				mean, se := batchMean(means)
				t.Logf("%v rank-1 draws %v t=%v: mean log-lik %.3f ± %.3f, exact %.3f", shape, rank1, temp, mean, se, want)
				if math.Abs(mean-want) > 4*se || se > 0.01*math.Abs(want) {
					t.Errorf("%v rank-1 draws %v t=%v: mean log-likelihood %.3f ± %.3f, exact f(t) = %.3f", shape, rank1, temp, mean, se, want)
				}
			}
		}
	}
}

// Near the prior the hyperprior leaves the scale of the cells' rates a decade and more: the
// product of the factors' rates, which the orbit moves of drawRates keep, and which a rate drawn
// given its factor and a factor given its rate cross only by steps of about 1/√n. On a 60×50
// matrix at t = 10⁻⁸ the logarithm of that product must decorrelate within a few sweeps (a lag-1
// autocorrelation below ½ over 2 000 sweeps from a start at the data's scale): the scale's move
// with its rate integrated out (drawScale) makes it, the rates' draws alone do not.
func TestChainsNearThePriorCrossTheScale(t *testing.T) {
	m := autoRank1(t, hyperData(t, []int{60, 50}, 4))
	r := rng.New(8, 1)
	theta := make([]float64, m.Dim())
	// The start: every entry at the data's scale, the rates at their hyperprior's means.
	for i := range theta[:m.dim] {
		theta[i] = -math.Log(m.Rates[0])
	}
	for k := range m.factors {
		theta[m.dim+k] = math.Log(m.Rates[k])
	}
	k := m.newAugmented(false)
	acc := make([]float64, 2)
	const sweeps = 2000
	var x []float64 // log of the product of the rates
	for range sweeps {
		k.Sweep(r, 1e-8, theta, acc)
		x = append(x, theta[m.dim]+theta[m.dim+1])
	}
	mean := 0.0
	for _, v := range x {
		mean += v / sweeps
	}
	c0, c1 := 0.0, 0.0
	for i, v := range x {
		c0 += (v - mean) * (v - mean)
		if i > 0 {
			c1 += (v - mean) * (x[i-1] - mean)
		}
	}
	t.Logf("the log of the rates' product: lag-1 autocorrelation %.3f, spread %.3f", c1/c0, math.Sqrt(c0/sweeps))
	if ac := c1 / c0; ac > 0.5 {
		t.Errorf("the log of the rates' product: lag-1 autocorrelation %.3f over %d sweeps at t = 10⁻⁸", ac, sweeps)
	}
}
