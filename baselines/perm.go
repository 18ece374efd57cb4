package baselines

import (
	"math"
	"math/bits"

	"github.com/stirank/stirank/internal/quad"
)

// permScratch holds the buffers of logPerm for one rank.
type permScratch struct {
	n      int
	a, la  []float64 // scaled matrix and its log, row-major
	dp, lp []float64 // 2^n subset tables
}

func newPermScratch(n int) *permScratch {
	return &permScratch{n: n, a: make([]float64, n*n), la: make([]float64, n*n), dp: make([]float64, 1<<n)}
}

// logPerm returns log perm(exp(L)) for the n×n matrix L (row-major): log Σ_σ exp(Σ_r L[r, σ(r)]).
//
// It runs the subset recursion dp[S ∪ {j}] += dp[S]·A[|S|, j] over the columns S used by the first
// |S| rows — O(2^n·n), like Ryser's formula, but every term is non-negative, so there is no
// cancellation whatever the spread of the entries. Rows and columns are first scaled by their
// largest entry (perm(D₁AD₂) = perm(A)·det D₁·det D₂), which keeps the table in range unless the
// permanent is astronomically smaller than its largest row products; then the recursion is redone
// in log space.
func (ps *permScratch) logPerm(L []float64) float64 {
	n := ps.n
	if n == 1 {
		return L[0]
	}
	offset := 0.0
	a := ps.a
	copy(a, L)
	for r := range n {
		row := a[r*n : r*n+n]
		m := math.Inf(-1)
		for _, v := range row {
			m = max(m, v)
		}
		if math.IsInf(m, 0) || math.IsNaN(m) {
			return m
		}
		offset += m
		for j := range row {
			row[j] -= m
		}
	}
	for j := range n {
		m := math.Inf(-1)
		for r := range n {
			m = max(m, a[r*n+j])
		}
		offset += m
		for r := range n {
			a[r*n+j] -= m
		}
	}
	logA := ps.la
	copy(logA, a)
	for i, v := range a {
		a[i] = math.Exp(v)
	}
	dp := ps.dp
	clear(dp)
	dp[0] = 1
	full := 1<<n - 1
	for S := 0; S < full; S++ {
		v := dp[S]
		if v == 0 {
			continue
		}
		row := a[bits.OnesCount(uint(S))*n:]
		for j := range n {
			if S&(1<<j) == 0 {
				dp[S|1<<j] += v * row[j]
			}
		}
	}
	if p := dp[full]; p > 1e-280 && !math.IsInf(p, 0) {
		return offset + math.Log(p)
	}
	// Log-space recursion.
	if ps.lp == nil {
		ps.lp = make([]float64, 1<<n)
	}
	lp := ps.lp
	for i := range lp {
		lp[i] = math.Inf(-1)
	}
	lp[0] = 0
	for S := 0; S < full; S++ {
		v := lp[S]
		if math.IsInf(v, -1) {
			continue
		}
		row := logA[bits.OnesCount(uint(S))*n:]
		for j := range n {
			if S&(1<<j) == 0 {
				lp[S|1<<j] = quad.LogAddExp(lp[S|1<<j], v+row[j])
			}
		}
	}
	return offset + lp[full]
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
// j, for every j, by one log-space subset recursion over the other rows; lp is a scratch of 2^n.
func logMinors(L []float64, n, k int, out, lp []float64) {
	for i := range lp {
		lp[i] = math.Inf(-1)
	}
	lp[0] = 0
	full := 1<<n - 1
	for S := 0; S < full; S++ {
		v := lp[S]
		if math.IsInf(v, -1) {
			continue
		}
		r := bits.OnesCount(uint(S))
		if r == n-1 {
			continue
		}
		if r >= k {
			r++ // row k is left out
		}
		row := L[r*n : r*n+n]
		for j := range n {
			if S&(1<<j) == 0 {
				lp[S|1<<j] = quad.LogAddExp(lp[S|1<<j], v+row[j])
			}
		}
	}
	for j := range n {
		out[j] = lp[full&^(1<<j)]
	}
}
