package baselines

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/internal/draw"
	"github.com/stirank/stirank/internal/quad"
	"github.com/stirank/stirank/internal/slice"
)

// MaxReferenceRank is the largest rank AIS from a reference runs at: its density is a permanent,
// and every column of a sweep costs one subset recursion over the components (O(2^R·R)).
const MaxReferenceRank = 12

// reference is the start of AIS from a fitted reference: q(θ) = (1/R!) Σ_σ q₀(θ∘σ), with q₀ a
// product of Gamma densities, one per factor entry, moment-matched to Gibbs draws at t = 1, and σ
// the relabelings of the components: q₀(θ∘σ) = Π_{m,i,k} Gamma(F_m[i, k]; α_m[i, σ(k)], β_m[i, σ(k)]).
//
// The symmetrisation makes q, like the posterior, invariant under relabeling, so the estimate needs
// no assumption on how the posterior's R! copies overlap: on tiny data, and at over-fitted ranks
// whose spare components are alike, they do, and q₀ alone with + log R! would be off by up to
// log R!. The sum is a permanent: with L[k, j] = Σ_{m,i} log Gamma(F_m[i, k]; α_m[i, j], β_m[i, j]),
// q(θ) = perm(exp L)/R!. An entry of component k enters row k of L alone, so as a function of that
// entry log q is log Σ_j exp(M_kj + L[k, j]) + const, M_kj the log permanent of L without row k and
// column j, which is fixed while a sweep updates column k of a factor.
type reference struct {
	R                 int
	alpha, beta, norm [][]float64 // per mode, rows×R: α, β and α log β − log Γ(α)
	logFact           float64     // log R!
	L                 []float64   // R×R, row-major
	minor             []float64   // M_kj of the column being swept
	cond              []float64   // M_kj + L[k, j] − the prepared entry's own term, per j
	perm              *permScratch
	lp                []float64
}

// fitReference runs a Gibbs sampler at t = 1 from the best of starts prior runs of startSweeps,
// burnin sweeps and then sweeps more whose draws give each entry's Gamma by its mean and variance.
func (p *Problem) fitReference(ctx context.Context, r *rand.Rand, R, starts, startSweeps, burnin, sweeps int) (*reference, int, int64, error) {
	if R > MaxReferenceRank {
		return nil, 0, 0, fmt.Errorf("ais: rank %d: AIS from a reference runs up to rank %d", R, MaxReferenceRank)
	}
	g, done, err := p.bestStart(ctx, r, R, starts, startSweeps)
	if err != nil {
		return nil, 0, 0, err
	}
	mean, m2 := p.NewFactors(R), p.NewFactors(R)
	for k := range burnin + sweeps {
		g.Sweep(r)
		if k%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, 0, 0, err
			}
		}
		if n := float64(k - burnin + 1); n >= 1 {
			for m, f := range g.State.F {
				for i, v := range f {
					d := v - mean.F[m][i]
					mean.F[m][i] += d / n
					m2.F[m][i] += d * (v - mean.F[m][i])
				}
			}
		}
	}
	done += burnin + sweeps
	q := &reference{R: R, logFact: logFactorial(R), L: make([]float64, R*R), minor: make([]float64, R),
		cond: make([]float64, R), perm: newPermScratch(R), lp: make([]float64, 1<<R)}
	for m := range p.order {
		n := len(mean.F[m])
		a, b, c := make([]float64, n), make([]float64, n), make([]float64, n)
		for i, mu := range mean.F[m] {
			v := m2.F[m][i] / float64(sweeps-1)
			if !(mu > 0 && v > 0) || math.IsInf(mu, 0) || math.IsInf(v, 0) {
				return nil, 0, 0, fmt.Errorf("ais: the reference's factor %d, row %d, component %d has mean %v and variance %v over %d Gibbs sweeps", m, i/R, i%R, mu, v, sweeps)
			}
			a[i], b[i] = mu*mu/v, mu/v
			lg, _ := math.Lgamma(a[i])
			c[i] = a[i]*math.Log(b[i]) - lg
		}
		q.alpha, q.beta, q.norm = append(q.alpha, a), append(q.beta, b), append(q.norm, c)
	}
	return q, done, g.CellEvals(), nil
}

// logq returns log Gamma(F; α, β) of entry i of mode m's factor under label j of q₀.
func (q *reference) logq(m, i, j int, F float64) float64 {
	e := i - i%q.R + j
	return q.norm[m][e] + (q.alpha[m][e]-1)*math.Log(F) - q.beta[m][e]*F
}

// sample draws f from q: a relabeling uniformly, then every entry from its Gamma.
func (q *reference) sample(r *rand.Rand, f Factors) {
	s := r.Perm(q.R)
	for m, fm := range f.F {
		for i := range fm {
			e := i - i%q.R + s[i%q.R]
			fm[i] = draw.Gamma(r, q.alpha[m][e], q.beta[m][e])
		}
	}
	q.refresh(f)
}

