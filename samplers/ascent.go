package samplers

import "math/rand/v2"

// Ascent is preconditioned gradient ascent on the tempered log posterior, θ ← θ + ε g ⊙ ĝ (drift
// clipped to MaxDrift): no noise, so not a sampler, and not registered. Chains use it to carry
// prior draws to a mode of the power posterior before burn-in proper; a Langevin chain started at
// a mode re-expands to the typical set within a few relaxation times, while one started at a prior
// draw can take hundreds of steps to come down from far out in the tails. It uses the metric.
type Ascent struct{}

var _ Kernel = Ascent{}

func (Ascent) NewState(int) State              { return nil }
func (Ascent) EndStep(State, bool, *rand.Rand) {}
func (Ascent) Update(_ State, in Input) {
	th, g, m := in.Theta[in.Lo:in.Hi], in.Grad[in.Lo:in.Hi], in.Metric[in.Lo:in.Hi]
	for i := range th {
		th[i] += clip(in.Eps*m[i]*g[i], in.MaxDrift)
	}
	if in.Mirror {
		mirror(th)
	}
}
