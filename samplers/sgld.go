package samplers

import (
	"math"
	"math/rand/v2"
)

func init() {
	Register(Registration{
		Name:    "sgld",
		Summary: "stochastic gradient Langevin dynamics (Welling & Teh 2011), the papers' kernel",
		New:     func(map[string]float64) Kernel { return SGLD{} },
	})
}

// SGLD is stochastic gradient Langevin dynamics (Welling & Teh 2011):
// θ ← θ + ε ĝ + η, η ~ N(0, 2ε I), with the tempered gradient of SPL 2018 eq. (6).
type SGLD struct{}

var _ Kernel = SGLD{}

func (SGLD) NewState(int) State              { return nil }
func (SGLD) EndStep(State, bool, *rand.Rand) {}
func (SGLD) Update(_ State, in Input) {
	sd := math.Sqrt(2 * in.Eps)
	th, g := in.Theta[in.Lo:in.Hi], in.Grad[in.Lo:in.Hi]
	for i := range th {
		th[i] += in.Eps*g[i] + sd*in.Rand.NormFloat64()
	}
	if in.Mirror {
		mirror(th)
	}
}
