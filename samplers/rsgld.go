package samplers

import (
	"math"
	"math/rand/v2"
)

func init() {
	Register(Registration{
		Name:    "rsgld",
		Aliases: []string{"riemann"},
		Summary: "Langevin dynamics preconditioned by the model's metric, with its divergence term",
		Caps:    Capabilities{UsesMetric: true},
		New:     func(map[string]float64) Kernel { return MetricSGLD{} },
	})
}

// MetricSGLD is Langevin dynamics preconditioned by the model's diagonal metric g with its exact
// divergence term (the Riemannian correction of Girolami & Calderhead / Patterson & Teh):
// θ ← θ + ε (g ⊙ ĝ + γ) + N(0, 2ε g). With the model's metric ε is dimensionless: ε ≈ 1 is at the
// edge of stability along the stiffest direction.
type MetricSGLD struct{}

var _ Kernel = MetricSGLD{}

func (MetricSGLD) NewState(int) State              { return nil }
func (MetricSGLD) EndStep(State, bool, *rand.Rand) {}
func (MetricSGLD) Update(_ State, in Input) {
	th, g := in.Theta[in.Lo:in.Hi], in.Grad[in.Lo:in.Hi]
	m, gm := in.Metric[in.Lo:in.Hi], in.Gamma[in.Lo:in.Hi]
	for i := range th {
		th[i] += clip(in.Eps*(m[i]*g[i]+gm[i]), in.MaxDrift) + math.Sqrt(2*in.Eps*m[i])*in.Rand.NormFloat64()
	}
	if in.Mirror {
		mirror(th)
	}
}
