package models

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"weak"

	"gonum.org/v1/gonum/floats"

	"github.com/stirank/stirank/internal/draw"
	"github.com/stirank/stirank/internal/logtab"
	"github.com/stirank/stirank/internal/par"
	"github.com/stirank/stirank/internal/vec"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

var _ Augmentable = (*Poisson)(nil)

// NewAugmented returns the tempered Gibbs kernel of the Poisson model (poissonAugmented), which at
// rank 1 draws every row from its exact conditional and gives the conditional expectations of the
// log-likelihood (rank1Augmented).
func (m *Poisson) NewAugmented() Augmented {
	a := m.newAugmented(m.rank1())
	if a.rank1 {
		return newRank1Augmented(a)
	}
	return a
}

// newAugmented returns the tempered Gibbs kernel; rank1 selects its rank-1 moves (drawRank1Row),
// which only a rank-1 model can take. The moves of higher ranks are exact at rank 1 too.
func (m *Poisson) newAugmented(rank1 bool) *poissonAugmented {
	lay := m.augmentedLayout()
	K := m.K
	a := &poissonAugmented{m: m, lay: lay, f: m.newValues(), rate: make([]float64, K), scale: make([]float64, K),
		mass: make([]float64, K), scratch: make([]float64, 2*K), rank1: rank1 && m.rank1()}
	n := 0
	for k, fac := range m.factors {
		a.free = append(a.free, k)
		a.colsum = append(a.colsum, make([]float64, K))
		a.gram = append(a.gram, make([]float64, K*K))
		a.gramCurrent = append(a.gramCurrent, false)
		a.fac = append(a.fac, a.f[m.values[k]:m.values[k]+fac.Rows*K])
		a.moved = append(a.moved, make([]bool, fac.Rows))
		n = max(n, len(lay.chunks[k])-1)
	}
	a.chunks = make([]augmentedChunk, n)
	a.pairSt.Init(0)
	for c := range a.chunks {
		ch := &a.chunks[c]
		ch.st.Init(0)
		// One block per chunk, padded by a cache line: chunks write their scratch at every cell.
		buf := make([]float64, 3*K+8)
		ch.prop, ch.colsum, ch.counts = buf[:K], buf[K:2*K], buf[2*K:3*K]
		ch.weights = draw.NewWeights(K)
		ch.cnt = make([]int, K+8)[:K]
	}
	return a
}

// augmentedLayout is what the kernels of every chain of every rank share, read-only: the cells
// grouped by the rows of each mode, each mode's rows cut into chunks of about equal work, the
// order a sweep moves the modes in, and where each cell of a mode's grouping is in the first
// mode's, whose order the sweep's roundings are named by. It depends on the data alone.
type augmentedLayout struct {
	once  sync.Once
	byRow []*tensor.ByRow
	// chunks[k] are the row boundaries of mode k's chunks: chunk c is rows chunks[k][c] to chunks[k][c+1].
	chunks [][]int
	// order is the modes in the order a sweep moves them: first the one with the most rows, whose
	// pass splits the counts and reads every cell's rows of the other, smaller, factors two or
	// three times (they stay in cache), then the others in mode order.
	order []int
	// at[k][p] is the position in byRow[order[0]] of the cell at position p of byRow[k] (nil for
	// the first mode).
	at [][]int32
}

// layouts holds the layout of each dataset the kernels of a model have used. The models of all
// ranks of a run are alive together, and a layout takes about 20 bytes per non-zero and mode (60
// MB for 10⁶ non-zeros of a 3-way tensor), so they share one; an entry goes when its dataset is
// collected.
var layouts = struct {
	sync.Mutex
	m map[weak.Pointer[tensor.Sparse]]*augmentedLayout
}{m: map[weak.Pointer[tensor.Sparse]]*augmentedLayout{}}

// augmentedLayout returns the layout of the model's data, building it on first use.
func (m *Poisson) augmentedLayout() *augmentedLayout {
	key := weak.Make(m.Data)
	layouts.Lock()
	lay := layouts.m[key]
	if lay == nil {
		lay = &augmentedLayout{}
		layouts.m[key] = lay
		runtime.AddCleanup(m.Data, func(key weak.Pointer[tensor.Sparse]) {
			layouts.Lock()
			delete(layouts.m, key)
			layouts.Unlock()
		}, key)
	}
	layouts.Unlock()
	lay.once.Do(func() {
		d := m.Data
		f := 0
		for k, n := range d.Shape {
			if n > d.Shape[f] {
				f = k
			}
		}
		lay.order = []int{f}
		for k := range d.Order() {
			g := d.GroupByRow(k)
			lay.byRow = append(lay.byRow, g)
			lay.chunks = append(lay.chunks, workChunks(g.Start))
			if k != f {
				lay.order = append(lay.order, k)
			}
		}
		_, cells := tensor.RowIndex(d.Coords[f], d.Shape[f])
		first := make([]int32, len(cells)) // first[n] is the position of cell n in byRow[f]
		for p, n := range cells {
			first[n] = int32(p)
		}
		lay.at = make([][]int32, d.Order())
		for _, k := range lay.order[1:] {
			_, cells := tensor.RowIndex(d.Coords[k], d.Shape[k])
			lay.at[k] = make([]int32, len(cells))
			for p, n := range cells {
				lay.at[k][p] = first[n]
			}
		}
	})
	return lay
}

// workChunks cuts the rows whose cells start at start (one entry per row and a last one) into at
// most par.MaxChunks chunks of about equal work, a row costing its cells and its own parameters,
// and no smaller than par.MinChunk. The cut depends on the data alone, so the chunks' random
// streams, and the sweep, are the same on any number of cores.
func workChunks(start []int) []int {
	rows := len(start) - 1
	total := start[rows] + rows
	size := max(par.MinChunk, (total+par.MaxChunks-1)/par.MaxChunks)
	cuts := []int{0}
	work := 0
	for i := range rows {
		work += start[i+1] - start[i] + 1
		if work >= size && i+1 < rows {
			cuts = append(cuts, i+1)
			work = 0
		}
	}
	return append(cuts, rows)
}

