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

// logProposal is log q(to | from) over coordinates [lo, hi), up to the constant shared by both
// directions.
func logProposal(from *Point, to []float64, lo, hi int, eps float64) float64 {
	s := 0.0
	for i := lo; i < hi; i++ {
		m := from.Metric[i]
		d := to[i] - from.Theta[i] - eps*(m*from.Grad[i]+from.Gamma[i])
		s -= d*d/(4*eps*m) + 0.5*math.Log(m)
	}
	return s
}

func (k MALA) LogAccept(cur, prop *Point, eps float64) float64 {
	return prop.LogPost - cur.LogPost + k.LogProposalRatio(cur, prop, 0, len(cur.Theta), eps)
}

// LogProposalRatio is log q(cur | prop) − log q(prop | cur) over coordinates [lo, hi): the
// Hastings correction of a move of those coordinates alone, for a Metropolis-within-Gibbs kernel
// whose coordinate blocks are accepted one by one (their proposals are independent given the
// point, as Update draws them).
func (MALA) LogProposalRatio(cur, prop *Point, lo, hi int, eps float64) float64 {
	return logProposal(prop, cur.Theta, lo, hi, eps) - logProposal(cur, prop.Theta, lo, hi, eps)
}

func (k MALA) TargetAccept() float64 { return k.Accept }
