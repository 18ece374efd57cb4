// Package isnmf is the multiplicative exponential noise model, the generative model of NMF under
// the Itakura–Saito divergence (Févotte, Bertin & Durrieu 2009), with a fixed dictionary: a column
// x of F real or complex values is drawn as x_f ~ N_u(0, Σ_k w_fk h_k) with excitations
// h_k ~ IG(a_k, b_k) (u = ½ real, u = 1 circular complex). It answers log p(x | W) — the evidence
// of a dictionary on a column — exactly for K = 1, by quadrature for K ≤ 3, and by the estimators
// of Dikmen & Cemgil (annealed importance sampling, SMC1, SMC2) for any K.
//
// The likelihood depends on a value only through its power |x_f|², so a column is held as powers.
package isnmf

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Model is a dictionary with its prior: W is F×K, row-major, non-negative, with no all-zero
// row; h_k ~ IG(A[k], B[k]); U is ½ for real data and 1 for complex data.
type Model struct {
	F, K int
	W    []float64
	A, B []float64
	U    float64
}

// New returns the model of dictionary w (F×K, row-major) with the same IG(a, b) prior on every
// excitation, for real (complex = false) or complex data.
func New(f, k int, w []float64, a, b float64, complex bool) (*Model, error) {
	m := &Model{F: f, K: k, W: w, A: make([]float64, k), B: make([]float64, k), U: 0.5}
	if complex {
		m.U = 1
	}
	for i := range k {
		m.A[i], m.B[i] = a, b
	}
	return m, m.Validate()
}

// Validate checks the dictionary and the prior.
func (m *Model) Validate() error {
	switch {
	case m.F < 1:
		return fmt.Errorf("isnmf: dictionary has %d rows", m.F)
	case m.K < 1:
		return fmt.Errorf("isnmf: dictionary has %d columns (K must be at least 1)", m.K)
	case len(m.W) != m.F*m.K:
		return fmt.Errorf("isnmf: dictionary holds %d values, not F·K = %d", len(m.W), m.F*m.K)
	case m.U != 0.5 && m.U != 1:
		return fmt.Errorf("isnmf: u = %v (½ for real data, 1 for complex)", m.U)
	case len(m.A) != m.K || len(m.B) != m.K:
		return fmt.Errorf("isnmf: prior has %d shapes and %d scales for %d columns", len(m.A), len(m.B), m.K)
	}
	for k := range m.K {
		if !(m.A[k] > 0 && m.B[k] > 0) || math.IsInf(m.A[k], 0) || math.IsInf(m.B[k], 0) {
			return fmt.Errorf("isnmf: prior IG(%v, %v) of column %d: shape and scale must be positive and finite", m.A[k], m.B[k], k)
		}
	}
	for f := range m.F {
		var row float64
		for k, w := range m.W[f*m.K : (f+1)*m.K] {
			if !(w >= 0) || math.IsInf(w, 0) {
				return fmt.Errorf("isnmf: dictionary entry (%d, %d) is %v (entries must be finite and non-negative)", f, k, w)
			}
			row += w
		}
		if row == 0 {
			return fmt.Errorf("isnmf: dictionary row %d is all zero (no variance for that feature)", f)
		}
	}
	return nil
}

// CheckColumn checks that x holds F finite non-negative powers.
func (m *Model) CheckColumn(x []float64) error {
	if len(x) != m.F {
		return fmt.Errorf("isnmf: column has %d features, dictionary %d", len(x), m.F)
	}
	for f, p := range x {
		if !(p >= 0) || math.IsInf(p, 0) {
			return fmt.Errorf("isnmf: power %v at feature %d (must be finite and non-negative)", p, f)
		}
	}
	return nil
}

// logNormal is log N_u(x; 0, v) of a value of power p = |x|²: u log(u/π) − u log v − u p/v.
func logNormal(u, p, v float64) float64 {
	return u*math.Log(u/math.Pi) - u*math.Log(v) - u*p/v
}

// LogLik is log p(x | W, h).
func (m *Model) LogLik(x, h []float64) float64 {
	var l float64
	for f, p := range x {
		var v float64
		for k, w := range m.W[f*m.K : (f+1)*m.K] {
			v += w * h[k]
		}
		l += logNormal(m.U, p, v)
	}
	return l
}

// LogPrior is log p(h) = Σ_k log IG(h_k; a_k, b_k).
func (m *Model) LogPrior(h []float64) float64 {
	var l float64
	for k, x := range h {
		l += logInvGamma(x, m.A[k], m.B[k])
	}
	return l
}

func logInvGamma(x, a, b float64) float64 {
	lg, _ := math.Lgamma(a)
	return a*math.Log(b) - lg - (a+1)*math.Log(x) - b/x
}

// Sample draws n columns from the model, as powers: h ~ p(h), then x_f ~ N_u(0, Σ_k w_fk h_k).
func (m *Model) Sample(r *rand.Rand, n int) [][]float64 {
	cols := make([][]float64, n)
	h := make([]float64, m.K)
	for i := range cols {
		for k := range h {
			h[k] = invGamma(r, m.A[k], m.B[k])
		}
		x := make([]float64, m.F)
		for f := range x {
			var v float64
			for k := range m.K {
				v += m.W[f*m.K+k] * h[k]
			}
			// 2u real coordinates, each of variance v/(2u).
			for range int(2 * m.U) {
				z := r.NormFloat64() * math.Sqrt(v/(2*m.U))
				x[f] += z * z
			}
		}
		cols[i] = x
	}
	return cols
}
