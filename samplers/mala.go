package samplers

import (
	"math"
	"math/rand/v2"
)

func init() {
	Register(Registration{
		Name:    "mala",
		Summary: "Metropolis-adjusted Langevin with the model's metric: exact at any step, reads every cell every step",
		Params: []Param{
			// Roberts & Rosenthal (1998) give 0.574 as optimal in high dimension.
			{Name: "accept", Default: 0.574, Help: "acceptance rate the step size is tuned to during burn-in", Check: openUnit},
		},
		Caps: Capabilities{UsesMetric: true, MetropolisHastings: true},
		New:  func(p map[string]float64) Kernel { return MALA{Accept: p["accept"]} },
	})
}

// MALA is the Metropolis-adjusted Langevin algorithm with the model's diagonal, position-dependent
// metric (a simplified manifold MALA, Girolami & Calderhead 2011): the MetricSGLD move is a proposal
// that a Metropolis–Hastings test accepts or rejects against the exact tempered posterior, so the
// chain has no discretisation bias at any step size. It needs the full-data log-likelihood at the
// proposal, so it applies to steps that read every cell.
type MALA struct {
	// Accept is the acceptance rate the step size is tuned to during burn-in.
	Accept float64
}

var (
	_ Kernel             = MALA{}
	_ MetropolisHastings = MALA{}
)

func (MALA) NewState(int) State              { return nil }
func (MALA) EndStep(State, bool, *rand.Rand) {}

// Update writes the proposal θ + ε(g ⊙ ∇ + γ) + √(2εg) ξ over θ, from the gradient and metric of
// the point it starts from.
func (MALA) Update(_ State, in Input) {
	th, g := in.Theta[in.Lo:in.Hi], in.Grad[in.Lo:in.Hi]
	m, gm := in.Metric[in.Lo:in.Hi], in.Gamma[in.Lo:in.Hi]
	for i := range th {
		th[i] = th[i] + in.Eps*(m[i]*g[i]+gm[i]) + math.Sqrt(2*in.Eps*m[i])*in.Rand.NormFloat64()
	}
}

// logProposal is log q(to | from) up to the constant shared by both directions.
func logProposal(from *Point, to []float64, eps float64) float64 {
	s := 0.0
	for i, th := range from.Theta {
		m := from.Metric[i]
		d := to[i] - th - eps*(m*from.Grad[i]+from.Gamma[i])
		s -= d*d/(4*eps*m) + 0.5*math.Log(m)
	}
	return s
}

func (MALA) LogAccept(cur, prop *Point, eps float64) float64 {
	return prop.LogPost - cur.LogPost + logProposal(prop, cur.Theta, eps) - logProposal(cur, prop.Theta, eps)
}

func (k MALA) TargetAccept() float64 { return k.Accept }
