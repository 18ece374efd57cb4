package isnmf

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stirank/stirank/internal/slice"
	"github.com/stirank/stirank/samplers/smc"
)

// target is one stage of a path: π(h) ∝ Π_k g_k(h_k) Π_f N_u(x_f; 0, Σ_k d_fk h_k)^β_f, the
// model's likelihood with a masked dictionary D in place of W, each feature's term raised to its
// own power (0 for a feature not yet in), and on each excitation an inverse-gamma factor g_k: its
// prior, or a reference fitted to where it will end up while its column has not moved out.
// Every path here is a sequence of such targets.
type target struct {
	d      []float64 // F×K
	power  []float64 // β_f
	factor []igFactor
	exact  bool // every β_f is 0 or 1, so the Gibbs conditionals hold
}

// igFactor is the unnormalised inverse-gamma factor e^logNorm h^−(shape+1) e^−scale/h: a
// normalised IG(shape, scale) when logNorm = shape log scale − log Γ(shape), and a geometric mix
// of two such (mixFactors) otherwise.
type igFactor struct{ shape, scale, logNorm float64 }

// invGammaFactor is the normalised density IG(shape, scale).
func invGammaFactor(shape, scale float64) igFactor {
	lg, _ := math.Lgamma(shape)
	return igFactor{shape, scale, shape*math.Log(scale) - lg}
}

// mixFactors is q^(1−rho) p^rho, itself an unnormalised inverse-gamma factor: normalised q at
// rho = 0, p at rho = 1.
func mixFactors(q, p igFactor, rho float64) igFactor {
	switch rho {
	case 0:
		return q
	case 1:
		return p
	}
	return igFactor{(1-rho)*q.shape + rho*p.shape, (1-rho)*q.scale + rho*p.scale, (1-rho)*q.logNorm + rho*p.logNorm}
}

// log is log g(h).
func (g igFactor) log(h float64) float64 { return g.logNorm - (g.shape+1)*math.Log(h) - g.scale/h }

// setPowers sets every β_f to beta.
func (t *target) setPowers(beta float64) {
	for f := range t.power {
		t.power[f] = beta
	}
}

// position is a place on a path: for a path of fixed stages (AIS, IS) stage seg, with lambda 0;
// for a segmented one (SMC1, SMC2) the point lambda ∈ [0, 1] of segment seg.
type position struct {
	seg    int
	lambda float64
}

// schedule writes the target at a position into t (whose slices are allocated).
type schedule func(at position, t *target)

// path carries a schedule over the model and a column for the SMC driver: its targets, the exact
// draw from the first one, and the moves. fixedPath and segmentPath present it to smc.Run and
// smc.RunAdaptive.
type path struct {
	m *Model
	x []float64
	// stages is the number of stages of a fixed path, segments that of a segmented one.
	stages, segments int
	fill             schedule
	// cache holds the last two targets the driver asked for: it walks LogTarget(n−1),
	// LogTarget(n) and Move(n) over the particles stage after stage, and LogRatios(from, to)
	// over them for every step its bisection tries.
	cache  [2]target
	at     [2]position
	recent int // the cached target asked for last, which a miss must not replace
	// work buffers of the moves, and the rows two targets differ in (LogRatios).
	v, lam, z, ss, nobs     []float64
	changed, changedFactors []int
	// jumps holds each segment's mode jump, nil for a path without them.
	jumps []jumpGrid
}

func newPath(m *Model, x []float64, fill schedule) *path {
	p := &path{m: m, x: x, fill: fill, at: [2]position{{seg: -1}, {seg: -1}}}
	for i := range p.cache {
		p.cache[i] = newTarget(m)
	}
	p.v, p.lam, p.z, p.ss, p.nobs = make([]float64, m.F), make([]float64, m.K), make([]float64, m.K), make([]float64, m.K), make([]float64, m.K)
	return p
}

// newTarget allocates a target whose factors are the model's priors.
func newTarget(m *Model) target {
	t := target{d: make([]float64, m.F*m.K), power: make([]float64, m.F), factor: make([]igFactor, m.K)}
	for k := range t.factor {
		t.factor[k] = invGammaFactor(m.A[k], m.B[k])
	}
	return t
}

