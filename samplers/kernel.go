// Package samplers holds the stochastic-gradient MCMC kernels that draw from power posteriors, their
// step-size schedules, and the subsample schedules that feed them (random subsamples, and the
// disjoint "parts" of a blocked matrix or tensor).
//
// A kernel is a value with no hidden state: NewState makes its per-coordinate state explicit and
// Update advances a range of coordinates given the gradient of the tempered log posterior, which
// the caller computes (an integrator is separate from the gradient estimator that feeds it).
// Ranges let the blocks of a part be updated by different goroutines.
package samplers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Input is one update of coordinates [Lo, Hi) of θ.
type Input struct {
	// Theta is the whole parameter vector; Grad the stochastic gradient of the tempered log
	// posterior t·(N/|S|)·Σ_S ∇ℓ_n + ∇ log p(θ) at Theta, for the same coordinates.
	Theta, Grad []float64
	// Metric and Gamma are the model's diagonal metric and its divergence at Theta, for kernels
	// with UsesMetric; nil otherwise.
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
	// MaxDrift, when positive, clips each coordinate's drift to [−MaxDrift, MaxDrift]: a trust
	// region for burn-in from prior draws far from the posterior, where the local curvature of an
	// exponential-family likelihood badly underestimates the curvature a long step runs into.
	MaxDrift float64
	// Rand is the random source for this range; the caller derives it from (seed, rank,
	// temperature, chain, step, range) so results do not depend on scheduling.
	Rand *rand.Rand
}

// State is a kernel's per-coordinate state, made by NewState and passed back to Update.
type State interface{}

// Kernel is an SG-MCMC transition for one range of coordinates.
type Kernel interface {
	Name() string
	// UsesMetric reports whether Update reads Input.Metric and Input.Gamma.
	UsesMetric() bool
	NewState(dim int) State
	Update(st State, in Input)
}

