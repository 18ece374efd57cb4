package samplers

import (
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/internal/quad"
)

// SG-NPHMC lives with the tests, which show why it is not offered as a kernel.

// NPHMC is the stochastic-gradient Nosé–Poincaré sampler SG-NPHMC of Roychowdhury & Parthasarathy
// (2017, eq. 7; after Bond, Leimkuhler & Laird 1999 and Roychowdhury et al. 2016): the generalised
// leapfrog of the Nosé–Poincaré Hamiltonian
//
//	H_NP = s·[−L(θ) + ½(p/s)ᵀM⁻¹(p/s) + q²/(2Q) + D·log s − H₀]
//
// (thermostat position s, its momentum q and mass Q, D degrees of freedom, kT = 1, H₀ set so that
// H_NP = 0 at the start) with friction B on p and A on q and the matching Gaussian noise — the
// "Fokker–Planck corrections" — in each half step:
//
//	p½  = [p + ε/2·s∇L̃(θ) + √(Bε)ξ] / (1 + ε/2·B·M⁻¹/s)
//	q½  solves ε/(4Q)·q½² + (1 + εAs/(2Q))·q½ − [q + ε/2·(L̃(θ) + ½p½ᵀM⁻¹p½/s² − D(1 + log s) + H₀) + √(Aε)ξ] = 0
//	s'  = s·(1 + εq½/(2Q)) / (1 − εq½/(2Q))
//	θ'  = θ + ε/2·(1/s + 1/s')·M⁻¹p½
//	p'  = p½ + ε/2·(s'∇L̃(θ') − B·M⁻¹p½/s') + √(Bε)ξ
//	q'  = q½ + ε/2·(L̃(θ') + ½p½ᵀM⁻¹p½/s'² − q½²/(2Q) − D(1 + log s') + H₀ − As'q½/Q) + √(Aε)ξ
//
// (the paper's text of eq. 7 is garbled in our copy; this is the scheme its fragments and its
// references determine). Like HMC-EM it needs log-density values L̃, which the STI chain runner does
// not supply, so it is a standalone sampler over a target func(θ, grad, r) float64.
//
// It does not sample the target. With A = B = 0 (exact gradients) it is the deterministic
// Nosé–Poincaré integrator, which conserves H_NP ≈ 0 and samples exp(−U) only on the shell
// H_NP = 0 and only when the dynamics are ergodic there — which they are not for Gaussian targets
// (the Nosé–Hoover family is famously non-ergodic on harmonic systems). With A, B > 0 the friction
// and noise are exactly the Fokker–Planck terms that make exp(−H_NP) stationary (Proposition 2
// holds in that sense); but the θ-marginal of exp(−H_NP) is not exp(−U): integrating p, q and s out
// leaves ∝ f(U(θ) − H₀) with f(c) = ∫₀^∞ s^{(D−1)/2} exp(−sc − Ds·log s) ds, which decays like
// c^{−(D+1)/2} — a polynomial tail in θ (for a Gaussian target, density ∝ |θ|^{−(D+1)}) in place of
// the Gaussian one. The noise moves H_NP off zero, and the canonical property of Nosé–Poincaré
// lives only on that shell. The tests show both: energy conservation of the deterministic scheme,
// and the stochastic scheme matching f rather than the target.
type NPHMC struct {
	Eps float64
	// Q is the thermostat mass (0: 1); A and B the friction on q and on p.
	Q, A, B float64
	// InvMass is the diagonal inverse mass (nil: identity).
	InvMass []float64
}

// NPHMCResult reports a run: the gradient evaluations, the largest |H_NP| seen (conserved near
// zero by the deterministic scheme), H₀, and the final s and q.
type NPHMCResult struct {
	Evals         int
	MaxAbsH, H0   float64
	S, Q          float64
	Failed        bool // the implicit q half step had no real root, or s left (0, ∞)
	FailedAt      int
	Steps, Burnin int
}