// stage returns the target at a position, filling it in place of the one asked for less recently
// if neither cached target is there.
func (p *path) stage(at position) *target {
	for i := range p.at {
		if p.at[i] == at {
			p.recent = i
			return &p.cache[i]
		}
	}
	i := 1 - p.recent
	p.recent = i
	p.at[i] = at
	t := &p.cache[i]
	p.fill(at, t)
	t.exact = true
	for _, b := range t.power {
		t.exact = t.exact && (b == 0 || b == 1)
	}
	return t
}

// fixedPath is a path of Stages() fixed targets, stage n at position {n, 0}, for smc.Run.
type fixedPath struct{ *path }

var _ smc.Path = fixedPath{}

func (p fixedPath) Dim() int    { return p.m.K }
func (p fixedPath) Stages() int { return p.stages }

// LogTarget is Σ_f β_f log N_u(x_f; 0, d_f·h): the factors on h, the priors, are common to every
// stage of a fixed path.
func (p fixedPath) LogTarget(n int, h []float64) float64 { return p.logTargetAt(position{seg: n}, h) }

func (p fixedPath) logTargetAt(at position, h []float64) float64 {
	return p.likelihood(p.stage(at), h)
}

// likelihood is Σ_f β_f log N_u(x_f; 0, d_f·h) of target t.
func (p fixedPath) likelihood(t *target, h []float64) float64 {
	K, u := p.m.K, p.m.U
	var logs logSum
	var power, quad float64
	for f, x := range p.x {
		b := t.power[f]
		if b == 0 {
			continue
		}
		var v float64
		for k, d := range t.d[f*K : (f+1)*K] {
			v += d * h[k]
		}
		power += b
		quad += b * x / v
		logs.add(b, v)
	}
	return u*math.Log(u/math.Pi)*power - u*(logs.value()+quad)
}

func (p fixedPath) Move(n int, r *rand.Rand, h []float64) { p.move(p.stage(position{seg: n}), r, h) }

// segmentPath is a path of Segments() segments for smc.RunAdaptive.
type segmentPath struct{ *path }

var _ smc.Segmented = segmentPath{}

func (p segmentPath) Dim() int      { return p.m.K }
func (p segmentPath) Segments() int { return p.segments }

// Move is the mode jump of the stretch of the segment lambda lies in, when the path has jumps,
// then the sweeps of path.move.
func (p segmentPath) Move(s int, lambda float64, r *rand.Rand, h []float64) {
	t := p.stage(position{s, lambda})
	if p.jumps != nil {
		g := &p.jumps[s]
		i := 0
		for i < len(g.jump)-1 && lambda > g.lambda[i+1] {
			i++
		}
		g.jump[i].move(r, h, func(h []float64) float64 { return p.logTarget(t, h) })
	}
	p.move(t, r, h)
}

// jumpGrid is a segment's mode jumps: jump[i] proposes from the modes of the targets at
// lambda[i] and lambda[i+1], for the stages between them.
type jumpGrid struct {
	lambda []float64
	jump   []*modeJump
}

// columnGrid is where the mode jumps of a column's move take the target's modes: 0, then 2^−10
// to 1 at ratios of √2. A mode in which the moving column explains the data has its excitation at
// about 1/λ times its value at the end of the move, so the points are spaced evenly in log λ, each
// such mode 0.35 in log h from the next point's, well within the t proposal's reach (the spacings
// tried, and what each left, are in docs/isnmf.md).
var columnGrid = func() []float64 {
	g := []float64{0}
	for i := 20; i >= 0; i-- {
		g = append(g, math.Pow(2, -float64(i)/2))
	}
	return g
}()

// addJumps gives every segment mode jumps (modeJump) between the modes of the targets at the
// points of its grid (grid(s), from 0 to 1), each target's modes climbed to also from the
// previous point's, so that a mode the path carries along is followed from point to point.
func (p *path) addJumps(grid func(s int) []float64) {
	t := newTarget(p.m)
	p.fill(position{}, &t)
	prev := findModes(p.m, p.x, &t)
	p.jumps = make([]jumpGrid, p.segments)
	for s := range p.segments {
		g := jumpGrid{lambda: grid(s)}
		for _, lambda := range g.lambda[1:] {
			p.fill(position{s, lambda}, &t)
			next := findModes(p.m, p.x, &t, prev.mean...)
			g.jump = append(g.jump, newModeJump(p.m.K, prev, next))
			prev = next
		}
		p.jumps[s] = g
	}
}

