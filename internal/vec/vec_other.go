//go:build !amd64

package vec

// fast is false off amd64: the Go loops run.
const fast = false

func mul(dst, x, y []float64)               { mulGo(dst, x, y) }
func pick(v float64, p, sums []float64) int { return pickGo(v, p, sums) }
func gram(g, f []float64, k int)            { gramGo(g, f, k) }
func dot2Rows(out, outY, x, y, f []float64, ia []int32, fb []float64, ib []int32) {
	outY, y, ia, ib = rowsOf(out, outY, x, y, ia, ib, fb)
	dot2RowsGo(out, outY, x, y, f, ia, fb, ib)
}
func mulBlocks(p, sums, w, a, b []float64) float64 { return mulBlocksGo(p, sums, w, a, b) }
func mulPick(p, sums, w, a, b []float64, u float64) (float64, int) {
	sums, w, a, b = blocksOf(p, sums, w, a, b)
	return mulPickGo(p, sums, w, a, b, u)
}
func prefetch(f []float64, idx []int32, k int) {}
