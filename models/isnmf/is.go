package isnmf

import (
	"math/rand/v2"

	"github.com/stirank/stirank/samplers/smc"
)

// IS is plain importance sampling from the prior, p̂(x | W) = mean p(x | W, h_i) over
// Particles·Stages draws h_i ~ p(h): the baseline the others are measured against. Its variance
// grows like the ratio of the prior's volume to the posterior's, exponentially in the number of
// directions the data pin down; with 10⁵ draws it matched the exact values at K ≤ 3 for F up to
// 200 and the other methods at K = 15 (bench/dictionary), where the paper's 5 000 draws did not.
type IS struct{ Budget }

func init() { register("is", func(b Budget) Method { return IS{b} }) }

func (IS) Name() string { return "is" }

// Estimate draws from the prior and weights by the likelihood: one stage from β = 0 to 1.
func (s IS) Estimate(m *Model, x []float64, r *rand.Rand) smc.Result {
	p := newPath(m, x, func(at position, t *target) {
		t.setPowers(float64(at.seg))
		copy(t.d, m.W)
	})
	p.stages = 1
	return smc.Run(fixedPath{p}, smc.Config{Particles: s.Particles * s.Stages}, r)
}
