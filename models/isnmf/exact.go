package isnmf

import (
	"fmt"
	"math"

	gl "gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/mat"

	"github.com/stirank/stirank/internal/quad"
)

// The exact evidence. Writing h = H·θ with θ on the simplex and integrating the total H out (an
// inverse-gamma integral) leaves K − 1 dimensions (Dikmen & Cemgil §4.1):
//
//	p(x | W) = Γ(A) (u/π)^{uF} Π_k b_k^{a_k}/Γ(a_k) ∫ Π_f s_f^{−u} Π_k θ_k^{−a_k−1} B(θ)^{−A} dθ
//
// with s_f = Σ_k w_fk θ_k, A = uF + Σ_k a_k and B(θ) = u Σ_f |x_f|²/s_f + Σ_k b_k/θ_k. For K = 1
// the integral is the integrand at θ = 1; for K = 2 … 4 it is computed by quadrature.

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
	var logs logSum
	for f, p := range x {
		var s float64
		for k, w := range m.W[f*m.K : (f+1)*m.K] {
			s += w * theta[k]
		}
		logs.add(1, s)
		bx += p / s
	}
	return g - m.U*logs.value() - a*math.Log(b+m.U*bx)
}

// LogEvidenceK1 is the exact log p(x | W) of a one-column dictionary: the inverse-gamma integral
// Γ(a + uF)/(b + u Σ_f |x_f|²/w_f)^{a+uF} · b^a/Γ(a) · (u/π)^{uF} Π_f w_f^{−u}.
func (m *Model) LogEvidenceK1(x []float64) (float64, error) {
	if m.K != 1 {
		return 0, fmt.Errorf("isnmf: the exact evidence needs K = 1, not %d", m.K)
	}
	return m.logConst() + m.logReduced(x, []float64{1}), nil
}

// LogEvidenceQuadrature is log p(x | W) for K ≤ 4 by tensor-product Gauss–Legendre quadrature
// over the simplex. θ is written in stick-breaking log-odds coordinates z (θ_1 = σ(z_1),
// θ_2 = (1 − θ_1)σ(z_2), …), in which the integrand decays exponentially in every direction, and z
// is centred and whitened by the Laplace approximation at the integrand's peak, z = ẑ + L y, so
// that a posterior as narrow as F = 200 features make it is resolved as finely as a broad one.
// y runs over [−quadRadius, quadRadius] in the given number of 10-node panels per coordinate.
// Doubling panels is the check of convergence; the cost is (10·panels)^{K−1} integrand values.
func (m *Model) LogEvidenceQuadrature(x []float64, panels int) (float64, error) {
	return m.quadrature(x, panels, quadRadius)
}

// quadRadius is the half-width of the quadrature's box in Laplace standard deviations: the
// integrand falls faster than e^{−(A−a_k)|z|} in the tails, far below e^−60 of its peak there
// (TestQuadrature checks that a wider box changes nothing).
const quadRadius = 16

func (m *Model) quadrature(x []float64, panels int, radius float64) (float64, error) {
	if m.K == 1 {
		return m.LogEvidenceK1(x)
	}
	if m.K > 4 {
		return 0, fmt.Errorf("isnmf: quadrature over the simplex is for K ≤ 4, not %d", m.K)
	}
	d := m.K - 1
	theta := make([]float64, m.K)
	logf := func(z []float64) float64 { return m.logReducedLogOdds(x, z, theta) }
	peak := argmaxLogOdds(logf, d)
	chol, logDet, err := laplaceFactor(logf, peak)
	if err != nil {
		return 0, err
	}
	const order = 10
	y := make([]float64, 0, panels*order)
	lw := make([]float64, 0, panels*order)
	nodes, weights := make([]float64, order), make([]float64, order)
	width := 2 * radius / float64(panels)
	for p := range panels {
		lo := -radius + float64(p)*width
		gl.Legendre{}.FixedLocations(nodes, weights, lo, lo+width)
		for i := range order {
			y = append(y, nodes[i])
			lw = append(lw, math.Log(weights[i]))
		}
	}
	// Every point of the grid of y in turn, the last coordinate fastest; z = ẑ + L y.
	n := len(y)
	total := 1
	for range d {
		total *= n
	}
	terms := make([]float64, total)
	idx := make([]int, d)
	z := make([]float64, d)
	for t := range terms {
		w := 0.0
		for i := range d {
			w += lw[idx[i]]
			z[i] = peak[i]
			for j := 0; j <= i; j++ {
				z[i] += chol.At(i, j) * y[idx[j]]
			}
		}
		terms[t] = w + logf(z)
		for i := d - 1; i >= 0; i-- {
			if idx[i]++; idx[i] < n {
				break
			}
			idx[i] = 0
		}
	}
	return m.logConst() + logDet + quad.LogSumExp(terms), nil
}