// poissonAugmented is Cemgil's (2009) Gibbs sampler of the augmented Poisson model, made exact at
// every temperature. At t a cell contributes λ^{t·x} e^{−t·λ}, and t·x is not a count that a
// multinomial can split. The kernel splits instead ν, t·x rounded at random (its floor, plus one
// with probability of its fractional part, drawn independently of θ), once per sweep, and moves
// each factor k in turn given the parts:
//
//	Z_n ~ Multinomial(ν_n; a_nr / λ_n),  a_nr = Π_m F_m[i_m(n), r],
//	F'_k[i, r] ~ Gamma(1 + Σ_{n: i_k(n) = i} Z_nr, λ_k + t·Π_{m≠k} Σ_i F_m[i, r]).
//
// The sweep samples the extended target π_t(θ)·P(ν)·Multinomial(Z; ν, a/λ), whose marginal in θ is
// the power posterior π_t: ν and Z are drawn from their conditional, and each factor's rows are
// proposed from the Gamma above, the conditional of the surrogate p(F_k) Π_n a_n^{Z_n} e^{−t·λ_n},
// and accepted with the Metropolis–Hastings ratio of the extended target's conditional to it,
// Π_n (λ'_n / λ_n)^{t·x_n − ν_n}. Both factorise over the rows of F_k (independent given the other
// factors and Z), so each row is accepted on its own. The exponents are below one in size and of
// mean zero, so the acceptance stays high however large the counts; at t = 1 nothing is rounded
// and the kernel is the plain (blocked) Gibbs sampler. At rank 1 (Poisson.rank1) the tempered
// conditional itself is a Gamma, F'_k[i] ~ Gamma(1 + t·M_k[i], λ_k + t·Π_{m≠k} Σ_i F_m[i]) with M_k
// the data's margin, and the kernel draws it directly (drawRank1Row).
//
// One split per sweep, where a split per factor would redraw Z for every factor, is the least
// work the augmentation asks: the first pass, over the rows of the first mode (the one with the
// most rows, augmentedLayout.order), rounds and splits every cell's count, adds the parts to the
// counts of its rows in every mode and moves the first mode's rows, whose counts are then
// complete; each other factor's pass moves its rows, reading the cells only for the ratio (at a t
// that rounds counts) and, for the last factor moved, the log-likelihood. A cell's rounding is a
// draw named by its position in the first mode's order (rng.At), so every pass finds it without
// storing it. The first pass's parts land in rows of the other modes that chunks share:
// each worker adds them to counts of its own, integers whose sums do not depend on the order.
//
// With a fixed block (NewPoissonFixed) the counts are split over all K components, fixed ones
// included, and a mode-0 row proposes its free entries only: the fixed entries are its
// conditional's constants, the same in λ and λ', and cost no draws. A factor with no parameters
// (mode 0 at R = 0) is not moved.
//
// Everything a row's move reads — its counts, its cells, the rows of the other factors, the other
// factors' column sums — is fixed while factor k moves, so the rows of a factor move
// concurrently, in chunks that each draw from a stream of their own (the sweep's key, the factor,
// the chunk): the sweep is the same on any number of cores.
type poissonAugmented struct {
	m      *Poisson
	lay    *augmentedLayout
	f      []float64   // factor values, K columns per factor (Poisson.values)
	colsum [][]float64 // colsum[k][r] = Σ_i F_k[i, r]
	lam    []float64   // every factor's prior rate at θ (Poisson.ratesAt)
	rate   []float64   // the Gamma conditionals' rates of the factor being moved
	scale  []float64   // their inverses
	mass   []float64   // mass[r] = Π_{m≠k} colsum_m[r] for the factor k being moved
	// pairs are the components transferRow moves mass between in factor k's rows (ridgePairs),
	// drawn from pairSt.
	pairs  [][2]int
	pairSt rng.Stream
	gram   [][]float64 // gram[k] is factor k's Gram matrix, K × K (setGram)
	// gramCurrent[k]: gram[k] is factor k's as its values stand (transfer computes a Gram matrix
	// when ridgePairs first reads it).
	gramCurrent []bool
	chunks      []augmentedChunk
	// counts[w][k] are worker w's parts of the counts of factor k's rows, rows × K, for every
	// factor but the first (the first pass's; each row's move takes and clears them).
	counts [][][]float64
	// rounding names the sweep's roundings: cell p of the first mode's order is rounded up when
	// rng.At(rounding, p) is below the fractional part of its t·x.
	rounding uint64
	// theta is θ as the last sweep left it, f and colsum its values and column sums (current
	// false when they are not): a chain's next sweep starts from that θ and need not load them.
	theta   []float64
	current bool
	rank1   bool // rows drawn by drawRank1Row
	noShear bool // no shear moves (SetShear)
	// noTransfer turns transferRow's moves off (Blocked.SetFlat).
	noTransfer bool
	// held and onSplit are Blocked's: rows held and the hook between the split and the moves
	// (gibbs).
	held    []int
	onSplit func(r *rand.Rand)
	free    []int // the modes with no row held, which rescale pairs
	// heldSum[k] is the column sums of factor k's held rows' counts (heldCounts).
	heldSum [][]float64
	// fac[k] is factor k's values in f, rows × K, and moved[k][i] marks row i of factor k as
	// moved since θ was last written (store).
	fac     [][]float64
	moved   [][]bool
	scratch []float64 // rescale's
}

var _ Shearing = (*poissonAugmented)(nil)

func (a *poissonAugmented) SetShear(on bool) { a.noShear = !on }

// grow makes the chunk's scratch of the cells of a row hold n cells and returns it: whether
// their counts were rounded up, their λ at the row and at its proposal.
func (ch *augmentedChunk) grow(n int) ([]bool, []float64, []float64) {
	if cap(ch.up) < n {
		ch.up = make([]bool, max(n, 64))
		ch.lam = make([]float64, 2*max(n, 64))
	}
	return ch.up[:n], ch.lam[:n], ch.lam[cap(ch.lam)/2 : cap(ch.lam)/2+n]
}

