package baselines

import (
	"math"

	"github.com/stirank/stirank/models"
)

// LogModeRefine moves f uphill to a mode of the posterior density of the log-factors
// φ = log F, log p(X | θ) + Σ_m Σ_{i,r} (log λ_m − λ_m F_m[i, r] + φ_m[i, r]), by at most iters
// rounds of EM on the multinomial augmentation: the E-step takes E[Z_nr] = x_n a_nr / λ_n, and the
// conditional M-step of every mode in turn is
//
//	F_m[i, r] = (1 + E[S_m[i, r]]) / (λ_m + Π_{m'≠m} colsum_m'[r]),
//
// the same expression as the mean of the Gamma full conditional — so at the mode, every factor
// entry sits at the centre of its full conditional, where the Rao–Blackwellised ordinates of
// Chib's method are most accurate. Every round increases the objective (ECM). Iteration stops
// when the objective gains less than tol. It returns the objective. A dictionary's entries
// (Factors) stay: they are not θ's.
func (p *Problem) LogModeRefine(f Factors, iters int, tol float64) float64 {
	R := f.R
	S := make([][]float64, p.order)
	cs := make([][]float64, p.order)
	for m := range p.order {
		S[m] = make([]float64, p.shape[m]*R)
		cs[m] = make([]float64, R)
		models.ColSums(f.F[m], R, cs[m])
	}
	a := make([]float64, R)
	obj := func() float64 {
		v := p.LogLik(f) + p.LogPrior(f)
		p.params(f, func(m, e int) { v += math.Log(f.F[m][e]) })
		return v
	}
	prev := obj()
	for range iters {
		for m := range S {
			clear(S[m])
		}
		for n, x := range p.x {
			total := 0.0
			for k := range R {
				v := 1.0
				for m := range p.order {
					v *= f.F[m][int(p.coords[m][n])*R+k]
				}
				a[k] = v
				total += v
			}
			for k := range R {
				e := x * a[k] / total
				for m := range p.order {
					S[m][int(p.coords[m][n])*R+k] += e
				}
			}
		}
		for m := range p.order {
			fm := f.F[m]
			for k := p.lead(m); k < R; k++ {
				o := 1.0
				for m2 := range p.order {
					if m2 != m {
						o *= cs[m2][k]
					}
				}
				rate := p.Rates[m] + o
				for i := k; i < len(fm); i += R {
					fm[i] = (1 + S[m][i]) / rate
				}
			}
			models.ColSums(fm, R, cs[m])
		}
		cur := obj()
		if cur-prev < tol {
			prev = cur
			break
		}
		prev = cur
	}
	return prev
}
