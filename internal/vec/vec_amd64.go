package vec

import "golang.org/x/sys/cpu"

// fast: the processor has AVX2, fused multiply-adds and POPCNT, which the assembly loops use.
var fast = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasPOPCNT

func mul(dst, x, y []float64) {
	if fast {
		mulAVX(dst, x, y)
		return
	}
	mulGo(dst, x, y)
}

func mulBlocks(p, sums, w, a, b []float64) float64 {
	if fast {
		return mulBlocksAVX(p, sums, w, a, b)
	}
	return mulBlocksGo(p, sums, w, a, b)
}

func mulPick(p, sums, w, a, b []float64, u float64) (float64, int) {
	sums, w, a, b = blocksOf(p, sums, w, a, b)
	if fast {
		return mulPickAVX(p, sums, w, a, b, u)
	}
	return mulPickGo(p, sums, w, a, b, u)
}

func pick(v float64, p, sums []float64) int {
	if fast {
		return pickAVX(v, p, sums)
	}
	return pickGo(v, p, sums)
}

func gram(g, f []float64, k int) {
	if fast {
		gramAVX(g, f, k)
		return
	}
	gramGo(g, f, k)
}

func dot2Rows(out, outY, x, y, f []float64, ia []int32, fb []float64, ib []int32) {
	outY, y, ia, ib = rowsOf(out, outY, x, y, ia, ib, fb)
	if fast {
		dot2RowsAVX(out, outY, x, y, f, ia, fb, ib)
		return
	}
	dot2RowsGo(out, outY, x, y, f, ia, fb, ib)
}

//go:noescape
func dot2RowsAVX(out, outY, x, y, f []float64, ia []int32, fb []float64, ib []int32)

func prefetch(f []float64, idx []int32, k int) {
	if fast {
		prefetchAVX(f, idx, k)
	}
}

//go:noescape
func prefetchAVX(f []float64, idx []int32, k int)

//go:noescape
func gramAVX(g, f []float64, k int)

//go:noescape
func pickAVX(v float64, p, sums []float64) int

//go:noescape
func mulAVX(dst, x, y []float64)

//go:noescape
func mulBlocksAVX(p, sums, w, a, b []float64) float64

//go:noescape
func mulPickAVX(p, sums, w, a, b []float64, u float64) (float64, int)
