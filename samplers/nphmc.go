package samplers

import (
	"math"
	"math/rand/v2"
	"sync"
)

func init() {
	registerUnderdamped("sgnphmc", "stochastic gradient Nosé–Poincaré HMC (Roychowdhury & Parthasarathy 2017), generalised leapfrog on the zero-energy shell, Langevin O step on the real momentum",
		[]Param{
			{Name: "friction", Default: 0.5, Help: "friction B on the real momentum p/s, per unit of ε", Check: positive},
			{Name: "a", Default: 0, Help: "friction A on the thermostat ξ = q/Q (0: none)", Check: nonNegative},
			{Name: "mu", Default: 0, Help: "thermostat mass per degree of freedom, Q = μD (0: max(1, 10/D))", Check: nonNegative},
		},
		func(p map[string]float64, em MassEM) Kernel {
			return SGNPHMC{Friction: p["friction"], A: p["a"], Mu: p["mu"], NoiseVar: p["noise-var"], BurninCap: p["burnin-cap"], EM: em}
		})
}

// SGNPHMC is the stochastic-gradient Nosé–Poincaré sampler SG-NPHMC of Roychowdhury &
// Parthasarathy (2017, eqs. 6–7, after Bond, Leimkuhler & Laird 1999), with and without the Monte
// Carlo EM mass (SG-NPHMC-EM). Its deterministic part is the generalised leapfrog of
//
//	H_NP = s·[−L(θ) + ½pᵀM⁻¹p/s² + q²/(2Q) + D·log s − H₀]
//
// (thermostat position s, momentum q, mass Q, D degrees of freedom, kT = 1): a kick of p by
// (ε/2)s∇L̃, a half step of q, the step of s, a drift of θ by (ε/2)(1/s + 1/s')M⁻¹p and the
// mirror images. On its zero shell H_NP = 0 these are the Nosé–Hoover equations in the real
// variables π = p/s, ξ = q/Q, whose invariant density exp(−U − ½πᵀM⁻¹π − ½Qξ²) has the target as
// its θ-marginal.
//
// The scheme as the paper writes it diverged (the version kept in git history at a33a35e,
// samplers/nphmc_impl_test.go), for three reasons, each removed here at its cause:
//
//   - Its friction A, B and noise on q and p are the Fokker–Planck terms that make exp(−H_NP)
//     stationary, but the canonical property of Nosé–Poincaré lives only on the shell H_NP = 0:
//     the θ-marginal of exp(−H_NP) decays like |θ|^{−(D+1)}, and its s-marginal piles up at s → 0.
//     Here the noise acts on the real momentum π = p/s at kT = 1 (an exact Ornstein–Uhlenbeck step
//     with friction B, which keeps π ~ N(0, M) whatever θ and ξ), and after it H₀ is re-set so that
//     H_NP = 0 (the Poincaré transform's H − H₀ term): each deterministic stretch runs on its own
//     zero shell, where it is Nosé–Hoover. On that shell ∂H_NP/∂s = D − pᵀM⁻¹p/s², so each half
//     step of q is explicit, q ± (ε/2)·((K + K')/s² − D) with the kinetic energies at the half
//     step's two ends: the kernel needs gradients only, like the others, and there is no implicit
//     q step (a quadratic) to lose its real root.
//   - The generalised leapfrog's Cayley step s' = s(1 + εξ/2)/(1 − εξ/2) has no positive solution
//     once |εξ| ≥ 2: the step size against the thermostat's rescaling of time, hit within 2·10⁵
//     steps at ε = 1 in two dimensions. With q frozen the s equation ṡ = sξ is solved exactly,
//     s' = s·e^{εξ}, which keeps the step symmetric and never fails.
//   - s is set back to one after every step (p ← p/s, H₀ ← H₀ + D·log s): H_NP is invariant under
//     s → cs, p → cp, H₀ → H₀ + D·log c, and log s = ∫ξ dt is otherwise a random walk that leaves
//     the range of floating point.
//
// The O step sits between the two half drifts (a BAOAB-like order), so with Q → ∞ the kernel is
// SGHMC's BAOAB, exact in θ on a Gaussian. The thermostat absorbs the heat of the gradient noise
// as SGNHT's does (ξ settles above zero by what the noise needs); NoiseVar removes a known part of
// it from the O step's noise, as for SGHMC. A, when positive, adds an exact Ornstein–Uhlenbeck step
// on ξ towards N(0, 1/Q), the paper's friction on q. During burn-in ξ is held in [0, 10B], as
// SGNHT's is (far from equilibrium the kinetic energy can be thousands of times D, and an
// unbounded ξ would freeze the chain for as many steps); the sampling phase runs the exact
// thermostat. The learnt mass is diagonal (the whole step runs in EndStep, where a dense mass
// would need SGHMC's dense drift; that is not built). Non-negativity is by reflection, which keeps
// the kinetic energy and so the shell.
type SGNPHMC struct {
	// Friction is B on the real momentum (0: 0.5), A the friction on ξ.
	Friction, A float64
	// Mu is the thermostat mass per degree of freedom (0: max(1, 10/D), as SGNHT's μ).
	Mu float64
	// NoiseVar is an optional B̂, as for SGHMC.
	NoiseVar float64
	// EM learns the (diagonal) inverse mass during burn-in (SG-NPHMC-EM).
	EM MassEM
	// BurninCap caps the step during burn-in, as for SGHMC.
	BurninCap float64
}

var _ Kernel = SGNPHMC{}

