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
	a := &poissonAugmented{m: m, lay: lay, f: m.newValues(), rate: make([]float64, K), mass: make([]float64, K), rank1: rank1 && m.rank1()}
	n := 0
	for k := range m.factors {
		a.colsum = append(a.colsum, make([]float64, K))
		a.norms = append(a.norms, make([]float64, K))
		n = max(n, len(lay.chunks[k])-1)
	}
	a.chunks = make([]augmentedChunk, n)
	a.pairSt.Init(0)
	for c := range a.chunks {
		ch := &a.chunks[c]
		ch.st.Init(0)
		// One block per chunk, padded by a cache line: chunks write their scratch at every cell.
		buf := make([]float64, 4*K+8)
		ch.other, ch.comp, ch.prop, ch.colsum = buf[:K], buf[K:2*K], buf[2*K:3*K], buf[3*K:4*K]
		ch.split = draw.SplitScratch(K)
		ch.cnt = make([]int, K+8)[:K]
	}
	return a
}

// augmentedLayout is what the kernels of every chain of every rank share, read-only: the cells
// grouped by the rows of each mode, and each mode's rows cut into chunks of about equal work.
// It depends on the data alone.
type augmentedLayout struct {
	once  sync.Once
	byRow []*tensor.ByRow
	// chunks[k] are the row boundaries of mode k's chunks: chunk c is rows chunks[k][c] to chunks[k][c+1].
	chunks [][]int
}

