package samplers

import (
	"math"
)

// MStepSource is the quantity the E-step collects for the M-step of the mass.
type MStepSource int

const (
	// Forces collects the gradients ∇L̃(θ) that drive the dynamics (the momentum increments). By
	// the identity E_π[∇log π ∇log πᵀ] = −E_π[∇² log π] their second moment estimates the expected
	// curvature, which for a Gaussian posterior is exactly Σ⁻¹: M⁻¹ ← (E[ĝĝᵀ])⁻¹ converges to the
	// posterior covariance (dense) or to 1/(Σ⁻¹)_ii (diagonal). Far-from-mode transients and
	// gradient noise bias it towards a smaller M⁻¹ (slower, never unstable).
	Forces MStepSource = iota
	// Positions collects θ: M⁻¹ ← Cov(θ) over the E-step (Stan's choice). Unbiased under gradient
	// noise, but an E-step that still contains the approach to the typical set overestimates it,
	// and in a slowly mixing chain the variance over an E-step's window underestimates the
	// posterior's, which shrinks the mass, which slows the chain further: on the paper's §4.1
	// target with raw minibatches it ended 100 times too small.
	Positions
	// Momenta is the paper's rule (§3.3): M⁻¹ ← (Cov p)⁻¹ from the collected momenta. Under any
	// sampler that keeps p ~ N(0, M) — which is what HMC, SGHMC and SGNHT are built to do —
	// E[ppᵀ] = M whatever M is, so every mass is a fixed point and the rule cannot learn the
	// posterior's scale. It is kept to show that (see the tests).
	Momenta
)

func (s MStepSource) String() string {
	switch s {
	case Positions:
		return "positions"
	case Momenta:
		return "momenta"
	}
	return "forces"
}

// MassEM configures the Monte Carlo EM adaptation of the mass of a Hamiltonian sampler
// (Roychowdhury & Parthasarathy 2017, the "-EM" samplers).
//
// The mass is learnt as a correction to the model's metric: M⁻¹ = W M̃⁻¹ W with W² the metric and
// M̃⁻¹ (identity at the start) estimated from samples whitened by W. The dynamics are the E-step:
// every Inner steps (after Skip) one sample of the Source quantity is collected. When S samples
// are in, the M-step forms the estimate from them, shrunk towards the current mass by Prior
// pseudo-samples (which keeps it positive definite when S is below the dimension). Two bounds make
// the adaptation safe inside a short burn-in: a trust region (the estimate's eigenvalues relative
// to the current mass within [1/Trust, Trust], so one E-step caught in a transient cannot swing the
// mass far), and a cap on the correction's eigenvalues at min(MaxScale, (MaxOmega/ε)²) — the
// metric-scaled Hessian has spectral radius about one where the metric was taken, so the cap
// bounds εω along every direction, with room for curvature that varies with θ (an inverted noisy
// second moment otherwise overshoots in its least-sampled directions, and the Poisson models'
// curvature grows exponentially in log space). The correction is then updated by the running
// average of the paper's eq. (5), M̃⁻¹ ← (1 − κ_k) M̃⁻¹ + κ_k M̃⁻¹_est. By default
// κ_k = S_k/(Prior + Σ_{j≤k} S_j): every collected sample weighs the same and the metric counts as
// Prior samples, so with a fixed E-step size κ_k ~ 1/k (the conditions Σκ = ∞, Σκ² < ∞ of the
// paper's Proposition 1), and as S grows the estimate is the pooled mean of all E-steps, the early
// (most transient) ones weighing least; Kappa > 0 selects κ_k = (k + 1)^−Kappa instead.
//
// The E-step size grows by the confidence-interval test of §3.2 (after Levine & Casella 2001):
// the test function q(M) is the per-coordinate Gaussian log-likelihood of the E-step's samples
// under the mass; when its mean under the new mass lies within Z standard errors of its mean under
// the old one (the M-step moved less than the Monte Carlo error), the next E-step has S + ⌈S/SI⌉
// samples. Adaptation runs while Input.Adapt is true (burn-in); at the first step after, a last
// M-step uses the pending samples (if at least half an E-step), the correction is clipped for the
// final step and frozen, so the sampling phase is a fixed kernel.
//
// The mass is diagonal unless the dimension is at most DenseMax; a dense mass is applied in the
// kernel's EndStep (it couples the ranges), a diagonal one in Update. The default Source is Forces
// (see MStepSource for why not the paper's momenta, nor positions).
type MassEM struct {
	On     bool
	Source MStepSource
	// DenseMax is the largest dimension with a dense mass: 0 means 32, negative means never.
	DenseMax int
	// S0 is the initial E-step size (0: 10); Inner the steps per collected sample (0: 1); Skip the
	// number of burn-in steps before collection starts.
	S0, Inner, Skip int
	// Kappa, when positive, is the exponent of κ_k = (k + 1)^−Kappa (0: sample-weighted κ).
	Kappa float64
	// Z is the half-width of the confidence interval in standard errors (0: 1.645, α = 0.1); SI the
	// growth divisor (0: 2).
	Z, SI float64
	// Prior is the number of pseudo-samples of the shrinkage towards the current mass (0: 5).
	Prior float64
	// MaxOmega bounds εω along any direction of the learnt mass (0: 1.6; negative: no bound).
	MaxOmega float64
	// MaxScale caps the correction's eigenvalues (0: 2; negative: no cap). At 4, SGHMC-EM at
	// ε = 0.5 on a small low-count Poisson NMF (12×9) produced 2 chains in 5 with errors of 14–59
	// nats: log-space curvature grows away from where the metric was frozen.
	MaxScale float64
	// Trust bounds one M-step's estimate relative to the current mass (0: 4; negative: none).
	Trust float64
	// ForceNoise is the variance of the metric-scaled gradient noise √metric·(∇L̃ − ∇L), when
	// known: the Forces M-step subtracts it from the second moment of the collected gradients
	// (E[ĝĝᵀ] = E[∇L∇Lᵀ] + V), which the noise otherwise inflates (a smaller, slower mass). The
	// chain's control variates make it negligible; the paper's raw minibatches do not.
	ForceNoise float64
}

