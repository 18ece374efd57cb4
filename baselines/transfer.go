package baselines

import (
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/internal/logtab"
	"github.com/stirank/stirank/internal/slice"
)

// transferCos is the product, over the other modes, of the cosines between two components'
// columns that makes them a pair for transferMoves, as for the Gibbs kernel's transfer
// (models.poissonAugmented.ridgePairs).
const transferCos = 0.8

// transferMoves moves, for each pair of ridgePairs of every mode m in turn and every row i of the
// mode, the row's mass between the pair's two components a and b along the line
// F[i, a]·O_a + F[i, b]·O_b = const (O = sliceState.others), which keeps the row's share of Σλ.
// Where the two components' columns in every other mode are parallel (a true component split in
// two at an over-fitted rank), every cell of the row sees the same λ anywhere on the line: the
// posterior is a ridge along it, shaped by the prior and, on the path, by q, which the entry-wise
// slice sweeps cross by small steps where the counts are large, and chains near t = 1 stay where
// their draw from q put them. The share u = F[i, a]·O_a / const ∈ (0, 1) maps linearly onto the
// line, so its conditional on the path is
//
//	log π_t(u) = t·[Σ_{n in row} x_n log λ_n(u) − λ_m·(F[i, a] + F[i, b])] + (1 − t)·log q(θ(u)),
//
// and one slice update draws it (without a reference, q's term is left out: the power posterior's
// conditional, as crossFlats takes it). The pairs depend on the other modes' factors alone, which
// the moves of mode m's rows leave as they are, so each move leaves π_t invariant.
//
// On a matrix the shears (shearMoves) mix two components' whole columns; a transfer moves one row's
// share, where the other factor's two columns are nearly parallel. Both are needed: at rank 3 of
// the 12×10 matrix of the reference tables of README at fb09484 (counts up to 1.4·10⁵, drawn at rank 2) the
// path with shears alone came out 9.0–18.6 nats below AIS over four seeds, and with the transfers
// 0.2–3.8.
func (s *sliceState) transferMoves(r *rand.Rand, t float64) {
	p, R, q := s.p, s.R, s.ref
	if R < 2 {
		return
	}
	for m := range p.order {
		pairs := s.ridgePairs(m)
		if len(pairs) == 0 {
			continue
		}
		fm, lm := s.f.F[m], p.Rates[m]
		for ii := range len(pairs) * p.shape[m] {
			pair, i := pairs[ii/p.shape[m]], ii%p.shape[m]
			a, b := pair[0], pair[1]
			if i == 0 && q != nil {
				q.beginPair(a, b)
			}
			oa, ob := s.others(m, a), s.others(m, b)
			fa, fb := fm[i*R+a], fm[i*R+b]
			total := fa*oa + fb*ob
			if !(total > 0 && oa > 0 && ob > 0) || math.IsInf(total, 0) {
				continue
			}
			cells := p.rowCells[m][p.rowPtr[m][i]:p.rowPtr[m][i+1]]
			nc := len(cells)
			ga, gb, c, x, group := s.g[:nc], s.gb[:nc], s.c[:nc], s.x[:nc], s.group[:nc]
			for j, n := range cells {
				ea, eb := 1.0, 1.0
				for m2 := range p.order {
					if m2 != m {
						row := int(p.coords[m2][n]) * R
						ea *= s.f.F[m2][row+a]
						eb *= s.f.F[m2][row+b]
					}
				}
				ga[j], gb[j] = ea, eb
				c[j] = max(s.lam[n]-fa*ea-fb*eb, 0)
				x[j] = p.x[n]
				group[j] = p.group[n]
			}
			h := func(u float64) float64 {
				if !(u > 0 && u < 1) {
					return math.Inf(-1)
				}
				xa, xb := u*total/oa, (1-u)*total/ob
				v := 0.0
				for j, g := range group {
					if g >= 0 {
						s.prods.Mul(g, c[j]+xa*ga[j]+xb*gb[j])
					} else {
						v += x[j] * logtab.Log(c[j]+xa*ga[j]+xb*gb[j])
					}
				}
				v = s.prods.Counted(v)
				s.cellEvals += int64(nc)
				if q == nil {
					return t * (v - lm*(xa+xb))
				}
				return t*(v-lm*(xa+xb)) + (1-t)*q.transferLog(s.f, m, i, a, b, xa, xb)
			}
			u0 := fa * oa / total
			u := slice.Step(r, h, u0, transferWidth)
			if u == u0 {
				continue
			}
			xa, xb := u*total/oa, (1-u)*total/ob
			if !(xa > 0 && xb > 0) || math.IsInf(xa, 0) || math.IsInf(xb, 0) {
				continue
			}
			if q != nil {
				q.update(m, i*R+a, a, fa, xa)
				q.update(m, i*R+b, b, fb, xb)
			}
			fm[i*R+a], fm[i*R+b] = xa, xb
			s.cs[m][a] += xa - fa
			s.cs[m][b] += xb - fb
			for j, n := range cells {
				s.lam[n] = c[j] + xa*ga[j] + xb*gb[j]
			}
		}
	}
}

