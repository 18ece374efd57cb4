package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/tensor"
)

// gaussName is the Gaussian additive model's registered name.
const gaussName = "gauss"

// gaussHypers are the Gaussian additive model's hyper-parameters, defaults ICASSPGauss.
var gaussHypers = []Hyper{
	{Name: "mu", Kind: Real, Default: Num(ICASSPGauss.Mu), Help: "prior mean of every θ_r"},
	{Name: "var-theta", Kind: Real, Positive: true, Default: Num(ICASSPGauss.VarTheta), Help: "prior variance of every θ_r"},
	{Name: "var-x", Kind: Real, Positive: true, Default: Num(ICASSPGauss.VarX), Help: "observation noise variance"},
}

func init() {
	Register(Info{
		Name:            gaussName,
		Summary:         "Gaussian additive model x_n ~ N(Σ_r θ_r, σx²), θ_r ~ N(μ, σθ²) (exact evidence)",
		Order:           1,
		Domain:          AnyReal,
		DefaultForOrder: true,
		Hypers:          gaussHypers,
		Build: func(data *tensor.Sparse, R int, s Spec) (Model, error) {
			return NewGauss(data.Values, R, gaussPriorOf(s.Params))
		},
		Generate: &Generator{Hypers: gaussHypers, Draw: drawGauss},
		Exact: func(data *tensor.Sparse, R int, s Spec) (float64, error) {
			m, err := NewGauss(data.Values, R, gaussPriorOf(s.Params))
			if err != nil {
				return 0, err
			}
			return m.LogEvidence(), nil
		},
		PowerVariance: func(data *tensor.Sparse, R int, s Spec) (func(t float64) float64, error) {
			m, err := NewGauss(data.Values, R, gaussPriorOf(s.Params))
			if err != nil {
				return nil, err
			}
			return func(t float64) float64 {
				_, v := m.PowerPosterior(t)
				return v
			}, nil
		},
	})
}

// GaussPrior holds the hyper-parameters of the Gaussian additive model
// θ_r ~ N(Mu, VarTheta), x_n ~ N(Σ_r θ_r, VarX).
type GaussPrior struct {
	Mu, VarTheta, VarX float64
}

// ICASSPGauss is the setting of the ICASSP 2016 synthetic experiment (§4.1.1).
var ICASSPGauss = GaussPrior{Mu: 5, VarTheta: 3, VarX: 5}

// Params returns the hyper-parameters by name, as a Spec holds them.
func (p GaussPrior) Params() Params {
	return Params{"mu": Num(p.Mu), "var-theta": Num(p.VarTheta), "var-x": Num(p.VarX)}
}

func gaussPriorOf(p Params) GaussPrior {
	return GaussPrior{Mu: p.Num("mu"), VarTheta: p.Num("var-theta"), VarX: p.Num("var-x")}
}

// GaussSpec is the spec of the Gaussian additive model with prior p.
func GaussSpec(p GaussPrior) Spec { return Spec{Name: gaussName, Params: p.Params()} }

// Validate rejects non-finite or non-positive hyper-parameters.
func (p GaussPrior) Validate() error {
	if err := validateParams(gaussHypers, p.Params(), 1, false); err != nil {
		return fmt.Errorf("%s: %w", gaussName, err)
	}
	return nil
}

// Gauss is the Gaussian additive model of rank R bound to observations x.
type Gauss struct {
	Prior GaussPrior
	R     int
	X     []float64
}

// NewGauss binds the model to data.
func NewGauss(x []float64, R int, p GaussPrior) (*Gauss, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if R < 1 {
		return nil, fmt.Errorf("gauss: rank %d must be at least 1", R)
	}
	if len(x) == 0 {
		return nil, fmt.Errorf("gauss: no observations")
	}
	return &Gauss{Prior: p, R: R, X: x}, nil
}

func (m *Gauss) Name() string        { return gaussName }
func (m *Gauss) Rank() int           { return m.R }
func (m *Gauss) Dim() int            { return m.R }
func (m *Gauss) NumCells() int       { return len(m.X) }
func (m *Gauss) Factors() []Factor   { return nil }
func (m *Gauss) Positive() bool      { return false }
func (m *Gauss) DriftScale() float64 { return 0 }

func (m *Gauss) SamplePrior(r *rand.Rand, theta []float64) {
	sd := math.Sqrt(m.Prior.VarTheta)
	for i := range theta[:m.R] {
		theta[i] = m.Prior.Mu + sd*r.NormFloat64()
	}
}

func (m *Gauss) NewEval() Eval { return &gaussEval{m: m} }

type gaussEval struct {
	m     *Gauss
	theta []float64
	sum   float64 // Σ_r θ_r, the mean of every observation
}

func (e *gaussEval) Prepare(theta []float64) {
	e.theta = theta
	e.sum = 0
	for _, v := range theta {
		e.sum += v
	}
}

func (e *gaussEval) LogPrior(grad []float64) float64 {
	p := e.m.Prior
	lp := -0.5 * float64(e.m.R) * math.Log(2*math.Pi*p.VarTheta)
	for i, v := range e.theta {
		d := v - p.Mu
		lp -= d * d / (2 * p.VarTheta)
		if grad != nil {
			grad[i] -= d / p.VarTheta
		}
	}
	return lp
}