// Sample runs the scheme from theta (updated in place), with p ~ N(0, M), s = 1, q = 0 at the
// start, calling record after every step past burn-in. target returns L̃(θ) (a log density up to a
// constant, or its stochastic estimate) and writes ∇L̃ into grad (which it receives zeroed).
func (k NPHMC) Sample(target func(theta, grad []float64, r *rand.Rand) float64, theta []float64, steps, burnin int, r *rand.Rand, record func(theta []float64)) NPHMCResult {
	n := len(theta)
	D := float64(n)
	Q := k.Q
	if Q <= 0 {
		Q = 1
	}
	eps, A, B := k.Eps, k.A, k.B
	minv := make([]float64, n)
	for i := range minv {
		minv[i] = 1
		if k.InvMass != nil {
			minv[i] = k.InvMass[i]
		}
	}
	grad := make([]float64, n)
	p := make([]float64, n)
	for i := range p {
		p[i] = r.NormFloat64() / math.Sqrt(minv[i])
	}
	s, q := 1.0, 0.0
	L := target(theta, grad, r)
	res := NPHMCResult{Evals: 1, Steps: steps, Burnin: burnin}
	kin := func(p []float64, s float64) float64 {
		v := 0.0
		for i, pi := range p {
			v += pi * pi * minv[i]
		}
		return 0.5 * v / (s * s)
	}
	h0 := -L + kin(p, s) + q*q/(2*Q) + D*math.Log(s)
	res.H0 = h0
	for step := 1; step <= steps; step++ {
		for i := range p {
			num := p[i] + 0.5*eps*s*grad[i] + math.Sqrt(B*eps)*r.NormFloat64()
			p[i] = num / (1 + 0.5*eps*B*minv[i]/s)
		}
		K := kin(p, s)
		a := eps / (4 * Q)
		b := 1 + eps*A*s/(2*Q)
		c := q + 0.5*eps*(L+K-D*(1+math.Log(s))+h0) + math.Sqrt(A*eps)*r.NormFloat64()
		disc := b*b + 4*a*c
		if !(disc >= 0) {
			res.Failed, res.FailedAt = true, step
			break
		}
		qh := 2 * c / (b + math.Sqrt(disc)) // the root that tends to c as ε → 0
		x := eps * qh / (2 * Q)
		s1 := s * (1 + x) / (1 - x)
		if !(s1 > 0) || math.IsInf(s1, 0) {
			res.Failed, res.FailedAt = true, step
			break
		}
		for i := range theta {
			theta[i] += 0.5 * eps * (1/s + 1/s1) * minv[i] * p[i]
		}
		clear(grad)
		L = target(theta, grad, r)
		res.Evals++
		Kh := 0.0
		for i := range p {
			Kh += p[i] * p[i] * minv[i]
		}
		Kh *= 0.5 / (s1 * s1)
		for i := range p {
			p[i] += 0.5*eps*(s1*grad[i]-B*minv[i]*p[i]/s1) + math.Sqrt(B*eps)*r.NormFloat64()
		}
		q = qh + 0.5*eps*(L+Kh-qh*qh/(2*Q)-D*(1+math.Log(s1))+h0-A*s1*qh/Q) + math.Sqrt(A*eps)*r.NormFloat64()
		s = s1
		if math.IsNaN(L) || math.IsNaN(q) {
			res.Failed, res.FailedAt = true, step
			break
		}
		h := s * (-L + kin(p, s) + q*q/(2*Q) + D*math.Log(s) - h0)
		res.MaxAbsH = math.Max(res.MaxAbsH, math.Abs(h))
		if step > burnin && record != nil {
			record(theta)
		}
	}
	res.S, res.Q = s, q
	return res
}

// NPMarginal returns the unnormalised θ-marginal density that exp(−H_NP) implies at potential
// value U(θ) = u: f(u − H₀) = ∫₀^∞ s^{(D−1)/2} exp(−s(u − H₀) − D·s·log s) ds (integrated in log s). It is what SG-NPHMC with A, B > 0 samples in place of exp(−u).
func NPMarginal(u, h0 float64, dim int) float64 {
	D := float64(dim)
	c := u - h0
	logf := func(ls float64) float64 { // integrand in log s, times the Jacobian s
		s := math.Exp(ls)
		return (D+1)/2*ls - s*c - D*s*ls
	}
	return math.Exp(quad.LogIntegral(logf))
}
