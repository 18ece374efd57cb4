package smc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stirank/stirank/rng"
)

// gaussPath tempers a N(y; θ, s²) likelihood onto a N(0, 1) prior: π_n(θ) = N(θ; 0, 1) N(y; θ, s²)^β_n,
// β_n = n/S. Every target is Gaussian, so Move draws from it exactly and Z_S is known.
type gaussPath struct {
	y, s2 float64
	S     int
}

func (g gaussPath) Dim() int                               { return 1 }
func (g gaussPath) Stages() int                            { return g.S }
func (g gaussPath) Init(r *rand.Rand, x []float64) float64 { x[0] = r.NormFloat64(); return 0 }
func (g gaussPath) beta(n int) float64                     { return float64(n) / float64(g.S) }
func (g gaussPath) LogTarget(n int, x []float64) float64 {
	d := g.y - x[0]
	return g.beta(n) * (-0.5*math.Log(2*math.Pi*g.s2) - d*d/(2*g.s2))
}
func (g gaussPath) Move(n int, r *rand.Rand, x []float64) {
	prec := 1 + g.beta(n)/g.s2
	x[0] = g.beta(n)*g.y/g.s2/prec + r.NormFloat64()/math.Sqrt(prec)
}

// The driver's estimate of log Z = log N(y; 0, 1 + s²), with and without resampling, lies within
// four of its standard errors over 20 replicas, and the standard error is honest: small enough to
// be informative (under 0.05 nat).
func TestRunRecoversGaussianEvidence(t *testing.T) {
	g := gaussPath{y: 3, s2: 0.05, S: 50}
	want := -0.5*math.Log(2*math.Pi*(1+g.s2)) - g.y*g.y/(2*(1+g.s2))
	for _, below := range []float64{0, 0.5, 1} {
		logZ := make([]float64, 20)
		resampled := 0
		for i := range logZ {
			res := Run(g, Config{Particles: 200, ResampleBelow: below}, rng.New(1, uint64(i)))
			logZ[i], resampled = res.LogZ, resampled+res.Resamplings
		}
		got, se := Combine(logZ)
		if math.Abs(got-want) > 4*se || se > 0.05 {
			t.Errorf("resample below %v: %.4f ± %.4f, exact %.4f", below, got, se, want)
		}
		if (below == 0) != (resampled == 0) {
			t.Errorf("resample below %v: %d resamplings", below, resampled)
		}
	}
}

// Systematic resampling keeps every particle whose weight is at least 1/N of the total and
// draws each the right number of times, within one.
func TestSystematic(t *testing.T) {
	w := []float64{0.5, 0.25, 0.125, 0.125}
	logw := make([]float64, len(w))
	for i, x := range w {
		logw[i] = math.Log(x)
	}
	idx := make([]int, 8)
	r := rng.New(3)
	for range 100 {
		systematic(r, append(logw[:0:0], logw...)[:4], 0, idx[:4])
		counts := make([]int, 4)
		for _, j := range idx[:4] {
			counts[j]++
		}
		for i, c := range counts {
			if math.Abs(float64(c)-4*w[i]) >= 1 {
				t.Fatalf("weights %v drew counts %v", w, counts)
			}
		}
	}
}

// Combine is the log of the mean of the estimates, with no spread for equal estimates.
func TestCombine(t *testing.T) {
	got, se := Combine([]float64{math.Log(1), math.Log(3)})
	if math.Abs(got-math.Log(2)) > 1e-12 || math.Abs(se-0.5) > 1e-12 {
		t.Errorf("Combine(log 1, log 3) = %v ± %v, want log 2 ± 0.5", got, se)
	}
	if _, se := Combine([]float64{-2, -2, -2}); se != 0 {
		t.Errorf("equal estimates have stderr %v", se)
	}
}
