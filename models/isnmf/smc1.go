package isnmf

import (
	"math/rand/v2"

	"github.com/stirank/stirank/samplers/smc"
)

// SMC1 is dictionary masking (Dikmen & Cemgil §3.2): every column of W starts collapsed into one,
// where the posterior of h is exact (eq. 17), and the columns are moved out of it one at a time
// while the particles follow the posterior of the masked dictionary by a mode jump, Gibbs and
// slice sweeps (segmentPath.Move), are reweighted by the ratio of consecutive targets
// (eq. 18, with the excitations' factors) and resampled when the effective sample size falls below
// N/2. Each column moves out in steps chosen as it goes (smc.RunAdaptive): at most an even share
// of Budget.Stages, shorter where the conditional ESS would fall below Budget.CESS.
//
// Two departures from the paper, each measured against the quadrature (docs/isnmf.md):
//   - the column kept is the one that explains most of the data at the posterior's heaviest mode,
//     and the others move out smallest first: the paper's choice (the smallest angle to the sum
//     of the columns) can keep a minor column, whose posterior must then take a whole load over
//     from another column, which the moves do not follow;
//   - an excitation whose column has not moved out yet is held at a reference fitted to its
//     posterior at the end of its move, not at its heavy-tailed prior (withReferences), from which
//     too few particles reach the posterior's mass;
//   - every move starts with a jump between the modes of the targets at the ends of its segment
//     (modeJump, path.addJumps): the sweeps keep a particle in its mode, and on a multimodal
//     posterior the population ended in the modes in the proportions the path led it into.
type SMC1 struct{ Budget }

func init() { register("smc1", func(b Budget) Method { return SMC1{b} }) }

func (SMC1) Name() string { return "smc1" }

// Estimate moves the particles from the collapsed dictionary to W.
func (s SMC1) Estimate(m *Model, x []float64, r *rand.Rand) smc.Result {
	order := findModes(m, x, fullTarget(m)).contributionOrder(m)
	frac := make([]float64, m.K)
	mask := func(at position, t *target) {
		frac[order[0]] = 1
		for i, k := range order[1:] {
			frac[k] = at.share(i)
		}
		t.setPowers(1)
		maskRows(m, frac, order[0], t.d, 0, m.F)
	}
	p := newPath(m, x, withReferences(m, x, mask, order[1:]))
	p.segments = m.K - 1
	p.addJumps(func(int) []float64 { return columnGrid })
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
