// Package draw has the random variates the Gibbs kernels of the count models need and math/rand/v2
// lacks.
package draw

import (
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/internal/vec"
	"github.com/stirank/stirank/rng"
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
	return marsagliaTsang(r, d, 1/math.Sqrt(9*d)) / rate
}

// marsagliaTsang draws from Gamma(d + 1/3, 1) by Marsaglia and Tsang's method, c = 1/√(9d): a
// ziggurat normal draw x is accepted as d·(1 + c·x)³ by a squeeze that needs no logarithm almost
// always.
func marsagliaTsang(r *rand.Rand, d, c float64) float64 {
	for {
		x := r.NormFloat64()
		if v, ok := cube(c, x); ok && accepts(x*x, v, r.Float64(), d) {
			return d * v
		}
	}
}

// cube is a try's (1 + c·x)³ and whether 1 + c·x is positive, else the try is rejected before its
// uniform is drawn.
func cube(c, x float64) (float64, bool) {
	v := 1 + c*x
	return v * v * v, v > 0
}

// accepts is Marsaglia and Tsang's test of a try, x2 the square of its normal draw, v = (1 + c·x)³
// and u its uniform draw: the squeeze u < 1 − 0.0331·x⁴, in line where it is called, accepts about
// 92 % of the tries without a logarithm; exactAccepts decides the rest.
func accepts(x2, v, u, d float64) bool {
	return u < 1-0.0331*x2*x2 || exactAccepts(x2, v, u, d)
}

// exactAccepts is Marsaglia and Tsang's exact test.
func exactAccepts(x2, v, u, d float64) bool {
	return math.Log(u) < 0.5*x2+d*(1-v+math.Log(v))
}

// GammaCount draws from Gamma(1 + n, 1) for a count n ≥ 0 on s's stream, the shape of every full
// conditional of the augmented Poisson factor models: Gamma with a rate ρ is the draw divided by ρ.
// It is Gamma's Marsaglia–Tsang method with its constants d = n + 2/3 and 1/√(9d) taken from a
// table for the small counts that sparse rows have (no square root nor division per draw), and an
// exponential draw at n = 0. It draws what Gamma(s.Rand, 1 + n, 1) draws, to the last bit or two
// of the constants, with the generator called directly and the ziggurats' first tries and the
// uniform in line: a draw makes no call almost always.
func GammaCount(s *rng.Stream, n float64) float64 {
	if n == 0 {
		u := s.PCG.Uint64()
		j, i := uint32(u), uint8(u>>32)
		if j < expK[i] {
			return float64(j) * float64(expW[i])
		}
		return expFrom(s, j, i)
	}
	var d, c float64
	if i := int(n); i < len(countShapes) && float64(i) == n {
		d, c = countShapes[i][0], countShapes[i][1]
	} else {
		d = n + 2.0/3
		c = 1 / math.Sqrt(9*d)
	}
	for {
		u := s.PCG.Uint64()
		j, i := int32(u), u>>32&0x7f
		x := float64(j) * float64(normW[i])
		if absInt32(j) >= normK[i] {
			x = normalFrom(s, j, i)
		}
		v, ok := cube(c, x)
		if !ok {
			continue
		}
		// s.Float64(), in line.
		if accepts(x*x, v, float64(s.PCG.Uint64()<<11>>11)/(1<<53), d) {
			return d * v
		}
	}
}

// countShapes[n] is GammaCount's d = n + 2/3 and 1/√(9d) for the counts below 256.
var countShapes [256][2]float64

func init() {
	for n := range countShapes {
		d := float64(n) + 2.0/3
		countShapes[n] = [2]float64{d, 1 / math.Sqrt(9*d)}
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
// costs O(n·p) products, less than a rejection's set-up there; beyond, Hörmann's transformed
// rejection with squeeze (btrs), a few products per draw and a logarithm in about one try of ten,
// where a rejection sampler with log-gamma calls per try would make the splits of large counts
// most of a sweep.
func Binomial(r *rand.Rand, n int, p float64) int {
	if p > 0.5 {
		return n - Binomial(r, n, 1-p)
	}
	np := float64(n) * p
	if np > 30 {
		return btrs(r, n, p)
	}
	q := 1 - p
	var q0 float64
	if n <= 1024 {
		q0 = powInt(q, n)
	} else {
		// q = 1 − p rounded carries a relative error up to 2⁻⁵³, which q^n multiplies by n.
		q0 = math.Exp(float64(n) * math.Log1p(-p))
	}
	// Mass beyond the bound is below 1e-20; a try that runs past it starts again. It is at most
	// 30 + 10·√31 < len(reciprocals).
	bound := min(float64(n), np+10*math.Sqrt(np*q+1))
	// P(x)/P(x−1) = (n+1−x)·p / (x·q) = a/x − s: a product a step from a table, not a division,
	// whose latency each step of the search would otherwise wait on.
	s := p / q
	a := float64(n+1) * s
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
			px *= a*reciprocals[x] - s
		}
		if float64(x) <= bound {
			return x
		}
	}
}

// reciprocals[x] is 1/x, for Binomial's inversion.
var reciprocals = func() (t [96]float64) {
	for x := 1; x < len(t); x++ {
		t[x] = 1 / float64(x)
	}
	return t
}()

