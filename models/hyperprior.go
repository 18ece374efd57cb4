package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/internal/slice"
	"github.com/stirank/stirank/tensor"
)

// RatePrior is the prior of the rates λ_m of the factors' exponential priors: with Shape 0, Rates
// are the rates themselves, one per mode; with Shape a > 0 (--rate auto) each mode's rate has
// the hyperprior λ_m ~ Gamma(a, Rates[m]) (Rates[m] its rate b_m) and is a parameter.
type RatePrior struct {
	Rates []float64
	Shape float64
}

// Auto reports whether the rates have a hyperprior.
func (p RatePrior) Auto() bool { return p.Shape > 0 }

// autoShape is the shape of the hyperprior of every mode's rate under --rate auto. One, the
// exponential, makes log λ_m's prior about its centre λ̂ (its mean) fall by 1.4 nats at λ̂/10
// and by 6.7 at 10·λ̂: a decade below the centre stays plausible, larger rates (smaller factors
// than the data's scale) are unlikely; an observed factor of n entries pins its rate to about
// 1/√n on a log scale, far inside that.
const autoShape = 1

// AutoPrior is the hyperprior of --rate auto for data at rank R (R ≥ 1 components): every mode's
// rate has the mean λ̂ = (R/μ)^{1/order}, μ the data's mean cell (their total count over the
// cells of their shape), the rate at which the prior's mean cell R·Π_m 1/λ̂ is the data's. The
// rule reads the data only through their total, which the fit of every rank reproduces (a
// Poisson factorisation's Σ λ over the cells matches Σ x at its stationary points), so it cannot
// favour one rank over another; it scales with the data's units as the factors do; and the shape
// autoShape leaves each rate a decade or more to move, so the data set it, not the rule.
func AutoPrior(data *tensor.Sparse, R int) (RatePrior, error) {
	total, cells := 0.0, 1.0
	for _, x := range data.Values {
		total += x
	}
	for _, n := range data.Shape {
		cells *= float64(n)
	}
	if !(total > 0) || R < 1 {
		return RatePrior{}, fmt.Errorf("--rate %s needs data with a positive total and a rank of at least 1 (total %v, rank %d)", AutoWord, total, R)
	}
	centre := math.Pow(float64(R)*cells/total, 1/float64(data.Order()))
	p := RatePrior{Shape: autoShape, Rates: make([]float64, data.Order())}
	for m := range p.Rates {
		p.Rates[m] = autoShape / centre
	}
	return p, nil
}

// AutoPriorFixed is AutoPrior beside the fixed dictionary d (ssnmf) at free rank R: the free
// columns' prior mean entry is the dictionary's mean entry w̄, so that a free component is a
// column like the dictionary's, and the activations' mean 1/λ̂_1 puts the prior's mean cell,
// (K_D + R)·w̄/λ̂_1, at the data's mean cell μ. The dictionary pins the activations' scale, which
// AutoPrior's symmetric split between the modes would ignore; the rule reads the data only
// through their total, as AutoPrior's does. At R = 0 mode 0's rate has no entries to govern.
func AutoPriorFixed(data *tensor.Sparse, R int, d *Dictionary) (RatePrior, error) {
	total, cells := 0.0, 1.0
	for _, x := range data.Values {
		total += x
	}
	for _, n := range data.Shape {
		cells *= float64(n)
	}
	mean := 0.0
	for _, v := range d.Values {
		mean += v
	}
	mean /= float64(len(d.Values))
	if !(total > 0) || !(mean > 0) || R < 0 || data.Order() != 2 {
		return RatePrior{}, fmt.Errorf("--rate %s beside a dictionary needs a matrix with a positive total, a dictionary with a positive entry and a free rank of at least 0 (total %v, mean entry %v, rank %d)", AutoWord, total, mean, R)
	}
	centre := []float64{1 / mean, float64(d.Cols+R) * mean * cells / total}
	p := RatePrior{Shape: autoShape, Rates: make([]float64, 2)}
	for m, c := range centre {
		p.Rates[m] = autoShape / c
	}
	return p, nil
}

// PoissonPrior is the prior of the rates of a Poisson model (Info.ExpPoissonRates) with
// hyper-parameters p on data at rank R: p's fixed rates, or AutoPrior.
func PoissonPrior(data *tensor.Sparse, R int, p Params) (RatePrior, error) {
	if p.Auto("rates") {
		return AutoPrior(data, R)
	}
	return RatePrior{Rates: p.Nums("rates")}, nil
}