// transferWidth is the slice update's initial interval in the share u ∈ (0, 1).
const transferWidth = 0.25

// ridgePairs returns the pairs of components whose columns in every mode other than m have a
// product of cosines of at least transferCos.
func (s *sliceState) ridgePairs(m int) [][2]int {
	R := s.R
	s.pairs = s.pairs[:0]
	cos := s.cos
	for k := range cos {
		cos[k] = 1
	}
	for m2, f := range s.f.F {
		if m2 == m {
			continue
		}
		dot := s.dot
		clear(dot)
		for i := 0; i < len(f); i += R {
			row := f[i : i+R]
			for a, va := range row {
				for b := a; b < R; b++ {
					dot[a*R+b] += va * row[b]
				}
			}
		}
		for a := range R {
			for b := a + 1; b < R; b++ {
				cos[a*R+b] *= dot[a*R+b] / math.Sqrt(dot[a*R+a]*dot[b*R+b])
			}
		}
	}
	for a := range R {
		for b := a + 1; b < R; b++ {
			if cos[a*R+b] >= transferCos { // a column of zeros gives NaN: not a pair
				s.pairs = append(s.pairs, [2]int{a, b})
			}
		}
	}
	return s.pairs
}

// beginPair computes the minors pairMinor of L for the transfers between components a and b:
// they leave every other row of L as it is, so the minors hold for the moves of every row of the
// mode, and log q along a move is a sum over R(R − 1) terms (transferLog) instead of a
// permanent's 2^R·R.
func (q *reference) beginPair(a, b int) {
	R := q.R
	if q.pairMinor == nil {
		q.pairMinor = make([]float64, R*R)
		if R > 2 {
			q.subL, q.subOut, q.sub = make([]float64, (R-1)*(R-1)), make([]float64, R-1), newPermScratch(R-1)
		}
	}
	for j := range R {
		q.pairMinor[j*R+j] = math.Inf(-1)
		if R == 2 {
			q.pairMinor[j*R+1-j] = 0
			continue
		}
		// L without row a and column j; b's row in it is b or b − 1.
		n := 0
		for r := range R {
			if r == a {
				continue
			}
			for c := range R {
				if c != j {
					q.subL[n] = q.L[r*R+c]
					n++
				}
			}
		}
		rb := b
		if b > a {
			rb--
		}
		q.sub.logMinors(q.subL, rb, q.subOut)
		for c, v := range q.subOut {
			l := c
			if c >= j {
				l++
			}
			q.pairMinor[j*R+l] = v
		}
	}
}

// transferLog is log q with entries a and b of row i of mode m at xa and xb (transferMoves): rows
// a and b of L recomputed from their changed entries, and the permanent expanded along them with
// beginPair's minors. It needs T and B consistent with f.
func (q *reference) transferLog(f Factors, m, i, a, b int, xa, xb float64) float64 {
	R, M := q.R, q.M
	fm := f.F[m]
	for _, c := range [2]struct {
		k  int
		nu float64
	}{{a, xa}, {b, xb}} {
		e := i*R + c.k
		old := fm[e]
		logOld, logNu := logtab.Log(old), logtab.Log(c.nu)
		for j := range R {
			copy(q.b, q.B[(c.k*R+j)*M:(c.k*R+j+1)*M])
			q.b[m] = max(q.b[m]+q.beta[m][e-c.k+j]*(c.nu-old), 0)
			q.Ls[c.k*R+j] = q.T[c.k*R+j] + q.term(m, e, j, logNu) - q.term(m, e, j, logOld) + q.orbitLSE(j, q.b, &q.hint[c.k*R+j])
		}
	}
	top := math.Inf(-1)
	for j := range R {
		for l := range R {
			top = max(top, q.Ls[a*R+j]+q.Ls[b*R+l]+q.pairMinor[j*R+l])
		}
	}
	if math.IsInf(top, 0) || math.IsNaN(top) {
		return top
	}
	sum := 0.0
	for j := range R {
		for l := range R {
			sum += math.Exp(q.Ls[a*R+j] + q.Ls[b*R+l] + q.pairMinor[j*R+l] - top)
		}
	}
	return top + math.Log(sum) - q.logFact
}
