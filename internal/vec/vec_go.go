package vec

import "math"

// The Go versions of the loops, in the order the AVX2 ones add: lane l of a 4-wide accumulator
// a holds the sum over the entries i ≡ l (mod 4) it covered, and the lanes are added as
// (l0 + l2) + (l1 + l3).

// dot2Go is dot2RowsAVX's loop for x and y with o, o = a or, with b, the products a[i]·b[i]: two
// accumulators per product over blocks of 8 entries, then the first over blocks of 4, the two
// added lane by lane, the lanes, and the last entries one by one.
func dot2Go(x, y, a, b []float64) (float64, float64) {
	var ax, ay [2][4]float64
	i := 0
	for ; i+8 <= len(x); i += 8 {
		for j := range 2 {
			for l := range 4 {
				o := other(a, b, i+4*j+l)
				ax[j][l] = math.FMA(x[i+4*j+l], o, ax[j][l])
				ay[j][l] = math.FMA(y[i+4*j+l], o, ay[j][l])
			}
		}
	}
	for ; i+4 <= len(x); i += 4 {
		for l := range 4 {
			o := other(a, b, i+l)
			ax[0][l] = math.FMA(x[i+l], o, ax[0][l])
			ay[0][l] = math.FMA(y[i+l], o, ay[0][l])
		}
	}
	var sx, sy [4]float64
	for l := range 4 {
		sx[l] = ax[0][l] + ax[1][l]
		sy[l] = ay[0][l] + ay[1][l]
	}
	return tail(lanes(sx), x, a, b, i), tail(lanes(sy), y, a, b, i)
}

// other is entry i of the vector a dot product reads: a's, or with b their product.
func other(a, b []float64, i int) float64 {
	if b == nil {
		return a[i]
	}
	return a[i] * b[i]
}

// mulGo is mulAVX.
func mulGo(dst, x, y []float64) {
	for i := range dst {
		dst[i] = x[i] * y[i]
	}
}

// mulBlocksGo is mulBlocksAVX: each block's products added as the AVX2 loop adds its two halves
// q = p[0:4] + p[4:8], lane by lane, and then their lanes.
func mulBlocksGo(p, sums, w, a, b []float64) float64 {
	total := 0.0
	for blk := range sums {
		var q [4]float64
		for l := range 4 {
			i := blk*Block + l
			p[i], p[i+4] = w[i]*other(a, b, i), w[i+4]*other(a, b, i+4)
			q[l] = p[i] + p[i+4]
		}
		total += lanes(q)
		sums[blk] = total
	}
	return total
}

// partialBlock sets the products of the last block of MulBlocks when it is not whole, their sum
// added one after the other, and its running sum, and returns the total from total, the sum of
// the whole blocks.
func partialBlock(total float64, p, sums, w, a, b []float64) float64 {
	full := len(p) / Block * Block
	if full == len(p) {
		return total
	}
	v := 0.0
	for i := full; i < len(p); i++ {
		p[i] = w[i] * other(a, b, i)
		v += p[i]
	}
	total += v
	sums[len(sums)-1] = total
	return total
}

// mulPickGo is mulPickAVX.
func mulPickGo(p, sums, w, a, b []float64, u float64) (float64, int) {
	full := len(p) / Block
	total := partialBlock(mulBlocksGo(p[:full*Block], sums[:full], w, a, b), p, sums, w, a, b)
	return total, pickGo(u*total, p, sums)
}

// lanes adds the four lanes of an accumulator as the AVX2 loops do.
func lanes(s [4]float64) float64 { return (s[0] + s[2]) + (s[1] + s[3]) }

// tail adds x[i]·o[i] to s from entry i on, one entry at a time, each a fused multiply-add (o as
// dot2Go's).
func tail(s float64, x, a, b []float64, i int) float64 {
	for ; i < len(x); i++ {
		s = math.FMA(x[i], other(a, b, i), s)
	}
	return s
}

// pickGo is pickAVX.
func pickGo(v float64, p, sums []float64) int {
	b := 0
	for _, s := range sums[:len(sums)-1] {
		if s <= v {
			b++
		}
	}
	c, acc := b*Block, 0.0
	if b > 0 {
		acc = sums[b-1]
	}
	n := 0
	for _, q := range p[c : min(c+Block, len(p))-1] {
		acc += q
		if acc <= v {
			n++
		}
	}
	return c + n
}

// gramGo is gramAVX.
func gramGo(g, f []float64, k int) {
	for i := 0; i < len(f); i += k {
		r := f[i : i+k]
		for a, v := range r {
			ga := g[a*k : (a+1)*k]
			for c := a; c < k; c++ {
				ga[c] = math.FMA(v, r[c], ga[c])
			}
		}
	}
}

// dot2RowsGo is dot2RowsAVX.
func dot2RowsGo(out, outY, x, y, f []float64, ia []int32, fb []float64, ib []int32) {
	for q := range out {
		a, b := rows(len(x), q, f, ia, fb, ib)
		out[q], outY[q] = dot2Go(x, y, a, b)
	}
}

// rows are the rows of k entries of f and fb (nil without fb) that cell q reads.
func rows(k, q int, f []float64, ia []int32, fb []float64, ib []int32) ([]float64, []float64) {
	a := f[int(ia[q])*k : int(ia[q])*k+k]
	if fb == nil {
		return a, nil
	}
	return a, fb[int(ib[q])*k : int(ib[q])*k+k]
}
