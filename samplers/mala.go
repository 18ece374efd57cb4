package samplers

import (
	"math"
	"math/rand/v2"
)

// MALA is the Metropolis-adjusted Langevin algorithm with the model's diagonal, position-dependent
// metric (a simplified manifold MALA, Girolami & Calderhead 2011): the MetricSGLD move is a proposal
// that a Metropolis–Hastings test accepts or rejects against the exact tempered posterior, so the
// chain has no discretisation bias at any step size. It needs the full-data log-likelihood at the
// proposal, so it applies to steps that read every cell; the chain runner drives it.
type MALA struct{}

// Point is a state with what MALA needs of it: the tempered log posterior, its gradient, and the
// metric and its divergence there.
type Point struct {
	Theta, Grad, Metric, Gamma []float64
	LogPost                    float64
}

// Propose writes θ + ε(g ⊙ ∇ + γ) + √(2εg) ξ into dst.
func (MALA) Propose(from *Point, eps float64, r *rand.Rand, dst []float64) {
	for i, th := range from.Theta {
		m := from.Metric[i]
		dst[i] = th + eps*(m*from.Grad[i]+from.Gamma[i]) + math.Sqrt(2*eps*m)*r.NormFloat64()
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

// LogAccept returns the log Metropolis–Hastings acceptance ratio of moving from cur to prop.
func (MALA) LogAccept(cur, prop *Point, eps float64) float64 {
	return prop.LogPost - cur.LogPost + logProposal(prop, cur.Theta, eps) - logProposal(cur, prop.Theta, eps)
}

// MALA is driven by the chain runner, not through Update; these satisfy Kernel so it can be
// chosen by name like the others.
func (MALA) Name() string        { return "mala" }
func (MALA) UsesMetric() bool    { return true }
func (MALA) NewState(int) State  { return nil }
func (MALA) Update(State, Input) { panic("samplers: MALA moves through Propose and LogAccept") }