// layouts holds the layout of each dataset the kernels of a model have used. The models of all
// ranks of a run are alive together, and a layout takes about 16 bytes per non-zero and mode (48
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
		for k := range m.Data.Order() {
			g := m.Data.GroupByRow(k)
			lay.byRow = append(lay.byRow, g)
			lay.chunks = append(lay.chunks, workChunks(g.Start))
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
// at t = 1 nothing is rounded and the kernel is the plain Gibbs sampler. At rank 1 (Poisson.rank1)
// the tempered conditional itself is a Gamma, F'_k[i] ~ Gamma(1 + t·M_k[i], λ_k + t·Π_{m≠k} Σ_i F_m[i])
// with M_k the data's margin, and the kernel draws it directly (drawRank1Row).
//
// With a fixed block (NewPoissonFixed) the counts are split over all K components, fixed ones
// included, and a mode-0 row proposes its free entries only: the fixed entries are its
// conditional's constants, the same in λ and λ', and cost no draws. A factor with no parameters
// (mode 0 at R = 0) is not moved.
//
// Everything a row's move reads — its cells, the rows of the other factors, the other factors'
// column sums — is fixed while factor k moves, so the rows of a factor move concurrently, in
// chunks that each draw from a stream of their own (the sweep's key, the factor, the chunk). A
// row reads its cells once to split them and, when a rounded count or the log-likelihood needs
// it, once more at the proposal; the last factor's reads give the log-likelihood at the end.
type poissonAugmented struct {
	m      *Poisson
	lay    *augmentedLayout
	f      []float64   // factor values, K columns per factor (Poisson.values)
	colsum [][]float64 // colsum[k][r] = Σ_i F_k[i, r]
	rate   []float64   // the Gamma conditionals' rates of the factor being moved
	mass   []float64   // mass[r] = Π_{m≠k} colsum_m[r] for the factor k being moved
	// pairs are the components transferRow moves mass between in factor k's rows (ridgePairs),
	// drawn from pairSt.
	pairs  [][2]int
	pairSt rng.Stream
	norms  [][]float64 // norms[k][r] = Σ_i F_k[i, r]², of the factors other than the one moved
	chunks []augmentedChunk
	// theta is θ as the last sweep left it, f and colsum its values and column sums (current
	// false when they are not): a chain's next sweep starts from that θ and need not load them.
	theta   []float64
	current bool
	rank1   bool // rows drawn by drawRank1Row
	noShear bool // no shear moves (SetShear)
}

var _ Shearing = (*poissonAugmented)(nil)

func (a *poissonAugmented) SetShear(on bool) { a.noShear = !on }

// augmentedChunk is one chunk's stream, scratch and results.
type augmentedChunk struct {
	st                        rng.Stream
	other, comp, prop, colsum []float64
	split                     []float64 // draw.SplitProducts' scratch
	cnt                       []int
	up                        []bool    // whether ν was rounded up, per cell of the row being moved
	lam                       []float64 // λ of each cell of the row being moved, from its first read
	// logs groups the second read's logarithms by count: λ, λ' (or λ'/λ) and the rounded-up
	// cells' λ'/λ.
	logs [3]logtab.Products
	// others keeps each cell's Π_{m≠k} F_m[i_m, ·] of a tensor from a row's first read for its
	// second, so that the second reads them in order instead of gathering the other factors'
	// rows again; rows with more than maxKept values gather twice instead. A matrix's cell has one
	// other factor, whose row is read in place.
	others       []float64
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
	ll := 0.0
	for k, fac := range m.factors {
		if fac.Cols == 0 {
			acc[k] = 1
			continue
		}
		a.conditionalRates(k, t)
		if !a.rank1 {
			a.ridgePairs(key, k)
		}
		last := loglik && k == len(m.factors)-1
		a.each(k, func(ch *augmentedChunk, lo, hi int) {
			ch.st.Reset(key, uint64(k), uint64(lo))
			ch.accepted, ch.ll = 0, 0
			clear(ch.colsum)
			for i := lo; i < hi; i++ {
				if a.rank1 {
					a.drawRank1Row(ch, k, i, t, theta)
				} else {
					a.transferRow(ch, k, i, t, theta)
					a.moveRow(ch, k, i, t, last, theta)
				}
			}
		})
		accepted := 0.0
		for c := range len(a.lay.chunks[k]) - 1 {
			accepted += a.chunks[c].accepted
			if last || a.rank1 {
				ll += a.chunks[c].ll
			}
		}
		acc[k] = accepted / float64(fac.Rows)
	}
	// log p(X | θ) = Σ_n x_n log λ_n − Σ_r Π_m colsum_m[r] − Σ_n log Γ(x_n + 1).
	for c := range K {
		p := 1.0
		for _, cs := range a.colsum {
			p *= cs[c]
		}
		ll -= p
	}
	if !a.rank1 && !a.noShear {
		m.shear(r, theta, a.f, a.colsum)
	}
	m.rescale(r, theta, a.f, a.colsum)
	a.theta = append(a.theta[:0], theta...)
	a.current = true
	if !loglik {
		return math.NaN()
	}
	return ll - m.lgamma
}

func (a *poissonAugmented) Forget() { a.current = false }

func (a *poissonAugmented) NewEval() Eval {
	e := a.m.newEval()
	e.kernel = a
	return e
}

// load sets the factor values and their column sums from θ.
func (a *poissonAugmented) load(theta []float64) {
	for k := range a.m.factors {
		a.each(k, func(ch *augmentedChunk, lo, hi int) {
			clear(ch.colsum)
			a.m.loadRows(theta, a.f, k, lo, hi, ch.colsum)
		})
	}
}

// conditionalRates sets a.rate to the rates of factor k's Gamma conditionals at t, from the other
// factors' column sums.
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
		a.rate[c] = m.Rates[k] + t*o
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
// alone, which the moves of factor k's rows leave as they are.
func (a *poissonAugmented) ridgePairs(key uint64, k int) {
	m := a.m
	a.pairs = a.pairs[:0]
	lead := m.lead(k)
	free := m.K - lead
	if free < 2 {
		return
	}
	for k2 := range m.factors {
		if k2 != k {
			norms := a.norms[k2]
			clear(norms)
			for i := range m.factors[k2].Rows {
				for c, v := range m.valueRow(a.f, k2, i) {
					norms[c] += v * v
				}
			}
		}
	}
	try := func(r, s int) {
		cos := 1.0
		for k2 := range m.factors {
			if k2 != k {
				cos *= a.columnDot(k2, r, s) / math.Sqrt(a.norms[k2][r]*a.norms[k2][s])
			}
		}
		if cos >= transferCos { // a column of zeros gives NaN: not a pair
			a.pairs = append(a.pairs, [2]int{r, s})
		}
	}
	if free*(free-1)/2 <= transferPairs*m.K {
		for r := lead; r < m.K; r++ {
			for s := r + 1; s < m.K; s++ {
				try(r, s)
			}
		}
		return
	}
	a.pairSt.Reset(key, uint64(k), math.MaxUint64)
	for range transferPairs * m.K {
		r := lead + int(a.pairSt.Uint64()%uint64(free))
		s := lead + int(a.pairSt.Uint64()%uint64(free-1))
		if s >= r {
			s++
		}
		try(r, s)
	}
}

// transferRow makes a Metropolis–Hastings move of row i's mass between two components r and s,
// a pair of ridgePairs drawn at random, along the line that keeps the row's part of Σλ, F[i,r]·mass[r] + F[i,s]·mass[s] = M. Where the other factors' columns of r and s are
// parallel, every cell of the row sees the same λ anywhere on that line: the posterior is a ridge
// along it, shaped by the prior alone, which the Gibbs moves cross a count's worth at a time. With
// large counts that takes thousands of sweeps: at rank 3 of an 8×6×5 CP tensor of 768 558 counts
// drawn at rank 2 (bench/anneal's seed-7 set) one half of a true component split in two went
// from 0.36 to 0.40 of the pair's mass in a thousand sweeps at t = 1 (0.91 in 16 000), and the
// evidence came out 13 nats below AIS (README).
// The share u = F[i,r]·mass[r]/M is proposed, half the time, from the prior along the line (a
// density ∝ exp(−c·u) on (0, 1), so that the ratio is the likelihood's alone, and a flat ridge
// accepts every proposal) and otherwise as u + N(0, transferMaxStep²) reflected into (0, 1), a
// symmetric step whose ratio is the whole target's. The line maps u to F linearly with M fixed,
// so densities in u are densities in F. Zeros are not read: their λ enters only Σλ, which the
// move keeps. (Three moves per row did no better than one on that tensor: README.)
func (a *poissonAugmented) transferRow(ch *augmentedChunk, k, i int, t float64, theta []float64) {
	m := a.m
	lead := m.lead(k)
	if len(a.pairs) == 0 {
		return
	}
	g := a.lay.byRow[k]
	lo, hi := g.Start[i], g.Start[i+1]
	row := m.valueRow(a.f, k, i)
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
	c := m.Rates[k] * total * (1/mr - 1/ms)
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
		logRatio = -m.Rates[k] * (dr + ds)
	}
	if t > 0 {
		sum := 0.0
		for p := lo; p < hi; p++ {
			if x := g.Values[p]; x > 0 {
				o := a.others(g, p, ch.other)
				lam := floats.Dot(row, o)
				sum += x * logtab.Log((lam+dr*o[r]+ds*o[s])/lam)
			}
		}
		logRatio += t * sum
	}
	if !(logRatio >= 0) && !(accept < math.Exp(logRatio)) {
		return
	}
	row[r], row[s] = xr, xs
	params := m.paramRow(theta, k, i)
	if m.Param == LogScale {
		xr, xs = logtab.Log(xr), logtab.Log(xs)
	}
	params[r-lead], params[s-lead] = xr, xs
}