// logReducedLogOdds is the log of the integrand over the simplex at the log-odds coordinates z,
// with the Jacobian of θ(z): Σ_i log σ(z_i) + log σ(−z_i) + log(the stick left before i).
func (m *Model) logReducedLogOdds(x, z, theta []float64) float64 {
	// logSigmoid(z) = log σ(z), without overflow at either end.
	logSigmoid := func(z float64) float64 {
		if z < 0 {
			return z - math.Log1p(math.Exp(z))
		}
		return -math.Log1p(math.Exp(-z))
	}
	var stick, jac float64 // log of the stick left, log of the Jacobian
	for i, zi := range z {
		l, r := logSigmoid(zi), logSigmoid(-zi)
		theta[i] = math.Exp(stick + l)
		jac += l + r + stick
		stick += r
	}
	theta[len(z)] = math.Exp(stick)
	for _, t := range theta {
		if t == 0 {
			return math.Inf(-1)
		}
	}
	return jac + m.logReduced(x, theta)
}

// argmaxLogOdds is the peak of f over R^d: the best point of a coarse grid over [−30, 30]^d,
// then Newton's method with finite-difference derivatives, halving a step that does not rise.
func argmaxLogOdds(f func([]float64) float64, d int) []float64 {
	const lo, step, points = -30.0, 2.0, 31
	best, bestF := make([]float64, d), math.Inf(-1)
	z := make([]float64, d)
	total := 1
	for range d {
		total *= points
	}
	for t := range total {
		for i, rest := 0, t; i < d; i, rest = i+1, rest/points {
			z[i] = lo + step*float64(rest%points)
		}
		if v := f(z); v > bestF {
			bestF = v
			copy(best, z)
		}
	}
	next := make([]float64, d)
	for range 100 {
		g, h := derivatives(f, best)
		var chol mat.Cholesky
		neg := mat.NewSymDense(d, nil)
		for i := range d {
			for j := range d {
				neg.SetSym(i, j, -h[i*d+j])
			}
		}
		dir := mat.NewVecDense(d, nil)
		if chol.Factorize(neg) {
			if err := chol.SolveVecTo(dir, mat.NewVecDense(d, g)); err != nil {
				dir = mat.NewVecDense(d, g)
			}
		} else {
			dir = mat.NewVecDense(d, g) // not concave here: climb the gradient
		}
		moved := false
		for s := 1.0; s > 1e-12; s /= 2 {
			for i := range d {
				next[i] = best[i] + s*dir.AtVec(i)
			}
			if v := f(next); v > bestF {
				bestF, moved = v, true
				copy(best, next)
				break
			}
		}
		if !moved || mat.Norm(dir, 2) < 1e-10 {
			break
		}
	}
	return best
}

// derivatives is the gradient and Hessian (d×d, row-major) of f at z by central differences.
func derivatives(f func([]float64) float64, z []float64) (g, h []float64) {
	const e = 1e-4
	d := len(z)
	g, h = make([]float64, d), make([]float64, d*d)
	p := append([]float64(nil), z...)
	at := func(i int, di float64, j int, dj float64) float64 {
		copy(p, z)
		p[i] += di
		p[j] += dj
		return f(p)
	}
	f0 := f(z)
	for i := range d {
		fp, fm := at(i, e, i, 0), at(i, -e, i, 0)
		g[i] = (fp - fm) / (2 * e)
		h[i*d+i] = (fp - 2*f0 + fm) / (e * e)
		for j := range i {
			v := (at(i, e, j, e) - at(i, e, j, -e) - at(i, -e, j, e) + at(i, -e, j, -e)) / (4 * e * e)
			h[i*d+j], h[j*d+i] = v, v
		}
	}
	return g, h
}

// laplaceFactor is the lower Cholesky factor L of the Laplace covariance (−∇²f)^{−1} at peak and
// log det L, the Jacobian of z = peak + L y.
func laplaceFactor(f func([]float64) float64, peak []float64) (*mat.TriDense, float64, error) {
	d := len(peak)
	_, h := derivatives(f, peak)
	prec := mat.NewSymDense(d, nil)
	for i := range d {
		for j := range d {
			prec.SetSym(i, j, -h[i*d+j])
		}
	}
	var chol mat.Cholesky
	if !chol.Factorize(prec) {
		return nil, 0, fmt.Errorf("isnmf: the integrand's peak is not a maximum (Hessian %v)", h)
	}
	var cov mat.SymDense
	if err := chol.InverseTo(&cov); err != nil {
		return nil, 0, err
	}
	if !chol.Factorize(&cov) {
		return nil, 0, fmt.Errorf("isnmf: the Laplace covariance is not positive definite")
	}
	var l mat.TriDense
	chol.LTo(&l)
	var logDet float64
	for i := range d {
		logDet += math.Log(l.At(i, i))
	}
	return &l, logDet, nil
}