func (c MassEM) withDefaults() MassEM {
	if c.DenseMax == 0 {
		c.DenseMax = 32
	}
	if c.S0 <= 0 {
		c.S0 = 10
	}
	if c.Inner <= 0 {
		c.Inner = 1
	}
	if c.Z <= 0 {
		c.Z = 1.645
	}
	if c.SI <= 0 {
		c.SI = 2
	}
	if c.Prior <= 0 {
		c.Prior = 5
	}
	if c.MaxOmega == 0 {
		c.MaxOmega = 1.6
	}
	if c.MaxScale == 0 {
		c.MaxScale = 2
	}
	if c.Trust == 0 {
		c.Trust = 4
	}
	return c
}

// emState holds the E-step accumulators and the learnt correction, all in whitened coordinates.
type emState struct {
	cfg    MassEM
	dim    int
	dense  bool
	learnt bool
	frozen bool
	// mt is the learnt correction M̃⁻¹ (diagonal, or dim×dim row-major), lt its Cholesky factor
	// (dense).
	mt, lt []float64
	// S is the current E-step size, k the number of M-steps done, count the samples of the
	// current E-step, steps the EndStep calls so far, pooled the samples of all M-steps.
	S, k, count, steps, pooled int
	// collect tells Update whether this step's sample is collected.
	collect bool
	// Diagonal accumulators: the centre the samples are taken about (the last E-step's mean for
	// positions, zero otherwise), Σ(x − c), Σ(x − c)², each coordinate's term (x − c)²·P of the
	// sample's test function under the current mass, and the whitened sample being collected.
	centre, sum, sumsq, q, buf []float64
	// Dense accumulators: Σ(x − c) and Σ(x − c)(x − c)ᵀ, and scratch.
	dsum, douter, x, y []float64
	// qs, qs2 are Σ_s q_s and Σ_s q_s² of the test function's quadratic part.
	qs, qs2 float64
	// Sizes records the E-step size of every M-step, Grew whether the test grew S after it.
	Sizes []int
	Grew  []bool
}

