package isnmf

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/stirank/stirank/samplers/smc"
)

// SMC1 is dictionary masking (Dikmen & Cemgil §3.2): every column of W starts collapsed into one,
// where the posterior of h is exact (eq. 17), and the columns are moved out of it one at a time
// while the particles follow the posterior of the masked dictionary by Gibbs sweeps and are
// reweighted by the likelihood ratio of consecutive masks (eq. 18) and resampled when the
// effective sample size falls below N/2. The column kept is the one at the smallest angle to the
// sum of the columns; the others move out in order of increasing angle, so that each step
// changes the dictionary least. Each column moves out in steps chosen as it goes (smc.RunAdaptive):
// each as long as the conditional ESS stays at Budget.CESS, so that a column whose mask matters
// more to the data takes more and shorter steps. A fixed number of equal steps per column left
// SMC1 a quarter of a nat low at F = 200, K = 3, where the first steps move the posterior most.
type SMC1 struct{ Budget }

func init() { register("smc1", func(b Budget) Method { return SMC1{b} }) }

func (SMC1) Name() string { return "smc1" }

// Estimate moves the particles from the collapsed dictionary to W.
func (s SMC1) Estimate(m *Model, x []float64, r *rand.Rand) smc.Result {
	order := angleOrder(m)
	frac := make([]float64, m.K)
	p := newPath(m, x, func(at position, t *target) {
		frac[order[0]] = 1
		for i, k := range order[1:] {
			frac[k] = at.share(i)
		}
		t.setPowers(1)
		maskRows(m, frac, order[0], t.d, 0, m.F)
	})
	p.segments = m.K - 1
	return smc.RunAdaptive(segmentPath{p}, s.adaptive(p.segments), r)
}

// share is how far the change of segment i has gone at this position: all the way for the
// segments before it, lambda of its own, none of those after.
func (at position) share(i int) float64 {
	switch {
	case i < at.seg:
		return 1
	case i == at.seg:
		return at.lambda
	}
	return 0
}

// angleOrder lists the columns by increasing angle to their sum.
func angleOrder(m *Model) []int {
	K := m.K
	sum := make([]float64, m.F)
	for f := range m.F {
		for _, w := range m.W[f*K : (f+1)*K] {
			sum[f] += w
		}
	}
	cos := make([]float64, K)
	for k := range K {
		var dot, nw, ns float64
		for f := range m.F {
			w := m.W[f*K+k]
			dot += w * sum[f]
			nw += w * w
			ns += sum[f] * sum[f]
		}
		if nw > 0 {
			cos[k] = dot / math.Sqrt(nw*ns)
		}
	}
	order := make([]int, K)
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(i, j int) bool { return cos[order[i]] > cos[order[j]] })
	return order
}

// maskRows writes rows lo…hi−1 of the masked dictionary: column k holds frac[k]·w_k, and the kept
// column the rest, so that every row keeps its sum.
func maskRows(m *Model, frac []float64, kept int, d []float64, lo, hi int) {
	K := m.K
	for f := lo; f < hi; f++ {
		w, row := m.W[f*K:(f+1)*K], d[f*K:(f+1)*K]
		row[kept] = 0
		for k := range K {
			if k != kept {
				row[k] = frac[k] * w[k]
				row[kept] += (1 - frac[k]) * w[k]
			}
		}
		row[kept] += w[kept]
	}
}
