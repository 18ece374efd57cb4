package models

import (
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/internal/slice"
)

// Blocked is the Poisson model's Gibbs kernel (poissonAugmented) with what Chib's method asks of
// it: rows held where they are (its reduced runs), a look at every sweep's split of the counts
// before any row moves (the Rao–Blackwellised ordinates), and relabelling of the free part from
// that hook. A sweep with neither rows held nor a hook is Augmented's, draw for draw.
type Blocked interface {
	Augmented
	// Hold holds rows 0 … rows[k]−1 of every factor k where they are (nil: none). The scale
	// moves then pair only the factors with no row held, and each partly held factor's free rows
	// with every factor with no row held (partialRescale); a matrix with a row held is not
	// sheared.
	Hold(rows []int)
	// OnSplit sets the function every sweep calls, with the sweep's r, once the counts are split
	// and before any row moves (nil: none). Counts, Values and ColSums are valid in it, and it
	// may Relabel.
	OnSplit(hook func(r *rand.Rand))
	// Counts is factor k's split counts (rows × K, whole numbers), Values its values (rows × K)
	// and ColSums their column sums: the kernel's own, read-only but through Relabel. Values' free
	// entries may also be written, with θ, before a Forget: the next sweep reloads them from θ.
	Counts(k int) []float64
	Values(k int) []float64
	ColSums(k int) []float64
	// Relabel moves component s of the free part of the state — the free rows of every factor
	// and every row's counts — to component tau[s]; the held rows keep their labels.
	Relabel(tau []int)
	// SetFlat turns the moves along the lines the likelihood leaves flat inside a matrix's
	// components (shear) and between alike components (transferRow) on (a new kernel's setting)
	// or off; the scale moves stay.
	SetFlat(on bool)
}

// NewBlocked returns the Gibbs kernel of the augmented model as Blocked. At rank 1 it splits
// the counts like any other rank (the rank-1 moves of NewAugmented have no split to look at).
func (m *Poisson) NewBlocked() Blocked { return m.newAugmented(false) }

func (a *poissonAugmented) OnSplit(hook func(r *rand.Rand)) { a.onSplit = hook }
func (a *poissonAugmented) Counts(k int) []float64          { return a.counts[0][k] }
func (a *poissonAugmented) Values(k int) []float64          { return a.fac[k] }
func (a *poissonAugmented) ColSums(k int) []float64         { return a.colsum[k] }
func (a *poissonAugmented) SetFlat(on bool)                 { a.noShear, a.noTransfer = !on, !on }

func (a *poissonAugmented) Hold(rows []int) {
	a.held, a.free = rows, a.free[:0]
	for k := range a.m.factors {
		if a.heldRows(k) == 0 {
			a.free = append(a.free, k)
		}
	}
}

// heldRows is the number of factor k's leading rows held (Blocked.Hold).
func (a *poissonAugmented) heldRows(k int) int {
	if a.held == nil {
		return 0
	}
	return a.held[k]
}

// heldMoves tags the streams of the moves of the first mode's rows after a split that did not
// move them (gibbs with Blocked's settings), which the split's streams would otherwise repeat.
const heldMoves = transfers - 1

// heldCounts sets heldSum from the sweep's split, for partialRescale, after the moves of the rows
// have taken their counts.
func (a *poissonAugmented) heldCounts() {
	K := a.m.K
	for len(a.heldSum) < len(a.m.factors) {
		a.heldSum = append(a.heldSum, make([]float64, K))
	}
	for k, s := range a.heldSum {
		clear(s)
		ColSums(a.counts[0][k][:a.heldRows(k)*K], K, s)
	}
}

func (a *poissonAugmented) Relabel(tau []int) {
	K := a.m.K
	perm := func(row []float64) {
		for s, t := range tau {
			a.scratch[t] = row[s]
		}
		copy(row, a.scratch[:K])
	}
	for k, fac := range a.fac {
		cnt := a.counts[0][k]
		for i := 0; i < len(cnt); i += K {
			perm(cnt[i : i+K])
		}
		for i := a.heldRows(k); i*K < len(fac); i++ {
			perm(fac[i*K : (i+1)*K])
			a.moved[k][i] = true
		}
		ColSums(fac, K, a.colsum[k])
	}
}

// partialRescale moves, with rows held (Blocked.Hold), for every partly held factor m, every
// factor m' with no row held and every component k, m's free rows by c and m' by 1/c given the
// sweep's split, at t = 1 (the conditional below is the augmented model's, which the tempered
// sweeps' is not): cells in the free rows of m keep their rates, those in its held rows see theirs
// divided by c, so with S the held rows' counts of k, A and B the held and free rows' column sums
// of m, P the product of the other factors' column sums and C m”s,
//
//	p(u | Z, rest) ∝ exp((n_free − n_m' − S)·u − (A·P + λ_m'·C)·e^{−u} − λ_m·B·e^u),
//
// log-concave, three slice updates: a reduced run of Chib's method with few rows held otherwise
// crosses this direction, which those rows barely pin down, slowly. It follows the rows' moves,
// which would redraw the free rows it scales from their conditional and undo it. (rescale pairs
// the factors with no row held.) It reports whether it moved any.
func (a *poissonAugmented) partialRescale(r *rand.Rand) bool {
	moved := false
	m, K := a.m, a.m.K
	for k1, fac := range m.factors {
		held := a.heldRows(k1)
		if held == 0 || held >= fac.Rows {
			continue
		}
		for _, k2 := range a.free {
			nFree, n2 := float64(fac.Rows-held), float64(m.factors[k2].Rows)
			w := 2 / math.Sqrt(nFree+n2)
			// A dictionary's components (NewPoissonFixed) have no such direction: their mode-0
			// entries are constants.
			for comp := max(m.lead(k1), m.lead(k2)); comp < K; comp++ {
				A, B := 0.0, 0.0
				for i := 0; i*K < len(a.fac[k1]); i++ {
					if i < held {
						A += a.fac[k1][i*K+comp]
					} else {
						B += a.fac[k1][i*K+comp]
					}
				}
				P := 1.0
				for k3, cs := range a.colsum {
					if k3 != k1 {
						P *= cs[comp]
					}
				}
				C := a.colsum[k2][comp]
				alpha := nFree - n2 - a.heldSum[k1][comp]
				beta := A*P + a.lam[k2]*C
				gam := a.lam[k1] * B
				h := func(u float64) float64 { return alpha*u - beta*math.Exp(-u) - gam*math.Exp(u) }
				u := 0.0
				for range 3 {
					u = slice.Step(r, h, u, w)
				}
				if u == 0 {
					continue
				}
				moved = true
				c := math.Exp(u)
				for i := held; i*K < len(a.fac[k1]); i++ {
					a.fac[k1][i*K+comp] *= c
					a.moved[k1][i] = true
				}
				for i := 0; i*K < len(a.fac[k2]); i++ {
					a.fac[k2][i*K+comp] /= c
					a.moved[k2][i] = true
				}
				a.colsum[k1][comp] = A + c*B
				a.colsum[k2][comp] /= c
			}
		}
	}
	return moved
}