// PoissonAutoSpec is PoissonSpec under --rate auto.
func PoissonAutoSpec(name string, param Param) Spec {
	return Spec{Name: name, Params: Params{"rates": Word(AutoWord), "param": Word(param.String())}}
}

// SampledRates is a model whose factors' prior rates may be parameters (a hyperprior, --rate
// auto); the chains at t = 1 record them so that the report can give their posterior.
type SampledRates interface {
	// AppendRates appends every factor's rate at θ to dst and returns it; it appends nothing
	// when the rates are fixed.
	AppendRates(dst, theta []float64) []float64
}

// AppendRates appends every factor's rate at θ to dst under a hyperprior, nothing at fixed
// rates (SampledRates).
func (m *Poisson) AppendRates(dst, theta []float64) []float64 {
	if !m.auto() {
		return dst
	}
	for k := range m.Rates {
		dst = append(dst, math.Exp(theta[m.dim+k]))
	}
	return dst
}

// drawScale moves factor k, none of whose entries is fixed, by c with its rate integrated out,
// at t, in θ, in its values f and their column sums: the rate's draw given the factor (drawRates)
// follows, so the pair moves as one block. A rate and its factor's scale pin each other to within
// about 1/√n_k, and near the prior, where the hyperprior leaves that scale a decade or more
// (heavy-tailed at autoShape 1), draws of one given the other cross it by a random walk of such
// steps, slower than any chain runs, and the rungs there record too small a spread too high
// (docs/prior.md, go run ./bench/rungs). With F_k = c·F, n_k entries summing to s, the
// factor's prior λ^{n_k}e^{−λ·c·s} under λ ~ Gamma(a, b) integrates to (b + c·s)^{−(a+n_k)}, and
// with ℓ(c) = ℓ + S·log c − Λ·(c − 1) (S = Σ x, Λ = Σ λ_n at θ) u = log c has the log density
//
//	g(u) = (n_k + t·S)·u − t·Λ·e^u − (a + n_k)·log(b + s·e^u),
//
// concave, which two slice updates move. It returns ℓ's change, S·u − Λ·(c − 1).
func (m *Poisson) drawScale(r *rand.Rand, t float64, k int, theta, f []float64, colsum [][]float64, scratch []float64) float64 {
	K := m.K
	lam, s := 0.0, 0.0
	for c := range K {
		p := 1.0
		for _, cs := range colsum {
			p *= cs[c]
		}
		lam += p
		s += colsum[k][c]
	}
	n := float64(m.factors[k].Rows * m.factors[k].Cols)
	g := scaleDensity{alpha: n + t*m.total, tLam: t * lam, s: s, shape: m.hyper.Shape + n, b: m.hyper.Rates[k]}
	h := func(u float64) float64 { v, _, _ := g.derivatives(u); return v }
	_, _, g2 := g.derivatives(0)
	u := 0.0
	for range 2 {
		u = slice.Step(r, h, u, 1/math.Sqrt(-g2))
	}
	if u == 0 {
		return 0
	}
	d, c := scratch[:K], scratch[K:2*K]
	for comp := range K {
		d[comp], c[comp] = u, math.Exp(u)
	}
	m.scaleRows(theta, f, k, d, c, false)
	for comp := range K {
		colsum[k][comp] *= c[comp]
	}
	return m.total*u - lam*math.Expm1(u)
}

// scaleDensity is exp(g(u)) of drawScale: g(u) = alpha·u − tLam·e^u − shape·log(b + s·e^u).
type scaleDensity struct {
	alpha, tLam, s, shape, b float64
}

// derivatives returns g(u), g′(u) and g″(u).
func (d scaleDensity) derivatives(u float64) (g, g1, g2 float64) {
	e := math.Exp(u)
	q := d.s * e / (d.b + d.s*e) // the share of s·e^u in b + s·e^u
	// log(b + s·e^u) as log b + log1p(s·e^u/b) or u + log s + log1p(b/(s·e^u)), whichever keeps
	// its digits.
	var lg float64
	if d.s*e < d.b {
		lg = math.Log(d.b) + math.Log1p(d.s*e/d.b)
	} else {
		lg = u + math.Log(d.s) + math.Log1p(d.b/(d.s*e))
	}
	return d.alpha*u - d.tLam*e - d.shape*lg, d.alpha - d.tLam*e - d.shape*q, -d.tLam*e - d.shape*q*(1-q)
}