func (e *gaussEval) Dense(w float64, grad []float64) float64 {
	return -0.5 * float64(len(e.m.X)) * math.Log(2*math.Pi*e.m.Prior.VarX)
}

func (e *gaussEval) Cells(c Cells, w float64, grad []float64) float64 {
	s, vx := e.sum, e.m.Prior.VarX
	var ss, sd float64
	if c.Index != nil {
		for _, n := range c.Index[c.Lo:c.Hi] {
			d := e.m.X[n] - s
			ss += d * d
			sd += d
		}
	} else {
		for _, x := range e.m.X[c.Lo:c.Hi] {
			d := x - s
			ss += d * d
			sd += d
		}
	}
	if grad != nil {
		g := w * sd / vx
		for i := range grad[:e.m.R] {
			grad[i] += g
		}
	}
	return -ss / (2 * vx)
}

// Metric is constant: the Hessian of the tempered log posterior is −(1/σθ²)I − (tN/σx²)11ᵀ, whose
// Gershgorin row sum 1/σθ² + R·tN/σx² bounds its spectrum, so the metric-scaled Hessian has
// eigenvalue exactly one along 1 (the only direction the likelihood sees) and less elsewhere.
func (e *gaussEval) Metric(t float64, g, gamma []float64) {
	p := e.m.Prior
	d := 1/p.VarTheta + t*float64(e.m.R)*float64(len(e.m.X))/p.VarX
	for i := range g[:e.m.R] {
		g[i] = 1 / d
		gamma[i] = 0
	}
}

// LogEvidence returns the exact log p(x | R): x ~ N(Rμ1, σx²I + Rσθ²11ᵀ), evaluated in O(N) with the
// matrix determinant lemma and the Sherman–Morrison formula.
func (m *Gauss) LogEvidence() float64 {
	p, n := m.Prior, float64(len(m.X))
	c := float64(m.R) * p.VarTheta
	mean := float64(m.R) * p.Mu
	var s1, s2 float64
	for _, x := range m.X {
		d := x - mean
		s1 += d
		s2 += d * d
	}
	logdet := n*math.Log(p.VarX) + math.Log1p(n*c/p.VarX)
	quad := (s2 - c*s1*s1/(p.VarX+n*c)) / p.VarX
	return -0.5 * (n*math.Log(2*math.Pi) + logdet + quad)
}

// PowerPosterior returns the exact f(t) = E_t[log p(x | θ)] and v(t) = Var_t[log p(x | θ)] under the
// power posterior p(θ | t) ∝ p(θ) p(x | θ)^t. The likelihood depends on θ only through s = Σθ_r,
// whose power posterior is normal with precision 1/(Rσθ²) + tN/σx².
func (m *Gauss) PowerPosterior(t float64) (f, v float64) {
	p, n := m.Prior, float64(len(m.X))
	var xbar float64
	for _, x := range m.X {
		xbar += x
	}
	xbar /= n
	var ss float64
	for _, x := range m.X {
		ss += (x - xbar) * (x - xbar)
	}
	v0 := float64(m.R) * p.VarTheta
	prec := 1/v0 + t*n/p.VarX
	mean := (float64(m.R)*p.Mu/v0 + t*n*xbar/p.VarX) / prec
	delta, tau2 := mean-xbar, 1/prec
	f = -0.5*n*math.Log(2*math.Pi*p.VarX) - (ss+n*(delta*delta+tau2))/(2*p.VarX)
	k := n / (2 * p.VarX)
	v = k * k * (2*tau2*tau2 + 4*delta*delta*tau2)
	return f, v
}

// GenerateGauss draws R latent values and n observations from the model's generative process.
func GenerateGauss(r *rand.Rand, n, R int, p GaussPrior) (x, theta []float64) {
	theta = make([]float64, R)
	sd := math.Sqrt(p.VarTheta)
	s := 0.0
	for i := range theta {
		theta[i] = p.Mu + sd*r.NormFloat64()
		s += theta[i]
	}
	x = make([]float64, n)
	sx := math.Sqrt(p.VarX)
	for i := range x {
		x[i] = s + sx*r.NormFloat64()
	}
	return x, theta
}

// GaussTruth is truth.json for the Gaussian additive model.
type GaussTruth struct {
	Truth
	Mu       float64   `json:"mu"`
	VarTheta float64   `json:"var_theta"`
	VarX     float64   `json:"var_x"`
	Theta    []float64 `json:"theta"`
	// LogEvidence is the exact log p(x | rank) under the generating priors.
	LogEvidence float64 `json:"log_evidence"`
}

// drawGauss is the Gaussian additive model's Generator.Draw.
func drawGauss(r *rand.Rand, t Truth, p Params, _ *Dictionary) (*tensor.Sparse, any, error) {
	prior := gaussPriorOf(p)
	n := t.Shape[0]
	x, theta := GenerateGauss(r, n, t.Rank, prior)
	g, err := NewGauss(x, t.Rank, prior)
	if err != nil {
		return nil, nil, err
	}
	data, err := tensor.New([]int{n}, n)
	if err != nil {
		return nil, nil, err
	}
	for i, v := range x {
		data.Append([]int{i}, v)
	}
	return data, GaussTruth{Truth: t, Mu: prior.Mu, VarTheta: prior.VarTheta, VarX: prior.VarX,
		Theta: theta, LogEvidence: g.LogEvidence()}, nil
}
