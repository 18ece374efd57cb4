package isnmf

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/stirank/stirank/samplers/smc"
)

// SMC1 is dictionary masking (Dikmen & Cemgil §3.2): every column of W starts collapsed into one,
// where the posterior of h is exact (eq. 17), and the columns are moved out of it one at a time,
// each over Stages/(K−1) steps, while the particles follow the posterior of the masked dictionary
// by Gibbs sweeps and are reweighted by the likelihood ratio of consecutive masks (eq. 18) and
// resampled when the effective sample size falls below N/2. The column kept is the one at the
// smallest angle to the sum of the columns; the others move out in order of increasing angle, so
// that each step changes the dictionary least.
type SMC1 struct{ Budget }

func init() { register("smc1", func(b Budget) Method { return SMC1{b} }) }

func (SMC1) Name() string { return "smc1" }

// Estimate moves the particles from the collapsed dictionary to W.
func (s SMC1) Estimate(m *Model, x []float64, r *rand.Rand) smc.Result {
	order := angleOrder(m)
	steps := max(1, s.Stages/max(1, m.K-1))
	frac := make([]float64, m.K)
	p := newPath(m, x, steps*(m.K-1), func(n int, t *target) {
		moveColumns(order, n, steps, frac)
		t.setPowers(1)
		maskRows(m, frac, order[0], t.d, 0, m.F)
	})
	return smc.Run(p, smc.Config{Particles: s.Particles, ResampleBelow: 0.5}, r)
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

// moveColumns sets frac[k], the share of column k moved out of the kept column order[0] after n
// steps of steps each: the columns order[1], order[2], … move in turn.
func moveColumns(order []int, n, steps int, frac []float64) {
	frac[order[0]] = 1
	for i, k := range order[1:] {
		frac[k] = math.Min(1, math.Max(0, float64(n-i*steps)/float64(steps)))
	}
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
