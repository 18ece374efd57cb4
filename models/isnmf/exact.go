package isnmf

import (
	"fmt"
	"math"

	gl "gonum.org/v1/gonum/integrate/quad"

	"github.com/stirank/stirank/internal/quad"
)

// The exact evidence. Writing h = H·θ with θ on the simplex and integrating the total H out (an
// inverse-gamma integral) leaves K − 1 dimensions (Dikmen & Cemgil §4.1):
//
//	p(x | W) = Γ(A) (u/π)^{uF} Π_k b_k^{a_k}/Γ(a_k) ∫ Π_f s_f^{−u} Π_k θ_k^{−a_k−1} B(θ)^{−A} dθ
//
// with s_f = Σ_k w_fk θ_k, A = uF + Σ_k a_k and B(θ) = u Σ_f |x_f|²/s_f + Σ_k b_k/θ_k. For K = 1
// the integral is the integrand at θ = 1; for K = 2, 3 it is computed by quadrature.

// logConst is the part of log p(x | W) that does not depend on θ.
func (m *Model) logConst() float64 {
	c := float64(m.F) * m.U * math.Log(m.U/math.Pi)
	a := float64(m.F) * m.U
	for k := range m.K {
		lg, _ := math.Lgamma(m.A[k])
		c += m.A[k]*math.Log(m.B[k]) - lg
		a += m.A[k]
	}
	lg, _ := math.Lgamma(a)
	return c + lg
}

// logReduced is the log of the integrand over the simplex at θ.
func (m *Model) logReduced(x, theta []float64) float64 {
	a := float64(m.F) * m.U
	var g, b float64
	for k, t := range theta {
		a += m.A[k]
		g -= (m.A[k] + 1) * math.Log(t)
		b += m.B[k] / t
	}
	var bx float64
	for f, p := range x {
		var s float64
		for k, w := range m.W[f*m.K : (f+1)*m.K] {
			s += w * theta[k]
		}
		g -= m.U * math.Log(s)
		bx += p / s
	}
	return g - a*math.Log(b+m.U*bx)
}

// LogEvidenceK1 is the exact log p(x | W) of a one-column dictionary: the inverse-gamma integral
// Γ(a + uF)/(b + u Σ_f |x_f|²/w_f)^{a+uF} · b^a/Γ(a) · (u/π)^{uF} Π_f w_f^{−u}.
func (m *Model) LogEvidenceK1(x []float64) (float64, error) {
	if m.K != 1 {
		return 0, fmt.Errorf("isnmf: the exact evidence needs K = 1, not %d", m.K)
	}
	return m.logConst() + m.logReduced(x, []float64{1}), nil
}

// LogEvidenceQuadrature is log p(x | W) for K ≤ 3 by tensor-product Gauss–Legendre quadrature
// over the simplex, in log-odds coordinates (θ_1 = σ(z_1), θ_2 = (1 − θ_1)σ(z_2)) so that a
// posterior crowded into a corner is resolved as finely as one in the middle; z runs over
// [−40, 40] (beyond it the integrand is below e^−40 of its peak for any data) in the given number
// of 10-node panels per coordinate. Doubling panels is the check of convergence.
func (m *Model) LogEvidenceQuadrature(x []float64, panels int) (float64, error) {
	if m.K == 1 {
		return m.LogEvidenceK1(x)
	}
	if m.K > 3 {
		return 0, fmt.Errorf("isnmf: quadrature over the simplex is for K ≤ 3, not %d", m.K)
	}
	const order, lo, hi = 10, -40.0, 40.0
	z := make([]float64, 0, panels*order)
	lw := make([]float64, 0, panels*order)
	nodes, weights := make([]float64, order), make([]float64, order)
	width := (hi - lo) / float64(panels)
	for p := range panels {
		gl.Legendre{}.FixedLocations(nodes, weights, lo+float64(p)*width, lo+float64(p+1)*width)
		for i := range order {
			z = append(z, nodes[i])
			lw = append(lw, math.Log(weights[i]))
		}
	}
	// logSigmoid(z) = log σ(z); dσ/dz = σ(z)σ(−z).
	logSigmoid := func(z float64) float64 { return -math.Log1p(math.Exp(-z)) }
	theta := make([]float64, m.K)
	terms := make([]float64, 0, len(z))
	if m.K == 2 {
		for i, zi := range z {
			l1, l2 := logSigmoid(zi), logSigmoid(-zi)
			theta[0], theta[1] = math.Exp(l1), math.Exp(l2)
			terms = append(terms, lw[i]+l1+l2+m.logReduced(x, theta))
		}
		return m.logConst() + quad.LogSumExp(terms), nil
	}
	inner := make([]float64, len(z))
	for i, zi := range z {
		l1, r1 := logSigmoid(zi), logSigmoid(-zi)
		theta[0] = math.Exp(l1)
		for j, zj := range z {
			l2, r2 := logSigmoid(zj), logSigmoid(-zj)
			theta[1], theta[2] = math.Exp(r1+l2), math.Exp(r1+r2)
			// dθ_1 dθ_2 = σ(z_1)σ(−z_1) · (1 − θ_1)σ(z_2)σ(−z_2) dz_1 dz_2.
			inner[j] = lw[j] + l2 + r2 + m.logReduced(x, theta)
		}
		terms = append(terms, lw[i]+l1+2*r1+quad.LogSumExp(inner))
	}
	return m.logConst() + quad.LogSumExp(terms), nil
}
