package samplers

import (
	"math"
	"math/rand/v2"
)

// Test-only samplers and accessors: HMC (the paper's HMC-EM) is a reference the -EM tests compare
// with; nothing outside the tests runs it.

// HMC is Hamiltonian Monte Carlo (Duane et al. 1987; Neal 2011): Leapfrog steps of the Hamiltonian
// −log π(θ) + ½pᵀM⁻¹p from p ~ N(0, M), then a Metropolis–Hastings test, so the chain is exact at
// any step. With EM.On it is the paper's HMC-EM (Alg. 1): the iterations of burn-in are the E-step
// of the mass adaptation (see MassEM; the metric is the initial InvMass, and there is no
// stability bound and, unless MaxScale is set, no cap, since the Metropolis test guards every
// move). It needs log-density values, which
// the STI chain runner does not provide (it supplies stochastic gradients only), so it is a
// standalone sampler over a target func(θ, grad) float64, for small problems and reference runs.
type HMC struct {
	// Eps is the leapfrog step (the initial one when TargetAccept is set); Leapfrog the number of
	// leapfrog steps per iteration (0: 10). Each iteration's step is jittered by ±10% so that
	// trajectories are not periodic.
	Eps      float64
	Leapfrog int
	// TargetAccept, when positive, adapts ε during burn-in by Robbins–Monro on log ε.
	TargetAccept float64
	// InvMass is the initial diagonal inverse mass (nil: the identity).
	InvMass []float64
	EM      MassEM
}

// HMCResult reports a run.
type HMCResult struct {
	// Accepted counts accepted proposals after burn-in; Evals the gradient evaluations.
	Accepted, Evals int
	Eps             float64
	// InvMass is the diagonal of the final inverse mass, DenseInvMass the whole of it (row-major)
	// when it is dense.
	InvMass, DenseInvMass []float64
	// Sizes are the E-step sizes of the M-steps, Grew whether the test grew S after each.
	Sizes []int
	Grew  []bool
}

