package samplers

import (
	"math"
	"math/rand/v2"
)

func init() {
	Register(Registration{
		Name:    "psgld",
		Summary: "preconditioned SGLD with an RMSprop preconditioner (Li et al. 2016; SPL 2018 eqs. 8–9)",
		Params: []Param{
			{Name: "alpha", Default: 0.99, Help: "decay α of the squared-gradient average", Check: openUnit},
			{Name: "sigma", Default: 1e-5, Help: "regulariser σ of G = 1/(σ + √v)", Check: positive},
			{Name: "freeze", Default: 1, Help: "1: stop adapting G after burn-in (no divergence term needed); 0: the papers' ever-adapting G", Check: onOff},
		},
		New: func(p map[string]float64) Kernel {
			return PSGLD{Alpha: p["alpha"], Sigma: p["sigma"], Freeze: p["freeze"] == 1}
		},
	})
}

// PSGLD is preconditioned SGLD (Li et al. 2016) as in SPL 2018 eqs. (8)–(9): G = diag(1/(σ + √v)),
// v ← αv + (1−α) ḡ⊙ḡ with ḡ the per-datum mean gradient, θ ← θ + ε G ĝ + N(0, 2εG). The papers drop
// the divergence term of the position-dependent G; with Freeze the preconditioner stops adapting
// after burn-in, so the sampling phase has a constant G and needs no such term.
type PSGLD struct {
	Alpha, Sigma float64
	Freeze       bool
}

var _ Kernel = PSGLD{}

type psgldState struct {
	v    []float64
	seen bool // whether v holds any gradient yet (the first gradient initialises it)
}

func (PSGLD) NewState(dim int) State { return &psgldState{v: make([]float64, dim)} }
func (k PSGLD) Update(s State, in Input) {
	st := s.(*psgldState)
	th, g, v := in.Theta[in.Lo:in.Hi], in.Grad[in.Lo:in.Hi], st.v[in.Lo:in.Hi]
	n := float64(in.N)
	if n < 1 {
		n = 1
	}
	if in.Adapt || !k.Freeze {
		for i := range v {
			gb := g[i] / n
			if !st.seen {
				v[i] = gb * gb
			} else {
				v[i] = k.Alpha*v[i] + (1-k.Alpha)*gb*gb
			}
		}
	}
	for i := range th {
		G := 1 / (k.Sigma + math.Sqrt(v[i]))
		th[i] += in.Eps*G*g[i] + math.Sqrt(2*in.Eps*G)*in.Rand.NormFloat64()
	}
	if in.Mirror {
		mirror(th)
	}
}

// EndStep records that every coordinate's preconditioner has been initialised.
func (PSGLD) EndStep(s State, _ bool, _ *rand.Rand) { s.(*psgldState).seen = true }
