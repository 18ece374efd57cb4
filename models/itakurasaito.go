package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stirank/stirank/tensor"
)

// isName is the Itakura–Saito NMF model's registered name.
const isName = "isnmf"

// isHypers are the Itakura–Saito NMF model's hyper-parameters.
var isHypers = []Hyper{
	{Name: "values", Kind: Choice, Choices: []string{"real", "power"}, Default: Word("real"),
		Help: "real: the cells are real amplitudes x (u = 1/2); power: they are powers |x|^2 of complex values, such as a power spectrogram (u = 1)"},
	{Name: "w-shape", Kind: Real, Positive: true, Default: Num(1), Help: "shape of the Gamma prior of every dictionary entry w_fr"},
	{Name: "w-rate", Kind: Real, Positive: true, Default: Num(1), Help: "rate of the Gamma prior of every dictionary entry w_fr"},
	{Name: "h-shape", Kind: Real, Positive: true, Default: Num(1), Help: "shape a of the inverse-gamma prior of every excitation h_rn"},
	{Name: "h-scale", Kind: Real, Positive: true, Default: Num(1), Help: "scale b of the inverse-gamma prior of every excitation h_rn"},
}

func init() {
	Register(Info{
		Name:     isName,
		Summary:  "Itakura–Saito NMF x_fn ~ N(0, Σ_r w_fr h_rn), w ~ Gamma, h ~ IG (audio power spectrograms; every cell stored)",
		Order:    2,
		Domain:   AnyReal,
		Factored: true,
		Hypers:   isHypers,
		Build: func(data *tensor.Sparse, R int, s Spec) (Model, error) {
			return NewItakuraSaito(data, R, isPriorOf(s.Params))
		},
		Generate: &Generator{Hypers: isHypers, Draw: drawItakuraSaito},
	})
}

// ISPrior holds the Itakura–Saito NMF model's hyper-parameters: w_fr ~ Gamma(WShape, WRate),
// h_rn ~ IG(HShape, HScale), and U = ½ for real amplitudes, 1 for powers of complex values.
type ISPrior struct {
	U, WShape, WRate, HShape, HScale float64
}

// Params returns the hyper-parameters by name, as a Spec holds them.
func (p ISPrior) Params() Params {
	values := "real"
	if p.U == 1 {
		values = "power"
	}
	return Params{"values": Word(values), "w-shape": Num(p.WShape), "w-rate": Num(p.WRate), "h-shape": Num(p.HShape), "h-scale": Num(p.HScale)}
}

// ISSpec is the spec of Itakura–Saito NMF with prior p.
func ISSpec(p ISPrior) Spec { return Spec{Name: isName, Params: p.Params()} }

func isPriorOf(p Params) ISPrior {
	u := 0.5
	if p.Word("values") == "power" {
		u = 1
	}
	return ISPrior{U: u, WShape: p.Num("w-shape"), WRate: p.Num("w-rate"), HShape: p.Num("h-shape"), HScale: p.Num("h-scale")}
}

// ItakuraSaito is the multiplicative exponential noise model of NMF with the Itakura–Saito
// divergence (Févotte, Bertin & Durrieu 2009) with priors on both factors, in log-factors
// φ = log W (F×R) and η = log H (stored N×R, one row per column of the data):
//
//	w_fr ~ Gamma(α, β),  h_rn ~ IG(a, b),  x_fn ~ N_u(0, v_fn),  v_fn = Σ_r w_fr h_rn.
//
// A cell's log-likelihood is u log(u/π) − u log v − u|x|²/v for an amplitude, −log v − x/v for
// a power. The stored cells are the data; an unstored cell is missing, not zero.
type ItakuraSaito struct {
	Prior   ISPrior
	R       int
	Data    *tensor.Sparse
	power   []float64 // |x|² of every stored cell
	factors []Factor
	cells   []int // stored cells per row of each factor, for the metric
}

