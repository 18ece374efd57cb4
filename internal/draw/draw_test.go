package draw

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stirank/stirank/internal/cputime"
	"github.com/stirank/stirank/rng"
)

// Binomial draws must follow the binomial distribution on both of its methods (inversion, with
// (1 − p)^n by squaring and, for n > 1024, by exp and log1p; BTRS, from just above n·p = 30 to
// counts where its exact test runs on Stirling's series) and on both sides of p = ½: Pearson's
// χ² over the cells with an expected
// count of at least 5 stays below the 1 − 10⁻⁶ quantile of its distribution.
func TestBinomialFollowsItsDistribution(t *testing.T) {
	const draws = 200000
	for _, c := range []struct {
		n int
		p float64
	}{{1, 0.3}, {7, 0.5}, {40, 0.1}, {100, 0.25}, {60, 0.8}, {300, 0.09}, {1000, 0.2}, {1023, 0.01}, {5000, 0.003},
		{101, 0.3}, {100, 0.3}, {124, 0.75}, {2400, 0.31}, {100000, 0.45}, {100000, 0.0002}} {
		r := rng.New(11, uint64(c.n))
		counts := make([]float64, c.n+1)
		for range draws {
			counts[Binomial(r, c.n, c.p)]++
		}
		b := distuv.Binomial{N: float64(c.n), P: c.p}
		chi2, cells := 0.0, 0
		for x, got := range counts {
			want := draws * b.Prob(float64(x))
			if want < 5 {
				continue
			}
			chi2 += (got - want) * (got - want) / want
			cells++
		}
		limit := distuv.ChiSquared{K: float64(cells - 1)}.Quantile(1 - 1e-6)
		if cells < 2 || chi2 > limit || math.IsNaN(chi2) {
			t.Errorf("n=%d p=%v: χ² %.1f over %d cells, limit %.1f", c.n, c.p, chi2, cells, limit)
		}
	}
}

// A split must give each component its share of the weight, on both methods of Multinomial and
// Weights (events one at a time, conditional binomials), with blocks of 8 components full
// and not, and with components of no weight: over many splits, Pearson's χ² of the components'
// totals against x·w_k/Σw stays below the 1 − 10⁻⁶ quantile, and a component of no weight gets
// nothing. Weights.Set returns the total weight, and on the same stream Weights.Split's parts are
// Multinomial's.
func TestMultinomialSplitsByWeight(t *testing.T) {
	const splits = 20000
	for _, c := range []struct {
		K, x     int
		products bool
	}{{3, 1, false}, {3, 5, false}, {3, 200, false}, {40, 7, false}, {40, 60, false}, {40, 1000, false},
		{3, 5, true}, {3, 200, true}, {40, 7, true}, {40, 60, true}, {40, 1000, true}, {45, 30, true}} {
		r := rng.New(12, uint64(c.K), uint64(c.x))
		w, o := make([]float64, c.K), make([]float64, c.K)
		cum := make([]float64, c.K)
		s := 0.0
		for k := range w {
			o[k] = 0.5 + r.Float64()
			if k%7 != 3 { // components 3, 10, 17, … have no weight
				w[k] = 0.2 + r.Float64()
			}
			s += w[k] * o[k]
			cum[k] = s
		}
		weight := make([]float64, c.K)
		for k := range w {
			weight[k] = w[k] * o[k]
		}
		weights := NewWeights(c.K)
		// ref draws Multinomial's splits from the stream Weights.Split draws from.
		ref := rng.New(12, uint64(c.K), uint64(c.x), 1)
		if c.products {
			r = rng.New(12, uint64(c.K), uint64(c.x), 1)
		}
		same := 0
		got := make([]int, c.K)
		for range splits {
			out := make([]int, c.K)
			if c.products {
				total := weights.Set(w, o, nil)
				weights.Split(r, c.x, out)
				if math.Abs(total-s) > 1e-12*s {
					t.Fatalf("K=%d: Weights.Set gives the total weight %v, want %v", c.K, total, s)
				}
				want := make([]int, c.K)
				Multinomial(ref, c.x, cum, want)
				if slices.Equal(out, want) {
					same++
				}
			} else {
				Multinomial(r, c.x, cum, out)
			}
			n := 0
			for k, v := range out {
				got[k] += v
				n += v
			}
			if n != c.x {
				t.Fatalf("K=%d x=%d: the parts sum to %d", c.K, c.x, n)
			}
		}
		chi2 := 0.0
		for k, g := range got {
			want := float64(splits*c.x) * weight[k] / s
			if want == 0 {
				if g != 0 {
					t.Errorf("K=%d x=%d: component %d has no weight and got %d", c.K, c.x, k, g)
				}
				continue
			}
			// A component's total is binomial over splits·x events, of variance want·(1 − w/Σw).
			chi2 += (float64(g) - want) * (float64(g) - want) / (want * (1 - weight[k]/s))
		}
		if c.products && same < splits-splits/1000 {
			t.Errorf("K=%d x=%d: Weights.Split and Multinomial split alike only %d times of %d", c.K, c.x, same, splits)
		}
		nonzero := c.K - (c.K+3)/7
		if limit := (distuv.ChiSquared{K: float64(nonzero)}).Quantile(1 - 1e-6); chi2 > limit {
			t.Errorf("K=%d x=%d: χ² %.1f over %d components, limit %.1f", c.K, c.x, chi2, nonzero, limit)
		}
	}
}