// augmentedChunk is one chunk's stream, scratch and results.
type augmentedChunk struct {
	st           rng.Stream
	prop, colsum []float64
	counts       []float64     // the counts of the row being moved
	weights      *draw.Weights // a cell's split
	cnt          []int
	up           []bool    // whether ν was rounded up, per cell of the row being moved
	lam          []float64 // λ of each cell of the row being moved, and at its proposal (grow)
	ratio        rowRatio
	accepted, ll float64
	_            [64]byte // chunks write their results at every row: keep them off each other's cache lines
}

// Sweep moves every factor's rows, then a matrix's components along the lines that mix them
// (Poisson.shear) and the components' scales (Poisson.rescale), from the column sums the moves
// leave, with r.
func (a *poissonAugmented) Sweep(r *rand.Rand, t float64, theta, acc []float64) float64 {
	return a.sweep(r, t, theta, acc, true)
}

func (a *poissonAugmented) Move(r *rand.Rand, t float64, theta, acc []float64) {
	a.sweep(r, t, theta, acc, false)
}

// sweep is Sweep, and Move without loglik (it then returns NaN).
func (a *poissonAugmented) sweep(r *rand.Rand, t float64, theta, acc []float64, loglik bool) float64 {
	m := a.m
	K := m.K
	key := r.Uint64()
	if !a.current || !slices.Equal(theta, a.theta) {
		a.load(theta)
	}
	var ll float64
	if a.rank1 {
		ll = a.drawRank1(key, t, theta, acc)
	} else {
		if !a.noTransfer {
			a.transfer(key, t)
		}
		ll = a.gibbs(r, key, t, acc, loglik)
	}
	// log p(X | θ) = Σ_n x_n log λ_n − Σ_r Π_m colsum_m[r] − Σ_n log Γ(x_n + 1).
	for c := range K {
		p := 1.0
		for _, cs := range a.colsum {
			p *= cs[c]
		}
		ll -= p
	}
	if !a.rank1 && !a.noShear && a.heldRows(0)+a.heldRows(1) == 0 && m.shear(r, a.f, a.colsum, a.lam) {
		for _, moved := range a.moved {
			for i := range moved {
				moved[i] = true
			}
		}
	}
	partial := a.held != nil && t == 1 && a.partialRescale(r)
	m.rescale(r, theta, a.f, a.colsum, a.scratch, a.lam, a.free)
	if m.auto() {
		ll += m.drawRates(r, t, theta, a.f, a.colsum, a.scratch, a.lam)
	}
	a.store(theta)
	a.theta = append(a.theta[:0], theta...)
	a.current = true
	switch {
	case !loglik:
		return math.NaN()
	case partial:
		// The partial moves changed the held rows' cells' λ after the moves read them.
		e := a.NewEval()
		e.Prepare(theta)
		return LogLik(e, m)
	}
	return ll - m.lgamma
}

// drawRank1 draws every factor's rows from their exact conditionals (drawRank1Row), writes each
// factor's acceptance into acc and returns Σ_n x_n log λ_n.
func (a *poissonAugmented) drawRank1(key uint64, t float64, theta, acc []float64) float64 {
	ll := 0.0
	for k := range a.m.factors {
		a.conditionalRates(k, t)
		a.each(k, func(_ int, ch *augmentedChunk, lo, hi int) {
			ch.st.Reset(key, uint64(k), uint64(lo))
			ch.accepted, ch.ll = 0, 0
			for i := lo; i < hi; i++ {
				a.drawRank1Row(ch, k, i, t, theta)
			}
		})
		var l float64
		acc[k], l = a.results(k)
		ll += l
	}
	return ll
}

// maxCountCopies bounds the workers of the first pass, each of which keeps its parts of the
// counts of every factor but the first (a copy of their size).
const maxCountCopies = 8

// gibbs makes the sweep's Gibbs moves at t (poissonAugmented) on the factors' values, writes each
// factor's acceptance into acc and, with loglik, returns Σ_n x_n log λ_n at the new values (else
// 0). With rows held or a hook (Blocked) the first pass splits every count without moving the
// first mode's rows, the workers' parts are added into the first worker's, the hook runs with r,
// and then every factor's rows move from their counts, the first mode's first, from a stream of
// their own (heldMoves).
func (a *poissonAugmented) gibbs(r *rand.Rand, key uint64, t float64, acc []float64, loglik bool) float64 {
	m := a.m
	order := a.lay.order
	f := order[0]
	held := a.held != nil || a.onSplit != nil
	// At an integer t no count is rounded and every exponent t·x − ν is zero.
	correct := t != math.Trunc(t)
	a.rounding = rng.Key(key, roundings)
	workers := min(maxCountCopies, par.Workers(len(a.lay.chunks[f])-1))
	for len(a.counts) < workers {
		a.counts = append(a.counts, make([][]float64, len(m.factors)))
	}
	for _, copies := range a.counts {
		for k, fac := range m.factors {
			if copies[k] == nil && (held || k != f) {
				copies[k] = make([]float64, fac.Rows*m.K)
			}
		}
	}
	a.conditionalRates(f, t)
	a.eachOn(f, workers, func(w int, ch *augmentedChunk, lo, hi int) {
		ch.st.Reset(key, uint64(f), uint64(lo))
		ch.accepted = 0
		for i := lo; i < hi; i++ {
			a.splitRow(ch, a.counts[w], i, t, correct, !held)
		}
	})
	moves := order[1:]
	if held {
		for _, copies := range a.counts[1:] {
			for k, part := range copies {
				addTo(a.counts[0][k], part) // whole numbers: exact in any order
				clear(part)
			}
		}
		if a.onSplit != nil {
			a.onSplit(r)
		}
		a.heldCounts()
		moves = order
	} else {
		acc[f], _ = a.results(f)
	}
	ll := 0.0
	for j, k := range moves {
		last := loglik && j == len(moves)-1
		a.conditionalRates(k, t)
		a.each(k, func(_ int, ch *augmentedChunk, lo, hi int) {
			if k == f {
				ch.st.Reset(key, uint64(k), uint64(lo), heldMoves)
			} else {
				ch.st.Reset(key, uint64(k), uint64(lo))
			}
			ch.accepted, ch.ll = 0, 0
			for i := lo; i < hi; i++ {
				a.moveRow(ch, k, i, t, correct, last)
			}
		})
		var l float64
		acc[k], l = a.results(k)
		if last {
			ll = l
		}
	}
	return ll
}

