// Package draw has the random variates the Gibbs kernels of the count models need and math/rand/v2
// lacks.
package draw

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"
)

// Gamma draws from Gamma(shape, rate) (Marsaglia and Tsang 2000); shape 1 is an exponential draw,
// and a shape below 1 is boosted: Gamma(shape + 1)·U^(1/shape). The full conditionals of the
// augmented Poisson factor models have shape 1 + (an integer count); fitted references (the
// baselines' AIS) can have any positive shape.
func Gamma(r *rand.Rand, shape, rate float64) float64 {
	if shape == 1 {
		return r.ExpFloat64() / rate
	}
	if shape < 1 {
		return Gamma(r, shape+1, rate) * math.Pow(r.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		x2 := x * x
		if u < 1-0.0331*x2*x2 || math.Log(u) < 0.5*x2+d*(1-v+math.Log(v)) {
			return d * v / rate
		}
	}
}

// Multinomial splits the count x over the components and adds the parts to out; component k
// has weight cum[k] − cum[k−1], cum being the running sums of the weights (not normalised), so a
// split reads no weight twice. Small counts are drawn one event at a time by inversion; large ones
// by a sequence of conditional binomials.
func Multinomial(r *rand.Rand, x int, cum []float64, out []int) {
	R := len(cum)
	if R == 1 {
		out[0] += x
		return
	}
	if x <= 2*R+8 {
		for range x {
			out[Categorical(r, cum)]++
		}
		return
	}
	splitBinomials(r, x, cum[R-1], func(k int) float64 {
		if k == 0 {
			return cum[0]
		}
		return cum[k] - cum[k-1]
	}, out[:R])
}

// splitBinomials splits the count x over the components, component k having weight(k) of the
// total, by a sequence of conditional binomials, and adds the parts to out.
func splitBinomials(r *rand.Rand, x int, total float64, weight func(k int) float64, out []int) {
	R := len(out)
	left := x
	below := 0.0 // the weight of the components already split off
	for k := 0; k < R-1 && left > 0; k++ {
		rest := total - below
		if rest <= 0 {
			break
		}
		w := weight(k)
		q := w / rest
		var c int
		switch {
		case q >= 1:
			c = left
		case q <= 0:
			c = 0
		default:
			c = Binomial(r, left, q)
		}
		out[k] += c
		left -= c
		below += w
	}
	out[R-1] += left
}

// Categorical draws index k with probability (cum[k] − cum[k−1]) / cum[len−1], cum being the
// running sums of the weights, by inversion: the first k whose running sum exceeds a uniform
// draw on [0, cum[len−1]), found by bisection, so an event costs O(log K) however many
// components there are.
func Categorical(r *rand.Rand, cum []float64) int {
	return firstAbove(r.Float64()*cum[len(cum)-1], cum)
}

// firstAbove returns the first k with u < cum[k] for non-decreasing cum, by bisection; the last
// index where none is (u at or beyond the total by rounding).
func firstAbove(u float64, cum []float64) int {
	lo, hi := 0, len(cum)-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if u < cum[mid] {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// Binomial draws from Binomial(n, p). Where n·min(p, 1−p) ≤ 30 it inverts the distribution
// function from 0 up, one uniform per try (BINV, Kachitvichyanukul and Schmeiser 1988), which
// costs O(n·p) products and no logarithm of a factorial; beyond, gonum's rejection sampler.
func Binomial(r *rand.Rand, n int, p float64) int {
	if p > 0.5 {
		return n - Binomial(r, n, 1-p)
	}
	np := float64(n) * p
	if np > 30 {
		return int(distuv.Binomial{N: float64(n), P: p, Src: r}.Rand())
	}
	q := 1 - p
	var q0 float64
	if n <= 1024 {
		q0 = powInt(q, n)
	} else {
		// q = 1 − p rounded carries a relative error up to 2⁻⁵³, which q^n multiplies by n.
		q0 = math.Exp(float64(n) * math.Log1p(-p))
	}
	// Mass beyond the bound is below 1e-20; a try that runs past it starts again.
	bound := min(float64(n), np+10*math.Sqrt(np*q+1))
	for {
		u := r.Float64()
		px := q0
		x := 0
		for u > px {
			x++
			if float64(x) > bound {
				break
			}
			u -= px
			px *= float64(n-x+1) * p / (float64(x) * q)
		}
		if float64(x) <= bound {
			return x
		}
	}
}

// powInt returns b^n for n ≥ 0 by repeated squaring: a few products where exp(n·log b) costs a
// logarithm and an exponential, which dominated the splits of large counts.
func powInt(b float64, n int) float64 {
	r := 1.0
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			r *= b
		}
		b *= b
	}
	return r
}

// splitBlock is the number of components SplitProducts sums in one block.
const splitBlock = 8

// SplitScratch returns the scratch SplitProducts needs for k components.
func SplitScratch(k int) []float64 { return make([]float64, k+(k+splitBlock-1)/splitBlock) }

// SplitProducts splits the count x over the components, component c having weight w[c]·o[c],
// adds the parts to out (as Multinomial does) and returns the total weight Σ_c w[c]·o[c], with
// scratch from SplitScratch(len(w)). It keeps the products and the running sums of blocks of 8
// of them, which are independent sums where Multinomial's running sums of the components are one
// chain of dependent additions, the cost of a Poisson cell's split at large rank: an event finds
// its block by bisection on the blocks' running sums and its component by a scan within the
// block (a count of the block's running sums at or below the draw, which does not branch on
// each). It draws what Multinomial draws, in the same order, and the parts differ from
// Multinomial's only where a draw falls within rounding of a boundary between two components.
func SplitProducts(r *rand.Rand, x int, w, o []float64, out []int, scratch []float64) float64 {
	R := len(w)
	o = o[:R]
	nb := (R + splitBlock - 1) / splitBlock
	p, cb := scratch[:R], scratch[R:R+nb]
	total := 0.0
	for b := range nb {
		lo := b * splitBlock
		s := 0.0
		if lo+splitBlock <= R {
			ww, oo, pp := w[lo:lo+splitBlock], o[lo:lo+splitBlock], p[lo:lo+splitBlock]
			p0, p1, p2, p3 := ww[0]*oo[0], ww[1]*oo[1], ww[2]*oo[2], ww[3]*oo[3]
			p4, p5, p6, p7 := ww[4]*oo[4], ww[5]*oo[5], ww[6]*oo[6], ww[7]*oo[7]
			pp[0], pp[1], pp[2], pp[3], pp[4], pp[5], pp[6], pp[7] = p0, p1, p2, p3, p4, p5, p6, p7
			s = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7))
		} else {
			for c := lo; c < R; c++ {
				v := w[c] * o[c]
				p[c] = v
				s += v
			}
		}
		total += s
		cb[b] = total
	}
	switch {
	case x == 0:
	case R == 1:
		out[0] += x
	case x <= 2*R+8:
		for range x {
			out[pickProduct(r.Float64()*total, p, cb)]++
		}
	default:
		splitBinomials(r, x, total, func(k int) float64 { return p[k] }, out[:R])
	}
	return total
}

// pickProduct returns the first component whose running sum exceeds u, given the components'
// weights p and the running sums cb of their blocks: the block by bisection, the component by a
// count within the block (its last component takes what rounding leaves).
func pickProduct(u float64, p, cb []float64) int {
	lo := firstAbove(u, cb)
	c, acc := lo*splitBlock, 0.0
	if lo > 0 {
		acc = cb[lo-1]
	}
	// The block's running sums do not decrease, so the component is the count of those at or
	// below u, counted without a branch on each.
	n := 0
	for _, v := range p[c : min(c+splitBlock, len(p))-1] {
		acc += v
		if acc <= u {
			n++
		}
	}
	return c + n
}