func newEMState(cfg MassEM, dim int) *emState {
	cfg = cfg.withDefaults()
	e := &emState{cfg: cfg, dim: dim, S: cfg.S0, dense: cfg.DenseMax > 0 && dim <= cfg.DenseMax}
	e.collect = cfg.Skip == 0
	e.centre = make([]float64, dim)
	if e.dense {
		e.mt, e.lt = make([]float64, dim*dim), make([]float64, dim*dim)
		for i := range dim {
			e.mt[i*dim+i], e.lt[i*dim+i] = 1, 1
		}
		e.dsum, e.douter = make([]float64, dim), make([]float64, dim*dim)
		e.x, e.y = make([]float64, dim), make([]float64, dim)
	} else {
		e.mt = make([]float64, dim)
		for i := range e.mt {
			e.mt[i] = 1
		}
		e.sum, e.sumsq, e.q, e.buf = make([]float64, dim), make([]float64, dim), make([]float64, dim), make([]float64, dim)
	}
	return e
}

func (e *emState) collecting() bool { return e.collect && !e.frozen }

// precisionSide reports whether the collected quantity has covariance M̃ (forces at the right
// mass, momenta) rather than M̃⁻¹ (positions).
func (e *emState) precisionSide() bool { return e.cfg.Source != Positions }

// addRange accumulates coordinates [lo, hi) of the whitened diagonal-mode sample in buf.
func (e *emState) addRange(lo, hi int) {
	centred := e.cfg.Source == Positions
	for j := lo; j < hi; j++ {
		x := e.buf[j]
		if centred && e.k == 0 && e.count == 0 {
			e.centre[j] = x
		}
		d := x - e.centre[j]
		e.sum[j] += d
		e.sumsq[j] += d * d
		p := e.mt[j]
		if !e.precisionSide() {
			p = 1 / p
		}
		e.q[j] = d * d * p
	}
}

// addDense accumulates a whitened dense-mode sample.
func (e *emState) addDense(x []float64) {
	n := e.dim
	if e.cfg.Source == Positions && e.k == 0 && e.count == 0 {
		copy(e.centre, x)
	}
	d := e.y
	for i := range n {
		d[i] = x[i] - e.centre[i]
		e.dsum[i] += d[i]
	}
	for i := range n {
		for j := range n {
			e.douter[i*n+j] += d[i] * d[j]
		}
	}
	// q = dᵀPd: P = M̃⁻¹ = L̃L̃ᵀ gives |L̃ᵀd|²; P = M̃ gives |L̃⁻¹d|².
	q := 0.0
	if e.precisionSide() {
		for j := range n {
			s := 0.0
			for i := j; i < n; i++ {
				s += e.lt[i*n+j] * d[i]
			}
			q += s * s
		}
	} else {
		z := make([]float64, n)
		forwardSolve(e.lt, d, z, n)
		for _, v := range z {
			q += v * v
		}
	}
	e.qs += q
	e.qs2 += q * q
}

// endStep closes a step of the E-step: it counts a collected sample, runs the M-step when the
// E-step is complete, and at the first step after burn-in runs the last M-step and freezes the
// mass. eps is the step of the step just taken.
func (e *emState) endStep(adapt bool, eps float64) {
	if e.frozen {
		return
	}
	if e.collect {
		if !e.dense {
			s := 0.0
			for _, v := range e.q {
				s += v
			}
			e.qs += s
			e.qs2 += s * s
		}
		e.count++
		if adapt && e.count >= e.S {
			e.mstep(eps)
		}
	}
	if !adapt {
		if e.count >= max(2, e.S/2) {
			e.mstep(eps)
		}
		e.clip(eps)
		e.frozen, e.collect = true, false
		return
	}
	e.steps++
	e.collect = e.steps >= e.cfg.Skip && (e.steps-e.cfg.Skip)%e.cfg.Inner == 0
}

// bounds returns the eigenvalue range of the correction for step eps.
func (e *emState) bounds(eps float64) (lo, hi float64) {
	lo, hi = 1e-6, math.Inf(1)
	if e.cfg.MaxOmega > 0 && eps > 0 {
		hi = (e.cfg.MaxOmega / eps) * (e.cfg.MaxOmega / eps)
	}
	if e.cfg.MaxScale > 0 {
		hi = math.Min(hi, e.cfg.MaxScale)
	}
	return lo, hi
}