// roundings is the stream of a sweep's key that names its roundings (poissonAugmented.rounding),
// and transfers the one of its chunks' transfer moves.
const (
	roundings = math.MaxUint64 - iota
	transfers
)

// results returns factor k's acceptance, the mean over its rows of their acceptance
// probabilities, and the sum of its chunks' log-likelihoods, added in chunk order.
func (a *poissonAugmented) results(k int) (acc, ll float64) {
	accepted := 0.0
	for c := range len(a.lay.chunks[k]) - 1 {
		accepted += a.chunks[c].accepted
		ll += a.chunks[c].ll
	}
	return accepted / float64(a.m.factors[k].Rows), ll
}

func (a *poissonAugmented) Forget() { a.current = false }

func (a *poissonAugmented) NewEval() Eval {
	e := a.m.newEval()
	e.kernel = a
	return e
}

// load sets the factor values, their column sums and the rates from θ.
func (a *poissonAugmented) load(theta []float64) {
	a.lam = a.m.ratesAt(theta, a.lam)
	for k := range a.m.factors {
		a.each(k, func(_ int, ch *augmentedChunk, lo, hi int) {
			a.m.loadRows(theta, a.f, k, lo, hi, ch.colsum)
		})
	}
}

// conditionalRates sets a.rate to the rates of factor k's Gamma conditionals at t, from the other
// factors' column sums, and a.scale to their inverses.
func (a *poissonAugmented) conditionalRates(k int, t float64) {
	m := a.m
	for c := range m.K {
		o := 1.0
		for k2 := range m.factors {
			if k2 != k {
				o *= a.colsum[k2][c]
			}
		}
		a.mass[c] = o
		a.rate[c] = a.lam[k] + t*o
		a.scale[c] = 1 / a.rate[c]
	}
}

// transferMaxStep is the spread of transferRow's local proposals of a component's share,
// transferCos the product of cosines that makes two components a pair for it (ridgePairs) and
// transferPairs·K the most pairs tried per factor and sweep. The test of the move sets
// transferCos to 0 to try every pair.
var transferCos = 0.8

const (
	transferMaxStep = 0.1
	transferPairs   = 4
)

// ridgePairs sets a.pairs to the pairs of factor k's free components whose columns in every
// other factor are nearly parallel, the product of their cosines at least transferCos: only
// there can a row's mass move between them and leave its cells' λ nearly as they were
// (transferRow). Where the free components have more pairs than transferPairs·K, that many are
// tried, drawn from a stream of the sweep's key and k. The pairs depend on the other factors
// alone (their Gram matrices), which the moves of factor k's rows leave as they are.
func (a *poissonAugmented) ridgePairs(key uint64, k int) {
	m := a.m
	K := m.K
	a.pairs = a.pairs[:0]
	lead := m.lead(k)
	free := K - lead
	if free < 2 {
		return
	}
	for k2, current := range a.gramCurrent {
		if k2 != k && !current {
			a.setGram(k2)
			a.gramCurrent[k2] = true
		}
	}
	try := func(r, s int) {
		cos := 1.0
		for k2, g := range a.gram {
			if k2 != k {
				cos *= g[r*K+s] / math.Sqrt(g[r*K+r]*g[s*K+s])
			}
		}
		if cos >= transferCos { // a column of zeros gives NaN: not a pair
			a.pairs = append(a.pairs, [2]int{r, s})
		}
	}
	if free*(free-1)/2 <= transferPairs*K {
		for r := lead; r < K; r++ {
			for s := r + 1; s < K; s++ {
				try(r, s)
			}
		}
		return
	}
	a.pairSt.Reset(key, uint64(k), math.MaxUint64)
	for range transferPairs * K {
		r := lead + int(a.pairSt.Uint64()%uint64(free))
		s := lead + int(a.pairSt.Uint64()%uint64(free-1))
		if s >= r {
			s++
		}
		try(r, s)
	}
}

// setGram sets the upper triangle of factor k's Gram matrix,
// a.gram[k][r·K + s] = Σ_i F_k[i, r]·F_k[i, s] for r ≤ s.
func (a *poissonAugmented) setGram(k int) {
	clear(a.gram[k])
	vec.Gram(a.gram[k], a.fac[k], a.m.K)
}