// btrs draws from Binomial(n, p) for p ≤ ½ and n·p > 30 (it is exact from n·p ≥ 10) by
// transformed rejection with squeeze (BTRS: W. Hörmann, "The generation of binomial random
// variates", J. Statist. Comput. Simul. 46, 1993): a try inverts a hat close to the distribution at a uniform, accepts about
// nine in ten in the squeeze without a logarithm, and decides the rest exactly from the log ratio
// of the probabilities of the try and the mode, through Stirling's series.
func btrs(r *rand.Rand, n int, p float64) int {
	fn := float64(n)
	spq := math.Sqrt(fn * p * (1 - p))
	b := 1.15 + 2.53*spq
	a := -0.0873 + 0.0248*b + 0.01*p
	c := fn*p + 0.5
	vr := 0.92 - 4.2/b
	for {
		u := r.Float64() - 0.5
		v := r.Float64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + c)
		if k < 0 || k > fn {
			continue
		}
		if us >= 0.07 && v <= vr {
			return int(k)
		}
		if btrsAccepts(fn, p, k, v, us, a, b, spq) {
			return int(k)
		}
	}
}

// btrsAccepts is BTRS's exact test of the try k: log(v·α/(a/us² + b)) at most the log of the
// probability of k over that of the mode m, log f(k) − log f(m).
func btrsAccepts(n, p, k, v, us, a, b, spq float64) bool {
	alpha := (2.83 + 5.1/b) * spq
	lv := math.Log(v * alpha / (a/(us*us) + b))
	m := math.Floor((n + 1) * p)
	rho := p / (1 - p)
	bound := (m+0.5)*math.Log((m+1)/(rho*(n-m+1))) +
		(n+1)*math.Log((n-m+1)/(n-k+1)) +
		(k+0.5)*math.Log(rho*(n-k+1)/(k+1)) +
		stirlingTail(m) + stirlingTail(n-m) - stirlingTail(k) - stirlingTail(n-k)
	return lv <= bound
}

// stirlingTail is log k! − (log √(2π) + (k + ½)·log(k + 1) − (k + 1)), the tail of Stirling's
// series: exact values below 10, beyond them the series to its third term, whose error is below
// 10⁻¹⁰.
func stirlingTail(k float64) float64 {
	if k < 10 {
		return stirlingTails[int(k)]
	}
	k1 := 1 / (k + 1)
	k2 := k1 * k1
	return (1.0/12 - (1.0/360-1.0/1260*k2)*k2) * k1
}

// stirlingTails[k] is stirlingTail(k) for k below 10.
var stirlingTails [10]float64

func init() {
	for k := range stirlingTails {
		lf, _ := math.Lgamma(float64(k) + 1)
		x := float64(k) + 1
		stirlingTails[k] = lf - (0.5*math.Log(2*math.Pi) + (x-0.5)*math.Log(x) - x)
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

// splitBlock is the number of components Weights sums in one block.
const splitBlock = vec.Block

// Weights are one cell's component weights, w[c]·o[c] for the vectors given to Set, for the draws
// of its split. They keep the products and the running sums of blocks of 8 of them,
// which are independent sums where Multinomial's running sums of the components are one chain of
// dependent additions, the cost of a Poisson cell's split at large rank: an event finds its block
// and its component by counts of the running sums at or below the draw (vec.Pick), which do not
// branch on each. Their draws
// are Multinomial's, in the same order, and the parts differ from Multinomial's only where a draw
// falls within rounding of a boundary between two components.
type Weights struct {
	p, cb []float64
	total float64
}

// NewWeights returns the Weights of k components.
func NewWeights(k int) *Weights {
	buf := make([]float64, k+(k+splitBlock-1)/splitBlock)
	return &Weights{p: buf[:k], cb: buf[k:]}
}

// Set makes the weights w[c]·o[c] (len(w) of them), o being a or, with b, the products
// a[c]·b[c], and returns their total.
func (s *Weights) Set(w, a, b []float64) float64 {
	s.total = vec.MulBlocks(s.p, s.cb, w, a, b)
	return s.total
}

// SetPick is Set followed by Pick(u) in one call, returning the component of the first event.
func (s *Weights) SetPick(w, a, b []float64, u float64) int {
	var c int
	s.total, c = vec.MulPick(s.p, s.cb, w, a, b, u)
	return c
}

// AddScaled adds v times each weight to dst: a cell's expected split where v is its count over
// the weights' total.
func (s *Weights) AddScaled(dst []float64, v float64) {
	dst = dst[:len(s.p)]
	for c, p := range s.p {
		dst[c] += p * v
	}
}

// Total is the weights' total, the cell's λ.
func (s *Weights) Total() float64 { return s.total }

// Pick returns the component of one event, given u uniform on [0, 1); one component is picked
// without reading u.
func (s *Weights) Pick(u float64) int {
	if len(s.p) == 1 {
		return 0
	}
	return vec.Pick(u*s.total, s.p, s.cb)
}

// Split splits the count x over the components and adds the parts to out (as Multinomial does):
// event by event up to 2·K + 8 events, by conditional binomials beyond.
func (s *Weights) Split(r *rand.Rand, x int, out []int) {
	R := len(s.p)
	switch {
	case x == 0:
	case R == 1:
		out[0] += x
	case x <= 2*R+8:
		for range x {
			out[s.Pick(r.Float64())]++
		}
	default:
		splitBinomials(r, x, s.total, func(k int) float64 { return s.p[k] }, out[:R])
	}
}
