package models

import (
	"fmt"
	"math"

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