// NewItakuraSaito binds the model to a matrix.
func NewItakuraSaito(data *tensor.Sparse, R int, p ISPrior) (*ItakuraSaito, error) {
	if err := validateParams(isHypers, p.Params(), 2, false); err != nil {
		return nil, fmt.Errorf("%s: %w", isName, err)
	}
	if R < 1 {
		return nil, fmt.Errorf("%s: rank %d must be at least 1", isName, R)
	}
	if data.Order() != 2 {
		return nil, fmt.Errorf("%s: the data are a %d-way array, not a matrix", isName, data.Order())
	}
	F, N := data.Shape[0], data.Shape[1]
	m := &ItakuraSaito{Prior: p, R: R, Data: data, power: make([]float64, data.NNZ()),
		factors: []Factor{{Offset: 0, Rows: F, Cols: R}, {Offset: F * R, Rows: N, Cols: R}}, cells: make([]int, F+N)}
	for n, x := range data.Values {
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			return nil, fmt.Errorf("%s: cell %d is %v", isName, n, x)
		case p.U == 1 && x < 0:
			return nil, fmt.Errorf("%s: cell (%d, %d) is %v, but powers are non-negative", isName, data.Coords[0][n], data.Coords[1][n], x)
		}
		m.power[n] = x
		if p.U == 0.5 {
			m.power[n] = x * x
		}
		m.cells[data.Coords[0][n]]++
		m.cells[F+int(data.Coords[1][n])]++
	}
	return m, nil
}

func (m *ItakuraSaito) Name() string        { return isName }
func (m *ItakuraSaito) Rank() int           { return m.R }
func (m *ItakuraSaito) Dim() int            { return (m.Data.Shape[0] + m.Data.Shape[1]) * m.R }
func (m *ItakuraSaito) NumCells() int       { return m.Data.NNZ() }
func (m *ItakuraSaito) Factors() []Factor   { return m.factors }
func (m *ItakuraSaito) Positive() bool      { return false }
func (m *ItakuraSaito) DriftScale() float64 { return 1 }

func (m *ItakuraSaito) SamplePrior(r *rand.Rand, theta []float64) {
	p := m.Prior
	w := m.factors[0]
	for i := range w.Rows * w.Cols {
		theta[i] = math.Log(gammaDraw(r, p.WShape) / p.WRate)
	}
	for i := w.Rows * w.Cols; i < m.Dim(); i++ {
		theta[i] = math.Log(p.HScale / gammaDraw(r, p.HShape))
	}
}

func (m *ItakuraSaito) NewEval() Eval {
	return &isEval{m: m, f: make([]float64, m.Dim())}
}

type isEval struct {
	m     *ItakuraSaito
	theta []float64
	f     []float64 // exp(θ): W, then H (N×R)
}

func (e *isEval) Prepare(theta []float64) {
	e.theta = theta
	for i, v := range theta {
		e.f[i] = math.Exp(v)
	}
}

// LogPrior is the density of the log-factors: α φ − β e^φ for a Gamma entry, −a η − b e^−η for
// an inverse-gamma one, with their constants.
func (e *isEval) LogPrior(grad []float64) float64 {
	p := e.m.Prior
	nw := e.m.factors[0].Rows * e.m.R
	lgw, _ := math.Lgamma(p.WShape)
	lgh, _ := math.Lgamma(p.HShape)
	lp := float64(nw)*(p.WShape*math.Log(p.WRate)-lgw) + float64(len(e.theta)-nw)*(p.HShape*math.Log(p.HScale)-lgh)
	for i, v := range e.theta[:nw] {
		lp += p.WShape*v - p.WRate*e.f[i]
		if grad != nil {
			grad[i] += p.WShape - p.WRate*e.f[i]
		}
	}
	for i := nw; i < len(e.theta); i++ {
		inv := 1 / e.f[i]
		lp += -p.HShape*e.theta[i] - p.HScale*inv
		if grad != nil {
			grad[i] += -p.HShape + p.HScale*inv
		}
	}
	return lp
}

// Dense is the constant of every cell: u log(u/π) for amplitudes, and 0 for powers, whose
// density (exponential with mean v) is π times that of the complex value. The likelihood has no
// sum over all cells that a subsample could not carry.
func (e *isEval) Dense(w float64, grad []float64) float64 {
	if u := e.m.Prior.U; u == 0.5 {
		return float64(e.m.NumCells()) * u * math.Log(u/math.Pi)
	}
	return 0
}

