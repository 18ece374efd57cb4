// Package samplers holds the stochastic-gradient MCMC kernels that draw from power posteriors, their
// step-size schedules, and the subsample schedules that feed them (random subsamples, and the
// disjoint "parts" of a blocked matrix or tensor).
//
// A kernel is a value with no hidden state: NewState makes its per-coordinate state explicit and
// Update advances a range of coordinates given the gradient of the tempered log posterior, which
// the caller computes (an integrator is separate from the gradient estimator that feeds it).
// Ranges let the blocks of a part be updated by different goroutines. Every kernel registers
// itself by name, with its parameters and capabilities, from its own file (see Register).
package samplers

import (
	"math"
	"math/rand/v2"
)

// Input is one update of coordinates [Lo, Hi) of θ.
type Input struct {
	// Theta is the whole parameter vector; Grad the stochastic gradient of the tempered log
	// posterior t·(N/|S|)·Σ_S ∇ℓ_n + ∇ log p(θ) at Theta, for the same coordinates.
	Theta, Grad []float64
	// Metric and Gamma are the model's diagonal metric and its divergence at Theta, for kernels
	// with Capabilities.UsesMetric; nil otherwise.
	Metric, Gamma []float64
	Lo, Hi        int
	// Eps is the step size of this step.
	Eps float64
	// N is the number of data terms, for kernels that normalise gradients per datum.
	N int
	// Mirror asks for θ ← |θ| after the move (non-negative parameterisations).
	Mirror bool
	// Adapt is true during burn-in; kernels that adapt a preconditioner may stop when it is false.
	Adapt bool
	// MaxDrift, when positive, clips each coordinate's drift to [−MaxDrift, MaxDrift], at every
	// step: a trust region (the coordinate-wise taming of Brosse et al. 2019) for drifts that grow
	// like e^φ. From prior draws far from the posterior the local curvature badly underestimates
	// the curvature a long step runs into; after burn-in a metric frozen at one point, or a part's
	// gradient scaled by the number of parts, can kick a factor e-folds away, and the next step's
	// exact term −t·F·Π colsum then overflows. Where drifts are small, the clip changes nothing.
	MaxDrift float64
	// Rand is the random source for this range; the caller derives it from (seed, rank,
	// temperature, chain, step, range) so results do not depend on scheduling.
	Rand *rand.Rand
}

// State is a kernel's per-chain state, made by NewState and passed back to Update and EndStep.
type State interface{}

// Kernel is an SG-MCMC transition. One step of a chain is: Update on every coordinate range
// (concurrently for disjoint ranges), then EndStep once, with a random source of its own, for
// what the ranges share (a thermostat, a mass matrix being learnt, whether the first step is
// done). adapt is true during burn-in.
type Kernel interface {
	NewState(dim int) State
	Update(st State, in Input)
	EndStep(st State, adapt bool, r *rand.Rand)
}

// Capabilities is what a kernel asks of the chain that drives it.
type Capabilities struct {
	// UsesMetric: Update reads Input.Metric and Input.Gamma, the model's metric.
	UsesMetric bool
	// FreezesMetric: the chain holds the metric fixed after burn-in (with no divergence term).
	FreezesMetric bool
	// MetropolisHastings: Update over all coordinates is a proposal that the chain accepts or
	// rejects against the exact tempered posterior (the kernel implements MetropolisHastings), so
	// every step reads every cell.
	MetropolisHastings bool
}

// MetropolisHastings is the correction of a kernel whose Update is a proposal.
type MetropolisHastings interface {
	// LogAccept returns the log acceptance ratio of moving from cur to prop, where prop.Theta is
	// what Update wrote from cur.
	LogAccept(cur, prop *Point, eps float64) float64
	// TargetAccept is the acceptance rate the step size is tuned to during burn-in.
	TargetAccept() float64
}

// Point is a state with what a Metropolis–Hastings correction needs of it: the tempered log
// posterior, its gradient, and the metric and its divergence there.
type Point struct {
	Theta, Grad, Metric, Gamma []float64
	LogPost                    float64
}

// clip limits a drift to [−max, max]; max ≤ 0 means no limit.
func clip(d, max float64) float64 {
	if max > 0 {
		if d > max {
			return max
		}
		if d < -max {
			return -max
		}
	}
	return d
}

func mirror(theta []float64) {
	for i, v := range theta {
		theta[i] = math.Abs(v)
	}
}
