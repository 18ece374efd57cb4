package samplers

import (
	"math"
	"math/rand/v2"
)

// DefaultKernel is the kernel chains use unless configured otherwise (sti.Default says why).
const DefaultKernel = "lmsgld"

func init() {
	Register(Registration{
		Name:    DefaultKernel,
		Aliases: []string{"lm"},
		Summary: "metric Langevin with Leimkuhler–Matthews noise, metric frozen after burn-in (the default)",
		Caps:    Capabilities{UsesMetric: true, FreezesMetric: true},
		New:     func(map[string]float64) Kernel { return LMSGLD{} },
	})
}

// LMSGLD is MetricSGLD with the Leimkuhler–Matthews noise: the injected noise of a step is
// √(ε g/2)(ξ_k + ξ_{k+1}), reusing the previous step's draw. For a Gaussian target and a constant
// metric this samples the exact stationary distribution at any stable step (the Euler scheme
// inflates the variance by a factor 1/(1 − ελ/2)), and in general its bias is O(ε²) instead of O(ε).
// The noise is only right for a metric that does not change between the two steps that share a
// draw, so the kernel asks the chain to freeze the metric after burn-in.
type LMSGLD struct{}

var _ Kernel = LMSGLD{}

type lmState struct {
	xi   []float64
	seen bool // whether xi holds the previous step's draws
}

func (LMSGLD) NewState(dim int) State { return &lmState{xi: make([]float64, dim)} }
func (LMSGLD) Update(s State, in Input) {
	st := s.(*lmState)
	th, g := in.Theta[in.Lo:in.Hi], in.Grad[in.Lo:in.Hi]
	m, gm, xi := in.Metric[in.Lo:in.Hi], in.Gamma[in.Lo:in.Hi], st.xi[in.Lo:in.Hi]
	for i := range th {
		prev := xi[i]
		if !st.seen {
			prev = in.Rand.NormFloat64()
		}
		next := in.Rand.NormFloat64()
		th[i] += clip(in.Eps*(m[i]*g[i]+gm[i]), in.MaxDrift) + math.Sqrt(in.Eps*m[i]/2)*(prev+next)
		xi[i] = next
	}
	if in.Mirror {
		mirror(th)
	}
}

func (LMSGLD) EndStep(s State, _ bool, _ *rand.Rand) { s.(*lmState).seen = true }
