package baselines

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"
)

// gamma draws from Gamma(shape, rate) for shape ≥ 1 (Marsaglia and Tsang 2000); shape 1 is an
// exponential draw. Every full conditional of the Gibbs sampler has shape 1 + (an integer count).
func gamma(r *rand.Rand, shape, rate float64) float64 {
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

// multinomial splits the count x over the components in proportion to the weights a (not
// normalised; their sum is total) and adds the parts to out. Small counts are drawn one event at a
// time by inversion; large ones by a sequence of conditional binomials.
func multinomial(r *rand.Rand, x int, a []float64, total float64, out []int) {
	R := len(a)
	if R == 1 {
		out[0] += x
		return
	}
	if x <= 2*R+8 {
		for range x {
			u := r.Float64() * total
			k := 0
			for ; k < R-1; k++ {
				u -= a[k]
				if u < 0 {
					break
				}
			}
			out[k]++
		}
		return
	}
	left := x
	rest := total
	for k := 0; k < R-1 && left > 0; k++ {
		if rest <= 0 {
			break
		}
		q := a[k] / rest
		var c int
		switch {
		case q >= 1:
			c = left
		case q <= 0:
			c = 0
		default:
			c = int(distuv.Binomial{N: float64(left), P: q, Src: r}.Rand())
		}
		out[k] += c
		left -= c
		rest -= a[k]
	}
	out[R-1] += left
}

// logMeanExp returns log((1/n) Σ exp(v)) and the delta-method standard error of that log from
// the sample variance of exp(v): se = sd(e^v) / (√n · mean(e^v)).
func logMeanExp(v []float64) (float64, float64) {
	n := float64(len(v))
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, x)
	}
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return m, math.NaN()
	}
	s, s2 := 0.0, 0.0
	for _, x := range v {
		e := math.Exp(x - m)
		s += e
		s2 += e * e
	}
	mean := s / n
	if len(v) < 2 {
		return m + math.Log(mean), math.NaN()
	}
	variance := (s2 - n*mean*mean) / (n - 1)
	return m + math.Log(mean), math.Sqrt(max(variance, 0)/n) / mean
}

// batchLogMeanExp returns log((1/n) Σ exp(v)) and a standard error of it from the means of
// `batches` contiguous batches of exp(v) (batch means, for the correlated terms of one chain),
// through the delta method.
func batchLogMeanExp(v []float64, batches int) (float64, float64) {
	n := len(v)
	if batches > n {
		batches = n
	}
	if batches < 2 {
		lm, _ := logMeanExp(v)
		return lm, math.NaN()
	}
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, x)
	}
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return m, math.NaN()
	}
	means := make([]float64, batches)
	total := 0.0
	for b := range batches {
		lo, hi := b*n/batches, (b+1)*n/batches
		s := 0.0
		for _, x := range v[lo:hi] {
			s += math.Exp(x - m)
		}
		total += s
		means[b] = s / float64(hi-lo)
	}
	mean := total / float64(n)
	ss := 0.0
	for _, bm := range means {
		ss += (bm - mean) * (bm - mean)
	}
	se := math.Sqrt(ss/float64(batches-1)/float64(batches)) / mean
	return m + math.Log(mean), se
}
