package models

import (
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/internal/draw"
)

var _ Augmentable = (*Poisson)(nil)

// NewAugmented returns the tempered Gibbs kernel of the Poisson model (poissonAugmented).
func (m *Poisson) NewAugmented() Augmented {
	a := &poissonAugmented{m: m, f: make([]float64, m.dim), prop: make([]float64, m.dim),
		delta: make([]float64, m.Data.NNZ()), logLam: make([]float64, m.Data.NNZ()),
		logLamProp: make([]float64, m.Data.NNZ()), comp: make([]float64, m.R), cnt: make([]int, m.R),
		rate: make([]float64, m.R)}
	rows := 0
	for _, f := range m.factors {
		rows = max(rows, f.Rows)
		a.colsum = append(a.colsum, make([]float64, m.R))
	}
	a.S = make([]float64, rows*m.R)
	a.logOld, a.logNew, a.moved = make([]float64, rows), make([]float64, rows), make([]bool, rows)
	return a
}

// poissonAugmented is Cemgil's (2009) Gibbs sampler of the augmented Poisson model, made exact at
// every temperature. At t a cell contributes λ^{t·x} e^{−t·λ}, and t·x is not a count that a
// multinomial can split. The kernel splits instead ν, t·x rounded at random (its floor, plus one
// with probability of its fractional part, drawn independently of θ): for factor k,
//
//	Z_n ~ Multinomial(ν_n; a_nr / λ_n),  a_nr = Π_m F_m[i_m(n), r],
//	F'_k[i, r] ~ Gamma(1 + Σ_{n: i_k(n) = i} Z_nr, λ_k + t·Π_{m≠k} Σ_i F_m[i, r]),
//
// a data-augmentation step that is reversible for the surrogate π̃(F_k) ∝ p(F_k) Π_n λ_n^{ν_n} e^{−t·λ_n}.
// Proposed for the power posterior π_t, it is accepted with the Metropolis–Hastings ratio
// π_t(F')π̃(F) / (π_t(F)π̃(F')) = Π_n (λ'_n / λ_n)^{t·x_n − ν_n}, which factorises over the rows of
// F_k (independent given the other factors), so each row is accepted on its own. The exponents
// are below one in size and of mean zero, so the acceptance stays high however large the counts;
// at t = 1 nothing is rounded and the kernel is the plain Gibbs sampler. A sweep reads the stored
// cells twice per factor (split, then the proposal's rates); the rates of the last factor's two
// reads give the log-likelihood at the end.
type poissonAugmented struct {
	m       *Poisson
	f, prop []float64   // factor values; the proposed values of the factor being moved
	colsum  [][]float64 // colsum[k][r] = Σ_i F_k[i, r]
	delta   []float64   // t·x_n − ν_n per stored cell
	// logLam and logLamProp are log λ_n at the current and the proposed last factor.
	logLam, logLamProp []float64
	S                  []float64 // Σ_{n in row i} Z_nr of the factor being moved; a row's counts can pass 2³¹
	logOld, logNew     []float64 // Σ_{n in row i} δ_n log λ_n at the current and the proposed factor
	moved              []bool    // whether row i of the factor took its proposal
	comp, rate         []float64
	cnt                []int
}

func (a *poissonAugmented) Sweep(r *rand.Rand, t float64, theta, acc []float64) float64 {
	m := a.m
	R := m.R
	for k, fac := range m.factors {
		for i := fac.Offset; i < fac.Offset+fac.Rows*R; i++ {
			a.f[i] = m.value(theta[i])
		}
		ColSums(a.f[fac.Offset:fac.Offset+fac.Rows*R], R, a.colsum[k])
	}
	d := m.Data
	for k, fac := range m.factors {
		S := a.S[:fac.Rows*R]
		clear(S)
		logOld, logNew := a.logOld[:fac.Rows], a.logNew[:fac.Rows]
		clear(logOld)
		clear(logNew)
		for n, x := range d.Values {
			lam := a.components(n, a.f)
			i := int(d.Coords[k][n])
			tx := t * x
			nu := math.Floor(tx)
			if r.Float64() < tx-nu {
				nu++
			}
			a.delta[n] = tx - nu
			a.logLam[n] = math.Log(lam)
			logOld[i] += a.delta[n] * a.logLam[n]
			if nu == 0 {
				continue
			}
			clear(a.cnt)
			draw.Multinomial(r, int(nu), a.comp, lam, a.cnt)
			for c, z := range a.cnt {
				S[i*R+c] += float64(z)
			}
		}
		for c := range R {
			o := 1.0
			for k2 := range m.factors {
				if k2 != k {
					o *= a.colsum[k2][c]
				}
			}
			a.rate[c] = m.Rates[k] + t*o
		}
		copy(a.prop, a.f)
		lo, hi := fac.Params(0, fac.Rows)
		for j := lo; j < hi; j++ {
			a.prop[j] = draw.Gamma(r, 1+S[j-lo], a.rate[(j-lo)%R])
		}
		last := k == len(m.factors)-1
		for n := range d.Values {
			if a.delta[n] != 0 || last {
				a.logLamProp[n] = math.Log(a.components(n, a.prop))
				logNew[d.Coords[k][n]] += a.delta[n] * a.logLamProp[n]
			}
		}
		accepted := 0.0
		moved := a.moved[:fac.Rows]
		for i := range fac.Rows {
			p := math.Exp(min(logNew[i]-logOld[i], 0))
			if !a.valid(a.prop[lo+i*R : lo+(i+1)*R]) {
				p = 0
			}
			accepted += p
			moved[i] = r.Float64() < p
			if moved[i] {
				copy(a.f[lo+i*R:lo+(i+1)*R], a.prop[lo+i*R:lo+(i+1)*R])
			}
		}
		acc[k] = accepted / float64(fac.Rows)
		ColSums(a.f[lo:hi], R, a.colsum[k])
	}
	// log p(X | θ) = Σ_n x_n log λ_n − Σ_r Π_m colsum_m[r] − Σ_n log Γ(x_n + 1), with λ_n the rate
	// of the last factor's row that was kept.
	k := len(m.factors) - 1
	ll := 0.0
	for n, x := range d.Values {
		if a.moved[d.Coords[k][n]] {
			ll += x * a.logLamProp[n]
		} else {
			ll += x * a.logLam[n]
		}
	}
	for c := range R {
		p := 1.0
		for _, cs := range a.colsum {
			p *= cs[c]
		}
		ll -= p
	}
	for i, v := range a.f {
		if m.Param == LogScale {
			v = math.Log(v)
		}
		theta[i] = v
	}
	return ll - m.lgamma
}

// components writes a_nr for cell n at factor values f into comp and returns λ_n.
func (a *poissonAugmented) components(n int, f []float64) float64 {
	m, d := a.m, a.m.Data
	R := m.R
	for c := range a.comp {
		a.comp[c] = 1
	}
	for k, fac := range m.factors {
		row := f[fac.Offset+int(d.Coords[k][n])*R:]
		for c := range a.comp {
			a.comp[c] *= row[c]
		}
	}
	lam := 0.0
	for _, v := range a.comp {
		lam += v
	}
	return lam
}

// valid reports whether a proposed row is one the parameterisation can hold: a Gamma draw can
// underflow to zero, whose logarithm the log parameterisation cannot take.
func (a *poissonAugmented) valid(row []float64) bool {
	for _, v := range row {
		if !(v > 0) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