// logTarget is the log density of target t at h, up to its normalising constant.
func (p *path) logTarget(t *target, h []float64) float64 {
	l := fixedPath{p}.likelihood(t, h)
	for k, g := range t.factor {
		l += g.log(h[k])
	}
	return l
}

// LogRatios sets out[i] to the log ratio of the targets at to and from of particle i, over the
// features whose power or dictionary row differs between them and the excitations whose factor
// does: a feature coming in costs K operations a particle, not F·K. The logarithms of each target's scales are taken a
// product at a time (logSum), since every β_f of a mask step is 1.
func (p segmentPath) LogRatios(s int, from, to float64, hs, out []float64) {
	tf, tt := p.stage(position{s, from}), p.stage(position{s, to})
	K, u := p.m.K, p.m.U
	p.changed = p.changed[:0]
	for f := range p.x {
		if tf.power[f] != tt.power[f] || !slices.Equal(tf.d[f*K:(f+1)*K], tt.d[f*K:(f+1)*K]) {
			p.changed = append(p.changed, f)
		}
	}
	p.changedFactors = p.changedFactors[:0]
	for k := range K {
		if tf.factor[k] != tt.factor[k] {
			p.changedFactors = append(p.changedFactors, k)
		}
	}
	c := u * math.Log(u/math.Pi)
	for i := range out {
		h := hs[i*K : (i+1)*K]
		var logTo, logFrom logSum
		var l float64
		for _, k := range p.changedFactors {
			l += tt.factor[k].log(h[k]) - tf.factor[k].log(h[k])
		}
		for _, f := range p.changed {
			x, bt, bf := p.x[f], tt.power[f], tf.power[f]
			if bt > 0 {
				var v float64
				for k, d := range tt.d[f*K : (f+1)*K] {
					v += d * h[k]
				}
				l += bt * (c - u*x/v)
				logTo.add(bt, v)
			}
			if bf > 0 {
				var v float64
				for k, d := range tf.d[f*K : (f+1)*K] {
					v += d * h[k]
				}
				l -= bf * (c - u*x/v)
				logFrom.add(bf, v)
			}
		}
		out[i] = l - u*(logTo.value()-logFrom.value())
	}
}

// logSum accumulates Σ_i β_i log v_i with one logarithm per run of terms of equal β (a
// product, logged before it can overflow or underflow) instead of one per term: logarithms were
// most of the cost of the moves.
type logSum struct{ beta, prod, acc float64 }

func (s *logSum) add(beta, v float64) {
	switch {
	case s.prod == 0:
		s.beta, s.prod = beta, v
	case beta != s.beta:
		s.acc += beta * math.Log(v)
	default:
		s.prod *= v
		if s.prod > 1e150 || s.prod < 1e-150 {
			s.acc += s.beta * math.Log(s.prod)
			s.prod = 1
		}
	}
}

func (s *logSum) value() float64 {
	if s.prod == 0 {
		return s.acc
	}
	return s.acc + s.beta*math.Log(s.prod)
}

// Init draws h from π_0 exactly. Its factors must be normalised densities. A first stage with
// every β_f = 0 is their product (Z_0 = 1); otherwise its powers must be 0 or 1 and its
// dictionary must have one non-zero column c on the features that are in, so that h_c has an
// inverse-gamma posterior, the other excitations keep their factors, and Z_0 is the K = 1
// evidence of those features under c's factor.
func (p *path) Init(r *rand.Rand, h []float64) float64 {
	t := p.stage(position{})
	m := p.m
	for k, g := range t.factor {
		h[k] = invGamma(r, g.shape, g.scale)
	}
	c := -1
	for f := range m.F {
		for k := range m.K {
			if t.power[f] == 1 && t.d[f*m.K+k] > 0 {
				c = k
			}
		}
	}
	if c < 0 {
		return 0
	}
	a, b := t.factor[c].shape, t.factor[c].scale
	var logZ, n, s float64
	for f, x := range p.x {
		if t.power[f] == 0 {
			continue
		}
		d := t.d[f*m.K+c]
		n++
		s += x / d
		logZ += m.U*math.Log(m.U/math.Pi) - m.U*math.Log(d)
	}
	shape, scale := a+m.U*n, b+m.U*s
	lga, _ := math.Lgamma(a)
	lgs, _ := math.Lgamma(shape)
	h[c] = invGamma(r, shape, scale)
	return logZ + a*math.Log(b) - lga + lgs - shape*math.Log(scale)
}