// transferRow makes a Metropolis–Hastings move of row i's mass between two components r and s,
// a pair of ridgePairs drawn at random, along the line that keeps the row's part of Σλ, F[i,r]·mass[r] + F[i,s]·mass[s] = M. Where the other factors' columns of r and s are
// parallel, every cell of the row sees the same λ anywhere on that line: the posterior is a ridge
// along it, shaped by the prior alone, which the Gibbs moves cross a count's worth at a time. With
// large counts that takes thousands of sweeps: at rank 3 of an 8×6×5 CP tensor of 768 558 counts
// drawn at rank 2 (bench/anneal's seed-7 set) one half of a true component split in two went
// from 0.36 to 0.40 of the pair's mass in a thousand sweeps at t = 1 (0.91 in 16 000), and the
// evidence came out 13 nats below AIS (README at fb09484).
// The share u = F[i,r]·mass[r]/M is proposed, half the time, from the prior along the line (a
// density ∝ exp(−c·u) on (0, 1), so that the ratio is the likelihood's alone, and a flat ridge
// accepts every proposal) and otherwise as u + N(0, transferMaxStep²) reflected into (0, 1), a
// symmetric step whose ratio is the whole target's. The line maps u to F linearly with M fixed,
// so densities in u are densities in F. Zeros are not read: their λ enters only Σλ, which the
// move keeps. (Three moves per row did no better than one on that tensor: README at fb09484.)
func (a *poissonAugmented) transferRow(ch *augmentedChunk, k, i int, t float64) {
	m := a.m
	if len(a.pairs) == 0 {
		return
	}
	row := a.row(k, i)
	pair := a.pairs[ch.st.Uint64()%uint64(len(a.pairs))]
	r, s := pair[0], pair[1]
	u0, step, accept := ch.st.Float64(), ch.st.NormFloat64()*transferMaxStep, ch.st.Float64()
	mr, ms := a.mass[r], a.mass[s]
	total := row[r]*mr + row[s]*ms
	if !(total > 0) || !(mr > 0) || !(ms > 0) || math.IsInf(total, 0) {
		return
	}
	u := row[r] * mr / total
	// The prior along the line is exp(−rate·(F[i,r] + F[i,s])) = exp(−c·u) up to a constant.
	c := a.lam[k] * total * (1/mr - 1/ms)
	independent := u0 < 0.5
	if independent {
		u = truncatedExp(c, 2*u0)
	} else {
		u += step
		for u < 0 || u > 1 {
			if u < 0 {
				u = -u
			} else {
				u = 2 - u
			}
		}
	}
	xr, xs := u*total/mr, (1-u)*total/ms
	if !(xr > 0) || !(xs > 0) || math.IsInf(xr, 0) || math.IsInf(xs, 0) {
		return
	}
	dr, ds := xr-row[r], xs-row[s]
	logRatio := 0.0
	if !independent {
		logRatio = -a.lam[k] * (dr + ds)
	}
	if t > 0 {
		// Σ x log(λ'/λ) over the cells, λ' = λ + dr·o[r] + ds·o[s], o the cell's product of the
		// other factors' rows, with one logarithm per count (logtab.Products).
		K := m.K
		c := a.cells(k, i)
		_, lams, _ := ch.grow(len(c.values))
		vec.DotRows(lams, row, c.fa, c.ia, c.fb, c.ib)
		var ratios logtab.Products
		direct := 0.0
		for q, x := range c.values {
			if x == 0 {
				continue // a stored zero's λ enters only Σλ, which the move keeps
			}
			j := int(c.ia[q]) * K
			or, os := c.fa[j+r], c.fa[j+s]
			if c.fb != nil {
				l := int(c.ib[q]) * K
				or, os = or*c.fb[l+r], os*c.fb[l+s]
			}
			ratio := (lams[q] + dr*or + ds*os) / lams[q]
			if gi, ok := logtab.Group(x); !ok {
				direct += x * logtab.Log(ratio)
			} else if !ratios.TryMul(gi, ratio) {
				ratios.Mul(gi, ratio)
			}
		}
		logRatio += t * ratios.Counted(direct)
	}
	if !(logRatio >= 0) && !(accept < logtab.Exp(logRatio)) {
		return
	}
	row[r], row[s] = xr, xs
	a.moved[k][i] = true
}

// truncatedExp is the quantile at v of the density proportional to exp(−c·u) on (0, 1).
func truncatedExp(c, v float64) float64 {
	switch {
	case math.Abs(c) < 1e-12:
		return v
	case c < 0:
		return 1 - truncatedExp(-c, 1-v)
	}
	return -math.Log1p(v*math.Expm1(-c)) / c
}

// Ascend is one sweep of EM for the mode of the power posterior at t in log space (θ = log F,
// whatever the model's parameterisation): each factor in turn, every count t·x split over the
// components in expectation, E[Z_nr] = t·x_n a_nr / λ_n, and each free entry set to the mode of
// its conditional in log space, F[i, r] = (1 + Σ_n E[Z_nr]) / (λ_k + t·Π_{m≠k} Σ_i F_m[i, r]).
// Every sweep raises t·log p(X | θ) + log p(θ) (log space) or leaves it, so that the sweeps
// climb to a mode in a few hundred passes where a Gibbs chain drifts towards it for thousands.
// Like a Gibbs sweep it keeps the values it wrote, so that the next sweep from the θ it left need
// not load them.
func (a *poissonAugmented) Ascend(t float64, theta []float64) {
	m := a.m
	if !a.current || !slices.Equal(theta, a.theta) {
		a.load(theta)
	}
	a.current = false
	for k, fac := range m.factors {
		if fac.Cols == 0 {
			continue
		}
		a.conditionalRates(k, t)
		lead := m.lead(k)
		a.each(k, func(_ int, ch *augmentedChunk, lo, hi int) {
			ez := ch.prop
			for i := lo; i < hi; i++ {
				row := a.row(k, i)
				clear(ez)
				if a.rank1 {
					ez[0] = t * m.margins[k][i] // every count falls on the one component
				} else {
					a.expectedCounts(ch, k, i, t, ez)
				}
				for c := lead; c < len(row); c++ {
					row[c] = (1 + ez[c]) * a.scale[c]
				}
				addTo(ch.colsum, row)
			}
			m.storeRows(theta, a.fac[k], k, lo, hi)
		})
	}
	if m.auto() {
		// Each rate to the mode of its conditional in log space, λ_k^{a+n_k} e^{−λ_k (b_k + Σ F_k)}.
		for k, fac := range m.factors {
			l := (m.hyper.Shape + float64(fac.Rows*fac.Cols)) / (m.hyper.Rates[k] + floats.Sum(a.colsum[k][m.lead(k):]))
			a.lam[k], theta[m.dim+k] = l, math.Log(l)
		}
	}
	a.theta = append(a.theta[:0], theta...)
	a.current = true
}

// expectedCounts adds to ez the expected counts E[Z_ir] of component r in row i of factor k at t:
// each cell's t·x split in proportion to its components, one division a cell.
func (a *poissonAugmented) expectedCounts(ch *augmentedChunk, k, i int, t float64, ez []float64) {
	K := a.m.K
	row := a.row(k, i)
	c := a.cells(k, i)
	w := ch.weights
	for q, x := range c.values {
		if x == 0 {
			continue // a stored zero has no count to split
		}
		j := int(c.ia[q]) * K
		var b []float64
		if c.fb != nil {
			l := int(c.ib[q]) * K
			b = c.fb[l : l+K]
		}
		w.AddScaled(ez, t*x/w.Set(row, c.fa[j:j+K], b))
	}
}

