package baselines

import (
	"math"
	"math/bits"

	"github.com/stirank/stirank/internal/logtab"
	"github.com/stirank/stirank/internal/quad"
)

// permScratch holds the buffers of logPerm and logMinors for one rank.
type permScratch struct {
	n      int
	a, la  []float64 // scaled matrix and its log, row-major
	col    []float64 // the columns' shifts (shift)
	dp, lp []float64 // 2^n subset tables
}

func newPermScratch(n int) *permScratch {
	return &permScratch{n: n, a: make([]float64, n*n), la: make([]float64, n*n), col: make([]float64, n), dp: make([]float64, 1<<n)}
}

// shift copies L into a with every row but row skip (none when skip < 0) less its largest entry,
// then every column less its largest entry over those rows (perm(D₁AD₂) = perm(A)·det D₁·det D₂
// in linear space), and returns the rows' shifts' sum, the columns' in col. ok is false, with the
// shift, where a shift is not finite.
func (ps *permScratch) shift(L []float64, skip int) (rows float64, bad float64, ok bool) {
	n, a := ps.n, ps.a
	copy(a, L)
	for r := range n {
		if r == skip {
			continue
		}
		row := a[r*n : r*n+n]
		m := math.Inf(-1)
		for _, v := range row {
			m = max(m, v)
		}
		if math.IsInf(m, 0) || math.IsNaN(m) {
			return 0, m, false
		}
		rows += m
		for j := range row {
			row[j] -= m
		}
	}
	for j := range n {
		m := math.Inf(-1)
		for r := range n {
			if r != skip {
				m = max(m, a[r*n+j])
			}
		}
		if math.IsInf(m, 0) || math.IsNaN(m) {
			return 0, m, false
		}
		ps.col[j] = m
		for r := range n {
			a[r*n+j] -= m
		}
	}
	return rows, 0, true
}

// logPerm returns log perm(exp(L)) for the n×n matrix L (row-major): log Σ_σ exp(Σ_r L[r, σ(r)]).
//
// It runs the subset recursion dp[S ∪ {j}] += dp[S]·A[|S|, j] over the columns S used by the first
// |S| rows — O(2^n·n), like Ryser's formula, but every term is non-negative, so there is no
// cancellation whatever the spread of the entries. Rows and columns are first scaled by their
// largest entry (shift), which keeps the table in range unless the permanent is astronomically
// smaller than its largest row products; then the recursion is redone in log space.
func (ps *permScratch) logPerm(L []float64) float64 {
	n := ps.n
	if n == 1 {
		return L[0]
	}
	offset, bad, ok := ps.shift(L, -1)
	if !ok {
		return bad
	}
	for _, c := range ps.col {
		offset += c
	}
	a := ps.a
	copy(ps.la, a)
	for i, v := range a {
		a[i] = math.Exp(v)
	}
	full := 1<<n - 1
	if p := ps.subsets(-1)[full]; p > 1e-280 && !math.IsInf(p, 0) {
		return offset + math.Log(p)
	}
	return offset + ps.logSubsets(ps.la, -1)[full]
}

// subsets runs the subset recursion on the scaled matrix a over its rows but row skip (none when
// skip < 0) in order: dp[S] is the sum of the products of the first |S| of those rows' entries
// over the assignments of them to the columns S.
func (ps *permScratch) subsets(skip int) []float64 {
	n, a, dp := ps.n, ps.a, ps.dp
	rows := n
	if skip >= 0 {
		rows--
	}
	clear(dp)
	dp[0] = 1
	for S := range dp {
		v := dp[S]
		r := bits.OnesCount(uint(S))
		if v == 0 || r >= rows {
			continue
		}
		if skip >= 0 && r >= skip {
			r++
		}
		row := a[r*n : r*n+n]
		for j := range n {
			if S&(1<<j) == 0 {
				dp[S|1<<j] += v * row[j]
			}
		}
	}
	return dp
}

// logSubsets is subsets in log space on L, for matrices whose scaled table under- or overflows.
// Each subset's entry is the log-sum-exp of its terms from the subsets one column smaller, so it
// takes one logarithm, and the exponentials are logtab's.
func (ps *permScratch) logSubsets(L []float64, skip int) []float64 {
	n := ps.n
	if ps.lp == nil {
		ps.lp = make([]float64, 1<<n)
	}
	lp := ps.lp
	rows := n
	if skip >= 0 {
		rows--
	}
	lp[0] = 0
	for T := 1; T < len(lp); T++ {
		r := bits.OnesCount(uint(T)) - 1
		if r >= rows {
			lp[T] = math.Inf(-1)
			continue
		}
		if skip >= 0 && r >= skip {
			r++
		}
		row := L[r*n : r*n+n]
		top := math.Inf(-1)
		for U := uint(T); U != 0; U &= U - 1 {
			j := bits.TrailingZeros(U)
			top = max(top, lp[T&^(1<<j)]+row[j])
		}
		if math.IsInf(top, 0) || math.IsNaN(top) {
			lp[T] = top
			continue
		}
		sum := 0.0
		for U := uint(T); U != 0; U &= U - 1 {
			j := bits.TrailingZeros(U)
			sum += logtab.Exp(lp[T&^(1<<j)] + row[j] - top)
		}
		lp[T] = top + logtab.Log(sum)
	}
	return lp
}