func (e *isEval) Cells(c Cells, w float64, grad []float64) float64 {
	d, R, u := e.m.Data, e.m.R, e.m.Prior.U
	hOff := e.m.factors[1].Offset
	var ll float64
	for p := c.Lo; p < c.Hi; p++ {
		n := p
		if c.Index != nil {
			n = int(c.Index[p])
		}
		wo, ho := int(d.Coords[0][n])*R, hOff+int(d.Coords[1][n])*R
		wr, hr := e.f[wo:wo+R], e.f[ho:ho+R]
		var v float64
		for r := range R {
			v += wr[r] * hr[r]
		}
		x := e.m.power[n]
		ll -= u * (math.Log(v) + x/v)
		if grad == nil || w == 0 {
			continue
		}
		// ∂ℓ/∂φ_fr = ∂ℓ/∂η_nr = u (x − v)/v² · w_fr h_rn.
		s := w * u * (x - v) / (v * v)
		for r := range R {
			a := s * wr[r] * hr[r]
			grad[wo+r] += a
			grad[ho+r] += a
		}
	}
	return ll
}

// Metric bounds the tempered curvature of each log-factor by its Fisher information plus the
// prior's: a cell contributes u (λ_r/v)² ≤ u to its entries' information (λ_r = w_fr h_rn), and
// summed over the row's R entries at most u, so t·u·(the row's cells) bounds the Gershgorin row
// sums of the likelihood's part; the prior adds β e^φ (Gamma) or b e^−η (inverse gamma). The
// floor of one is the curvature scale of the priors' linear tails in log space (the Gamma's
// towards w = 0, the inverse gamma's towards h = ∞), where neither the data nor the prior bound
// a step: without it a chain at small t drew log w to −100 in a step.
func (e *isEval) Metric(t float64, g, gamma []float64) {
	p, R, u := e.m.Prior, e.m.R, e.m.Prior.U
	nw := e.m.factors[0].Rows * R
	for i := range e.theta {
		lik := t * u * float64(e.m.cells[i/R])
		if i >= nw {
			lik = t * u * float64(e.m.cells[e.m.factors[0].Rows+(i-nw)/R])
		}
		var prior, dprior float64
		if i < nw {
			prior, dprior = p.WRate*e.f[i], p.WRate*e.f[i]
		} else {
			prior, dprior = p.HScale/e.f[i], -p.HScale/e.f[i]
		}
		g[i] = 1 / (1 + lik + prior)
		gamma[i] = -g[i] * g[i] * dprior
	}
}

// gammaDraw draws from Gamma(shape, 1).
func gammaDraw(r *rand.Rand, shape float64) float64 {
	return distuv.Gamma{Alpha: shape, Beta: 1, Src: r}.Rand()
}

// ISTruth is truth.json for Itakura–Saito NMF.
type ISTruth struct {
	Truth
	W [][]float64 `json:"w"`
	H [][]float64 `json:"h"`
}

// drawItakuraSaito draws W, H from the priors and every cell from the model; all cells are
// stored.
func drawItakuraSaito(r *rand.Rand, t Truth, p Params, _ *Dictionary) (*tensor.Sparse, any, error) {
	if len(t.Shape) != 2 {
		return nil, nil, fmt.Errorf("%s: the data are a matrix, not a %d-way array", isName, len(t.Shape))
	}
	prior := isPriorOf(p)
	F, N, R := t.Shape[0], t.Shape[1], t.Rank
	truth := ISTruth{Truth: t, W: make([][]float64, F), H: make([][]float64, N)}
	for f := range truth.W {
		truth.W[f] = make([]float64, R)
		for k := range R {
			truth.W[f][k] = gammaDraw(r, prior.WShape) / prior.WRate
		}
	}
	for n := range truth.H {
		truth.H[n] = make([]float64, R)
		for k := range R {
			truth.H[n][k] = prior.HScale / gammaDraw(r, prior.HShape)
		}
	}
	data, err := tensor.New([]int{F, N}, F*N)
	if err != nil {
		return nil, nil, err
	}
	for f := range F {
		for n := range N {
			var v float64
			for k := range R {
				v += truth.W[f][k] * truth.H[n][k]
			}
			var x float64
			if prior.U == 1 {
				x = v * r.ExpFloat64()
			} else {
				x = math.Sqrt(v) * r.NormFloat64()
			}
			data.Append([]int{f, n}, x)
		}
	}
	return data, truth, nil
}
