package isnmf

import (
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/internal/slice"
	"github.com/stirank/stirank/samplers/smc"
)

// Full is IS-NMF with priors on both factors — w_fr ~ Gamma(WShape, WRate), h_rn ~ IG(A, B),
// x_fn ~ N_u(0, Σ_r w_fr h_rn) — whose evidence p(X | R) at rank R is what stirank select
// estimates by thermodynamic integration (models.ItakuraSaito). FullAIS is its reference:
// annealed importance sampling over (log W, log H), exact in the limit of many stages, and costly
// (every stage sweeps all (F + N)·R coordinates), so for small data.
type Full struct {
	F, N, R int
	// X holds the columns as powers |x_fn|², column by column.
	X [][]float64
	// Powers says the data are powers of complex values, whose density (of v, not x) is used.
	Powers                        bool
	WShape, WRate, HShape, HScale float64
}

// FullAIS estimates log p(X | R) by AIS on the power path with β_n = (n/S)^4, one slice sweep
// over every log-factor per stage.
func FullAIS(m *Full, b Budget, r *rand.Rand) smc.Result {
	return smc.Run(&fullPath{m: m, stages: b.Stages, v: make([]float64, m.F*m.N)}, smc.Config{Particles: b.Particles}, r)
}

type fullPath struct {
	m      *Full
	stages int
	v      []float64 // F×N scales of the particle being moved
}

func (p *fullPath) Dim() int    { return (p.m.F + p.m.N) * p.m.R }
func (p *fullPath) Stages() int { return p.stages }
func (p *fullPath) beta(n int) float64 {
	return math.Pow(float64(n)/float64(p.stages), 4)
}

// u and the per-cell constant of the likelihood: of x for amplitudes, of v = |x|² for powers.
func (p *fullPath) u() (u, c float64) {
	if p.m.Powers {
		return 1, 0
	}
	return 0.5, 0.5 * math.Log(0.5/math.Pi)
}

// Init draws log W and log H from their priors.
func (p *fullPath) Init(r *rand.Rand, x []float64) float64 {
	m := p.m
	nw := m.F * m.R
	for i := range x {
		if i < nw {
			x[i] = math.Log(1 / invGamma(r, m.WShape, m.WRate))
		} else {
			x[i] = math.Log(invGamma(r, m.HShape, m.HScale))
		}
	}
	return 0
}

// scales fills p.v from the log-factors x.
func (p *fullPath) scales(x []float64) {
	m := p.m
	nw := m.F * m.R
	for f := range m.F {
		for n := range m.N {
			var v float64
			for k := range m.R {
				v += math.Exp(x[f*m.R+k] + x[nw+n*m.R+k])
			}
			p.v[f*m.N+n] = v
		}
	}
}

func (p *fullPath) LogTarget(n int, x []float64) float64 {
	b := p.beta(n)
	if b == 0 {
		return 0
	}
	p.scales(x)
	u, c := p.u()
	var l float64
	for f := range p.m.F {
		for j := range p.m.N {
			v := p.v[f*p.m.N+j]
			l += c - u*(math.Log(v)+p.m.X[j][f]/v)
		}
	}
	return b * l
}

// Move is a slice-sampling sweep over every log-factor: w_fr touches the cells of row f, h_rn
// those of column n.
func (p *fullPath) Move(n int, r *rand.Rand, x []float64) {
	m := p.m
	b := p.beta(n)
	u, _ := p.u()
	p.scales(x)
	nw := m.F * m.R
	for i := range x {
		isW := i < nw
		f, k, col := i/m.R, i%m.R, (i-nw)/m.R
		count := m.N
		if !isW {
			count = m.F
		}
		old := math.Exp(x[i])
		// partner returns, for the coordinate's c-th cell, its scale, the factor it is multiplied
		// by there, and the cell's power.
		partner := func(c int) (v *float64, w float64, power float64) {
			if isW {
				return &p.v[f*m.N+c], math.Exp(x[nw+c*m.R+k]), m.X[c][f]
			}
			return &p.v[c*m.N+col], math.Exp(x[c*m.R+k]), m.X[col][c]
		}
		logDensity := func(eta float64) float64 {
			e := math.Exp(eta)
			var l float64
			if isW {
				l = m.WShape*eta - m.WRate*e
			} else {
				l = -m.HShape*eta - m.HScale/e
			}
			if b == 0 {
				return l
			}
			var logs logSum
			var quad float64
			for c := range count {
				v, w, pw := partner(c)
				vv := *v + w*(e-old)
				quad += pw / vv
				logs.add(1, vv)
			}
			return l - b*u*(logs.value()+quad)
		}
		eta := slice.Step(r, logDensity, x[i], 1)
		e := math.Exp(eta)
		for c := range count {
			v, w, _ := partner(c)
			*v += w * (e - old)
		}
		x[i] = eta
	}
}
