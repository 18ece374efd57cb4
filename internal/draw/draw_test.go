package draw

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stirank/stirank/rng"
)

// Binomial draws must follow the binomial distribution on both of its methods (inversion and
// gonum's rejection) and on both sides of p = ½: Pearson's χ² over the cells with an expected
// count of at least 5 stays below the 1 − 10⁻⁶ quantile of its distribution.
func TestBinomialFollowsItsDistribution(t *testing.T) {
	const draws = 200000
	for _, c := range []struct {
		n int
		p float64
	}{{1, 0.3}, {7, 0.5}, {40, 0.1}, {100, 0.25}, {60, 0.8}, {300, 0.09}, {1000, 0.2}} {
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