// move is one Gibbs sweep through the components (eqs. 4–7) where the conditionals hold (every
// β_f is 0 or 1), then one slice-sampling sweep over log h. Gibbs alone mixes slowly on an
// informative column — C and h are strongly dependent, and it moved SMC1 0.39 nat low at
// K = 2 on complex data — and the slice sweep is what tempered targets need anyway.
func (p *path) move(t *target, r *rand.Rand, h []float64) {
	if t.exact {
		p.gibbs(t, r, h)
	}
	p.slice(t, r, h)
}

// gibbs draws the components c_f | h, x of every observed feature — Gaussian, with mean
// x_f d_f/v_f and covariance diag(d_f) − d_f d_fᵀ/v_f where d_fk = w_fk h_k — then every h_k | C
// ~ IG(a_k + u n_k, b_k + u Σ_f |c_fk|²/w_fk) under a factor IG(a_k, b_k), n_k counting the observed features with w_fk > 0.
// A conditional Gaussian draw is an unconditional one corrected onto the constraint
// Σ_k c_fk = x_f: c = z + d (x − Σ_k z_k)/v with z_k ~ N_u(0, d_k). By the model's symmetry
// (sign for real data, phase for complex) x_f may be taken as √|x_f|², real.
func (p *path) gibbs(t *target, r *rand.Rand, h []float64) {
	m := p.m
	K := m.K
	dims := int(2 * m.U) // 1 real, 2 (re, im) complex: each carries λ_k/dims of the variance
	ss, lam, nobs := p.ss, p.lam, p.nobs
	clear(ss)
	clear(nobs)
	for f, x := range p.x {
		if t.power[f] == 0 {
			continue
		}
		row := t.d[f*K : (f+1)*K]
		var v float64
		for k, d := range row {
			lam[k] = d * h[k]
			v += lam[k]
			if d > 0 {
				nobs[k]++
			}
		}
		for j := range dims {
			var want, sum float64
			if j == 0 {
				want = math.Sqrt(x)
			}
			for k := range K {
				z := r.NormFloat64() * math.Sqrt(lam[k]/float64(dims))
				p.z[k] = z
				sum += z
			}
			for k, d := range row {
				if d > 0 {
					c := p.z[k] + lam[k]*(want-sum)/v
					ss[k] += c * c / d
				}
			}
		}
	}
	for k := range K {
		g := t.factor[k]
		h[k] = invGamma(r, g.shape+m.U*nobs[k], g.scale+m.U*ss[k])
	}
}

// slice updates every log h_k in turn by slice sampling (Neal 2003: stepping out from a unit
// interval, then shrinkage), which leaves a tempered target invariant without tuning; v holds the
// scales Σ_k d_fk h_k, kept current as each h_k changes.
func (p *path) slice(t *target, r *rand.Rand, h []float64) {
	m := p.m
	K := m.K
	v := p.v
	for f := range m.F {
		v[f] = 0
		for k, d := range t.d[f*K : (f+1)*K] {
			v[f] += d * h[k]
		}
	}
	for k := range K {
		a, b := t.factor[k].shape, t.factor[k].scale
		hk := h[k]
		// logDensity of η = log h_k: the log IG factor with its Jacobian, and the tempered
		// likelihood of the features whose scale h_k enters.
		logDensity := func(eta float64) float64 {
			e := math.Exp(eta)
			var logs logSum
			var quad float64
			for f, x := range p.x {
				d := t.d[f*K+k]
				if beta := t.power[f]; beta > 0 && d > 0 {
					vf := v[f] + d*(e-hk)
					quad += beta * x / vf
					logs.add(beta, vf)
				}
			}
			return -a*eta - b/e - m.U*(logs.value()+quad)
		}
		eta := slice.Step(r, logDensity, math.Log(hk), 1)
		e := math.Exp(eta)
		for f := range m.F {
			v[f] += t.d[f*K+k] * (e - hk)
		}
		h[k] = e
	}
}

// invGamma draws from IG(shape, scale): the reciprocal of a Gamma(shape, rate = scale) draw.
func invGamma(r *rand.Rand, shape, scale float64) float64 {
	return 1 / distuv.Gamma{Alpha: shape, Beta: scale, Src: r}.Rand()
}
