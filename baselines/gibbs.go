package baselines

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/internal/draw"
	"github.com/stirank/stirank/internal/slice"
	"github.com/stirank/stirank/models"
)

// Gibbs is the Gibbs sampler of the augmented Poisson CP model (Cemgil 2009; ICASSP 2016 §4.1.2):
// every count x_n is split over the components, (Z_n1, …, Z_nR) ~ Multinomial(x_n; a_nr / λ_n) with
// a_nr = Π_m F_m[i_m, r], and then, mode after mode, every factor entry is drawn from its full
// conditional
//
//	F_m[i, r] ~ Gamma(1 + S_m[i, r], λ_m + Π_{m'≠m} Σ_i' F_m'[i', r]),  S_m[i, r] = Σ_{n: i_m(n)=i} Z_nr.
//
// Cells not stored are zeros: they allocate nothing, and their share of the Gamma rate is in the
// column sums. A sweep costs O(nnz·R + Σ_m rows_m·R).
//
// Rows 0 … FixedRows[m]−1 of every mode m are held where they are (the reduced runs of Chib's
// method); a mode is fully fixed when FixedRows[m] is its number of rows.
//
// Each sweep ends with scale moves (Liu and Wu 1999, generalised Gibbs): for every component r and
// every pair of modes (m1, m2) with no fixed row, F_m1[·, r] ← c·F_m1[·, r] and
// F_m2[·, r] ← F_m2[·, r]/c with u = log c drawn from its conditional, which the likelihood does
// not enter:
//
//	p(u) ∝ exp((n1 − n2)·u − λ_m1·S1·e^u − λ_m2·S2·e^{−u})   (S = column sums, n = rows),
//
// log-concave, sampled by three slice-sampling updates. Without them Gibbs diffuses along the
// scale ridge of the factorisation only through the priors, slowly when the counts are large.
type Gibbs struct {
	P         *Problem
	R         int
	FixedRows []int
	State     Factors
	// NoScale turns the scale moves off.
	NoScale bool
	// AfterAllocate, when set, is called in every sweep after the counts are allocated and before
	// any factor is drawn, with the allocation statistics S[m] (rows×R) of every mode. It may
	// relabel the free part of the state (see Relabel).
	AfterAllocate func(r *rand.Rand, S [][]int32)

	cs    [][]float64 // column sums of every factor
	S     [][]int32   // allocation statistics of every mode
	rate  []float64
	a     []float64 // running sums of a cell's component weights
	cnt   []int
	tmp   []float64
	tmpS  []int32
	cells int64
}

// NewGibbs returns a sampler of rank R starting at init (copied), with nothing fixed.
func NewGibbs(p *Problem, init Factors) *Gibbs {
	R := init.R
	g := &Gibbs{P: p, R: R, State: init.Clone(), FixedRows: make([]int, p.order), rate: make([]float64, R),
		a: make([]float64, R), cnt: make([]int, R), tmp: make([]float64, R), tmpS: make([]int32, R)}
	for m := range p.order {
		g.cs = append(g.cs, make([]float64, R))
		g.S = append(g.S, make([]int32, p.shape[m]*R))
		models.ColSums(g.State.F[m], R, g.cs[m])
	}
	return g
}

// SetState replaces the current point.
func (g *Gibbs) SetState(f Factors) {
	g.State.CopyFrom(f)
	for m := range g.P.order {
		models.ColSums(g.State.F[m], g.R, g.cs[m])
	}
}

// CellEvals is the number of cell allocations made so far.
func (g *Gibbs) CellEvals() int64 { return g.cells }

// Sweep allocates every count and redraws every factor entry that is not fixed, in mode order.
func (g *Gibbs) Sweep(r *rand.Rand) {
	g.allocate(r)
	if g.AfterAllocate != nil {
		g.AfterAllocate(r, g.S)
	}
	p, R := g.P, g.R
	F := g.State.F
	for m := range p.order {
		lo := g.FixedRows[m] * R
		fm, sm := F[m], g.S[m]
		if lo >= len(fm) {
			continue
		}
		l := p.Rates[m]
		for k := range R {
			o := 1.0
			for m2 := range p.order {
				if m2 != m {
					o *= g.cs[m2][k]
				}
			}
			g.rate[k] = l + o
		}
		for i := lo; i < len(fm); i += R {
			for k := range R {
				fm[i+k] = draw.Gamma(r, 1+float64(sm[i+k]), g.rate[k])
			}
		}
		models.ColSums(fm, R, g.cs[m])
	}
	if !g.NoScale {
		g.partialScaleMoves(r)
		g.scaleMoves(r)
	}
}

