// Package draw has the random variates the Gibbs kernels of the count models need and math/rand/v2
// lacks.
package draw

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"
)

// Gamma draws from Gamma(shape, rate) for shape ≥ 1 (Marsaglia and Tsang 2000); shape 1 is an
// exponential draw. The full conditionals of the augmented Poisson factor models have shape
// 1 + (an integer count).
func Gamma(r *rand.Rand, shape, rate float64) float64 {
	if shape == 1 {
		return r.ExpFloat64() / rate
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
	total := cum[R-1]
	left := x
	below := 0.0 // the weight of the components already split off
	for k := 0; k < R-1 && left > 0; k++ {
		rest := total - below
		if rest <= 0 {
			break
		}
		q := (cum[k] - below) / rest
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
		below = cum[k]
	}
	out[R-1] += left
}

// Categorical draws index k with probability (cum[k] − cum[k−1]) / cum[len−1], cum being the
// running sums of the weights, by inversion: the first k whose running sum exceeds a uniform
// draw on [0, cum[len−1]), found by bisection, so an event costs O(log K) however many
// components there are.
func Categorical(r *rand.Rand, cum []float64) int {
	u := r.Float64() * cum[len(cum)-1]
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
	q0 := math.Exp(float64(n) * math.Log1p(-p))
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