// each runs body on every chunk of mode k's rows, concurrently (eachOn on every core).
func (a *poissonAugmented) each(k int, body func(worker int, ch *augmentedChunk, lo, hi int)) {
	a.eachOn(k, par.Workers(len(a.lay.chunks[k])-1), body)
}

// eachOn runs body on every chunk of mode k's rows, concurrently on at most workers goroutines
// (par.TasksOn), each chunk's column sums cleared first, and then sets colsum[k] to the chunks'
// column sums, added in chunk order: body adds every row of its chunk to them.
func (a *poissonAugmented) eachOn(k, workers int, body func(worker int, ch *augmentedChunk, lo, hi int)) {
	cuts := a.lay.chunks[k]
	par.TasksOn(len(cuts)-1, workers, func(w, c int) {
		ch := &a.chunks[c]
		clear(ch.colsum)
		body(w, ch, cuts[c], cuts[c+1])
	})
	cs := a.colsum[k]
	clear(cs)
	for c := range len(cuts) - 1 {
		for r, v := range a.chunks[c].colsum {
			cs[r] += v
		}
	}
}

// transfer makes transferRow's moves on the rows of every factor whose components have pairs
// (ridgePairs), one factor after the other, before the counts are split: they move θ alone.
func (a *poissonAugmented) transfer(key uint64, t float64) {
	clear(a.gramCurrent) // every factor moved since the last sweep's transfers
	for k := range a.m.factors {
		a.conditionalRates(k, t)
		a.ridgePairs(key, k)
		if len(a.pairs) == 0 {
			continue
		}
		a.each(k, func(_ int, ch *augmentedChunk, lo, hi int) {
			ch.st.Reset(key, uint64(k), uint64(lo), transfers)
			for i := lo; i < hi; i++ {
				if i >= a.heldRows(k) {
					a.transferRow(ch, k, i, t)
				}
				addTo(ch.colsum, a.row(k, i))
			}
		})
		a.gramCurrent[k] = false
	}
}

// splitRow rounds and splits the counts of the cells of row i of the first factor at t, adds the
// parts to the row's counts and, in counts (a worker's), to those of the cells' rows of the other
// factors, and then moves the row, whose counts are complete, as moveRow does; correct: t rounds
// counts, and the move is corrected by its ratio. Without move the row stays and its counts go to
// counts too (gibbs with Blocked's settings).
func (a *poissonAugmented) splitRow(ch *augmentedChunk, counts [][]float64, i int, t float64, correct, move bool) {
	m := a.m
	K := m.K
	f := a.lay.order[0]
	lo := a.lay.byRow[f].Start[i]
	row := a.row(f, i)
	n := ch.counts
	clear(n)
	c := a.cells(f, i)
	up, lams, props := ch.grow(len(c.values))
	c1 := counts[c.a]
	var c2 []float64
	if c.b >= 0 {
		c2 = counts[c.b]
	}
	// The rows the cells will read and whose counts they will add to, fetched together: the
	// splits of one cell after another would wait on each from memory.
	vec.Prefetch(c.fa, c.ia, K)
	vec.Prefetch(c1, c.ia, K)
	if c.fb != nil {
		vec.Prefetch(c.fb, c.ib, K)
		vec.Prefetch(c2, c.ib, K)
	}
	w := ch.weights
	unsplit := 0 // cells rounded to zero, whose λ the split does not give
	for q, x := range c.values {
		tx := t * x
		nu := math.Floor(tx)
		up[q] = false
		if fr := tx - nu; fr > 0 && rng.At(a.rounding, uint64(lo+q)) < fr {
			nu++
			up[q] = true
		}
		if nu == 0 {
			unsplit++
			continue
		}
		j := int(c.ia[q]) * K
		s1 := c1[j : j+K]
		var b, s2 []float64
		if c.fb != nil {
			l := int(c.ib[q]) * K
			b, s2 = c.fb[l:l+K], c2[l:l+K]
		}
		// The first event with the weights, any more from them; their total is the cell's λ.
		r := w.SetPick(row, c.fa[j:j+K], b, ch.st.Float64())
		lams[q] = w.Total()
		n[r]++
		s1[r]++
		if s2 != nil {
			s2[r]++
		}
		if nu <= float64(2*K+8) {
			for range int(nu) - 1 {
				r := w.Pick(ch.st.Float64())
				n[r]++
				s1[r]++
				if s2 != nil {
					s2[r]++
				}
			}
			continue
		}
		clear(ch.cnt)
		w.Split(ch.st.Rand, int(nu)-1, ch.cnt)
		for r, v := range ch.cnt {
			n[r] += float64(v)
			s1[r] += float64(v)
			if s2 != nil {
				s2[r] += float64(v)
			}
		}
	}
	if !move {
		addTo(counts[f][i*K:(i+1)*K], n)
		addTo(ch.colsum, row)
		return
	}
	if m.lead(f) == K {
		ch.accepted++ // no parameters: the row stays
		addTo(ch.colsum, row)
		return
	}
	p := a.propose(ch, f, row, n)
	if p > 0 && correct {
		if unsplit == 0 {
			// Every cell's λ at the row is its split's total: one dot product a cell, not two.
			vec.DotRows(props, ch.prop, c.fa, c.ia, c.fb, c.ib)
		} else {
			vec.Dot2Rows(lams, props, row, ch.prop, c.fa, c.ia, c.fb, c.ib)
		}
		ch.ratio.cells(t, c.values, lams, props, up, false)
		logRatio, _, _ := ch.ratio.done(t, false)
		p = acceptance(logRatio)
	}
	a.accept(ch, f, i, p)
}