// columnDot is Σ_i F_k[i, r]·F_k[i, s].
func (a *poissonAugmented) columnDot(k, r, s int) float64 {
	m := a.m
	d := 0.0
	for i := range m.factors[k].Rows {
		row := m.valueRow(a.f, k, i)
		d += row[r] * row[s]
	}
	return d
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
func (a *poissonAugmented) Ascend(t float64, theta []float64) {
	m := a.m
	a.current = false
	a.load(theta)
	for k, fac := range m.factors {
		if fac.Cols == 0 {
			continue
		}
		a.conditionalRates(k, t)
		lead := m.lead(k)
		a.each(k, func(ch *augmentedChunk, lo, hi int) {
			clear(ch.colsum)
			ez := ch.prop
			for i := lo; i < hi; i++ {
				row := m.valueRow(a.f, k, i)
				clear(ez)
				if a.rank1 {
					ez[0] = t * m.margins[k][i] // every count falls on the one component
				} else {
					a.expectedCounts(ch, k, i, t, ez)
				}
				params := m.paramRow(theta, k, i)
				for c := lead; c < len(row); c++ {
					v := (1 + ez[c]) / a.rate[c]
					row[c] = v
					if m.Param == LogScale {
						v = math.Log(v)
					}
					params[c-lead] = v
				}
				for c, v := range row {
					ch.colsum[c] += v
				}
			}
		})
	}
}

// expectedCounts adds to ez the expected counts E[Z_ir] of component r in row i of factor k at t:
// each cell's t·x split in proportion to its components.
func (a *poissonAugmented) expectedCounts(ch *augmentedChunk, k, i int, t float64, ez []float64) {
	g := a.lay.byRow[k]
	row := a.m.valueRow(a.f, k, i)
	for p := g.Start[i]; p < g.Start[i+1]; p++ {
		o := a.others(g, p, ch.other)
		lam := 0.0
		for c := range o {
			ch.comp[c] = row[c] * o[c]
			lam += ch.comp[c]
		}
		if x := g.Values[p]; x > 0 {
			for c, v := range ch.comp {
				ez[c] += t * x * v / lam
			}
		}
	}
}

// each runs body on every chunk of mode k's rows, concurrently, and then sets colsum[k] to the
// chunks' column sums, added in chunk order.
func (a *poissonAugmented) each(k int, body func(ch *augmentedChunk, lo, hi int)) {
	cuts := a.lay.chunks[k]
	par.Tasks(len(cuts)-1, func(c int) { body(&a.chunks[c], cuts[c], cuts[c+1]) })
	cs := a.colsum[k]
	clear(cs)
	for c := range len(cuts) - 1 {
		for r, v := range a.chunks[c].colsum {
			cs[r] += v
		}
	}
}

// moveRow moves row i of factor k: it splits the row's rounded counts, proposes the row from its
// Gamma conditional and accepts it by the Metropolis–Hastings ratio. It adds the row's acceptance
// probability, its values and, for the last factor, its cells' Σ x log λ to the chunk's results,
// and writes an accepted row into θ.
func (a *poissonAugmented) moveRow(ch *augmentedChunk, k, i int, t float64, last bool, theta []float64) {
	m := a.m
	K := m.K
	g := a.lay.byRow[k]
	lo, hi := g.Start[i], g.Start[i+1]
	row := m.valueRow(a.f, k, i)
	lead := m.lead(k)
	if cap(ch.up) < hi-lo {
		ch.up = make([]bool, max(hi-lo, 64))
		ch.lam = make([]float64, max(hi-lo, 64))
	}
	up, lams := ch.up[:hi-lo], ch.lam[:hi-lo]
	kept := len(m.factors) > 2 && (hi-lo)*K <= maxKept
	if kept && len(ch.others) < (hi-lo)*K {
		ch.others = make([]float64, max(hi-lo, min(2*(hi-lo), maxKept/K))*K)
	}
	if kept {
		// Gathered apart from the splits, the other factors' rows of one cell are read while
		// those of the cells before it are still on their way from memory.
		for p := lo; p < hi; p++ {
			a.others(g, p, ch.others[(p-lo)*K:(p-lo+1)*K])
		}
	}
	clear(ch.cnt)
	rounded := false
	for p := lo; p < hi; p++ {
		var o []float64
		if kept {
			o = ch.others[(p-lo)*K : (p-lo+1)*K]
		} else {
			o = a.others(g, p, ch.other)
		}
		tx := t * g.Values[p]
		nu := math.Floor(tx)
		up[p-lo] = false
		if fr := tx - nu; fr > 0 {
			rounded = true
			if ch.st.Float64() < fr {
				nu++
				up[p-lo] = true
			}
		}
		if nu == 0 {
			lams[p-lo] = floats.Dot(row, o)
			continue
		}
		lams[p-lo] = draw.SplitProducts(ch.st.Rand, int(nu), row, o, ch.cnt, ch.split)
	}
	valid := true
	copy(ch.prop[:lead], row[:lead])
	for c := lead; c < K; c++ {
		v := draw.Gamma(ch.st.Rand, 1+float64(ch.cnt[c]), a.rate[c])
		ch.prop[c] = v
		// A Gamma draw can underflow to zero, whose logarithm the log parameterisation cannot take.
		valid = valid && v > 0 && !math.IsInf(v, 0)
	}
	// The second read needs logarithms only where a count was rounded (the ratio λ'/λ) of a valid
	// proposal and, for the last factor, at every cell (the log-likelihood at whichever row is
	// kept, the current one when the proposal is not valid). The ratio's exponent is
	// t·x − ν = frac(t·x) − [ν rounded up], so log Π (λ'/λ)^{t·x−ν} = Σ frac(t·x) log(λ'/λ) −
	// log Π_{up} λ'/λ, and frac(t·x) and the log-likelihood's x depend on a cell only through its
	// count: the logarithms are taken of products over the cells of each count (logtab.Products).
	p, xOld, xNew := 0.0, 0.0, 0.0
	if valid {
		p = 1
	}
	if (valid && rounded) || last {
		logRatio := 0.0
		cur, next, upRatio := &ch.logs[0], &ch.logs[1], &ch.logs[2]
		for q := lo; q < hi; q++ {
			var o []float64
			if kept {
				o = ch.others[(q-lo)*K : (q-lo+1)*K]
			} else {
				o = a.others(g, q, ch.other)
			}
			lam, lamProp := lams[q-lo], floats.Dot(ch.prop, o)
			x := g.Values[q]
			if valid && up[q-lo] {
				upRatio.Mul(0, lamProp/lam)
			}
			gi, grouped := logtab.Group(x)
			if last {
				if grouped {
					cur.Mul(gi, lam)
					if valid {
						next.Mul(gi, lamProp)
					}
					continue
				}
				lgProp := 0.0
				if valid {
					lgProp = logtab.Log(lamProp)
				}
				lastCell(t, x, logtab.Log(lam), lgProp, valid, &xOld, &xNew, &logRatio)
			} else if valid && grouped {
				next.Mul(gi, lamProp/lam)
			} else if fr := frac(t * x); valid && fr != 0 {
				logRatio += fr * logtab.Log(lamProp/lam)
			}
		}
		if last {
			for i, lg, ok := cur.Pop(); ok; i, lg, ok = cur.Pop() {
				lastCell(t, float64(i+1), lg, next.Take(i), valid, &xOld, &xNew, &logRatio)
			}
		} else {
			for i, lg, ok := next.Pop(); ok; i, lg, ok = next.Pop() {
				if fr := frac(t * float64(i+1)); fr != 0 {
					logRatio += fr * lg
				}
			}
		}
		logRatio -= upRatio.Take(0)
		if valid && !(logRatio >= 0) { // a NaN ratio gives p = NaN: rejected
			p = math.Exp(logRatio)
		}
	}
	ch.accepted += p
	keep := xOld
	if p == 1 || (p > 0 && ch.st.Float64() < p) {
		copy(row, ch.prop)
		params := m.paramRow(theta, k, i)
		for c, v := range row[lead:] {
			if m.Param == LogScale {
				v = logtab.Log(v)
			}
			params[c] = v
		}
		keep = xNew
	}
	if last {
		ch.ll += keep
	}
	for c, v := range row {
		ch.colsum[c] += v
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

// maxKept bounds the values a chunk keeps between a row's two reads (see augmentedChunk.others):
// 256 KiB, which stays in a core's cache.
const maxKept = 1 << 15

// others returns Π_{m≠k} F_m[i_m, r] for the cell at position p of g (grouped by mode k): a
// matrix's other factor's row itself, a 3-way tensor's product of two rows written into o.
func (a *poissonAugmented) others(g *tensor.ByRow, p int, o []float64) []float64 {
	m := a.m
	if len(m.factors) == 2 {
		return m.valueRow(a.f, 1-g.Mode, int(g.Other[0][p]))
	}
	// A tensor has three modes (NewPoisson): the product of the two other rows.
	var rows [2][]float64
	j := 0
	for k := range m.factors {
		if k != g.Mode {
			rows[j] = m.valueRow(a.f, k, int(g.Other[j][p]))
			j++
		}
	}
	r0, r1 := rows[0][:len(o)], rows[1][:len(o)]
	for c := range o {
		o[c] = r0[c] * r1[c]
	}
	return o
}

// lastCell adds the last factor's terms of cells of count x whose log λ sum to lg and log λ' to
// lgProp (one cell, or a group of them): x·lg to xOld and, for a valid proposal, x·lgProp to xNew
// and frac(t·x)·(lgProp − lg) to the log acceptance ratio.
func lastCell(t, x, lg, lgProp float64, valid bool, xOld, xNew, logRatio *float64) {
	*xOld += x * lg
	if !valid {
		return
	}
	*xNew += x * lgProp
	if fr := frac(t * x); fr != 0 {
		*logRatio += fr * (lgProp - lg)
	}
}

// frac is the fractional part of a non-negative v.
func frac(v float64) float64 { return v - math.Floor(v) }