// clip bounds the learnt correction for the step eps.
func (e *emState) clip(eps float64) {
	if !e.learnt {
		return
	}
	lo, hi := e.bounds(eps)
	if e.dense {
		m := clipEigen(e.mt, e.dim, lo, hi)
		l := make([]float64, len(m))
		if cholesky(m, l, e.dim) {
			e.mt, e.lt = m, l
		}
		return
	}
	for j, v := range e.mt {
		e.mt[j] = math.Min(math.Max(v, lo), hi)
	}
}

// kappa returns κ for the M-step of the current E-step (count samples).
func (e *emState) kappa() float64 {
	if e.cfg.Kappa > 0 {
		return math.Pow(float64(e.k+1), -e.cfg.Kappa)
	}
	return float64(e.count) / (e.cfg.Prior + float64(e.pooled+e.count))
}

// grow applies the confidence-interval test. quadNew is the mean quadratic part of the test
// function under the new mass, logOld and logNew the log-determinants of P under each.
func (e *emState) grow(S int, quadNew, logOld, logNew float64) {
	n, s := float64(e.dim), float64(S)
	mOld := -0.5 / n * (e.qs/s - logOld)
	mNew := -0.5 / n * (quadNew - logNew)
	v := e.qs2/s - (e.qs/s)*(e.qs/s)
	se := 0.5 / n * math.Sqrt(math.Max(v, 0)/s)
	grew := math.Abs(mNew-mOld) <= e.cfg.Z*se
	e.Sizes = append(e.Sizes, S)
	e.Grew = append(e.Grew, grew)
	if grew {
		e.S += int(math.Ceil(float64(e.S) / e.cfg.SI))
	}
}

// mstep updates the correction from the E-step's samples.
func (e *emState) mstep(eps float64) {
	if e.count >= 2 {
		if e.dense {
			e.mstepDense(eps)
		} else {
			e.mstepDiag(eps)
		}
		e.k++
		e.pooled += e.count
		e.learnt = true
	}
	e.count, e.qs, e.qs2 = 0, 0, 0
	clear(e.sum)
	clear(e.sumsq)
	clear(e.dsum)
	clear(e.douter)
}

func (e *emState) mstepDiag(eps float64) {
	S := float64(e.count)
	n0, kap := e.cfg.Prior, e.kappa()
	lo, hi := e.bounds(eps)
	centred := e.cfg.Source == Positions
	var logOld, logNew, quadNew float64
	for j, mo := range e.mt {
		ss := e.sumsq[j] / S // second moment about the centre
		c := ss
		if fn := e.cfg.ForceNoise; fn > 0 && e.cfg.Source == Forces {
			c = math.Max(c-fn, 0.1*c)
		}
		if centred {
			m := e.sum[j] / S
			c = (ss - m*m) * S / (S - 1)
		}
		pred := mo
		if e.precisionSide() {
			pred = 1 / mo
		}
		est := (S*c + n0*pred) / (S + n0)
		if e.precisionSide() {
			est = 1 / est
		}
		if tr := e.cfg.Trust; tr > 0 {
			est = math.Min(math.Max(est, mo/tr), mo*tr)
		}
		est = math.Min(math.Max(est, lo), hi)
		mn := (1-kap)*mo + kap*est
		if !(mn > 0) || math.IsInf(mn, 0) {
			mn = mo
		}
		e.mt[j] = mn
		po, pn := mo, mn
		if !e.precisionSide() {
			po, pn = 1/mo, 1/mn
		}
		logOld += math.Log(po)
		logNew += math.Log(pn)
		quadNew += ss * pn
		if centred {
			e.centre[j] += e.sum[j] / S
		}
	}
	e.grow(e.count, quadNew, logOld, logNew)
}