// firstAbove's bisection must return what a scan returns, the first k with u < cum[k] (the last
// index where none is), on running sums with runs of equal values (components of no weight) and
// draws that fall on them.
func TestFirstAboveIsTheFirstSumAboveTheDraw(t *testing.T) {
	r := rng.New(13)
	for range 100000 {
		cum := make([]float64, 1+r.IntN(70))
		s := 0.0
		for k := range cum {
			if r.IntN(4) > 0 {
				s += float64(r.IntN(5))
			}
			cum[k] = s
		}
		u := float64(r.IntN(int(s)+3)-1) + 0.5*float64(r.IntN(2))
		want := len(cum) - 1
		for k, v := range cum {
			if u < v {
				want = k
				break
			}
		}
		if got := firstAbove(u, cum); got != want {
			t.Fatalf("firstAbove(%v, %v) = %d, want %d", u, cum, got, want)
		}
	}
}

// BenchmarkWeights splits counts of 1, 4 and 20 events over 8, 64 and 512 components, the
// ranks of the ICASSP sweep, the speech-size benchmark and the top of the speech experiment.
func BenchmarkWeights(b *testing.B) {
	for _, R := range []int{8, 64, 512} {
		for _, x := range []int{1, 4, 20} {
			b.Run(fmt.Sprintf("R=%d/x=%d", R, x), func(b *testing.B) {
				r := rng.New(14, uint64(R), uint64(x))
				w, o := make([]float64, R), make([]float64, R)
				for k := range w {
					w[k], o[k] = r.ExpFloat64(), r.ExpFloat64()
				}
				out, weights := make([]int, R), NewWeights(R)
				for b.Loop() {
					weights.Set(w, o, nil)
					weights.Split(r, x, out)
				}
			})
		}
	}
}

// BenchmarkBinomial draws on either side of the n·p where Binomial changes method (30), a split's
// binomial of a large count (the 257×275 matrix's cells hold about 2 400), and a count of 10⁵.
func BenchmarkBinomial(b *testing.B) {
	for _, c := range []struct {
		n int
		p float64
	}{{5, 0.3}, {40, 0.3}, {100, 0.3}, {101, 0.3}, {2400, 0.31}, {100000, 0.45}} {
		b.Run(fmt.Sprintf("n=%d/p=%v", c.n, c.p), func(b *testing.B) {
			r := rng.New(15, uint64(c.n))
			s := 0
			for b.Loop() {
				s += Binomial(r, c.n, c.p)
			}
			_ = s
		})
	}
}

// Gamma draws must follow the Gamma distribution on all three of its paths (exponential, shape
// ≥ 1, boosted shape < 1): the Kolmogorov–Smirnov distance of 20 000 draws to gonum's CDF stays
// below 1.95/√n (the 0.1 % level).
func TestGammaFollowsItsDistribution(t *testing.T) {
	const n = 20000
	for _, c := range []struct{ shape, rate float64 }{{1, 2}, {0.05, 1}, {0.4, 3}, {0.999, 1}, {1.5, 0.5}, {40, 7}} {
		r := rng.New(13, math.Float64bits(c.shape))
		x := make([]float64, n)
		for i := range x {
			x[i] = Gamma(r, c.shape, c.rate)
		}
		slices.Sort(x)
		g := distuv.Gamma{Alpha: c.shape, Beta: c.rate}
		d := 0.0
		for i, v := range x {
			F := g.CDF(v)
			d = max(d, math.Abs(F-float64(i)/n), math.Abs(F-float64(i+1)/n))
		}
		if limit := 1.95 / math.Sqrt(n); d > limit || math.IsNaN(d) {
			t.Errorf("shape %v rate %v: KS distance %.4f, limit %.4f", c.shape, c.rate, d, limit)
		}
	}
}

// GammaCount's draws must follow Gamma(1 + n, 1) on its three paths (exponential, tabled
// constants, computed ones): the Kolmogorov–Smirnov distance of 20 000 draws to gonum's CDF stays
// below 1.95/√n (the 0.1 % level).
func TestGammaCountFollowsItsDistribution(t *testing.T) {
	const draws = 20000
	for _, n := range []float64{0, 1, 2, 7, 255, 256, 4000} {
		r := rng.NewStream(16, math.Float64bits(n))
		x := make([]float64, draws)
		for i := range x {
			x[i] = GammaCount(r, n)
		}
		slices.Sort(x)
		g := distuv.Gamma{Alpha: 1 + n, Beta: 1}
		d := 0.0
		for i, v := range x {
			F := g.CDF(v)
			d = max(d, math.Abs(F-float64(i)/draws), math.Abs(F-float64(i+1)/draws))
		}
		if limit := 1.95 / math.Sqrt(draws); d > limit || math.IsNaN(d) {
			t.Errorf("count %v: KS distance %.4f, limit %.4f", n, d, limit)
		}
	}
}