// npState is the per-chain state. Between steps u holds the normalised half-step momentum
// M^{-1/2}p½ at thermostat position s (the next Update's gradient completes the kick), xi the half
// step ξ½ and k the kinetic energy ½|u|² that ended the O step.
type npState struct {
	dim          int
	u, g, metric []float64
	mirror       []bool
	seen         bool
	xi, s, k     float64
	lastEps      float64

	mu       sync.Mutex
	theta    []float64
	eps      float64
	maxDrift float64

	em *emState
}

func (k SGNPHMC) friction() float64 {
	if k.Friction <= 0 {
		return 0.5
	}
	return k.Friction
}

func (k SGNPHMC) NewState(dim int) State {
	st := &npState{dim: dim, u: make([]float64, dim), g: make([]float64, dim), metric: make([]float64, dim), mirror: make([]bool, dim), s: 1}
	for i := range st.metric {
		st.metric[i] = 1
	}
	if k.EM.On {
		em := k.EM
		em.DenseMax = -1
		st.em = newEMState(em, dim)
	}
	return st
}

// Update records the range's gradient, metric and mirror flags; the step runs in EndStep, whose
// thermostat couples every coordinate.
func (k SGNPHMC) Update(s State, in Input) {
	st := s.(*npState)
	lo, hi := in.Lo, in.Hi
	if in.Metric != nil && (in.Adapt || !st.seen) {
		copy(st.metric[lo:hi], in.Metric[lo:hi])
	}
	eps := in.Eps
	if c := stepCap(k.BurninCap); in.Adapt && c > 0 && eps > c {
		eps = c
	}
	st.mu.Lock()
	st.theta, st.eps, st.maxDrift = in.Theta, eps, in.MaxDrift
	st.mu.Unlock()
	copy(st.g[lo:hi], in.Grad[lo:hi])
	for j := lo; j < hi; j++ {
		st.mirror[j] = in.Mirror
	}
	if em := st.em; em != nil && em.collecting() && em.cfg.Source == Forces {
		for j := lo; j < hi; j++ {
			em.buf[j] = math.Sqrt(st.metric[j]) * in.Grad[j]
		}
		em.addRange(lo, hi)
	}
}

// scale is √(M⁻¹) of coordinate j: the metric times the learnt correction.
func (st *npState) scale(j int) float64 {
	if st.em != nil {
		return math.Sqrt(st.metric[j] * st.em.mt[j])
	}
	return math.Sqrt(st.metric[j])
}

func (st *npState) kinetic() float64 {
	k := 0.0
	for _, v := range st.u {
		k += v * v
	}
	return k / 2
}

func (k SGNPHMC) EndStep(s State, adapt bool, r *rand.Rand) {
	st := s.(*npState)
	if st.theta == nil {
		return // no Update this step
	}
	D := float64(st.dim)
	mu := k.Mu
	if mu <= 0 {
		mu = math.Max(1, 10/D)
	}
	Q := mu * D
	eps := st.eps
	// bound holds ξ during burn-in (see SGNPHMC).
	bound := func(xi float64) float64 {
		if !adapt {
			return xi
		}
		return math.Min(math.Max(xi, 0), 10*k.friction())
	}
	if st.seen {
		// The last step's second half: q' from the kinetic energy of p½ (after the O step), then
		// the kick at s'.
		e, sp := st.lastEps, st.s
		st.xi = bound(st.xi + e/(2*Q)*(2*st.k/(sp*sp)-D))
		for j := range st.u {
			st.u[j] += 0.5 * e * sp * st.scale(j) * st.g[j]
		}
		// s back to one: p ← p/s', H₀ re-set.
		for j := range st.u {
			st.u[j] /= sp
		}
	} else {
		for j := range st.u {
			st.u[j] = r.NormFloat64()
		}
		st.xi = 0
	}
	if k.A > 0 {
		c := math.Exp(-k.A * eps)
		st.xi = c*st.xi + math.Sqrt((1-c)*(1+c)/Q)*r.NormFloat64()
	}
	// First half: the kick, then q½ from the kinetic energy of p½.
	for j := range st.u {
		sm := st.scale(j)
		u := st.u[j] + 0.5*eps*sm*st.g[j]
		if st.maxDrift > 0 {
			lim := st.maxDrift / (eps * sm)
			u = math.Min(math.Max(u, -lim), lim)
		}
		st.u[j] = u
	}
	xi := bound(st.xi + eps/(2*Q)*(2*st.kinetic()-D))
	sp := math.Exp(eps * xi)
	// Drift with 1/s = 1, the O step on π = p/s' at s', drift with 1/s'.
	fr := math.Exp(-k.friction() * eps)
	th := st.theta
	for j, u := range st.u {
		sm := st.scale(j)
		th[j] += 0.5 * eps * sm * u
		if st.mirror[j] && th[j] < 0 {
			th[j], u = -th[j], -u
		}
		mt := 1.0
		if st.em != nil {
			mt = st.em.mt[j]
		}
		u = sp * (fr*u/sp + noiseSD(fr, eps, k.NoiseVar*mt)*r.NormFloat64())
		th[j] += 0.5 * eps * sm * u / sp
		if st.mirror[j] && th[j] < 0 {
			th[j], u = -th[j], -u
		}
		st.u[j] = u
	}
	st.xi, st.s, st.k, st.lastEps, st.seen = xi, sp, st.kinetic(), eps, true
	if e := st.em; e != nil {
		if e.collecting() && e.cfg.Source != Forces {
			for j := range st.u {
				if e.cfg.Source == Positions {
					e.buf[j] = th[j] / math.Sqrt(st.metric[j])
				} else {
					e.buf[j] = st.u[j] / sp / math.Sqrt(e.mt[j])
				}
			}
			e.addRange(0, st.dim)
		}
		e.endStep(adapt, eps)
	}
}
