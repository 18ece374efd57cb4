// Package smc is a sequential Monte Carlo sampler (Del Moral, Doucet & Jasra 2006) reduced to its
// driver: a population of particles is carried along a path of targets π_0, …, π_S by importance
// reweighting, resampling when the effective sample size falls, and a move that leaves the current
// target invariant. The path — what the targets are, how π_0 is drawn exactly, which kernel moves
// the particles — is the caller's; annealed importance sampling is the same driver that never
// resamples, and plain importance sampling is a path of one stage with no move.
package smc

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/internal/quad"
)

// Path is a sequence of unnormalised targets π_0, …, π_S over a state in R^Dim. Only the ratios
// π_n/π_{n−1} matter, through LogTarget, which may drop any term common to every stage (such as a
// prior every stage shares) but must keep every term that differs between stages.
type Path interface {
	// Dim is the length of a particle's state.
	Dim() int
	// Stages is S: the path runs π_0 → π_S.
	Stages() int
	// Init draws x exactly from π_0 normalised and returns log Z_0, its normalising constant.
	Init(r *rand.Rand, x []float64) float64
	// LogTarget is log π_n(x) less the terms common to all stages.
	LogTarget(n int, x []float64) float64
	// Move applies a Markov kernel that leaves π_n invariant.
	Move(n int, r *rand.Rand, x []float64)
}

// Config sets the population.
type Config struct {
	// Particles is the population size N.
	Particles int
	// ResampleBelow resamples when the effective sample size falls below ResampleBelow·N; 0
	// never resamples (annealed importance sampling), 1 resamples at every stage.
	ResampleBelow float64
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Particles < 1:
		return fmt.Errorf("smc: particles %d must be at least 1", c.Particles)
	case !(c.ResampleBelow >= 0 && c.ResampleBelow <= 1):
		return fmt.Errorf("smc: resampling threshold %v must lie in [0, 1]", c.ResampleBelow)
	}
	return nil
}

// Result is one run's estimate.
type Result struct {
	// LogZ is the estimate of log Z_S; exp(LogZ) is unbiased for Z_S.
	LogZ float64
	// Resamplings counts the stages at which the population was resampled.
	Resamplings int
	// MinESS is the smallest effective sample size met before any resampling, as a fraction of N.
	MinESS float64
	// Divergence names the first stage at which a weight was not a number; empty when none was.
	Divergence string
}

// Run carries cfg.Particles particles along path and returns the estimate of log Z_S. All
// randomness comes from r, so a run is reproduced by its stream.
func Run(path Path, cfg Config, r *rand.Rand) Result {
	n, d := cfg.Particles, path.Dim()
	x := make([]float64, n*d)
	spare := make([]float64, n*d)
	logw := make([]float64, n)
	res := Result{MinESS: 1}
	var logZ0 float64
	for i := range n {
		logZ0 = path.Init(r, x[i*d:(i+1)*d])
	}
	logZ := logZ0
	idx := make([]int, n)
	for s := 1; s <= path.Stages(); s++ {
		for i := range n {
			p := x[i*d : (i+1)*d]
			logw[i] += path.LogTarget(s, p) - path.LogTarget(s-1, p)
		}
		lse, ess := quad.LogSumExp(logw), essFraction(logw)
		if math.IsNaN(lse) || math.IsInf(lse, 1) {
			res.Divergence = fmt.Sprintf("stage %d: log weight %v", s, lse)
			res.LogZ = math.NaN()
			return res
		}
		res.MinESS = min(res.MinESS, ess)
		if ess < cfg.ResampleBelow {
			logZ += lse - math.Log(float64(n))
			systematic(r, logw, lse, idx)
			for i, j := range idx {
				copy(spare[i*d:(i+1)*d], x[j*d:(j+1)*d])
			}
			x, spare = spare, x
			clear(logw)
			res.Resamplings++
		}
		if s == path.Stages() {
			break // a move after the last reweighting would not change the estimate
		}
		for i := range n {
			path.Move(s, r, x[i*d:(i+1)*d])
		}
	}
	res.LogZ = logZ + quad.LogSumExp(logw) - math.Log(float64(n))
	return res
}

// essFraction is the effective sample size (Σw)²/Σw² of the weights exp(logw), divided by N.
func essFraction(logw []float64) float64 {
	m := math.Inf(-1)
	for _, a := range logw {
		m = max(m, a)
	}
	var s, s2 float64
	for _, a := range logw {
		w := math.Exp(a - m)
		s += w
		s2 += w * w
	}
	return s * s / s2 / float64(len(logw))
}

// systematic fills idx with the ancestors systematic resampling draws in proportion to
// exp(logw − lse): one uniform, N evenly spaced points, the lowest-variance of the standard schemes
// (Douc, Cappé & Moulines 2005).
func systematic(r *rand.Rand, logw []float64, lse float64, idx []int) {
	n := len(logw)
	u := r.Float64() / float64(n)
	var cum float64
	j := 0
	for i := range n {
		for j < n-1 && cum+math.Exp(logw[j]-lse) <= u {
			cum += math.Exp(logw[j] - lse)
			j++
		}
		idx[i] = j
		u += 1 / float64(n)
	}
}

// Combine merges independent runs' estimates log Ẑ_r of one constant into log of their mean —
// itself unbiased for Z, and less biased on the log scale than the mean of the logs — with the
// delta-method standard error of that log, sd(Ẑ)/(√R·mean Ẑ); 0 for a single run.
func Combine(logZ []float64) (logMean, stderr float64) {
	r := float64(len(logZ))
	lse := quad.LogSumExp(logZ)
	logMean = lse - math.Log(r)
	if len(logZ) < 2 || math.IsInf(logMean, 0) || math.IsNaN(logMean) {
		return logMean, 0
	}
	var ss float64
	for _, l := range logZ {
		q := math.Exp(l-logMean) - 1
		ss += q * q
	}
	return logMean, math.Sqrt(ss / (r - 1) / r)
}
