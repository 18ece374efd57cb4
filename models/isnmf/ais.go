package isnmf

import (
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/samplers/smc"
)

// AIS is annealed importance sampling (Neal 2001) on the power path π_n(h) = p(h) p(x | W, h)^β_n
// (eqs. 14–16) with β_n = (n/S)^4, dense near β = 0 where the likelihood falls fastest, one
// slice-sampling sweep per stage (a Gibbs sweep at β = 1), and no resampling: the particles are
// independent annealing runs.
type AIS struct{ Budget }

func init() { register("ais", func(b Budget) Method { return AIS{b} }) }

func (AIS) Name() string { return "ais" }

// Estimate runs the particles up the power path.
func (a AIS) Estimate(m *Model, x []float64, r *rand.Rand) smc.Result {
	S := a.Stages
	p := newPath(m, x, func(at position, t *target) {
		t.setPowers(math.Pow(float64(at.seg)/float64(S), 4))
		copy(t.d, m.W)
	})
	p.stages = S
	return smc.Run(fixedPath{p}, smc.Config{Particles: a.Particles}, r)
}