// BenchmarkGamma compares Gamma on rand.Rand and GammaCount on rng.Stream on the shapes 1 + n of
// sparse rows' conditionals, reporting the CPU time of a draw, which other work on a shared machine
// inflates less than the wall time.
func BenchmarkGamma(b *testing.B) {
	for _, n := range []float64{0, 1, 3, 40} {
		b.Run(fmt.Sprintf("Gamma/n=%g", n), func(b *testing.B) {
			r := rng.New(15)
			s, cpu := 0.0, cputime.Now()
			for b.Loop() {
				s += Gamma(r, 1+n, 2)
			}
			b.ReportMetric(float64(cputime.Now()-cpu)/float64(b.N), "cpu-ns/op")
			sink = s
		})
		b.Run(fmt.Sprintf("GammaCount/n=%g", n), func(b *testing.B) {
			r := rng.NewStream(15)
			s, cpu := 0.0, cputime.Now()
			for b.Loop() {
				s += GammaCount(r, n) * 0.5
			}
			b.ReportMetric(float64(cputime.Now()-cpu)/float64(b.N), "cpu-ns/op")
			sink = s
		})
	}
}

// GammaCount draws what math/rand/v2's ziggurats give on the same stream, to the bit: its tables
// and its first tries written in line are rand.Rand.ExpFloat64's at n = 0 and NormFloat64's inside
// Marsaglia–Tsang above, tails and wedges included (the base strips' tails come up about 150 times
// in each count's 3·10⁵ draws).
func TestGammaCountDrawsRandsZiggurats(t *testing.T) {
	for _, n := range []float64{0, 1, 3, 255, 256, 4000} {
		s, r := rng.NewStream(17, math.Float64bits(n)), rng.New(17, math.Float64bits(n))
		d, c := n+2.0/3, 1/math.Sqrt(9*(n+2.0/3))
		if i := int(n); i < len(countShapes) {
			d, c = countShapes[i][0], countShapes[i][1]
		}
		for i := range 300000 {
			var want float64
			if n == 0 {
				want = r.ExpFloat64()
			} else {
				want = marsagliaTsang(r, d, c)
			}
			if got := GammaCount(s, n); got != want {
				t.Fatalf("count %v, draw %d: GammaCount %v, on rand.Rand %v", n, i, got, want)
			}
		}
	}
}

// Gamma's and GammaCount's draws have the Gamma distribution's mean, variance and third central
// moment within 5 standard errors over 4·10⁵ draws at shapes from 0.1 (the boosted path) to 100:
// a wrong constant of Marsaglia and Tsang's method or of the ziggurats moves one of them by more
// (d = shape − 0.3 in place of shape − 1/3 moves the means at shapes 0.5 and 3 by 10 to 13
// standard errors).
func TestGammaMoments(t *testing.T) {
	const draws = 400000
	check := func(what string, shape float64, draw func() float64) {
		var m1, m2, m3 float64
		x := make([]float64, draws)
		for i := range x {
			x[i] = draw()
			m1 += x[i] / draws
		}
		for _, v := range x {
			e := v - shape
			m2 += e * e / draws
			m3 += e * e * e / draws
		}
		// The central moments of Gamma(k, 1): k, 2k, and the variances of their estimates from
		// the sample, (μ₄ − σ⁴)/N for the second with μ₄ = 3k² + 6k, (μ₆ − μ₃²)/N for the third
		// with μ₆ = 15k³ + 130k² + 120k.
		k := shape
		for _, c := range []struct {
			name      string
			got, want float64
			variance  float64
		}{
			{"mean", m1, k, k},
			{"variance", m2, k, 3*k*k + 6*k - k*k},
			{"third moment", m3, 2 * k, 15*k*k*k + 130*k*k + 120*k - 4*k*k},
		} {
			if se := math.Sqrt(c.variance / draws); math.Abs(c.got-c.want) > 5*se || math.IsNaN(c.got) {
				t.Errorf("%s at shape %v: %s %.5f, want %.5f ± %.5f", what, shape, c.name, c.got, c.want, se)
			}
		}
	}
	for _, shape := range []float64{0.1, 0.5, 1, 3, 100} {
		r := rng.New(18, math.Float64bits(shape))
		check("Gamma", shape, func() float64 { return Gamma(r, shape, 2) * 2 })
	}
	for _, n := range []float64{0, 2, 99, 300} {
		s := rng.NewStream(19, math.Float64bits(n))
		check("GammaCount", 1+n, func() float64 { return GammaCount(s, n) })
	}
}

var sink float64
