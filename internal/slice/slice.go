// Package slice is univariate slice sampling (Neal 2003) and the one conditional the Poisson CP
// samplers draw with it: the log-scale of a component between two factors, shared by the engine's
// Gibbs kernel (models.Poisson.rescale) and the baselines' Gibbs sampler.
package slice

import (
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/internal/logtab"
)

// Step is one univariate slice-sampling update (Neal 2003: stepping out by w, at most 32 steps,
// then shrinkage) of x0 under the log density h. It leaves the density invariant.
func Step(r *rand.Rand, h func(float64) float64, x0, w float64) float64 {
	return StepAt(r, h, x0, h(x0), w)
}

// StepAt is Step with h(x0) = h0 given, for a caller that has it at hand: it saves one evaluation
// of h of the five to seven an update takes. The last evaluation of h is at the point returned,
// unless that is x0.
func StepAt(r *rand.Rand, h func(float64) float64, x0, h0, w float64) float64 {
	y := h0 - r.ExpFloat64()
	lo := x0 - w*r.Float64()
	hi := lo + w
	const maxSteps = 32
	j := int(r.Float64() * maxSteps)
	k := maxSteps - 1 - j
	for ; j > 0 && h(lo) > y; j-- {
		lo -= w
	}
	for ; k > 0 && h(hi) > y; k-- {
		hi += w
	}
	for range 200 {
		x := lo + r.Float64()*(hi-lo)
		if h(x) > y {
			return x
		}
		if x < x0 {
			lo = x
		} else {
			hi = x
		}
	}
	return x0
}

// LogScale draws u = log c, where a component's column of a factor with n1 rows is multiplied by c
// and the same column of a factor with n2 rows divided by it, from its conditional given everything
// else, by three slice updates from u = 0. The likelihood of a Poisson CP model does not change
// along these orbits; under exponential priors, with a and b the two columns' sums times their
// prior rates, and the Jacobian c^(n1−n2) of the map on the scaling group's Haar measure,
//
//	log p(u) = (n1 − n2)·u − a·e^u − b·e^(−u) + const,
//
// in the factors and in their logarithms alike.
func LogScale(r *rand.Rand, n1, n2, a, b float64) float64 {
	h := func(u float64) float64 {
		e := logtab.Exp(u)
		return (n1-n2)*u - a*e - b/e
	}
	w := 2 / math.Sqrt(n1+n2)
	u := 0.0
	for range 3 {
		u = Step(r, h, u, w)
	}
	return u
}
