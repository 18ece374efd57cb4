package samplertest

import (
	"math"
	"math/rand/v2"
	"sync"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// Gaussian is N(Mu, Sigma) with Sigma row-major. Its metric is the Gershgorin bound of the
// precision, 1/Σ_j |P_ij| (the metric-scaled Hessian then has spectral radius at most one, as the
// models' metrics do). NoiseSD, when positive, adds N(0, NoiseSD²) to each gradient coordinate
// of NoisyGrad.
type Gaussian struct {
	Mu, Sigma []float64
	NoiseSD   float64
	// Start, when set, is the starting point; otherwise Mu + 3 sd in every coordinate.
	Start []float64

	once sync.Once
	prec []float64
}

func (g *Gaussian) Dim() int { return len(g.Mu) }

func (g *Gaussian) precision() []float64 {
	g.once.Do(func() { g.prec = Invert(g.Sigma, len(g.Mu)) })
	return g.prec
}

// Precision returns Σ⁻¹ (row-major).
func (g *Gaussian) Precision() []float64 { return g.precision() }

func (g *Gaussian) LogDensity(theta, grad []float64) float64 {
	p, n := g.precision(), len(g.Mu)
	lp := 0.0
	for i := range n {
		s := 0.0
		for j := range n {
			s += p[i*n+j] * (theta[j] - g.Mu[j])
		}
		grad[i] = -s
		lp -= 0.5 * (theta[i] - g.Mu[i]) * s
	}
	return lp
}

func (g *Gaussian) NoisyGrad(theta, grad []float64, r *rand.Rand) {
	g.LogDensity(theta, grad)
	for i := range grad {
		grad[i] += g.NoiseSD * r.NormFloat64()
	}
}

func (g *Gaussian) Metric(_, m []float64) {
	p, n := g.precision(), len(g.Mu)
	for i := range n {
		s := 0.0
		for j := range n {
			s += math.Abs(p[i*n+j])
		}
		m[i] = 1 / s
	}
}

func (g *Gaussian) Init(_ *rand.Rand, theta []float64) {
	if g.Start != nil {
		copy(theta, g.Start)
		return
	}
	n := len(g.Mu)
	for i := range theta {
		theta[i] = g.Mu[i] + 3*math.Sqrt(g.Sigma[i*n+i])
	}
}

func (g *Gaussian) Mean() []float64 { return g.Mu }
func (g *Gaussian) Cov() []float64  { return g.Sigma }

// Correlated2D is the correlated 2-D Gaussian of the tests: mean (1, −2), standard deviations
// (1, 3), correlation 0.95.
func Correlated2D() *Gaussian {
	s1, s2, rho := 1.0, 3.0, 0.95
	return &Gaussian{Mu: []float64{1, -2}, Sigma: []float64{s1 * s1, rho * s1 * s2, rho * s1 * s2, s2 * s2}}
}

// NormalGamma is the posterior of the mean μ and precision τ of N(μ, 1/τ) data under a flat prior
// on μ and the Wishart W(τ | 1, 1) = Gamma(½, rate ½) prior on τ — the paper's §4.1 experiment:
// N = 5000 points from N(0, 1). τ is sampled directly (θ = (μ, τ), τ ≥ 0 by mirroring). The
// posterior is τ | X ~ Gamma(N/2, (S + 1)/2) with S = Σ(x − x̄)², μ | τ, X ~ N(x̄, 1/(Nτ)). The
// stochastic gradient uses Batch points drawn with replacement, scaled by N/Batch (no control
// variates, as in the paper). The metric is the inverse Fisher information at θ, (1/(Nτ), 2τ²/N).
type NormalGamma struct {
	X     []float64
	Batch int

	xbar, s float64
}

// NewNormalGamma draws n points from N(0, 1) with the given seed.
func NewNormalGamma(n, batch int, seed uint64) *NormalGamma {
	r := rng.New(seed, 41)
	t := &NormalGamma{X: make([]float64, n), Batch: batch}
	for i := range t.X {
		t.X[i] = r.NormFloat64()
		t.xbar += t.X[i]
	}
	t.xbar /= float64(n)
	for _, x := range t.X {
		t.s += (x - t.xbar) * (x - t.xbar)
	}
	return t
}

func (t *NormalGamma) Dim() int            { return 2 }
func (t *NormalGamma) Positive(i int) bool { return i == 1 }
func (t *NormalGamma) shape() float64      { return float64(len(t.X)) / 2 }
func (t *NormalGamma) rate() float64       { return (t.s + 1) / 2 }

func (t *NormalGamma) LogDensity(theta, grad []float64) float64 {
	mu, tau := theta[0], theta[1]
	n := float64(len(t.X))
	ss := t.s + n*(mu-t.xbar)*(mu-t.xbar)
	grad[0] = tau * n * (t.xbar - mu)
	grad[1] = (n/2-0.5)/tau - 0.5*ss - 0.5
	return (n/2-0.5)*math.Log(tau) - 0.5*tau*ss - 0.5*tau
}

func (t *NormalGamma) NoisyGrad(theta, grad []float64, r *rand.Rand) {
	mu, tau := theta[0], theta[1]
	n := float64(len(t.X))
	var sd, ss float64
	for range t.Batch {
		d := t.X[r.IntN(len(t.X))] - mu
		sd += d
		ss += d * d
	}
	w := n / float64(t.Batch)
	grad[0] = tau * w * sd
	grad[1] = (n/2-0.5)/tau - 0.5*w*ss - 0.5
}

func (t *NormalGamma) Metric(theta, g []float64) {
	n := float64(len(t.X))
	tau := math.Max(theta[1], 1e-3)
	g[0] = 1 / (n * tau)
	g[1] = 2 * tau * tau / n
}

// Init starts away from the mode: μ = x̄ + 0.05, τ = 1.3.
func (t *NormalGamma) Init(_ *rand.Rand, theta []float64) {
	theta[0], theta[1] = t.xbar+0.05, 1.3
}

func (t *NormalGamma) Mean() []float64 {
	return []float64{t.xbar, t.shape() / t.rate()}
}

func (t *NormalGamma) Cov() []float64 {
	a, b, n := t.shape(), t.rate(), float64(len(t.X))
	return []float64{b / (n * (a - 1)), 0, 0, a / (b * b)}
}

// Exponential is Exp(Rate) on θ ≥ 0, sampled by mirroring (the gradient is the constant −Rate; the
// boundary is what keeps the chain in place). Metric 1/Rate².
type Exponential struct{ Rate float64 }

func (e Exponential) Dim() int                        { return 1 }
func (e Exponential) Positive(int) bool               { return true }
func (e Exponential) Init(_ *rand.Rand, th []float64) { th[0] = 1 / e.Rate }
func (e Exponential) LogDensity(th, grad []float64) float64 {
	grad[0] = -e.Rate
	return -e.Rate * th[0]
}
func (e Exponential) Metric(_, g []float64) { g[0] = 1 / (e.Rate * e.Rate) }
func (e Exponential) Mean() []float64       { return []float64{1 / e.Rate} }
func (e Exponential) Cov() []float64        { return []float64{1 / (e.Rate * e.Rate)} }

// Logistic is Bayesian logistic regression on the paper's synthetic data (§4.2, after Roychowdhury
// et al. 2016): N points from an equal mixture of N((1, −1), I) and N((−1, 1), I), labels drawn as
// Bernoulli(σ(wᵀx)) with w = (1, −1) (the paper thresholds; drawn labels keep the posterior proper
// and away from the prior), prior N(0, 10 I). The stochastic gradient uses Batch points drawn with
// replacement scaled by N/Batch. The metric is the constant Gershgorin bound of the largest
// possible Hessian, ¼XᵀX + I/10. Its moments come from quadrature (Reference).
type Logistic struct {
	X     [][2]float64
	Y     []float64
	Batch int

	once sync.Once
	mean []float64
	cov  []float64
	mode []float64
}

// NewLogistic draws the data.
func NewLogistic(n, batch int, seed uint64) *Logistic {
	r := rng.New(seed, 42)
	t := &Logistic{X: make([][2]float64, n), Y: make([]float64, n), Batch: batch}
	for i := range n {
		c := 1.0
		if r.IntN(2) == 1 {
			c = -1
		}
		x := [2]float64{c + r.NormFloat64(), -c + r.NormFloat64()}
		t.X[i] = x
		if r.Float64() < 1/(1+math.Exp(-(x[0]-x[1]))) {
			t.Y[i] = 1
		}
	}
	return t
}

func (t *Logistic) Dim() int { return 2 }

func (t *Logistic) term(i int, w []float64, grad []float64, scale float64) float64 {
	x := t.X[i]
	z := w[0]*x[0] + w[1]*x[1]
	// log σ(z) if y = 1, log σ(−z) otherwise; gradient (y − σ(z)) x.
	s := 1 / (1 + math.Exp(-z))
	d := scale * (t.Y[i] - s)
	grad[0] += d * x[0]
	grad[1] += d * x[1]
	if t.Y[i] == 1 {
		return -math.Log1p(math.Exp(-z))
	}
	return -math.Log1p(math.Exp(z))
}

func (t *Logistic) LogDensity(w, grad []float64) float64 {
	grad[0], grad[1] = -w[0]/10, -w[1]/10
	lp := -(w[0]*w[0] + w[1]*w[1]) / 20
	for i := range t.X {
		lp += t.term(i, w, grad, 1)
	}
	return lp
}

func (t *Logistic) NoisyGrad(w, grad []float64, r *rand.Rand) {
	grad[0], grad[1] = -w[0]/10, -w[1]/10
	scale := float64(len(t.X)) / float64(t.Batch)
	for range t.Batch {
		t.term(r.IntN(len(t.X)), w, grad, scale)
	}
}

func (t *Logistic) Metric(_, g []float64) {
	var a, b, c float64
	for _, x := range t.X {
		a += x[0] * x[0] / 4
		b += x[0] * x[1] / 4
		c += x[1] * x[1] / 4
	}
	g[0] = 1 / (a + 0.1 + math.Abs(b))
	g[1] = 1 / (c + 0.1 + math.Abs(b))
}

func (t *Logistic) Init(_ *rand.Rand, w []float64) { w[0], w[1] = 0, 0 }

func (t *Logistic) Mean() []float64 { t.reference(); return t.mean }
func (t *Logistic) Cov() []float64  { t.reference(); return t.cov }

// reference computes the posterior mean and covariance by quadrature: Newton's method for the
// mode, then the trapezoidal rule on a 81×81 grid spanning ±8 Laplace standard deviations along
// the Laplace covariance's eigenvectors (for an analytic, near-Gaussian integrand the rule is
// accurate to far below the Monte Carlo errors the tests see).
func (t *Logistic) reference() {
	t.once.Do(func() {
		w := []float64{0, 0}
		g := make([]float64, 2)
		var h [3]float64
		for range 50 {
			t.LogDensity(w, g)
			h = t.hessian(w)
			det := h[0]*h[2] - h[1]*h[1]
			// w −= H⁻¹g with H negative definite
			dx := (h[2]*g[0] - h[1]*g[1]) / det
			dy := (-h[1]*g[0] + h[0]*g[1]) / det
			w[0] -= dx
			w[1] -= dy
		}
		t.mode = w
		// Laplace covariance C = (−H)⁻¹ and its eigen-decomposition.
		a, b, c := -h[0], -h[1], -h[2]
		det := a*c - b*b
		ca, cb, cc := c/det, -b/det, a/det
		tr := ca + cc
		disc := math.Sqrt((ca-cc)*(ca-cc)/4 + cb*cb)
		l1, l2 := tr/2+disc, tr/2-disc
		v1 := [2]float64{cb, l1 - ca}
		if math.Abs(cb) < 1e-300 {
			v1 = [2]float64{1, 0}
		}
		nv := math.Hypot(v1[0], v1[1])
		v1[0], v1[1] = v1[0]/nv, v1[1]/nv
		v2 := [2]float64{-v1[1], v1[0]}
		const m, span = 81, 8.0
		lp0 := t.LogDensity(w, g)
		var z, s0, s1, s00, s01, s11 float64
		pt := make([]float64, 2)
		for i := range m {
			a := -span + 2*span*float64(i)/(m-1)
			for j := range m {
				b := -span + 2*span*float64(j)/(m-1)
				pt[0] = w[0] + a*math.Sqrt(l1)*v1[0] + b*math.Sqrt(l2)*v2[0]
				pt[1] = w[1] + a*math.Sqrt(l1)*v1[1] + b*math.Sqrt(l2)*v2[1]
				p := math.Exp(t.LogDensity(pt, g) - lp0)
				z += p
				s0 += p * pt[0]
				s1 += p * pt[1]
				s00 += p * pt[0] * pt[0]
				s01 += p * pt[0] * pt[1]
				s11 += p * pt[1] * pt[1]
			}
		}
		m0, m1 := s0/z, s1/z
		t.mean = []float64{m0, m1}
		t.cov = []float64{s00/z - m0*m0, s01/z - m0*m1, s01/z - m0*m1, s11/z - m1*m1}
	})
}

// hessian returns (H00, H01, H11) of the log posterior.
func (t *Logistic) hessian(w []float64) [3]float64 {
	h := [3]float64{-0.1, 0, -0.1}
	for _, x := range t.X {
		z := w[0]*x[0] + w[1]*x[1]
		s := 1 / (1 + math.Exp(-z))
		v := s * (1 - s)
		h[0] -= v * x[0] * x[0]
		h[1] -= v * x[0] * x[1]
		h[2] -= v * x[1] * x[1]
	}
	return h
}

// Invert returns the inverse of the symmetric positive definite n×n matrix a (row-major).
func Invert(a []float64, n int) []float64 {
	l := make([]float64, n*n)
	for i := range n {
		for j := 0; j <= i; j++ {
			s := a[i*n+j]
			for k := range j {
				s -= l[i*n+k] * l[j*n+k]
			}
			if i == j {
				l[i*n+i] = math.Sqrt(s)
			} else {
				l[i*n+j] = s / l[j*n+j]
			}
		}
	}
	inv := make([]float64, n*n)
	y, x := make([]float64, n), make([]float64, n)
	for c := range n {
		for i := range n {
			s := 0.0
			if i == c {
				s = 1
			}
			for k := range i {
				s -= l[i*n+k] * y[k]
			}
			y[i] = s / l[i*n+i]
		}
		for i := n - 1; i >= 0; i-- {
			s := y[i]
			for k := i + 1; k < n; k++ {
				s -= l[k*n+i] * x[k]
			}
			x[i] = s / l[i*n+i]
		}
		for i := range n {
			inv[i*n+c] = x[i]
		}
	}
	return inv
}

// Tempered is the power posterior p(θ) p(X | θ)^T of a model, with full-data gradients and the
// model's metric: what an STI chain at temperature T samples.
type Tempered struct {
	M     models.Model
	T     float64
	e     models.Eval
	gamma []float64
}

// NewTempered binds a model at temperature t.
func NewTempered(m models.Model, t float64) *Tempered {
	return &Tempered{M: m, T: t, e: m.NewEval(), gamma: make([]float64, m.Dim())}
}

func (p *Tempered) Dim() int { return p.M.Dim() }

func (p *Tempered) LogDensity(theta, grad []float64) float64 {
	p.e.Prepare(theta)
	clear(grad)
	lp := p.e.LogPrior(grad)
	return lp + p.T*models.LogLikGrad(p.e, p.M, p.T, grad)
}

func (p *Tempered) Metric(theta, g []float64) {
	p.e.Prepare(theta)
	p.e.Metric(p.T, g, p.gamma)
}

func (p *Tempered) Positive(int) bool { return p.M.Positive() }

// Init draws from the prior.
func (p *Tempered) Init(r *rand.Rand, theta []float64) { p.M.SamplePrior(r, theta) }

// WithoutMetric hides a target's metric (the driver then gives the kernel a unit metric) and its
// bounds, keeping its moments when it has them.
func WithoutMetric(t Target) Target {
	if k, ok := t.(Known); ok {
		return unmeteredKnown{unmetered{t}, k}
	}
	return unmetered{t}
}

type unmetered struct{ t Target }

func (u unmetered) Dim() int                                 { return u.t.Dim() }
func (u unmetered) LogDensity(theta, grad []float64) float64 { return u.t.LogDensity(theta, grad) }
func (u unmetered) Init(r *rand.Rand, theta []float64)       { u.t.Init(r, theta) }

type unmeteredKnown struct {
	unmetered
	k Known
}

func (u unmeteredKnown) Mean() []float64 { return u.k.Mean() }
func (u unmeteredKnown) Cov() []float64  { return u.k.Cov() }
