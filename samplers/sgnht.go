package samplers

import "math/rand/v2"

func init() {
	registerUnderdamped("sgnht", "stochastic gradient Nosé–Hoover thermostat (Ding et al. 2014), BADODAB splitting",
		[]Param{
			{Name: "a", Default: 0.5, Help: "diffusion A: the friction the thermostat settles at with exact gradients", Check: positive},
			{Name: "mu", Default: 0, Help: "thermostat mass μ (0: max(1, 10/D))", Check: nonNegative},
		},
		func(p map[string]float64, em MassEM) Kernel {
			return SGNHT{A: p["a"], Mu: p["mu"], NoiseVar: p["noise-var"], BurninCap: p["burnin-cap"], EM: em}
		})
}

// SGNHT is the stochastic gradient Nosé–Hoover thermostat (Ding et al. 2014): SGHMC whose friction
// is a dynamic variable ξ, shared by all coordinates,
//
//	dθ = M⁻¹p dt,  dp = ∇L̃(θ) dt − ξ p dt + N(0, 2A M dt),  dξ = (pᵀM⁻¹p/D − 1) dt / μ,
//
// so the kinetic temperature is held at one whatever the (unknown, possibly position-independent)
// variance of the gradient noise: ξ settles at A plus the friction that noise needs. The stationary
// density is ∝ exp(−U(θ) − ½pᵀM⁻¹p − ½μD(ξ − ξ̄)²), whose θ-marginal is the target.
//
// The discretisation is the BADODAB splitting of Leimkuhler & Shang (2016), second order: the kick
// and a half drift (B A) in Update, in the normalised momentum u = M^{-1/2}p with the model metric
// as M⁻¹ so ε is dimensionless; then in EndStep, once every range has moved and the kinetic energy
// is known, a half step of ξ, the O step taken exactly at that ξ,
// u ← e^{−ξε}u + √(A(1 − e^{−2ξε})/ξ)·N(0, 1), another half step of ξ, and the second half drift
// (D O D A). Ding et al. use Euler, whose bias is O(ε). During burn-in ξ is kept in [0, 10A] (see
// thermo). Non-negativity is handled by reflection, as in SGHMC.
type SGNHT struct {
	// A is the diffusion: the friction ξ settles at when the gradient is exact (0: 0.5, as SGHMC's
	// friction).
	A float64
	// Mu is the thermostat mass μ: ξ fluctuates with standard deviation 1/√(μD). 0 means
	// max(1, 10/D): Ding et al.'s μ = 1, raised in low dimension, where ξ's fluctuations (sd 0.7 in
	// two dimensions) otherwise bias the θ-marginal at large steps (−9% in the variance at ε = 1).
	Mu float64
	// NoiseVar is an optional B̂, as for SGHMC.
	NoiseVar float64
	// EM learns the inverse mass during burn-in (SGNHT-EM).
	EM MassEM
	// BurninCap caps the step during burn-in, as for SGHMC.
	BurninCap float64
}

func (k SGNHT) dyn() dynamics {
	a := k.A
	if a <= 0 {
		a = 0.5
	}
	return dynamics{thermostat: true, a: a, mu: k.Mu, noiseVar: k.NoiseVar, em: k.EM.withDefaults(), stepCap: stepCap(k.BurninCap)}
}

var _ Kernel = SGNHT{}

func (k SGNHT) NewState(dim int) State   { return k.dyn().newState(dim) }
func (k SGNHT) Update(s State, in Input) { k.dyn().update(s.(*hmcState), in) }
func (k SGNHT) EndStep(s State, adapt bool, r *rand.Rand) {
	k.dyn().endStep(s.(*hmcState), adapt, r)
}
