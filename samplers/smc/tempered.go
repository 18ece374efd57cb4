package smc

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
)

// Tempered is a population on the path of power posteriors π_t(x) ∝ π_0(x) L(x)^t as explicit
// state, in the shape of BlackJAX's and particles' tempered SMC: the caller owns the particles
// and the kernel that moves them, and keeps LogLik, the particles' log L, up to date; Tempered
// holds the temperature and the weights, reweights, measures and resamples. One particle on a
// fixed ladder is annealed importance sampling; a population on temperatures NextCESS chooses,
// resampled when its ESS falls, is adaptive-tempered SMC.
type Tempered struct {
	// T is the temperature the weights are at.
	T float64
	// LogLik[i] is log L(x_i); LogW[i] is particle i's normalised log weight, LogSumExp(LogW) = 0.
	LogLik, LogW []float64
	// LogZ estimates log Z_T − log Z_0: the sum of the stages' log mean incremental weights.
	LogZ float64
}

// NewTempered is the population at t = 0 of particles drawn from π_0 whose log-likelihoods are
// logLik (kept, not copied), equally weighted.
func NewTempered(logLik []float64) *Tempered {
	s := &Tempered{LogLik: logLik, LogW: make([]float64, len(logLik))}
	s.Uniform()
	return s
}

// Uniform weighs every particle equally: after resampling, or after a stage that makes a new
// population of equal weights (waste-free SMC).
func (s *Tempered) Uniform() {
	for i := range s.LogW {
		s.LogW[i] = -math.Log(float64(len(s.LogW)))
	}
}

// NextCESS returns the largest t' in (T, 1] whose reweighting keeps the conditional ESS at cess,
// a fraction of the particles (NextStep, to the resolution of float64).
func (s *Tempered) NextCESS(cess float64) float64 {
	return NextStep(s.T, 1, cess, 0, s.LogW, func(next float64, inc []float64) {
		for i, l := range s.LogLik {
			inc[i] = (next - s.T) * l
		}
	})
}

// Temper reweights the population from T to t by exp((t − T)·log L), moves T to t and returns the
// stage's log mean incremental weight log Σ_i W_i exp((t − T)·log L(x_i)), which LogZ gains. A
// particle of weight zero keeps it whatever its log-likelihood.
func (s *Tempered) Temper(t float64) float64 {
	inc := make([]float64, len(s.LogW))
	for i, lw := range s.LogW {
		inc[i] = lw + (t-s.T)*s.LogLik[i]
		if math.IsInf(lw, -1) {
			inc[i] = math.Inf(-1)
		}
	}
	logZ := floats.LogSumExp(inc)
	for i := range s.LogW {
		s.LogW[i] = inc[i] - logZ
	}
	s.T = t
	s.LogZ += logZ
	return logZ
}

// ESS is the effective sample size 1/Σ W² of the weights.
func (s *Tempered) ESS() float64 {
	sum := 0.0
	for _, lw := range s.LogW {
		sum += math.Exp(2 * lw)
	}
	return 1 / sum
}

// Systematic returns m indices drawn by systematic resampling from normalised log weights logW,
// with the single uniform u: index i is drawn for every point (j + u)/m, j < m, that falls in
// its stretch of the weights' cumulative sum.
func Systematic(u float64, logW []float64, m int) []int {
	idx := make([]int, 0, m)
	cum, i := math.Exp(logW[0]), 0
	for j := range m {
		target := (float64(j) + u) / float64(m)
		for cum < target && i < len(logW)-1 {
			i++
			cum += math.Exp(logW[i])
		}
		idx = append(idx, i)
	}
	return idx
}

// Resample draws an equally weighted population from s by systematic resampling with the single
// uniform u (Systematic): it returns copies of the particles drawn, replaces LogLik by theirs and
// makes the weights uniform. particles[i] is the particle whose log-likelihood is LogLik[i].
func (s *Tempered) Resample(u float64, particles [][]float64) [][]float64 {
	idx := Systematic(u, s.LogW, len(particles))
	out := make([][]float64, len(particles))
	ll := make([]float64, len(particles))
	for j, i := range idx {
		out[j] = append([]float64(nil), particles[i]...)
		ll[j] = s.LogLik[i]
	}
	s.LogLik = ll
	s.Uniform()
	return out
}

// Anneal carries s from its temperature to t = 1 in stages k = 1, 2, …: next(k) gives stage k's
// temperature, at least s.T and at most 1; Anneal reweights the population to it (Temper) and
// calls stage(k, logZ) with the stage's log mean incremental weight, which resamples and moves
// the particles as the caller's method does and sets s.LogLik to the log-likelihoods of those it
// leaves. An error from next or stage ends the run; next must reach 1.
func Anneal(s *Tempered, next func(k int) (float64, error), stage func(k int, logZ float64) error) error {
	for k := 1; s.T < 1; k++ {
		t, err := next(k)
		if err != nil {
			return err
		}
		if !(t >= s.T && t <= 1) {
			return fmt.Errorf("smc: stage %d's temperature %v is not in [%v, 1]", k, t, s.T)
		}
		if err := stage(k, s.Temper(t)); err != nil {
			return err
		}
	}
	return nil
}
