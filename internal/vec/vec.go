// Package vec has the short vector loops of the Gibbs kernels' inner loops — dot products, a
// dot product of two vectors against a third, entrywise products, the blocked products of a
// count's split — in AVX2 with fused multiply-adds where the processor has them, and in Go
// otherwise. Both add in the same order and round the same way (Go's math.FMA is a fused
// multiply-add), so a result does not depend on which ran: every loop keeps the sums of its
// lanes apart and adds them at the end in a fixed order, written out in the Go versions.
package vec

// Dot returns Σ_i x[i]·y[i] over the entries of x (y at least as long): Dot2's first.
func Dot(x, y []float64) float64 {
	d, _ := Dot2(x, x, y)
	return d
}

// Dot2 returns Σ_i x[i]·o[i] and Σ_i y[i]·o[i] in one pass over o (y and o at least as long as
// x): Dot2Rows of one row.
func Dot2(x, y, o []float64) (float64, float64) {
	var out, outY [1]float64
	dot2Rows(out[:], outY[:], x, y[:len(x)], o[:len(x)], first[:], nil, nil)
	return out[0], outY[0]
}

// first names the first row of a vector, for Dot2.
var first = [1]int32{0}

// Mul sets dst[i] = x[i]·y[i] for the entries of dst (x and y at least as long).
func Mul(dst, x, y []float64) {
	mul(dst, x[:len(dst)], y[:len(dst)])
}

// Block is the number of products MulBlocks sums in one block.
const Block = 8

// MulBlocks sets p[i] = w[i]·o[i] for the entries of p, o being a or, with b, the products
// a[i]·b[i] (w, a and b at least as long as p), and sums[b] to the sum of the products of the
// blocks 0 to b of Block entries (the last may be shorter), and returns the sum of them all: the
// running sums a split bisects.
func MulBlocks(p, sums, w, a, b []float64) float64 {
	n := len(p)
	w, a, sums = w[:n], a[:n], sums[:(n+Block-1)/Block]
	if b != nil {
		b = b[:n]
	}
	full := n / Block
	total := mulBlocks(p[:full*Block], sums[:full], w, a, b)
	return partialBlock(total, p, sums, w, a, b)
}

// MulPick is MulBlocks followed by Pick(u·total) in one call: the weights of a count's split and
// the index of its first event, given u uniform on [0, 1).
// It forwards to the architecture's loop, which checks the lengths (blocksOf), so that a count's
// split pays one call before the loop, not two.
func MulPick(p, sums, w, a, b []float64, u float64) (total float64, index int) {
	return mulPick(p, sums, w, a, b, u)
}

// blocksOf reslices MulBlocks' arguments to the lengths its loops read, which checks them.
func blocksOf(p, sums, w, a, b []float64) ([]float64, []float64, []float64, []float64) {
	n := len(p)
	w, a, sums = w[:n], a[:n], sums[:(n+Block-1)/Block]
	if b != nil {
		b = b[:n]
	}
	return sums, w, a, b
}

// Pick returns the first index whose running sum of p exceeds v, for p and sums as MulBlocks
// leaves them (p ≥ 0, v ≥ 0): the block by a count of the blocks' sums at or below v, the index by
// a count of the running sums within the block, added one after the other from the blocks before.
// The last index of a block, and the last of all, take what rounding leaves.
func Pick(v float64, p, sums []float64) int { return pick(v, p, sums) }

// Gram adds to the upper triangle of g, k×k row-major, the products of the entries of every row
// of f (rows of k entries): g[a·k + c] += Σ_i f[i·k + a]·f[i·k + c] for a ≤ c, row after row, each
// a fused multiply-add.
func Gram(g, f []float64, k int) {
	g, f = g[:k*k], f[:len(f)/k*k]
	gram(g, f, k)
}

// DotRows sets out[q] = Dot(x, o_q) for the rows o_q = f[ia[q]·k : ia[q]·k + k] of f, k = len(x),
// or with fb and ib, o_q = Mul of that row and fb's row ib[q]: the λ of a row's cells, whose
// other factors' rows are gathered by index, in one call (Dot2Rows' first).
func DotRows(out, x, f []float64, ia []int32, fb []float64, ib []int32) {
	Dot2Rows(out, out, x, x, f, ia, fb, ib)
}

// Dot2Rows sets out[q] and outY[q] to Dot2(x, y, o_q) for the rows o_q of DotRows, in one pass
// over each; out and outY may be one slice where x and y are one vector.
// It forwards to the architecture's loop, which checks the lengths (rowsOf), as MulPick does.
func Dot2Rows(out, outY, x, y, f []float64, ia []int32, fb []float64, ib []int32) {
	dot2Rows(out, outY, x, y, f, ia, fb, ib)
}

// rowsOf reslices Dot2Rows' arguments to the lengths its loops read, which checks them.
func rowsOf(out, outY, x, y []float64, ia, ib []int32, fb []float64) ([]float64, []float64, []int32, []int32) {
	ia, outY, y = ia[:len(out)], outY[:len(out)], y[:len(x)]
	if fb != nil {
		ib = ib[:len(out)]
	}
	return outY, y, ia, ib
}

// Prefetch asks the processor to bring the rows of f (of k entries) that idx names into its cache,
// their first and last entries, ahead of the loop that will read or write them: a hint, which
// changes no result (and does nothing where the assembly loops do not run).
func Prefetch(f []float64, idx []int32, k int) { prefetch(f, idx, k) }