func (e *emState) mstepDense(eps float64) {
	n := e.dim
	S := float64(e.count)
	n0, kap := e.cfg.Prior, e.kappa()
	centred := e.cfg.Source == Positions
	ss := make([]float64, n*n)
	c := make([]float64, n*n)
	for i := range n {
		for j := range n {
			ss[i*n+j] = e.douter[i*n+j] / S
			c[i*n+j] = ss[i*n+j]
			if centred {
				c[i*n+j] = (ss[i*n+j] - e.dsum[i]/S*e.dsum[j]/S) * S / (S - 1)
			}
		}
	}
	if fn := e.cfg.ForceNoise; fn > 0 && e.cfg.Source == Forces {
		tr := 0.0
		for i := range n {
			tr += c[i*n+i]
			c[i*n+i] -= fn
		}
		c = clipEigen(c, n, 0.1*tr/float64(n), math.Inf(1))
	}
	logdetOld := 0.0
	for i := range n {
		logdetOld += 2 * math.Log(e.lt[i*n+i])
	}
	pred := e.mt
	if e.precisionSide() {
		pred = spdInverse(e.lt, n)
	}
	est := make([]float64, n*n)
	for i := range est {
		est[i] = (S*c[i] + n0*pred[i]) / (S + n0)
	}
	if e.precisionSide() {
		l := make([]float64, n*n)
		if !cholesky(est, l, n) {
			return
		}
		est = spdInverse(l, n)
	}
	if tr := e.cfg.Trust; tr > 0 {
		// eigenvalues of L̃⁻¹·est·L̃⁻ᵀ (the estimate relative to the current mass) into [1/tr, tr]
		rel := make([]float64, n*n)
		col, z := make([]float64, n), make([]float64, n)
		for j := range n {
			for i := range n {
				col[i] = est[i*n+j]
			}
			forwardSolve(e.lt, col, z, n)
			for i := range n {
				rel[i*n+j] = z[i]
			}
		}
		for i := range n { // rel ← (L̃⁻¹ rel ᵀ)ᵀ = L̃⁻¹ est L̃⁻ᵀ (est symmetric)
			for j := range n {
				col[j] = rel[i*n+j]
			}
			forwardSolve(e.lt, col, z, n)
			for j := range n {
				rel[i*n+j] = z[j]
			}
		}
		rel = clipEigen(rel, n, 1/tr, tr)
		for i := range n { // est = L̃ rel L̃ᵀ
			for j := range n {
				s := 0.0
				for a := 0; a <= i; a++ {
					for b := 0; b <= j; b++ {
						s += e.lt[i*n+a] * rel[a*n+b] * e.lt[j*n+b]
					}
				}
				est[i*n+j] = s
			}
		}
	}
	lo, hi := e.bounds(eps)
	est = clipEigen(est, n, lo, hi)
	nw := make([]float64, n*n)
	for i := range n {
		for j := range n {
			// symmetrised against rounding
			nw[i*n+j] = (1-kap)*0.5*(e.mt[i*n+j]+e.mt[j*n+i]) + kap*0.5*(est[i*n+j]+est[j*n+i])
		}
	}
	l := make([]float64, n*n)
	if !cholesky(nw, l, n) {
		return
	}
	e.mt, e.lt = nw, l
	logdetNew := 0.0
	for i := range n {
		logdetNew += 2 * math.Log(l[i*n+i])
	}
	// P = M̃⁻¹ (precision side) or M̃ (positions); the new mean of q needs tr(P·SS).
	P := e.mt
	logOld, logNew := logdetOld, logdetNew
	if !e.precisionSide() {
		P = spdInverse(l, n)
		logOld, logNew = -logdetOld, -logdetNew
	}
	quadNew := 0.0
	for i := range P {
		quadNew += P[i] * ss[i]
	}
	if centred {
		for i := range n {
			e.centre[i] += e.dsum[i] / S
		}
	}
	e.grow(e.count, quadNew, logOld, logNew)
}

// ltl returns L̃ᵀL̃ (dense mode), whose eigenvalues are those of the correction M̃⁻¹.
func (e *emState) ltl() []float64 {
	n := e.dim
	out := make([]float64, n*n)
	for i := range n {
		for j := range n {
			s := 0.0
			for k := max(i, j); k < n; k++ {
				s += e.lt[k*n+i] * e.lt[k*n+j]
			}
			out[i*n+j] = s
		}
	}
	return out
}