// logFactorial returns log n!.
func logFactorial(n int) float64 {
	v, _ := math.Lgamma(float64(n) + 1)
	return v
}

// samplePerm draws an assignment tau (row s → column tau[s]) of the n×n matrix L with probability
// ∝ exp(Σ_s L[s, tau[s]]), exactly, from the suffix table suf[S] = Σ over the assignments of rows
// |S| … n−1 to the columns outside S (O(2^n·n)).
func (ps *permScratch) samplePerm(r interface{ Float64() float64 }, L []float64, tau []int) {
	n := ps.n
	if n == 1 {
		tau[0] = 0
		return
	}
	a := ps.a
	copy(a, L)
	for s := range n {
		row := a[s*n : s*n+n]
		m := math.Inf(-1)
		for _, v := range row {
			m = max(m, v)
		}
		for j := range row {
			row[j] = math.Exp(row[j] - m)
		}
	}
	full := 1<<n - 1
	suf := ps.dp
	suf[full] = 1
	for S := full - 1; S >= 0; S-- {
		row := a[bits.OnesCount(uint(S))*n:]
		v := 0.0
		for j := range n {
			if S&(1<<j) == 0 {
				v += row[j] * suf[S|1<<j]
			}
		}
		suf[S] = v
	}
	if !(suf[0] > 0) || math.IsInf(suf[0], 0) {
		ps.samplePermLog(r, L, tau)
		return
	}
	S := 0
	for s := range n {
		row := a[s*n:]
		u := r.Float64() * suf[S]
		pick := -1
		for j := range n {
			if S&(1<<j) != 0 {
				continue
			}
			pick = j
			u -= row[j] * suf[S|1<<j]
			if u < 0 {
				break
			}
		}
		tau[s] = pick
		S |= 1 << pick
	}
}

// samplePermLog is samplePerm in log space, for matrices whose scaled table under- or overflows.
func (ps *permScratch) samplePermLog(r interface{ Float64() float64 }, L []float64, tau []int) {
	n := ps.n
	if ps.lp == nil {
		ps.lp = make([]float64, 1<<n)
	}
	full := 1<<n - 1
	suf := ps.lp
	suf[full] = 0
	for S := full - 1; S >= 0; S-- {
		row := L[bits.OnesCount(uint(S))*n:]
		v := math.Inf(-1)
		for j := range n {
			if S&(1<<j) == 0 {
				v = quad.LogAddExp(v, row[j]+suf[S|1<<j])
			}
		}
		suf[S] = v
	}
	S := 0
	for s := range n {
		row := L[s*n:]
		lu := math.Log(r.Float64()) + suf[S]
		pick := -1
		acc := math.Inf(-1)
		for j := range n {
			if S&(1<<j) != 0 {
				continue
			}
			pick = j
			acc = quad.LogAddExp(acc, row[j]+suf[S|1<<j])
			if lu < acc {
				break
			}
		}
		tau[s] = pick
		S |= 1 << pick
	}
}

// logMinors sets out[j] to the log permanent of exp(L) (n×n, row-major) without row k and column
// j, for every j, by one subset recursion over the other rows: in linear space on the matrix
// scaled as logPerm's, where every minor stays in range, and otherwise in log space. It is the
// expansion of log q along a row of the reference's table that every column of a sweep starts
// from, and at high ranks of small data the log-space recursion's 2^n·n logarithms and
// exponentials took a fifth of a sweep.
func (ps *permScratch) logMinors(L []float64, k int, out []float64) {
	n := ps.n
	full := 1<<n - 1
	if rows, _, ok := ps.shift(L, k); ok {
		for i, v := range ps.a {
			ps.a[i] = math.Exp(v)
		}
		dp := ps.subsets(k)
		cols := 0.0
		for _, c := range ps.col {
			cols += c
		}
		inRange := true
		for j := range n {
			p := dp[full&^(1<<j)]
			inRange = inRange && p > 1e-280 && !math.IsInf(p, 0)
			out[j] = rows + cols - ps.col[j] + math.Log(p)
		}
		if inRange {
			return
		}
	}
	lp := ps.logSubsets(L, k)
	for j := range n {
		out[j] = lp[full&^(1<<j)]
	}
}
