package models

import (
	"math"

	"gonum.org/v1/gonum/mathext"

	"github.com/stirank/stirank/internal/logtab"
)

var _ RaoBlackwell = (*rank1Augmented)(nil)

// rank1Augmented is the Gibbs kernel of a rank-1 Poisson model (Poisson.rank1), whose rows of a
// factor given the other factors are independent Gammas at every temperature: F_k[i] ~
// Gamma(1 + t·M_k[i], ρ_k), ρ_k = λ_k + t·P_k, P_k = Π_{m≠k} Σ_i F_m[i], M_k the data's margin. So
// E_t[log p(X | θ) | F_m, m ≠ k] has the closed form
//
//	Σ_{m≠k} Σ_i M_m[i] log F_m[i] + Σ_i M_k[i] ψ(1 + t·M_k[i]) − N log ρ_k − P_k·(I_k + t·N)/ρ_k − Σ_n log Γ(x_n + 1),
//
// N the total count and I_k the rows of factor k, from E[log F] = ψ(a) − log ρ and E[F] = a/ρ of a
// Gamma(a, ρ).
type rank1Augmented struct {
	*poissonAugmented
	total float64 // N
	// digamma[k] is Σ_i M_k[i] ψ(1 + t·M_k[i]) at t = digammaT: a chain asks at one temperature.
	digamma  []float64
	digammaT float64
}

func newRank1Augmented(a *poissonAugmented) *rank1Augmented {
	total := 0.0
	for _, x := range a.m.margins[0] {
		total += x
	}
	return &rank1Augmented{poissonAugmented: a, total: total, digammaT: math.NaN()}
}

func (a *rank1Augmented) ConditionalLogLiks(t float64, out []float64) {
	m := a.m
	if a.digammaT != t {
		a.digammaT, a.digamma = t, make([]float64, len(m.factors))
		for k, mk := range m.margins {
			for _, x := range mk {
				if x > 0 {
					a.digamma[k] += x * mathext.Digamma(1+t*x)
				}
			}
		}
	}
	logs := 0.0 // Σ_m Σ_i M_m[i] log F_m[i]; out[k] holds factor k's share until the end
	for k, mk := range m.margins {
		out[k] = 0
		for i, x := range mk {
			if x > 0 {
				out[k] += x * logtab.Log(m.valueRow(a.f, k, i)[0])
			}
		}
		logs += out[k]
	}
	for k, fac := range m.factors {
		p := 1.0
		for j, cs := range a.colsum {
			if j != k {
				p *= cs[0]
			}
		}
		rho := m.Rates[k] + t*p
		out[k] = logs - out[k] + a.digamma[k] - a.total*math.Log(rho) - p*(float64(fac.Rows)+t*a.total)/rho - m.lgamma
	}
}