// ByName returns a kernel by its command-line name.
func ByName(name string) (Kernel, error) {
	switch strings.ToLower(name) {
	case "sgld":
		return SGLD{}, nil
	case "psgld":
		return PSGLD{Alpha: 0.99, Sigma: 1e-5, Freeze: true}, nil
	case "riemann", "rsgld":
		return MetricSGLD{}, nil
	case "lm", "lmsgld":
		return LMSGLD{}, nil
	case "mala":
		return MALA{}, nil
	case "sghmc":
		return SGHMC{}, nil
	case "sgnht":
		return SGNHT{}, nil
	case "sghmc-em":
		return SGHMC{EM: MassEM{On: true}}, nil
	case "sgnht-em":
		return SGNHT{EM: MassEM{On: true}}, nil
	}
	return nil, fmt.Errorf("unknown sampler %q (lmsgld, rsgld, mala, sgld, psgld, sghmc, sgnht, sghmc-em, sgnht-em)", name)
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

// SGLD is stochastic gradient Langevin dynamics (Welling & Teh 2011):
// θ ← θ + ε ĝ + η, η ~ N(0, 2ε I), with the tempered gradient of SPL 2018 eq. (6).
type SGLD struct{}

func (SGLD) Name() string       { return "sgld" }
func (SGLD) UsesMetric() bool   { return false }
func (SGLD) NewState(int) State { return nil }
func (SGLD) Update(_ State, in Input) {
	sd := math.Sqrt(2 * in.Eps)
	th, g := in.Theta[in.Lo:in.Hi], in.Grad[in.Lo:in.Hi]
	for i := range th {
		th[i] += in.Eps*g[i] + sd*in.Rand.NormFloat64()
	}
	if in.Mirror {
		mirror(th)
	}
}

// PSGLD is preconditioned SGLD (Li et al. 2016) as in SPL 2018 eqs. (8)–(9): G = diag(1/(σ + √v)),
// v ← αv + (1−α) ḡ⊙ḡ with ḡ the per-datum mean gradient, θ ← θ + ε G ĝ + N(0, 2εG). The papers drop
// the divergence term of the position-dependent G; with Freeze the preconditioner stops adapting
// after burn-in, so the sampling phase has a constant G and needs no such term.
type PSGLD struct {
	Alpha, Sigma float64
	Freeze       bool
}

type psgldState struct {
	v    []float64
	seen bool // whether v holds any gradient yet (the first gradient initialises it)
}

func (PSGLD) Name() string           { return "psgld" }
func (PSGLD) UsesMetric() bool       { return false }
func (PSGLD) NewState(dim int) State { return &psgldState{v: make([]float64, dim)} }
func (k PSGLD) Update(s State, in Input) {
	st := s.(*psgldState)
	th, g, v := in.Theta[in.Lo:in.Hi], in.Grad[in.Lo:in.Hi], st.v[in.Lo:in.Hi]
	n := float64(in.N)
	if n < 1 {
		n = 1
	}
	if in.Adapt || !k.Freeze {
		for i := range v {
			gb := g[i] / n
			if !st.seen {
				v[i] = gb * gb
			} else {
				v[i] = k.Alpha*v[i] + (1-k.Alpha)*gb*gb
			}
		}
	}
	for i := range th {
		G := 1 / (k.Sigma + math.Sqrt(v[i]))
		th[i] += in.Eps*G*g[i] + math.Sqrt(2*in.Eps*G)*in.Rand.NormFloat64()
	}
	if in.Mirror {
		mirror(th)
	}
}

// MarkSeen records that every coordinate's preconditioner has been initialised (called by the
// chain after the first full step).
func (st *psgldState) MarkSeen() { st.seen = true }

// Seer is implemented by kernel states that need to know when the first step is complete.
type Seer interface{ MarkSeen() }

// StepEnder is implemented by kernels with state shared by all coordinates (a thermostat, a
// mass matrix being learnt): the chain calls EndStep once per step, after every range has been
// updated, with a random source of its own. adapt is true during burn-in.
type StepEnder interface {
	EndStep(st State, adapt bool, r *rand.Rand)
}

// MetricSGLD is Langevin dynamics preconditioned by the model's diagonal metric g with its exact
// divergence term (the Riemannian correction of Girolami & Calderhead / Patterson & Teh):
// θ ← θ + ε (g ⊙ ĝ + γ) + N(0, 2ε g). With the model's metric ε is dimensionless: ε ≈ 1 is at the
// edge of stability along the stiffest direction.
type MetricSGLD struct{}

func (MetricSGLD) Name() string       { return "rsgld" }
func (MetricSGLD) UsesMetric() bool   { return true }
func (MetricSGLD) NewState(int) State { return nil }
func (MetricSGLD) Update(_ State, in Input) {
	th, g := in.Theta[in.Lo:in.Hi], in.Grad[in.Lo:in.Hi]
	m, gm := in.Metric[in.Lo:in.Hi], in.Gamma[in.Lo:in.Hi]
	for i := range th {
		th[i] += clip(in.Eps*(m[i]*g[i]+gm[i]), in.MaxDrift) + math.Sqrt(2*in.Eps*m[i])*in.Rand.NormFloat64()
	}
	if in.Mirror {
		mirror(th)
	}
}

// LMSGLD is MetricSGLD with the Leimkuhler–Matthews noise: the injected noise of a step is
// √(ε g/2)(ξ_k + ξ_{k+1}), reusing the previous step's draw. For a Gaussian target and a constant
// metric this samples the exact stationary distribution at any stable step (the Euler scheme
// inflates the variance by a factor 1/(1 − ελ/2)), and in general its bias is O(ε²) instead of O(ε).
type LMSGLD struct{}

type lmState struct {
	xi   []float64
	seen bool
}

func (LMSGLD) Name() string           { return "lmsgld" }
func (LMSGLD) UsesMetric() bool       { return true }
func (LMSGLD) NewState(dim int) State { return &lmState{xi: make([]float64, dim)} }
func (LMSGLD) Update(s State, in Input) {
	st := s.(*lmState)
	th, g := in.Theta[in.Lo:in.Hi], in.Grad[in.Lo:in.Hi]
	m, gm, xi := in.Metric[in.Lo:in.Hi], in.Gamma[in.Lo:in.Hi], st.xi[in.Lo:in.Hi]
	for i := range th {
		prev := xi[i]
		if !st.seen {
			prev = in.Rand.NormFloat64()
		}
		next := in.Rand.NormFloat64()
		th[i] += clip(in.Eps*(m[i]*g[i]+gm[i]), in.MaxDrift) + math.Sqrt(in.Eps*m[i]/2)*(prev+next)
		xi[i] = next
	}
	if in.Mirror {
		mirror(th)
	}
}

func (st *lmState) MarkSeen() { st.seen = true }

// Ascent is preconditioned gradient ascent on the tempered log posterior, θ ← θ + ε g ⊙ ĝ (drift
// clipped to MaxDrift): no noise, so not a sampler. Chains use it to carry prior draws to a mode
// of the power posterior before burn-in proper; a Langevin chain started at a mode re-expands to
// the typical set within a few relaxation times, while one started at a prior draw can take
// hundreds of steps to come down from far out in the tails.
type Ascent struct{}

func (Ascent) Name() string       { return "ascent" }
func (Ascent) UsesMetric() bool   { return true }
func (Ascent) NewState(int) State { return nil }
func (Ascent) Update(_ State, in Input) {
	th, g, m := in.Theta[in.Lo:in.Hi], in.Grad[in.Lo:in.Hi], in.Metric[in.Lo:in.Hi]
	for i := range th {
		th[i] += clip(in.Eps*m[i]*g[i], in.MaxDrift)
	}
	if in.Mirror {
		mirror(th)
	}
}