// moveRow moves row i of factor k, not the first, at t: it takes the row's counts from the workers' parts
// (clearing them), proposes the row from its Gamma conditional and accepts it by the
// Metropolis–Hastings ratio where t rounds counts (correct). For the last factor's rows with
// last, it adds their cells' Σ x log λ at the row kept to the chunk's log-likelihood.
func (a *poissonAugmented) moveRow(ch *augmentedChunk, k, i int, t float64, correct, last bool) {
	m := a.m
	K := m.K
	row := a.row(k, i)
	n := ch.counts
	clear(n)
	for _, w := range a.counts {
		// Integers, whose sum is exact in any order.
		part := w[k][i*K : (i+1)*K]
		addTo(n, part)
		clear(part)
	}
	p := 0.0 // a held row stays
	if i >= a.heldRows(k) {
		p = a.propose(ch, k, row, n)
	}
	ratio := p > 0 && correct
	if !ratio {
		// The move is decided before the cells are read, which give the log-likelihood at the
		// row kept.
		a.accept(ch, k, i, p)
		if !last {
			return
		}
	}
	c := a.cells(k, i)
	up, lams, props := ch.grow(len(c.values))
	if !ratio {
		vec.DotRows(lams, row, c.fa, c.ia, c.fb, c.ib)
		var lls logtab.Products
		direct, ones := 0.0, 1.0
		for q, x := range c.values {
			if x == 1 {
				if p := ones * lams[q]; logtab.InRange(p) {
					ones = p
				} else {
					ones = lls.Spill(0, ones, lams[q])
				}
			} else if g, ok := logtab.Group(x); !ok {
				direct += x * logtab.Log(lams[q])
			} else if !lls.TryMul(g, lams[q]) {
				lls.Mul(g, lams[q])
			}
		}
		if ones != 1 {
			lls.Mul(0, ones)
		}
		ch.ll += lls.Counted(direct)
		return
	}
	vec.Dot2Rows(lams, props, row, ch.prop, c.fa, c.ia, c.fb, c.ib)
	// The roundings of the first pass, named by the cells' positions in the first mode's order.
	lo := a.lay.byRow[k].Start[i]
	if at := a.lay.at[k]; at != nil {
		for q, p := range at[lo : lo+len(c.values)] {
			up[q] = rng.At(a.rounding, uint64(p)) < frac(t*c.values[q])
		}
	} else { // the first mode's own rows, moved after the split (gibbs with Blocked's settings)
		for q, x := range c.values {
			up[q] = rng.At(a.rounding, uint64(lo+q)) < frac(t*x)
		}
	}
	ch.ratio.cells(t, c.values, lams, props, up, last)
	logRatio, xOld, xNew := ch.ratio.done(t, last)
	if a.accept(ch, k, i, acceptance(logRatio)) {
		xOld = xNew
	}
	ch.ll += xOld
}

// propose draws the proposal of a row of factor k whose counts are n into ch.prop, the fixed
// entries copied, and returns 1, or 0 where a draw underflowed to zero, whose logarithm the log
// parameterisation cannot take, or overflowed.
func (a *poissonAugmented) propose(ch *augmentedChunk, k int, row, n []float64) float64 {
	lead := a.m.lead(k)
	prop := ch.prop
	copy(prop[:lead], row[:lead])
	valid := true
	for c := lead; c < len(row); c++ {
		v := draw.GammaCount(&ch.st, n[c]) * a.scale[c]
		prop[c] = v
		valid = valid && v > 0 && !math.IsInf(v, 0)
	}
	if valid {
		return 1
	}
	return 0
}

// acceptance is the probability of accepting a move of log ratio logRatio; NaN for a NaN ratio,
// which accept rejects.
func acceptance(logRatio float64) float64 {
	if logRatio >= 0 {
		return 1
	}
	return logtab.Exp(logRatio)
}

// accept adds the move of row i of factor k to ch.prop with probability p to the chunk's
// acceptance, accepts it with that probability, writing the proposal into the row and marking it
// moved (store writes θ), adds the row kept to the chunk's column sums and reports whether it
// moved.
func (a *poissonAugmented) accept(ch *augmentedChunk, k, i int, p float64) bool {
	row := a.row(k, i)
	ch.accepted += p
	moved := p == 1 || (p > 0 && ch.st.Float64() < p)
	if moved {
		copy(row, ch.prop)
		a.moved[k][i] = true
	}
	addTo(ch.colsum, row)
	return moved
}

// store writes the parameters of the rows the sweep moved into θ from their values, and clears
// their marks.
func (a *poissonAugmented) store(theta []float64) {
	for k, moved := range a.moved {
		par.For(len(moved), func(_, lo, hi int) {
			// Runs of moved rows, whose logarithms Logs takes four at a time.
			for i := lo; i < hi; {
				j := i
				for j < hi && moved[j] {
					j++
				}
				if j > i {
					clear(moved[i:j])
					a.m.storeRows(theta, a.fac[k], k, i, j)
				}
				i = j + 1
			}
		})
	}
}

// row is row i of factor k's K values.
func (a *poissonAugmented) row(k, i int) []float64 {
	K := a.m.K
	return a.fac[k][i*K : (i+1)*K]
}

// rowRatio accumulates, over the cells of a row moved to a valid proposal, the logarithm of the
// move's Metropolis–Hastings ratio Π_n (λ'_n / λ_n)^{t·x_n − ν_n} and, for the last factor, the
// cells' Σ x log λ at the row and at the proposal. The exponent is frac(t·x) − [ν rounded up],
// so log Π (λ'/λ)^{t·x−ν} = Σ frac(t·x) log(λ'/λ) − log Π_{up} λ'/λ, and frac(t·x) and the
// log-likelihood's x depend on a cell only through its count: the logarithms are taken of
// products over the cells of each count (logtab.Products). The zero value is empty.
type rowRatio struct {
	// cur and next group λ and λ' (or λ'/λ without the log-likelihood), up the rounded-up cells' λ'/λ.
	cur, next, up        logtab.Products
	logRatio, xOld, xNew float64
}