// refresh recomputes L from the factors.
func (q *reference) refresh(f Factors) {
	R := q.R
	clear(q.L)
	for m, fm := range f.F {
		for i, F := range fm {
			k := i % R
			for j := range R {
				q.L[k*R+j] += q.logq(m, i, j, F)
			}
		}
	}
}

// logDensity is log q(θ) at the point of the last refresh and updates.
func (q *reference) logDensity() float64 {
	return q.perm.logPerm(q.L) - q.logFact
}

// beginColumn computes the minors M_kj of row k, for the updates of component k's entries.
func (q *reference) beginColumn(k int) {
	logMinors(q.L, q.R, k, q.minor, q.lp)
}

// prepare readies the conditional of entry e of mode m (component k) at its value old.
func (q *reference) prepare(m, e, k int, old float64) {
	for j := range q.R {
		q.cond[j] = q.minor[j] + q.L[k*q.R+j] - q.logq(m, e, j, old)
	}
}

// entryLog is log q(θ) as a function of φ = log F of the prepared entry, up to a constant.
func (q *reference) entryLog(m, e int, phi float64) float64 {
	x, row := math.Exp(phi), e-e%q.R
	v := math.Inf(-1)
	for j, c := range q.cond {
		v = quad.LogAddExp(v, c+q.norm[m][row+j]+(q.alpha[m][row+j]-1)*phi-q.beta[m][row+j]*x)
	}
	return v
}

// update moves the prepared entry (component k) from old to nu in L.
func (q *reference) update(m, e, k int, old, nu float64) {
	for j := range q.R {
		q.L[k*q.R+j] += q.logq(m, e, j, nu) - q.logq(m, e, j, old)
	}
}

// scaleMoves rescales every component between every pair of modes, F_m1[·, k]·c and F_m2[·, k]/c,
// with u = log c drawn by three slice updates from its conditional on the path from the reference,
//
//	log π_t(u) = (n1 − n2)·u − t·(λ_m1·S1·(e^u − 1) + λ_m2·S2·(e^(−u) − 1)) + (1 − t)·log q(θ(u)),
//
// which the likelihood does not enter (S = the columns' sums, n = rows; the Jacobian as in
// slice.LogScale). Under q each labelling j of the component contributes
// a_j·u − b_j·(e^u − 1) − c_j·(e^(−u) − 1) to log q₀, with a_j = Σ_i (α_m1[i, j] − 1) −
// Σ_i (α_m2[i, j] − 1), b_j = Σ_i β_m1[i, j]·F_m1[i, k] and c_j likewise in m2. The slice
// sweeps cross the ridge these moves follow only by small steps where the prior binds it weakly
// (a small matrix with large counts), and AIS then needs many more temperatures.
func (s *sliceState) scaleMoves(r *rand.Rand, t float64) {
	p, R, q := s.p, s.R, s.ref
	a, b, c := make([]float64, R), make([]float64, R), make([]float64, R)
	for m1 := range p.order {
		for m2 := m1 + 1; m2 < p.order; m2++ {
			n1, n2 := float64(p.shape[m1]), float64(p.shape[m2])
			l1, l2 := p.Rates[m1], p.Rates[m2]
			f1, f2 := s.f.F[m1], s.f.F[m2]
			for k := range R {
				for j := range R {
					a[j], b[j], c[j] = 0, 0, 0
					for i := k; i < len(f1); i += R {
						e := i - k + j
						a[j] += q.alpha[m1][e] - 1
						b[j] += q.beta[m1][e] * f1[i]
					}
					for i := k; i < len(f2); i += R {
						e := i - k + j
						a[j] -= q.alpha[m2][e] - 1
						c[j] += q.beta[m2][e] * f2[i]
					}
				}
				q.beginColumn(k)
				for j := range R {
					q.cond[j] = q.minor[j] + q.L[k*R+j]
				}
				s1, s2 := s.cs[m1][k], s.cs[m2][k]
				h := func(u float64) float64 {
					eu, emu := math.Expm1(u), math.Expm1(-u)
					v := math.Inf(-1)
					for j, cj := range q.cond {
						v = quad.LogAddExp(v, cj+a[j]*u-b[j]*eu-c[j]*emu)
					}
					return (n1-n2)*u - t*(l1*s1*eu+l2*s2*emu) + (1-t)*v
				}
				u := 0.0
				for range 3 {
					u = slice.Step(r, h, u, 1)
				}
				if u == 0 {
					continue
				}
				eu, emu := math.Expm1(u), math.Expm1(-u)
				for j := range R {
					q.L[k*R+j] += a[j]*u - b[j]*eu - c[j]*emu
				}
				s.f.rescale(s.cs, m1, m2, k, math.Exp(u))
			}
		}
	}
}
