package models

import (
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mathext"

	"github.com/stirank/stirank/internal/logtab"
)

var _ RaoBlackwell = (*rank1Augmented)(nil)

// rank1Augmented is the Gibbs kernel of a rank-1 Poisson model (Poisson.rank1), whose rows of a
// factor given the other factors are independent Gammas at every temperature: F_k[i] ~
// Gamma(a_i, ρ_k) with a_i = 1 + t·M_k[i], ρ_k = λ_k + t·P_k and P_k = Π_{m≠k} Σ_i F_m[i], M_k the
// data's margin. Given the other factors, log p(X | θ) is Σ_i (M_k[i] log F_k[i] − P_k·F_k[i]) plus
// a constant, so from E[log F] = ψ(a) − log ρ, E[F] = a/ρ, Var[log F] = ψ′(a), Var[F] = a/ρ² and
// Cov[log F, F] = 1/ρ of a Gamma(a, ρ), with N the total count and I_k the rows of factor k,
//
//	E_t[log p(X | θ) | F_m, m ≠ k] = Σ_{m≠k} Σ_i M_m[i] log F_m[i] + Σ_i M_k[i] ψ(a_i) − N log ρ_k − P_k·(I_k + t·N)/ρ_k − Σ_n log Γ(x_n + 1),
//	Var_t[log p(X | θ) | F_m, m ≠ k] = Σ_i M_k[i]² ψ′(a_i) + P_k²·(I_k + t·N)/ρ_k² − 2·N·P_k/ρ_k.
type rank1Augmented struct {
	*poissonAugmented
	total float64 // N
	// digamma[k] and trigamma[k] are Σ_i M_k[i] ψ(a_i) and Σ_i M_k[i]² ψ′(a_i) at t = marginsT:
	// a chain asks at one temperature.
	digamma, trigamma []float64
	marginsT          float64
}

func newRank1Augmented(a *poissonAugmented) *rank1Augmented {
	return &rank1Augmented{poissonAugmented: a, total: floats.Sum(a.m.margins[0]), marginsT: math.NaN()}
}

func (a *rank1Augmented) Conditionals(t float64, mean, variance []float64) {
	m := a.m
	if a.marginsT != t {
		a.marginsT = t
		a.digamma, a.trigamma = make([]float64, len(m.factors)), make([]float64, len(m.factors))
		for k, mk := range m.margins {
			for _, x := range mk {
				if x > 0 {
					a.digamma[k] += x * mathext.Digamma(1+t*x)
					a.trigamma[k] += x * x * trigamma(1+t*x)
				}
			}
		}
	}
	logs := 0.0 // Σ_m Σ_i M_m[i] log F_m[i]; mean[k] holds factor k's share until the end
	for k, mk := range m.margins {
		if m.Param == LogScale {
			// θ is log F, as the sweep's draws set it and its rescaling moved it.
			fac := m.factors[k]
			mean[k] = floats.Dot(mk, a.theta[fac.Offset:fac.Offset+fac.Rows])
		} else {
			mean[k] = 0
			for i, x := range mk {
				if x > 0 {
					mean[k] += x * logtab.Log(m.valueRow(a.f, k, i)[0])
				}
			}
		}
		logs += mean[k]
	}
	n := a.total
	for k, fac := range m.factors {
		p := 1.0
		for j, cs := range a.colsum {
			if j != k {
				p *= cs[0]
			}
		}
		rho := a.lam[k] + t*p
		shapes := float64(fac.Rows) + t*n // Σ_i a_i
		mean[k] = logs - mean[k] + a.digamma[k] - n*math.Log(rho) - p*shapes/rho - m.lgamma
		variance[k] = a.trigamma[k] + p*p*shapes/(rho*rho) - 2*n*p/rho
	}
}

// trigamma is ψ′(x) for x > 0: the recurrence ψ′(x) = ψ′(x + 1) + 1/x² up to x ≥ 10, then the
// asymptotic series 1/x + 1/(2x²) + Σ_k B_2k/x^(2k+1) to k = 5, within 10⁻¹³ of the value there.
func trigamma(x float64) float64 {
	s := 0.0
	for ; x < 10; x++ {
		s += 1 / (x * x)
	}
	r := 1 / (x * x)
	return s + 1/x + r/2 + r/x*(1.0/6-r*(1.0/30-r*(1.0/42-r*(1.0/30-r*5.0/66))))
}