// partialScaleMoves rescales, for every component k, the free rows of a partly fixed mode m by c
// and a mode m' with no fixed row by 1/c, given the allocation Z of the sweep. Cells in the free
// rows of m keep their rates; cells in its fixed rows see theirs divided by c; so with
// S_k = Σ_{fixed rows i} S_m[i, k], A = fixed column sum, B = free column sum of m, P the product
// of the other modes' column sums and C = colsum_m'[k],
//
//	p(u | Z, rest) ∝ exp((n_free − n_m' − S_k)·u − (A·P + λ_m'·C)·e^{−u} − λ_m·B·e^u),
//
// log-concave; three slice updates. A reduced run of Chib's method with few fixed rows otherwise
// diffuses slowly along this direction, which the fixed rows barely pin down.
func (g *Gibbs) partialScaleMoves(r *rand.Rand) {
	p, R := g.P, g.R
	for m := range p.order {
		fr := g.FixedRows[m]
		if fr == 0 || fr >= p.shape[m] {
			continue
		}
		for m2 := range p.order {
			if m2 == m || g.FixedRows[m2] > 0 {
				continue
			}
			nFree := float64(p.shape[m] - fr)
			n2 := float64(p.shape[m2])
			fm, f2 := g.State.F[m], g.State.F[m2]
			w := 2 / math.Sqrt(nFree+n2)
			for k := range R {
				A, B := 0.0, 0.0
				Sk := 0.0
				for i := range p.shape[m] {
					if i < fr {
						A += fm[i*R+k]
						Sk += float64(g.S[m][i*R+k])
					} else {
						B += fm[i*R+k]
					}
				}
				P := 1.0
				for m3 := range p.order {
					if m3 != m && m3 != m2 {
						P *= g.cs[m3][k]
					}
				}
				C := g.cs[m2][k]
				P *= C
				alpha := nFree - n2 - Sk
				beta := A*P + p.Rates[m2]*C
				gam := p.Rates[m] * B
				h := func(u float64) float64 { return alpha*u - beta*math.Exp(-u) - gam*math.Exp(u) }
				u := 0.0
				for range 3 {
					u = slice.Step(r, h, u, w)
				}
				if u == 0 {
					continue
				}
				c := math.Exp(u)
				for i := fr*R + k; i < len(fm); i += R {
					fm[i] *= c
				}
				for i := k; i < len(f2); i += R {
					f2[i] /= c
				}
				g.cs[m][k] = A + c*B
				g.cs[m2][k] /= c
			}
		}
	}
}

// allocate draws the allocation of every count and accumulates S for every mode.
func (g *Gibbs) allocate(r *rand.Rand) {
	p, R := g.P, g.R
	for m := range p.order {
		clear(g.S[m])
	}
	F := g.State.F
	a := g.a
	for n, xi := range p.xi {
		i0 := int(p.coords[0][n]) * R
		i1 := int(p.coords[1][n]) * R
		total := 0.0
		if p.order == 2 {
			w, h := F[0][i0:i0+R], F[1][i1:i1+R]
			for k := range a {
				total += w[k] * h[k]
				a[k] = total
			}
		} else {
			i2 := int(p.coords[2][n]) * R
			u, v, w := F[0][i0:i0+R], F[1][i1:i1+R], F[2][i2:i2+R]
			for k := range a {
				total += u[k] * v[k] * w[k]
				a[k] = total
			}
		}
		if xi == 1 {
			k := draw.Categorical(r, a)
			for m := range p.order {
				g.S[m][int(p.coords[m][n])*R+k]++
			}
			continue
		}
		clear(g.cnt)
		draw.Multinomial(r, xi, a, g.cnt)
		for m := range p.order {
			row := g.S[m][int(p.coords[m][n])*R:]
			for k, c := range g.cnt {
				row[k] += int32(c)
			}
		}
	}
	g.cells += int64(len(p.xi))
}

// Relabel moves component s of the free part of the state — the free rows of every factor and
// every allocation statistic — to component tau[s]. The fixed rows keep their labels.
func (g *Gibbs) Relabel(tau []int) {
	R := g.R
	for m := range g.P.order {
		fm, sm := g.State.F[m], g.S[m]
		for i := 0; i < len(sm); i += R {
			for s, t := range tau {
				g.tmpS[t] = sm[i+s]
			}
			copy(sm[i:i+R], g.tmpS)
		}
		for i := g.FixedRows[m] * R; i < len(fm); i += R {
			for s, t := range tau {
				g.tmp[t] = fm[i+s]
			}
			copy(fm[i:i+R], g.tmp)
		}
		models.ColSums(fm, R, g.cs[m])
	}
}

// scaleMoves rescales every component between every pair of modes without fixed rows.
func (g *Gibbs) scaleMoves(r *rand.Rand) {
	p, R := g.P, g.R
	for m1 := range p.order {
		if g.FixedRows[m1] > 0 {
			continue
		}
		for m2 := m1 + 1; m2 < p.order; m2++ {
			if g.FixedRows[m2] > 0 {
				continue
			}
			n1, n2 := float64(p.shape[m1]), float64(p.shape[m2])
			l1, l2 := p.Rates[m1], p.Rates[m2]
			for k := range R {
				u := slice.LogScale(r, n1, n2, l1*g.cs[m1][k], l2*g.cs[m2][k])
				if u == 0 {
					continue
				}
				g.State.rescale(g.cs, m1, m2, k, math.Exp(u))
			}
		}
	}
}

// LogJoint returns log p(X | θ) + log p(θ) at the current point.
func (g *Gibbs) LogJoint() float64 {
	return g.P.LogLik(g.State) + g.P.LogPrior(g.State)
}

// bestStart returns a Gibbs sampler of rank R at the best of starts prior draws, each run
// startSweeps sweeps, by log joint p(X | θ) p(θ): a guard against a poor local mode, and the sweeps
// that took. With one start it is at its prior draw, unrun.
func (p *Problem) bestStart(ctx context.Context, r *rand.Rand, R, starts, startSweeps int) (*Gibbs, int, error) {
	start := p.NewFactors(R)
	p.SamplePrior(r, start)
	g := NewGibbs(p, start)
	if starts <= 1 {
		return g, 0, nil
	}
	best, bestLJ := start.Clone(), math.Inf(-1)
	for s := range starts {
		if s > 0 {
			p.SamplePrior(r, start)
			g.SetState(start)
		}
		for k := range startSweeps {
			g.Sweep(r)
			if k%64 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, 0, err
				}
			}
		}
		if lj := g.LogJoint(); lj > bestLJ || s == 0 {
			best.CopyFrom(g.State)
			bestLJ = lj
		}
	}
	g.SetState(best)
	return g, starts * startSweeps, nil
}
