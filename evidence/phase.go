package evidence

import "math"

// PhaseZ is how many standard deviations of log p(X | θ) at their temperature the rungs' means
// and a walk back up the ladder must part by, at two adjacent rungs and in the same direction, for
// PhaseCheck to call it a change of phase: well above what the most parted pair of rungs reaches
// on data with one phase, well below what a change of phase gives (docs/measurements.md).
const PhaseZ = 3

// PhaseCheck compares the rungs' means of f(t) with a walk's means ascent[i − from] at rungs
// from, …, len(l) − 1, a walk that started in the rungs' own state at rung from and climbed the
// ladder (sti's phase check). Where f(t) has one phase at every t the walk follows the rungs'
// chains within their noise. Where it changes phase, the chains, which start from a walk down the
// ladder from t = 1, keep the phase of t = 1 below the temperature where the two phases carry
// equal mass, and the walk up keeps the other above it: between the two the means part by many
// standard deviations. It returns the area between the two curves, Σ Δt·(g_{i−1} + g_i)/2 of the
// gaps g = f − ascent (trapezoid in t), and whether two adjacent rungs part by PhaseZ standard
// deviations (√Var_t[log p(X | θ)], the rung's VarLogLik) in the same direction.
//
// The walk starts in the chains' own state, so at its first two rungs it must agree with them;
// where it parts from them there already, its sweeps cannot keep up with the data and say
// nothing about phases, and PhaseCheck returns unchecked instead.
func PhaseCheck(l Ladder, rungs []Rung, from int, ascent []float64) (area float64, phase, unchecked bool) {
	if from < 0 || from+len(ascent) != len(l) || len(rungs) != len(l) {
		return math.NaN(), false, true
	}
	prevGap, prevZ := 0.0, 0.0
	for k, a := range ascent {
		i := from + k
		gap := rungs[i].MeanLogLik - a
		z := gap / math.Sqrt(rungs[i].VarLogLik)
		if k < 2 && !(math.Abs(z) < PhaseZ) {
			unchecked = true
		}
		if k > 0 {
			area += (l[i] - l[i-1]) * (prevGap + gap) / 2
			phase = phase || (math.Abs(z) >= PhaseZ && math.Abs(prevZ) >= PhaseZ && z*prevZ > 0)
		}
		prevGap, prevZ = gap, z
	}
	return area, phase && !unchecked, unchecked
}

// PhaseVariance is the variance a change of phase with that Hysteresis adds to the estimate. The
// chains hold one phase down to where the other takes over and the walk up the other phase up to
// where the first does; the evidence lies between the two integrals, which differ by the area,
// and where between them is not known: the variance of a uniform distribution over that width.
func PhaseVariance(hysteresis float64) float64 { return hysteresis * hysteresis / 12 }