// cells adds a row's cells: their counts values, their λ at the row lams and at the proposal
// props, whether their counts were rounded up; ll: the log-likelihood's terms too. The products
// of the rounded-up cells and, without the log-likelihood, of the cells of count 1, most of a
// sparse row's, are runs (logtab.Products.Spill).
func (q *rowRatio) cells(t float64, values, lams, props []float64, up []bool, ll bool) {
	props, up = props[:len(values)], up[:len(values)]
	upped, ones := 1.0, 1.0
	for c, x := range values[:len(lams)] {
		lam, lamProp := lams[c], props[c]
		ratio := lamProp / lam
		if up[c] {
			if p := upped * ratio; logtab.InRange(p) {
				upped = p
			} else {
				upped = q.up.Spill(0, upped, ratio)
			}
		}
		if x == 1 && !ll {
			if p := ones * ratio; logtab.InRange(p) {
				ones = p
			} else {
				ones = q.next.Spill(0, ones, ratio)
			}
			continue
		}
		g, grouped := logtab.Group(x)
		switch {
		case ll && grouped:
			if !q.cur.TryMul(g, lam) {
				q.cur.Mul(g, lam)
			}
			if !q.next.TryMul(g, lamProp) {
				q.next.Mul(g, lamProp)
			}
		case ll:
			q.add(t, x, logtab.Log(lam), logtab.Log(lamProp))
		case grouped:
			if !q.next.TryMul(g, ratio) {
				q.next.Mul(g, ratio)
			}
		default:
			if fr := frac(t * x); fr != 0 {
				q.logRatio += fr * logtab.Log(ratio)
			}
		}
	}
	if upped != 1 {
		q.up.Mul(0, upped)
	}
	if ones != 1 {
		q.next.Mul(0, ones)
	}
}

// add adds the terms of cells of count x whose log λ sum to lg and log λ' to lgProp (one cell,
// or a group of them): x·lg to xOld, x·lgProp to xNew and frac(t·x)·(lgProp − lg) to the log
// ratio.
func (q *rowRatio) add(t, x, lg, lgProp float64) {
	q.xOld += x * lg
	q.xNew += x * lgProp
	if fr := frac(t * x); fr != 0 {
		q.logRatio += fr * (lgProp - lg)
	}
}

// done returns the log ratio and, with ll, Σ x log λ at the row and at the proposal, and empties q.
func (q *rowRatio) done(t float64, ll bool) (logRatio, xOld, xNew float64) {
	if ll {
		for i, lg, ok := q.cur.Pop(); ok; i, lg, ok = q.cur.Pop() {
			q.add(t, float64(i+1), lg, q.next.Take(i))
		}
	} else {
		for i, lg, ok := q.next.Pop(); ok; i, lg, ok = q.next.Pop() {
			if fr := frac(t * float64(i+1)); fr != 0 {
				q.logRatio += fr * lg
			}
		}
	}
	logRatio, xOld, xNew = q.logRatio-q.up.Take(0), q.xOld, q.xNew
	q.logRatio, q.xOld, q.xNew = 0, 0, 0
	return logRatio, xOld, xNew
}

// addTo adds v to s, entry by entry.
func addTo(s, v []float64) {
	s = s[:len(v)]
	for c, x := range v {
		s[c] += x
	}
}

// drawRank1Row draws row i of factor k at rank 1 (Poisson.rank1) from its conditional at t, which
// is exact without augmentation: the row's cells contribute F^{t·M} e^{−t·F·Π_{m≠k} colsum_m}, M
// its margin, so the conditional is Gamma(1 + t·M, rate) at every temperature and needs neither a
// split nor a Metropolis–Hastings correction. It adds M log F (its share of Σ x log λ) to the
// chunk's log-likelihood.
func (a *poissonAugmented) drawRank1Row(ch *augmentedChunk, k, i int, t float64, theta []float64) {
	m := a.m
	row := m.valueRow(a.f, k, i)
	x := m.margins[k][i]
	// A Gamma draw can underflow to zero, whose logarithm the log parameterisation cannot take:
	// the row then stays.
	v := draw.Gamma(ch.st.Rand, 1+t*x, a.rate[0])
	drawn := v > 0 && !math.IsInf(v, 0)
	if drawn {
		row[0] = v
		ch.accepted++
	}
	logF := 0.0 // one logarithm serves θ and the log-likelihood
	if m.Param == LogScale || x > 0 {
		logF = logtab.Log(row[0])
	}
	if drawn {
		if m.Param == LogScale {
			v = logF
		}
		m.paramRow(theta, k, i)[0] = v
	}
	if x > 0 {
		ch.ll += x * logF
	}
	ch.colsum[0] += row[0]
}

// rowCells are the cells of a row of a mode: their counts, and for the vec row loops the indices
// of the rows of the other factors they read (ia of factor a, ib of factor b) and those factors'
// values (fa, fb); a matrix's cells read one other factor, and b is −1, ib and fb nil.
type rowCells struct {
	values []float64
	a, b   int
	ia, ib []int32
	fa, fb []float64
}

// cells returns the cells of row i of mode k.
func (a *poissonAugmented) cells(k, i int) rowCells {
	g := a.lay.byRow[k]
	lo, hi := g.Start[i], g.Start[i+1]
	c := rowCells{values: g.Values[lo:hi], ia: g.Other[0][lo:hi]}
	c.a, c.b = otherModes(k, len(a.fac))
	c.fa = a.fac[c.a]
	if c.b >= 0 {
		c.ib, c.fb = g.Other[1][lo:hi], a.fac[c.b]
	}
	return c
}

// otherModes returns the modes other than k of a tensor of that order, in mode order: the
// second is −1 for a matrix.
func otherModes(k, order int) (int, int) {
	switch {
	case order == 2:
		return 1 - k, -1
	case k == 0:
		return 1, 2
	case k == 1:
		return 0, 2
	}
	return 0, 1
}

// frac is the fractional part of a non-negative v.
func frac(v float64) float64 { return v - math.Floor(v) }
