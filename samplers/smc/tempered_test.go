package smc

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stirank/stirank/rng"
)

// temperGauss anneals particles from the N(0, 1) prior to the posterior of y ~ N(θ, s²) with
// smc.Anneal, the likelihood's temperatures from next, each stage resampling below half the
// particles' ESS and drawing every particle exactly from π_t = N(t·y/s²/p, 1/p), p = 1 + t/s².
// It returns the estimate of log Z = log N(y; 0, 1 + s²).
func temperGauss(t *testing.T, y, s2 float64, n int, r *rand.Rand, next func(pop *Tempered, k int) float64) float64 {
	t.Helper()
	x, ll := make([]float64, n), make([]float64, n)
	logLik := func(v float64) float64 { return -0.5*math.Log(2*math.Pi*s2) - (y-v)*(y-v)/(2*s2) }
	for i := range x {
		x[i] = r.NormFloat64()
		ll[i] = logLik(x[i])
	}
	pop := NewTempered(ll)
	err := Anneal(pop, func(k int) (float64, error) { return next(pop, k), nil }, func(k int, _ float64) error {
		if pop.ESS() < float64(n)/2 {
			idx := Systematic(r.Float64(), pop.LogW, n)
			old := append([]float64(nil), x...)
			for j, i := range idx {
				x[j] = old[i]
			}
			pop.Uniform()
		}
		p := 1 + pop.T/s2
		for i := range x {
			x[i] = pop.T*y/s2/p + r.NormFloat64()/math.Sqrt(p)
			pop.LogLik[i] = logLik(x[i])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pop.T != 1 {
		t.Fatalf("the run stopped at t = %v", pop.T)
	}
	return pop.LogZ
}

// Tempered populations recover log N(y; 0, 1 + s²) within four standard errors over 20
// replicas, with an honest standard error under 0.05 nat: on temperatures NextCESS chooses (200
// particles) and, as annealed importance sampling, one particle on a fixed ladder of 200 (200
// runs).
func TestAnnealRecoversGaussianEvidence(t *testing.T) {
	const y, s2 = 3, 0.05
	want := -0.5*math.Log(2*math.Pi*(1+s2)) - y*y/(2*(1+s2))
	for _, c := range []struct {
		name         string
		particles    int
		replicas     int
		temperatures func(pop *Tempered, k int) float64
	}{
		{"adaptive", 200, 20, func(pop *Tempered, _ int) float64 { return pop.NextCESS(0.9) }},
		{"ais", 1, 200, func(_ *Tempered, k int) float64 { return math.Pow(float64(k)/200, 4) }},
	} {
		logZ := make([]float64, c.replicas)
		for i := range logZ {
			logZ[i] = temperGauss(t, y, s2, c.particles, rng.New(3, uint64(i)), c.temperatures)
		}
		got, se := Combine(logZ)
		if math.Abs(got-want) > 4*se || se > 0.05 {
			t.Errorf("%s: %.4f ± %.4f, exact %.4f", c.name, got, se, want)
		}
	}
}

// Systematic resampling draws each index ⌊m·W⌋ or ⌈m·W⌉ times, whatever the uniform (off the
// null set that puts a point on a boundary of the cumulative weights).
func TestSystematicDrawsInProportion(t *testing.T) {
	w := []float64{0.5, 0.05, 0.3, 0.15}
	logW := make([]float64, len(w))
	for i, v := range w {
		logW[i] = math.Log(v)
	}
	for _, u := range []float64{0.01, 0.13, 0.5, 0.999} {
		for _, m := range []int{1, 7, 20} {
			counts := make([]int, len(w))
			for _, i := range Systematic(u, logW, m) {
				counts[i]++
			}
			for i, c := range counts {
				if e := float64(m) * w[i]; float64(c) < math.Floor(e) || float64(c) > math.Ceil(e) {
					t.Errorf("u %v, m %d: index %d drawn %d times, want %v rounded", u, m, i, c, e)
				}
			}
		}
	}
}

// Resample keeps each particle with its own log-likelihood, copies rather than aliases it, and
// leaves the weights uniform.
func TestResampleCarriesLogLik(t *testing.T) {
	s := NewTempered([]float64{-1, -2, -3})
	s.LogW = []float64{math.Log(0.1), math.Log(0.8), math.Log(0.1)}
	particles := [][]float64{{1}, {2}, {3}}
	out := s.Resample(0.5, particles)
	for j, x := range out {
		if s.LogLik[j] != -x[0] {
			t.Errorf("particle %d is %v with log-likelihood %v", j, x, s.LogLik[j])
		}
		if math.Abs(s.LogW[j]-math.Log(1.0/3)) > 1e-15 {
			t.Errorf("weight %d is %v after resampling", j, math.Exp(s.LogW[j]))
		}
	}
	out[1][0] = 7
	if particles[1][0] != 2 {
		t.Error("a resampled particle aliases its ancestor")
	}
}

// Anneal stops at a temperature that goes back, and passes on the callers' errors.
func TestAnnealStopsOnABadStage(t *testing.T) {
	pop := NewTempered([]float64{-1, -2})
	err := Anneal(pop, func(k int) (float64, error) { return 0.5 - 0.25*float64(k-1), nil }, func(int, float64) error { return nil })
	if err == nil || pop.T != 0.5 {
		t.Errorf("a temperature below the last: error %v at t = %v", err, pop.T)
	}
	stop := errors.New("stop")
	pop = NewTempered([]float64{-1, -2})
	if err := Anneal(pop, func(int) (float64, error) { return 0.5, nil }, func(int, float64) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("a stage's error: %v", err)
	}
}