// Sample runs steps iterations (burnin of them adapting) from theta, which it updates in place,
// calling record after every iteration past burn-in. logp returns log π(θ) up to a constant and
// writes its gradient into grad (which it receives zeroed).
func (h HMC) Sample(logp func(theta, grad []float64) float64, theta []float64, steps, burnin int, r *rand.Rand, record func(theta []float64)) HMCResult {
	n := len(theta)
	L := h.Leapfrog
	if L <= 0 {
		L = 10
	}
	w := make([]float64, n) // square root of the initial inverse mass: the whitening scale
	for i := range w {
		w[i] = 1
		if h.InvMass != nil {
			w[i] = math.Sqrt(h.InvMass[i])
		}
	}
	cfg := h.EM
	cfg.MaxOmega = -1 // the Metropolis test guards stability
	if cfg.MaxScale == 0 {
		cfg.MaxScale = -1
	}
	em := newEMState(cfg, n)
	if !h.EM.On {
		em.frozen = true
	}
	// The Cholesky factor of M⁻¹ = W M̃⁻¹ W is W·L̃.
	chol := make([]float64, n*n)
	setChol := func() {
		for i := range n {
			for j := 0; j <= i; j++ {
				if em.dense {
					chol[i*n+j] = w[i] * em.lt[i*n+j]
				} else if i == j {
					chol[i*n+i] = w[i] * math.Sqrt(em.mt[i])
				}
			}
		}
	}
	setChol()
	dm := &denseMass{n: n, chol: chol, v: make([]float64, n)}
	res := HMCResult{Eps: h.Eps}
	eps := h.Eps
	grad, g1 := make([]float64, n), make([]float64, n)
	th1, u, u0, tmp := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	lp := logp(theta, grad)
	res.Evals++
	kick := func(u, g []float64, s float64) { // u += s·Lᵀg
		for j := range n {
			v := 0.0
			for i := j; i < n; i++ {
				v += chol[i*n+j] * g[i]
			}
			u[j] += s * v
		}
	}
	for k := 1; k <= steps; k++ {
		adapt := k <= burnin
		e := eps * (0.9 + 0.2*r.Float64())
		for i := range u {
			u[i] = r.NormFloat64()
		}
		copy(u0, u)
		copy(th1, theta)
		copy(g1, grad)
		h0 := -lp
		for _, v := range u {
			h0 += 0.5 * v * v
		}
		lp1 := lp
		for range L {
			kick(u, g1, e/2)
			dm.drift(th1, u, e, nil)
			clear(g1)
			lp1 = logp(th1, g1)
			res.Evals++
			kick(u, g1, e/2)
		}
		h1 := -lp1
		for _, v := range u {
			h1 += 0.5 * v * v
		}
		acc := 0.0
		if !math.IsNaN(h1) && !math.IsInf(h1, 0) {
			acc = math.Min(1, math.Exp(h0-h1))
		}
		if r.Float64() < acc {
			copy(theta, th1)
			copy(grad, g1)
			lp = lp1
			if !adapt {
				res.Accepted++
			}
		} else {
			copy(u, u0)
		}
		if adapt && h.TargetAccept > 0 {
			eps *= math.Exp((acc - h.TargetAccept) / math.Sqrt(float64(k)+10))
		}
		if em.collecting() {
			x := tmp
			switch h.EM.Source {
			case Positions:
				for i := range n {
					x[i] = theta[i] / w[i]
				}
			case Momenta:
				// whitened momentum W·p = L̃⁻ᵀu
				if em.dense {
					backSolveT(em.lt, u, x, n)
				} else {
					for i := range n {
						x[i] = u[i] / math.Sqrt(em.mt[i])
					}
				}
			default:
				for i := range n {
					x[i] = w[i] * grad[i]
				}
			}
			if em.dense {
				em.addDense(x)
			} else {
				copy(em.buf, x)
				em.addRange(0, n)
			}
		}
		if !em.frozen {
			em.endStep(adapt, eps)
			setChol()
		}
		if !adapt && record != nil {
			record(theta)
		}
	}
	res.Eps = eps
	res.InvMass = make([]float64, n)
	for i := range n {
		if em.dense {
			res.InvMass[i] = w[i] * w[i] * em.mt[i*n+i]
		} else {
			res.InvMass[i] = w[i] * w[i] * em.mt[i]
		}
	}
	if em.dense && h.EM.On {
		res.DenseInvMass = make([]float64, n*n)
		for i := range n {
			for j := range n {
				res.DenseInvMass[i*n+j] = w[i] * w[j] * em.mt[i*n+j]
			}
		}
	}
	res.Sizes, res.Grew = em.Sizes, em.Grew
	return res
}

// InverseMass returns the diagonal of the inverse mass of an SGHMC/SGNHT state, and the whole
// of it (row-major) when it is dense: the metric times the learnt correction, for diagnostics and
// tests.
func InverseMass(s State) (diag []float64, dense []float64) {
	st, ok := s.(*hmcState)
	if !ok {
		return nil, nil
	}
	n := st.dim
	diag = make([]float64, n)
	if st.em == nil {
		copy(diag, st.metric)
		return diag, nil
	}
	if !st.em.dense {
		for i := range diag {
			diag[i] = st.metric[i] * st.em.mt[i]
		}
		return diag, nil
	}
	dense = make([]float64, n*n)
	for i := range n {
		for j := range n {
			dense[i*n+j] = math.Sqrt(st.metric[i]*st.metric[j]) * st.em.mt[i*n+j]
		}
		diag[i] = dense[i*n+i]
	}
	return diag, dense
}

// EStepSizes returns the E-step sizes of the M-steps of an -EM kernel's state and whether the
// confidence-interval test grew the size after each (diagnostics and tests).
func EStepSizes(s State) ([]int, []bool) {
	if st, ok := s.(*hmcState); ok && st.em != nil {
		return st.em.Sizes, st.em.Grew
	}
	return nil, nil
}
