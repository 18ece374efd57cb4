package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stirank/stirank/internal/draw"
	"github.com/stirank/stirank/internal/logtab"
	"github.com/stirank/stirank/internal/par"
	"github.com/stirank/stirank/internal/slice"
	"github.com/stirank/stirank/internal/vec"
	"github.com/stirank/stirank/tensor"
)

// Param selects the space the samplers move the non-negative factors in.
type Param int

const (
	// LogScale samples φ = log F. The drift of the Poisson term in φ is bounded by the counts
	// (x·a_r/λ ≤ x), so no factor near zero can be kicked far away, and steps are scale-free.
	LogScale Param = iota
	// Direct samples the factors themselves and relies on mirroring (θ ← |θ|), as in the papers.
	Direct
)

func (p Param) String() string {
	if p == Direct {
		return "direct"
	}
	return "log"
}

// ParseParam reads "log" or "direct".
func ParseParam(s string) (Param, error) {
	switch s {
	case "log", "":
		return LogScale, nil
	case "direct":
		return Direct, nil
	}
	return 0, fmt.Errorf("unknown parameterisation %q (log or direct)", s)
}

// ratesHyper is the exponential prior rate of every factor, with the given default.
func ratesHyper(def Value, eachHelp string) Hyper {
	return Hyper{Name: "rates", Kind: PerMode, Positive: true, Auto: true, Default: def,
		Help: "per-factor rates a,b[,c] (instead of --rate), or " + AutoWord, Each: "rate", EachHelp: eachHelp}
}

// poissonInfo is the registration of the Poisson CP model of the given order (Poisson NMF at
// order 2) under name; the model's own file completes and registers it.
func poissonInfo(name string, order int, summary string) Info {
	return Info{
		Name: name, Summary: summary, Order: order,
		Domain: Counts, UnstoredZero: true, Factored: true, Gibbs: true,
		Hypers: []Hyper{
			// Under auto the data set the factors' scale: a fixed rate off by ten chose the wrong
			// rank on most generated sets, auto on none (docs/prior.md).
			ratesHyper(Word(AutoWord), AutoWord+" (the default): a Gamma hyperprior on each factor's rate, centred on the data's scale and sampled with the factors (docs/prior.md); or a fixed rate of the exponential prior of every factor, prior mean 1/rate, which must match the scale of the data, e.g. (R/mean cell value)^(1/order)"),
			{Name: "param", Kind: Choice, Choices: []string{LogScale.String(), Direct.String()}, Default: Word(LogScale.String()),
				Help: "space the factors are sampled in: " + LogScale.String() + " or " + Direct.String(), Sampling: true},
		},
		Build: func(data *tensor.Sparse, R int, s Spec) (Model, error) {
			param, err := ParseParam(s.Params.Word("param"))
			if err != nil {
				return nil, err
			}
			prior, err := PoissonPrior(data, R, s.Params)
			if err != nil {
				return nil, err
			}
			return NewPoissonPrior(name, data, R, prior, param)
		},
		// Generated data have unit-scale factors unless told otherwise.
		Generate: &Generator{Hypers: []Hyper{
			ratesHyper(Num(1), "rate of the exponential prior of every factor, or "+AutoWord+": each factor's rate drawn first from Gamma(1, 1), mean 1"),
			{Name: "row-shape", Kind: Real, NonNegative: true, Default: Num(0),
				Help: "heavy-tailed row activity: every row of every factor is scaled by its own s ~ Gamma(shape k, rate k), mean 1; with k of 0.2–0.5 the busiest 10% of rows hold 50–70% of the counts (about 20% without), as in wall-post or user-item data (0: off)"},
		}, Draw: drawPoisson},
		ExpPoissonRates: func(p Params) []float64 { return p.Nums("rates") },
	}
}

// PoissonSpec is the spec of the Poisson model registered as name with the given prior rates,
// one per mode, sampled in space param.
func PoissonSpec(name string, rates []float64, param Param) Spec {
	return Spec{Name: name, Params: Params{"rates": Nums(rates...), "param": Word(param.String())}}
}

// PoissonTruth is truth.json for the Poisson models.
type PoissonTruth struct {
	Truth
	Rates []float64 `json:"rates"`
	// RowShape is the shape k of the rows' Gamma(k, k) activities (0, not written: none).
	RowShape float64 `json:"row_shape,omitempty"`
	// Activities[m][i] is the activity row i of mode m's factor was scaled by (with RowShape).
	Activities [][]float64 `json:"activities,omitempty"`
	// Factors[m][i][r] is entry (i, r) of the factor of mode m, its activity included.
	Factors [][][]float64 `json:"factors"`
}

// drawPoisson is the Poisson models' Generator.Draw.
func drawPoisson(r *rand.Rand, t Truth, p Params, _ *Dictionary) (*tensor.Sparse, any, error) {
	rates := p.Nums("rates")
	if p.Auto("rates") {
		// --rate auto draws every mode's rate first, from Gamma(autoShape, autoShape): mean 1,
		// the generators' default rate, as there are no data yet to centre it on.
		rates = make([]float64, len(t.Shape))
		for m := range rates {
			rates[m] = draw.Gamma(r, autoShape, autoShape)
		}
	}
	rowShape := 0.0
	if v, ok := p["row-shape"]; ok {
		rowShape = v.Nums[0]
	}
	data, factors, activities, err := GeneratePoissonActive(r, t.Shape, t.Rank, rates, rowShape)
	if err != nil {
		return nil, nil, err
	}
	truth := PoissonTruth{Truth: t, Rates: rates, RowShape: rowShape, Activities: activities, Factors: make([][][]float64, len(factors))}
	for m, f := range factors {
		for i := range t.Shape[m] {
			truth.Factors[m] = append(truth.Factors[m], f[i*t.Rank:(i+1)*t.Rank])
		}
	}
	return data, truth, nil
}

// Poisson is the Poisson CP/PARAFAC model of order 2 (Poisson NMF, X ≈ W Hᵀ with H stored as its
// J×R transpose) or 3, with exponential priors:
//
//	F_m[i, r] ~ Exp(Rates[m]),  x_cell ~ Poisson(Σ_r Π_m F_m[i_m, r]).
//
// The data are the stored (non-zero) cells of a sparse count tensor; cells not stored are zeros.
//
// A fixed block (NewPoissonFixed, the semi-supervised NMF of ssnmf.go) adds components whose
// mode-0 entries are given constants rather than parameters: the mean has K = fixed + R components,
// the mode-0 factor's parameters are its R free columns and the other factors have K columns.
// Every loop runs over the K components of the factor values (the fixed entries copied in once)
// and maps each factor's parameters to the trailing columns of its values; without a fixed block
// K = R and the two layouts are one.
type Poisson struct {
	name  string
	Data  *tensor.Sparse
	R     int
	Rates []float64
	Param Param

	// K = kFixed + R is the number of components; fixed holds the kFixed leading mode-0 entries
	// of every mode-0 row (row-major, Shape[0] × kFixed).
	K, kFixed int
	fixed     []float64

	factors []Factor // the parameters' layout
	values  []int    // values[k] is where factor k's Rows × K values start in an evaluator's f
	nvalues int
	dim     int
	lgamma  float64 // Σ_n log Γ(x_n + 1), a constant of log p(X | θ)
	total   float64 // Σ_n x_n
	// margins are the data's Margins when the model has one component and no fixed block (rank1),
	// nil otherwise.
	margins [][]float64
	// hyper is the Gamma hyperprior of the rates under --rate auto (hyper.Shape > 0): θ then ends
	// with log λ_k of every factor k (ratesAt), Rates holding the hyperprior's means; its zero
	// value is fixed rates.
	hyper RatePrior
}

// NewPoissonPrior is NewPoisson with the rates' prior: fixed rates, or a hyperprior whose rates
// the model samples with its factors.
func NewPoissonPrior(name string, data *tensor.Sparse, R int, prior RatePrior, param Param) (*Poisson, error) {
	return NewPoissonFixedPrior(name, data, R, prior, param, nil, 0)
}

// NewPoissonFixedPrior is NewPoissonFixed with the rates' prior of NewPoissonPrior.
func NewPoissonFixedPrior(name string, data *tensor.Sparse, R int, prior RatePrior, param Param, fixed []float64, kFixed int) (*Poisson, error) {
	if !prior.Auto() {
		return NewPoissonFixed(name, data, R, prior.Rates, param, fixed, kFixed)
	}
	means := make([]float64, len(prior.Rates))
	for k, b := range prior.Rates {
		means[k] = prior.Shape / b
	}
	p, err := NewPoissonFixed(name, data, R, means, param, fixed, kFixed)
	if err == nil {
		p.hyper = RatePrior{Rates: slices.Clone(prior.Rates), Shape: prior.Shape}
	}
	return p, err
}

// auto reports whether the rates are sampled under a hyperprior (Poisson.hyper).
func (m *Poisson) auto() bool { return m.hyper.Auto() }

// ratesAt writes the rate of every factor's prior at θ into dst (grown to fit) and returns it:
// Rates, or under a hyperprior the exponentials of θ's last entries.
func (m *Poisson) ratesAt(theta, dst []float64) []float64 {
	dst = append(dst[:0], m.Rates...)
	if m.auto() {
		for k := range dst {
			dst[k] = math.Exp(theta[m.dim+k])
		}
	}
	return dst
}

// NewPoisson binds the model registered as name to count data. rates has one exponential rate
// per mode.
func NewPoisson(name string, data *tensor.Sparse, R int, rates []float64, param Param) (*Poisson, error) {
	return NewPoissonFixed(name, data, R, rates, param, nil, 0)
}

// NewPoissonFixed is NewPoisson with kFixed more components whose mode-0 entries are the
// constants fixed (row-major, Shape[0] × kFixed, finite and non-negative): the other factors' columns
// of those components are parameters like the rest. R may then be 0.
func NewPoissonFixed(name string, data *tensor.Sparse, R int, rates []float64, param Param, fixed []float64, kFixed int) (*Poisson, error) {
	order := data.Order()
	if order < 2 || order > 3 {
		return nil, fmt.Errorf("poisson: order %d not supported (2 or 3)", order)
	}
	switch {
	case kFixed < 0 || len(fixed) != data.Shape[0]*kFixed:
		return nil, fmt.Errorf("poisson: %d fixed entries for %d rows and %d fixed components", len(fixed), data.Shape[0], kFixed)
	case kFixed == 0 && R < 1:
		return nil, fmt.Errorf("poisson: rank %d must be at least 1", R)
	case R < 0:
		return nil, fmt.Errorf("poisson: rank %d must not be negative", R)
	}
	for i, v := range fixed {
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("poisson: fixed entry (%d, %d) is %v: it must be finite and non-negative", i/kFixed, i%kFixed, v)
		}
	}
	if len(rates) != order {
		return nil, fmt.Errorf("poisson: %d prior rates for order %d", len(rates), order)
	}
	for m, l := range rates {
		if !(l > 0) || math.IsInf(l, 0) {
			return nil, fmt.Errorf("poisson: prior rate %v of mode %d must be positive and finite", l, m)
		}
	}
	p := &Poisson{name: name, Data: data, R: R, Rates: append([]float64(nil), rates...), Param: param,
		K: kFixed + R, kFixed: kFixed, fixed: fixed}
	for k, n := range data.Shape {
		cols := p.K - p.lead(k)
		p.factors = append(p.factors, Factor{Offset: p.dim, Rows: n, Cols: cols})
		p.values = append(p.values, p.nvalues)
		p.dim += n * cols
		p.nvalues += n * p.K
	}
	for _, x := range data.Values {
		lg, _ := math.Lgamma(x + 1)
		p.lgamma += lg
		p.total += x
	}
	if p.K == 1 && kFixed == 0 {
		p.margins = Margins(data)
	}
	return p, nil
}

// rank1 reports whether the mean of every cell is one product, λ = Π_m F_m[i_m], with no fixed
// entries. The data term is then separable, Σ_n x_n log λ_n = Σ_m Σ_i M_m[i] log F_m[i] with M the
// margins, and the evaluator and the Gibbs kernel read the margins (rows of every mode) instead of
// the cells: a pass costs O(Σ rows), not O(non-zeros).
func (m *Poisson) rank1() bool { return m.margins != nil }

// rank1Cells is Cells over every cell at rank 1: it returns Σ_m Σ_i M_m[i] log F_m[i] and, with a
// gradient, adds w times that sum's derivatives, M_m[i] per parameter of the log parameterisation
// and M_m[i] / F_m[i] of the direct one.
func (m *Poisson) rank1Cells(f []float64, w float64, grad []float64) float64 {
	ll := 0.0
	for k, mk := range m.margins {
		for i, x := range mk {
			if x == 0 {
				continue
			}
			v := m.valueRow(f, k, i)[0]
			ll += x * logtab.Log(v)
			if grad == nil || w == 0 {
				continue
			}
			if m.Param == LogScale {
				m.paramRow(grad, k, i)[0] += w * x
			} else {
				m.paramRow(grad, k, i)[0] += w * x / v
			}
		}
	}
	return ll
}

// lead is the number of fixed leading components of factor k: its values' first columns, which
// no parameter stands for.
func (m *Poisson) lead(k int) int { return FixedLead(k, m.kFixed) }

// FixedLead is the number of leading columns of factor k's values that kFixed fixed components
// (NewPoissonFixed) hold constant: theirs in mode 0, whose entries they fix, none elsewhere.
func FixedLead(k, kFixed int) int {
	if k == 0 {
		return kFixed
	}
	return 0
}

// newValues returns the factor values of every mode, Rows × K each, with the fixed entries in
// place; loadRows fills in the rest.
func (m *Poisson) newValues() []float64 {
	f := make([]float64, m.nvalues)
	for i := range m.Data.Shape[0] {
		copy(f[m.values[0]+i*m.K:], m.fixed[i*m.kFixed:(i+1)*m.kFixed])
	}
	return f
}

// FactorValues returns the factors at θ: for each mode, its rows × K entries row-major, the
// fixed entries of a row (ssnmf's dictionary) first. It is θ in the factors' own units, for
// methods that work on them (baselines.Factors); StoreFactorValues goes back.
func (m *Poisson) FactorValues(theta []float64) [][]float64 {
	f := m.newValues()
	colsum := make([]float64, m.K)
	out := make([][]float64, len(m.factors))
	for k, fac := range m.factors {
		rows := fac.Rows
		m.loadRows(theta, f, k, 0, rows, colsum)
		out[k] = f[m.values[k] : m.values[k]+rows*m.K]
	}
	return out
}

// StoreFactorValues sets the factors' parameters in θ from values laid out as FactorValues returns
// them; the fixed entries are not read, and a hyperprior's rates in θ are left as they are.
func (m *Poisson) StoreFactorValues(theta []float64, values [][]float64) {
	for k, fac := range m.factors {
		m.storeRows(theta, values[k], k, 0, fac.Rows)
	}
}

// loadRows sets the values of rows [lo, hi) of factor k in f from the parameters θ and adds
// their columns, row by row, to colsum (K entries).
func (m *Poisson) loadRows(theta, f []float64, k, lo, hi int, colsum []float64) {
	lead := m.lead(k)
	logScale := m.Param == LogScale
	for i := lo; i < hi; i++ {
		row := m.valueRow(f, k, i)
		for c, v := range m.paramRow(theta, k, i) {
			if logScale {
				v = logtab.Exp(v)
			}
			row[lead+c] = v
		}
		for c, v := range row {
			colsum[c] += v
		}
	}
}

// paramRow is row i of factor k's parameters in θ (or in a gradient or a metric of θ's layout).
func (m *Poisson) paramRow(theta []float64, k, i int) []float64 {
	f := m.factors[k]
	return theta[f.Offset+i*f.Cols : f.Offset+(i+1)*f.Cols]
}

// valueRow is row i of factor k's K values in f, the fixed entries first.
func (m *Poisson) valueRow(f []float64, k, i int) []float64 {
	return f[m.values[k]+i*m.K : m.values[k]+(i+1)*m.K]
}

func (m *Poisson) Name() string      { return m.name }
func (m *Poisson) Rank() int         { return m.R }
func (m *Poisson) NumCells() int     { return m.Data.NNZ() }
func (m *Poisson) Factors() []Factor { return m.factors }
func (m *Poisson) Positive() bool    { return m.Param == Direct }

// Dim counts the factors' entries and, under a hyperprior, their rates.
func (m *Poisson) Dim() int {
	if m.auto() {
		return m.dim + len(m.factors)
	}
	return m.dim
}

var _ Reader = (*Poisson)(nil)

// Reads is the number of values the evaluator reads for c: the margins, one per row of every
// mode, for all cells at rank 1 (readsMargins); the cells of c otherwise.
func (m *Poisson) Reads(c Cells) int {
	if !m.readsMargins(c) {
		return c.Len()
	}
	n := 0
	for _, mk := range m.margins {
		n += len(mk)
	}
	return n
}

// readsMargins reports whether the evaluator takes c's terms from the margins: at rank 1, for the
// set of all cells.
func (m *Poisson) readsMargins(c Cells) bool {
	return m.rank1() && c.Index == nil && c.Lo == 0 && c.Hi == m.NumCells()
}

// DriftScale is one e-fold for log factors; the direct parameterisation keeps the papers' unclipped steps.
func (m *Poisson) DriftScale() float64 {
	if m.Param == LogScale {
		return 1
	}
	return 0
}

// SamplePrior draws θ from the prior: under a hyperprior every factor's rate first, then the
// factors from their exponential priors at those rates.
func (m *Poisson) SamplePrior(r *rand.Rand, theta []float64) {
	if m.auto() {
		for k := range m.factors {
			theta[m.dim+k] = math.Log(draw.Gamma(r, m.hyper.Shape, m.hyper.Rates[k]))
		}
	}
	rates := m.ratesAt(theta, nil)
	for k, f := range m.factors {
		for i := f.Offset; i < f.Offset+f.Rows*f.Cols; i++ {
			v := r.ExpFloat64() / rates[k]
			if m.Param == LogScale {
				v = math.Log(v)
			}
			theta[i] = v
		}
	}
}

func (m *Poisson) NewEval() Eval { return m.newEval() }

func (m *Poisson) newEval() *poissonEval {
	order := m.Data.Order()
	e := &poissonEval{m: m, f: m.newValues()}
	for range order {
		e.colsum = append(e.colsum, make([]float64, m.K))
		e.others = append(e.others, make([]float64, m.K))
		e.partial = append(e.partial, make([]float64, par.MaxChunks*m.K))
	}
	return e
}

type poissonEval struct {
	m      *Poisson
	theta  []float64
	f      []float64   // factor values, K columns per factor (Poisson.values)
	colsum [][]float64 // colsum[m][r] = Σ_i F_m[i, r]
	others [][]float64 // others[m][r] = Π_{m'≠m} colsum[m'][r]
	// partial[m][c*R+r] is chunk c's share of colsum[m][r], added in chunk order so that the
	// sums do not depend on the number of cores.
	partial [][]float64
	// kernel, if not nil, is a Gibbs kernel whose values Prepare takes when its last sweep left θ.
	kernel *poissonAugmented
	// df is, in the layout of f, each free value times its δ = θ − c (SteinVariates), 0 at the
	// fixed entries.
	df []float64
	// lam is every factor's prior rate at θ (Poisson.ratesAt).
	lam []float64
}

func (e *poissonEval) Prepare(theta []float64) {
	e.theta = theta
	e.lam = e.m.ratesAt(theta, e.lam)
	if a := e.kernel; a != nil && a.current && slices.Equal(theta, a.theta) {
		copy(e.f, a.f)
		for k, cs := range a.colsum {
			copy(e.colsum[k], cs)
		}
	} else {
		e.derive()
	}
	R := e.m.K
	for k := range e.m.factors {
		for r := range R {
			p := 1.0
			for k2 := range e.m.factors {
				if k2 != k {
					p *= e.colsum[k2][r]
				}
			}
			e.others[k][r] = p
		}
	}
}

// derive sets the factor values and their column sums from θ.
func (e *poissonEval) derive() {
	R := e.m.K
	for k, fac := range e.m.factors {
		if par.Inline(fac.Rows) {
			e.prepareRows(k, 0, 0, fac.Rows)
		} else {
			par.For(fac.Rows, func(c, lo, hi int) { e.prepareRows(k, c, lo, hi) })
		}
		cs := e.colsum[k]
		clear(cs)
		chunks, _ := par.Chunks(fac.Rows)
		for c := range chunks {
			for r, v := range e.partial[k][c*R : (c+1)*R] {
				cs[r] += v
			}
		}
	}
}

// prepareRows sets the factor values of rows [lo, hi) of factor k and their column sums, chunk c's
// share of colsum[k].
func (e *poissonEval) prepareRows(k, c, lo, hi int) {
	K := e.m.K
	p := e.partial[k][c*K : (c+1)*K]
	clear(p)
	e.m.loadRows(e.theta, e.f, k, lo, hi, p)
}

// LogPrior is Σ_k (n_k log λ_k − λ_k Σ F_k) over the factors' n_k entries (with the log
// parameterisation's Jacobian), and under a hyperprior also each log λ_k's Gamma(a, b_k) density
// in log space, a log b_k − log Γ(a) + a log λ_k − b_k λ_k, with λ_k's gradient n_k − λ_k Σ F_k + a −
// b_k λ_k.
func (e *poissonEval) LogPrior(grad []float64) float64 {
	lp := 0.0
	m := e.m
	for k, fac := range m.factors {
		l := e.lam[k]
		n := fac.Rows * fac.Cols
		lp += float64(n) * math.Log(l)
		if par.Inline(n) {
			lp += e.logPriorRange(k, 0, n, grad)
		} else {
			lp += par.Sum(n, func(_, lo, hi int) float64 { return e.logPriorRange(k, lo, hi, grad) })
		}
		if !m.auto() {
			continue
		}
		a, b, v := m.hyper.Shape, m.hyper.Rates[k], e.theta[m.dim+k]
		lp += a*math.Log(b) - lgamma(a) + a*v - b*l
		if grad != nil {
			grad[m.dim+k] += float64(n) - l*floats.Sum(e.colsum[k][m.lead(k):]) + a - b*l
		}
	}
	return lp
}

// logPriorRange is the part of log p(θ) of parameters [lo, hi) of factor k that depends on them,
// with its gradient added to grad when grad is not nil.
func (e *poissonEval) logPriorRange(k, lo, hi int, grad []float64) float64 {
	l := e.lam[k]
	fac := e.m.factors[k]
	off := fac.Offset
	s := 0.0
	if hi <= lo {
		return s
	}
	// v is the index in e.f of parameter i's value: it steps over the fixed entries, lead per row.
	lead, col := e.m.lead(k), lo%fac.Cols
	v := e.m.values[k] + lo/fac.Cols*e.m.K + lead + col
	for i := off + lo; i < off+hi; i++ {
		f := e.f[v]
		if v, col = v+1, col+1; col == fac.Cols {
			v, col = v+lead, 0
		}
		s -= l * f
		if e.m.Param != LogScale {
			if grad != nil {
				grad[i] -= l
			}
			continue
		}
		// Jacobian of F = exp(φ): log p(φ) = log p(F) + φ.
		s += e.theta[i]
		if grad != nil {
			grad[i] += 1 - l*f
		}
	}
	return s
}

// Dense is −Σ_cells λ_cell − Σ_n log Γ(x_n+1); Σ over all cells of λ is Σ_r Π_m colsum[m][r].
func (e *poissonEval) Dense(w float64, grad []float64) float64 {
	total := 0.0
	for r := range e.m.K {
		total += e.colsum[0][r] * e.others[0][r]
	}
	if grad != nil && w != 0 {
		for k, fac := range e.m.factors {
			if par.Inline(fac.Rows) {
				e.denseRows(k, w, grad, 0, fac.Rows)
			} else {
				par.For(fac.Rows, func(_, lo, hi int) { e.denseRows(k, w, grad, lo, hi) })
			}
		}
	}
	return -total - e.m.lgamma
}

// denseRows adds w times the gradient of −Σ λ with respect to rows [lo, hi) of factor k to grad.
func (e *poissonEval) denseRows(k int, w float64, grad []float64, lo, hi int) {
	lead := e.m.lead(k)
	oth := e.others[k][lead:]
	for i := lo; i < hi; i++ {
		g, f := e.m.paramRow(grad, k, i), e.m.valueRow(e.f, k, i)[lead:]
		for r := range g {
			if e.m.Param == LogScale {
				g[r] -= w * f[r] * oth[r]
			} else {
				g[r] -= w * oth[r]
			}
		}
	}
}

// Cells returns Σ x_n log λ_n over the cells; λ_n = Σ_r a_nr with a_nr = Π_m F_m[i_m, r].
func (e *poissonEval) Cells(c Cells, w float64, grad []float64) float64 {
	d := e.m.Data
	R := e.m.K
	order := d.Order()
	var rowOff [tensor.MaxOrder]int
	var aBuf [64]float64
	a := aBuf[:0]
	if R <= len(aBuf) {
		a = aBuf[:R]
	} else {
		a = make([]float64, R)
	}
	ll := 0.0
	doGrad := grad != nil && w != 0
	if e.m.readsMargins(c) {
		return e.m.rank1Cells(e.f, w, grad)
	}
	for p := c.Lo; p < c.Hi; p++ {
		n := p
		if c.Index != nil {
			n = int(c.Index[p])
		}
		x := d.Values[n]
		for k := range order {
			rowOff[k] = e.m.values[k] + int(d.Coords[k][n])*R
		}
		lam := e.components(rowOff[:order], a)
		ll += x * logtab.Log(lam)
		if !doGrad {
			continue
		}
		s := w * x / lam
		if e.m.Param == LogScale {
			// ∂/∂φ_m[i_m, r] of x log λ is x a_r / λ for every mode.
			for k := range order {
				g, ak := e.m.paramRow(grad, k, int(d.Coords[k][n])), a[e.m.lead(k):]
				for r := range g {
					g[r] += s * ak[r]
				}
			}
			continue
		}
		for k := range order {
			g, lead := e.m.paramRow(grad, k, int(d.Coords[k][n])), e.m.lead(k)
			for r := range g {
				g[r] += s * e.otherModes(rowOff[:order], k, lead+r)
			}
		}
	}
	return ll
}

// SteinVariates writes the variates of the log parameterisation (for the direct one, whose
// boundary rules them out, NaN). With δ = θ − c and g = ∇ log π_t, the prior and its Jacobian give
// g a term 1 − λ_m F, the dense term −t F Π_{m'≠m} colsum[m'], and each cell t·(x/λ)·a_r to the
// parameters of component r of its rows: one pass over the cells, on all cores for large data.
func (e *poissonEval) SteinVariates(c []float64, t float64, z []float64) {
	m := e.m
	M := len(m.factors)
	if m.Param != LogScale {
		for i := range z {
			z[i] = math.NaN()
		}
		return
	}
	clear(z)
	for k, fac := range m.factors {
		l, lead := e.lam[k], m.lead(k)
		oth := e.others[k][lead:]
		for i := range fac.Rows {
			th, ce, f := m.paramRow(e.theta, k, i), m.paramRow(c, k, i), m.valueRow(e.f, k, i)[lead:]
			for r := range th {
				g := 1 - l*f[r] - t*f[r]*oth[r]
				z[k] += (th[r] - ce[r]) * g
				z[M] += g
			}
		}
		z[k] += float64(fac.Rows * fac.Cols)
	}
	var cells [tensor.MaxOrder + 1]float64
	if m.rank1() {
		e.steinMargins(c, &cells)
	} else if n := m.NumCells(); par.Inline(n) {
		e.steinDeltas(c)
		e.steinCells(0, n, &cells)
	} else {
		e.steinDeltas(c)
		var partial [par.MaxChunks][tensor.MaxOrder + 1]float64
		par.For(n, func(ch, lo, hi int) { e.steinCells(lo, hi, &partial[ch]) })
		for _, p := range partial {
			for k, v := range p {
				cells[k] += v
			}
		}
	}
	for k := range M + 1 {
		z[k] += t * cells[k]
	}
}

// components fills a with the components a_r = Π_m F_m[i_m, r] of the mean of the cell whose
// factor rows start at rowOff (two or three modes) and returns their sum λ.
func (e *poissonEval) components(rowOff []int, a []float64) float64 {
	R := len(a)
	lam := 0.0
	f0, f1 := e.f[rowOff[0]:rowOff[0]+R], e.f[rowOff[1]:rowOff[1]+R]
	if len(rowOff) == 2 {
		for r := range a {
			a[r] = f0[r] * f1[r]
			lam += a[r]
		}
		return lam
	}
	f2 := e.f[rowOff[2] : rowOff[2]+R]
	for r := range a {
		a[r] = f0[r] * f1[r] * f2[r]
		lam += a[r]
	}
	return lam
}

// steinDeltas sets df, what steinCells reads, from the centre c.
func (e *poissonEval) steinDeltas(c []float64) {
	m := e.m
	if e.df == nil {
		e.df = make([]float64, len(e.f))
	}
	for k, fac := range m.factors {
		lead := m.lead(k)
		for i := range fac.Rows {
			th, ce := m.paramRow(e.theta, k, i), m.paramRow(c, k, i)
			f, df := m.valueRow(e.f, k, i)[lead:], m.valueRow(e.df, k, i)[lead:]
			for r := range th {
				df[r] = f[r] * (th[r] - ce[r])
			}
		}
	}
}

// steinCells adds the cells [lo, hi)'s terms of SteinVariates, before the factor t, to s: for
// each factor k, Σ (x/λ)·Σ_r a_r δ_k[i_k, r] = Σ (x/λ)·Σ_r df_k[i_k, r] Π_{m≠k} F_m[i_m, r], and
// last Σ (x/λ)·Σ_k Σ_r a_r over the free entries, which is the order times x where no entry is
// fixed (a_r = Π_m F_m[i_m, r], λ = Σ_r a_r; df from steinDeltas). A matrix cell takes three dot
// products, two of them in one pass over the second factor's row (vec.Dot2).
func (e *poissonEval) steinCells(lo, hi int, s *[tensor.MaxOrder + 1]float64) {
	m, d := e.m, e.m.Data
	K, order, lead := m.K, d.Order(), m.lead(0) // only mode 0 holds fixed entries
	for n := lo; n < hi; n++ {
		x := d.Values[n]
		o0, o1 := m.values[0]+int(d.Coords[0][n])*K, m.values[1]+int(d.Coords[1][n])*K
		f0, f1, d0, d1 := e.f[o0:o0+K], e.f[o1:o1+K], e.df[o0:o0+K], e.df[o1:o1+K]
		var lam, fixed float64
		if order == 2 {
			var q0 float64
			lam, q0 = vec.Dot2(f0, d0, f1)
			w := x / lam
			s[0] += w * q0
			s[1] += w * vec.Dot(d1, f0)
			if lead > 0 {
				fixed = floats.Dot(f0[:lead], f1[:lead])
			}
		} else {
			o2 := m.values[2] + int(d.Coords[2][n])*K
			f2, d2 := e.f[o2:o2+K], e.df[o2:o2+K]
			var q0, q1, q2 float64
			for r := range K {
				p12 := f1[r] * f2[r]
				lam += f0[r] * p12
				q0 += d0[r] * p12
				q1 += f0[r] * d1[r] * f2[r]
				q2 += f0[r] * f1[r] * d2[r]
			}
			w := x / lam
			s[0] += w * q0
			s[1] += w * q1
			s[2] += w * q2
			for r := range lead {
				fixed += f0[r] * f1[r] * f2[r]
			}
		}
		s[order] += float64(order)*x - x/lam*fixed
	}
}

// steinMargins sets s to what steinCells adds over every cell, at rank 1 from the margins: a cell's
// x/λ times its one component is x, so factor k's term is Σ_i M_k[i] δ_k[i] and the last one is
// the order times the total count.
func (e *poissonEval) steinMargins(c []float64, s *[tensor.MaxOrder + 1]float64) {
	m := e.m
	for k, mk := range m.margins {
		for i, x := range mk {
			if x > 0 {
				s[k] += x * (m.paramRow(e.theta, k, i)[0] - m.paramRow(c, k, i)[0])
				s[len(m.margins)] += x
			}
		}
	}
}

// otherModes is Π_{m≠k} F_m[i_m, r] for the cell whose rows start at rowOff: the derivative of its
// mean's component r with respect to F_k[i_k, r].
func (e *poissonEval) otherModes(rowOff []int, k, r int) float64 {
	prod := 1.0
	for m, off := range rowOff {
		if m != k {
			prod *= e.f[off+r]
		}
	}
	return prod
}

// Metric, in the log parameterisation, bounds the Gershgorin row sums of the expected Fisher
// information of the tempered likelihood plus the prior curvature. For φ = log F_m[i, r] the row sum
// is M·t·F_m[i, r]·Π_{m'≠m} colsum[m'][r] (every cell's score is (x/λ − 1)·a_r in every mode, and
// Σ_r' a_r' = λ) and the prior adds λ_m F_m[i, r]. The floor of one is the curvature scale of the
// Exp prior's left tail in φ (a log-gamma density with unit scale) and keeps steps of dead
// components bounded. With D = F·c + 1, g = 1/D and ∂g/∂φ = −g²·F·c exactly. The direct
// parameterisation has no bounded metric near F = 0; it gets the identity.
func (e *poissonEval) Metric(t float64, g, gamma []float64) {
	e.metricRates(g, gamma)
	if e.m.Param != LogScale {
		for i := range g[:e.m.dim] {
			g[i], gamma[i] = 1, 0
		}
		return
	}
	for k, fac := range e.m.factors {
		if par.Inline(fac.Rows) {
			e.metricRows(k, t, g, gamma, 0, fac.Rows)
		} else {
			par.For(fac.Rows, func(_, lo, hi int) { e.metricRows(k, t, g, gamma, lo, hi) })
		}
	}
}

// metricRates writes the metric of the log rates under a hyperprior, which is the factors' with
// the curvature λ_k (b_k + Σ F_k) of log λ_k's conditional in place of the entries'.
func (e *poissonEval) metricRates(g, gamma []float64) {
	m := e.m
	if !m.auto() {
		return
	}
	for k := range m.factors {
		fc := e.lam[k] * (m.hyper.Rates[k] + floats.Sum(e.colsum[k][m.lead(k):]))
		gi := 1 / (fc + 1)
		g[m.dim+k], gamma[m.dim+k] = gi, -gi*gi*fc
	}
}

// metricRows writes the metric of rows [lo, hi) of factor k (log parameterisation).
func (e *poissonEval) metricRows(k int, t float64, g, gamma []float64, lo, hi int) {
	M := float64(len(e.m.factors))
	lead := e.m.lead(k)
	oth := e.others[k][lead:]
	l := e.lam[k]
	for i := lo; i < hi; i++ {
		f, gr, gam := e.m.valueRow(e.f, k, i)[lead:], e.m.paramRow(g, k, i), e.m.paramRow(gamma, k, i)
		for r := range gr {
			fc := f[r] * (M*t*oth[r] + l)
			gi := 1 / (fc + 1)
			gr[r] = gi
			gam[r] = -gi * gi * fc
		}
	}
}

// rescale moves each component r along the orbits F_a[:, r]·c, F_b[:, r]/c of consecutive modes
// a, b of modes (every mode but those with rows held: Blocked.Hold), on which λ does not change, with an exact draw of log c from its conditional
// (slice.LogScale, the baselines' Gibbs sampler's move), in θ and in the factor values f of θ
// (Poisson.values) that the Gibbs kernel holds with their column sums colsum[k][c] = Σ_i F_k[i, c],
// from which it reads the sums; scratch holds 2·K values. The draws of a pair of modes depend on
// their column sums alone, so they are made first and the rows scaled in one pass. Components with
// fixed entries have no such orbit and stay. It leaves every tempered posterior invariant. rates
// are the factors' prior rates at θ.
func (m *Poisson) rescale(r *rand.Rand, theta, f []float64, colsum [][]float64, scratch, rates []float64, modes []int) {
	K := m.K
	d, c := scratch[:K], scratch[K:2*K]
	for j := 0; j+1 < len(modes); j++ {
		a, b := modes[j], modes[j+1]
		fa, fb := m.factors[a], m.factors[b]
		moved := false
		for comp := range K {
			d[comp], c[comp] = 0, 1
			if comp >= m.kFixed {
				d[comp] = slice.LogScale(r, float64(fa.Rows), float64(fb.Rows), rates[a]*colsum[a][comp], rates[b]*colsum[b][comp])
				c[comp] = logtab.Exp(d[comp])
				moved = moved || d[comp] != 0
			}
		}
		if !moved {
			continue
		}
		m.scaleRows(theta, f, a, d, c, false)
		m.scaleRows(theta, f, b, d, c, true)
		for comp, v := range c {
			colsum[a][comp] *= v
			colsum[b][comp] /= v
		}
	}
}

// drawRates moves the rates of a hyperprior (Poisson.hyper) at t, in rates and in θ: each factor's
// scale with its rate (drawScale), then its rate from its conditional given the factor,
// Gamma(a + n_k, b_k + Σ F_k) with n_k its entries, then, for
// consecutive factors k and k+1, along the orbit F_k·c, λ_k/c, F_{k+1}/c, λ_{k+1}·c, on which
// neither the likelihood nor the factors' priors change: the scale the data leave to the
// hyperprior, which the rates' own draws cross by steps of about 1/√n_k. log c is drawn exactly
// from its conditional ∝ exp(−b_k λ_k/c − b_{k+1} λ_{k+1}·c) (a generalised Gibbs move, Liu and
// Wu 1999: the map's Jacobian c^{n_k − n_{k+1}} cancels the powers of c the priors take), in θ,
// in the values f and in their column sums; a fixed block (ssnmf) pins the scale and has no
// such orbit. scratch holds 2·K values. It leaves every tempered posterior invariant, and returns
// the change of the log-likelihood, which the scales' moves make.
func (m *Poisson) drawRates(r *rand.Rand, t float64, theta, f []float64, colsum [][]float64, scratch, rates []float64) float64 {
	a, b := m.hyper.Shape, m.hyper.Rates
	moved := 0.0
	for k, fac := range m.factors {
		if m.lead(k) == 0 {
			moved += m.drawScale(r, t, k, theta, f, colsum, scratch)
		}
		rates[k] = draw.Gamma(r, a+float64(fac.Rows*fac.Cols), b[k]+floats.Sum(colsum[k][m.lead(k):]))
	}
	if m.kFixed == 0 {
		K := m.K
		d, c := scratch[:K], scratch[K:2*K]
		for k := 0; k+1 < len(m.factors); k++ {
			u := slice.LogScale(r, a, a, b[k+1]*rates[k+1], b[k]*rates[k])
			for comp := range K {
				d[comp], c[comp] = u, logtab.Exp(u)
			}
			m.scaleRows(theta, f, k, d, c, false)
			m.scaleRows(theta, f, k+1, d, c, true)
			for comp := range K {
				colsum[k][comp] *= c[comp]
				colsum[k+1][comp] /= c[comp]
			}
			rates[k] /= c[0]
			rates[k+1] *= c[0]
		}
	}
	for k, l := range rates {
		theta[m.dim+k] = math.Log(l)
	}
	return moved
}

// scaleRows multiplies the entries of component r of every row of factor k's values by c[r]
// (divides them, with divide) and moves θ with them: a log parameter by d[r] (−d[r]).
func (m *Poisson) scaleRows(theta, f []float64, k int, d, c []float64, divide bool) {
	K, lead, fac := m.K, m.lead(k), m.factors[k]
	values := f[m.values[k] : m.values[k]+fac.Rows*K]
	params := theta[fac.Offset : fac.Offset+fac.Rows*fac.Cols]
	shift, sign := d[lead:], 1.0
	if divide {
		sign = -1
	}
	for i := range fac.Rows {
		row, p := values[i*K:(i+1)*K], params[i*fac.Cols:(i+1)*fac.Cols]
		if divide {
			for r, v := range c {
				row[r] /= v
			}
		} else {
			for r, v := range c {
				row[r] *= v
			}
		}
		if m.Param != LogScale {
			copy(p, row[lead:])
			continue
		}
		for r, v := range shift {
			p[r] += sign * v
		}
	}
}

// shear moves each free component r of a matrix, with another one s drawn at random, along the
// line F_0[:, r] += ε·F_0[:, s], F_1[:, s] −= ε·F_1[:, r], on which no cell's λ changes: the
// directions that mix the components of a matrix factorisation, which the Gibbs kernel crosses a
// count's worth at a time. The map is linear with unit determinant, so ε's conditional is the
// prior along the line, exp(−ε·(λ_0·Σ_i F_0[i, s] − λ_1·Σ_j F_1[j, r])), on the interval where
// every entry stays positive, and ε is drawn from it exactly, in the values f and their column
// sums colsum; it reports whether it moved any, and the caller writes θ. It leaves every tempered
// posterior invariant; tensors of higher order have no such lines. rates are the factors' prior
// rates at θ.
func (m *Poisson) shear(r *rand.Rand, f []float64, colsum [][]float64, rates []float64) bool {
	if len(m.factors) != 2 || m.K-m.kFixed < 2 {
		return false
	}
	a, b := m.factors[0], m.factors[1]
	K := m.K
	f0, f1 := f[m.values[0]:m.values[0]+a.Rows*K], f[m.values[1]:m.values[1]+b.Rows*K]
	free := K - m.kFixed
	moved := false
	for cr := m.kFixed; cr < K; cr++ {
		cs := m.kFixed + (cr-m.kFixed+1+r.IntN(free-1))%free
		// ε keeps F_0[i, r] + ε·F_0[i, s] and F_1[j, s] − ε·F_1[j, r] positive.
		n, d := leastRatio(f0, K, cr, cs)
		lo := -n / d
		n, d = leastRatio(f1, K, cs, cr)
		hi := n / d
		u := r.Float64()
		if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
			continue
		}
		k := rates[0]*colsum[0][cs] - rates[1]*colsum[1][cr]
		eps := lo + (hi-lo)*truncatedExp(k*(hi-lo), u)
		ok := true
		for i := 0; i < len(f0); i += K {
			ok = ok && f0[i+cr]+eps*f0[i+cs] > 0
		}
		for j := 0; j < len(f1); j += K {
			ok = ok && f1[j+cs]-eps*f1[j+cr] > 0
		}
		if !ok {
			// Rounding at the interval's ends: the density is zero there.
			continue
		}
		for i := 0; i < len(f0); i += K {
			f0[i+cr] += eps * f0[i+cs]
		}
		for j := 0; j < len(f1); j += K {
			f1[j+cs] -= eps * f1[j+cr]
		}
		colsum[0][cr] += eps * colsum[0][cs]
		colsum[1][cs] -= eps * colsum[1][cr]
		moved = true
	}
	return moved
}

// leastRatio returns the least ratio f[i+x]/f[i+y] over the rows i (every K-th entry) with
// f[i+y] > 0 as a numerator and a denominator, +Inf/1 where there is none: the ratios are
// compared by cross-multiplied products, so that the shear's bounds take one division, not one a
// row.
func leastRatio(f []float64, K, x, y int) (num, den float64) {
	num, den = math.Inf(1), 1
	for i := 0; i < len(f); i += K {
		if v := f[i+y]; v > 0 && f[i+x]*den < num*v {
			num, den = f[i+x], v
		}
	}
	return num, den
}

// storeRows sets the parameters of rows [lo, hi) of factor k in θ from their values in values
// (the factor's rows × K): one run of logarithms (logtab.Logs) where the factor has no fixed
// entries, and θ's rows are laid out as its values' are.
func (m *Poisson) storeRows(theta, values []float64, k, lo, hi int) {
	K, lead, fac := m.K, m.lead(k), m.factors[k]
	if lead == 0 {
		lo, hi = lo*K, hi*K
		params := theta[fac.Offset+lo : fac.Offset+hi]
		if m.Param == LogScale {
			logtab.Logs(params, values[lo:hi])
		} else {
			copy(params, values[lo:hi])
		}
		return
	}
	for i := lo; i < hi; i++ {
		params, row := m.paramRow(theta, k, i), values[i*K+lead:(i+1)*K]
		if m.Param == LogScale {
			logtab.Logs(params, row)
		} else {
			copy(params, row)
		}
	}
}

// GeneratePoisson draws factors from their Exp priors and a count tensor from the Poisson model
// without enumerating its cells: the total count of component r is Poisson(Π_m colsum_m[r]) and each
// of its events falls in cell (i_0, i_1, …) with the i_m drawn independently in proportion to
// F_m[·, r] — the superposition and thinning of Poisson processes. Cost is proportional to the
// total count, so very large sparse shapes are cheap. Cells come out in row-major order.
func GeneratePoisson(r *rand.Rand, shape []int, R int, rates []float64) (*tensor.Sparse, [][]float64, error) {
	data, factors, _, err := GeneratePoissonActive(r, shape, R, rates, 0)
	return data, factors, err
}

// GeneratePoissonActive is GeneratePoisson with heavy-tailed row activity: with rowShape k > 0
// every row i of every factor is multiplied by its own activity s_i ~ Gamma(shape k, rate k)
// (mean 1, variance 1/k), so with small k a few rows carry most of the counts, like the users of
// real wall-post or user-item tensors (k = 0.3 on a 3000×2000 rank-3 matrix: the busiest 1% of
// rows hold 16% of the counts and the busiest 10% hold 60%, against 3% and 23% without). The
// factors returned include the activities, which are returned too (activities[m][i]). The
// expected total count is unchanged, and so is the cost, proportional to it. With k = 0 it draws
// nothing more: the data and factors are GeneratePoisson's, bit for bit, and activities is nil.
// Components that expect more than denseEvents counts per cell are drawn cell by cell, over at
// most maxDenseCells cells (beyond, neither the draw nor the data would fit in a machine). Below
// that density events are drawn one by one, at most denseEvents steps per cell, as they always
// were: datasets drawn from a seed before stay the same.
const (
	denseEvents   = 256
	maxDenseCells = 1 << 32
)

func GeneratePoissonActive(r *rand.Rand, shape []int, R int, rates []float64, rowShape float64) (*tensor.Sparse, [][]float64, [][]float64, error) {
	order := len(shape)
	if order < 2 || order > 3 || len(rates) != order {
		return nil, nil, nil, fmt.Errorf("poisson: need order 2 or 3 and one rate per mode, got shape %v and rates %v", shape, rates)
	}
	if !(rowShape >= 0) || math.IsInf(rowShape, 0) {
		return nil, nil, nil, fmt.Errorf("poisson: row-shape %v must be finite and not negative", rowShape)
	}
	// Cells are keyed by their row-major linear index.
	cells := 1.0
	for _, n := range shape {
		cells *= float64(n)
	}
	if cells >= 1<<64 {
		return nil, nil, nil, fmt.Errorf("poisson: shape %v has more than 2^64 cells", shape)
	}
	factors := make([][]float64, order)
	var activities [][]float64
	if rowShape > 0 {
		activities = make([][]float64, order)
	}
	cum := make([][][]float64, order) // cum[m][r] is the running sum of F_m[·, r]
	for m, n := range shape {
		factors[m] = make([]float64, n*R)
		for i := range factors[m] {
			factors[m][i] = r.ExpFloat64() / rates[m]
		}
		if rowShape > 0 {
			activity := distuv.Gamma{Alpha: rowShape, Beta: rowShape, Src: r}
			activities[m] = make([]float64, n)
			for i := range n {
				s := activity.Rand()
				activities[m][i] = s
				for c := range R {
					factors[m][i*R+c] *= s
				}
			}
		}
		cum[m] = make([][]float64, R)
		for c := range R {
			cs := make([]float64, n)
			s := 0.0
			for i := range n {
				s += factors[m][i*R+c]
				cs[i] = s
			}
			cum[m][c] = cs
		}
	}
	counts := map[uint64]float64{}
	src := rand.NewPCG(r.Uint64(), r.Uint64())
	for c := range R {
		mean := 1.0
		for m := range shape {
			mean *= cum[m][c][shape[m]-1]
		}
		if mean > denseEvents*cells {
			// A draw per event costs one step per unit of count (10^9 steps for a 3x3 matrix at
			// rate 1e-4). Drawing every cell's count of the component at once gives the same
			// distribution, since the events fall on the cells independently, in one step per
			// cell.
			if cells > maxDenseCells {
				return nil, nil, nil, fmt.Errorf("poisson: component %d of rank %d expects %.3g counts over %.3g cells: too dense to draw (at most %d cells)", c+1, R, mean, cells, maxDenseCells)
			}
			for key := range uint64(cells) {
				lambda, rest := 1.0, key
				for m := order - 1; m >= 0; m-- {
					lambda *= factors[m][int(rest%uint64(shape[m]))*R+c]
					rest /= uint64(shape[m])
				}
				if x := (distuv.Poisson{Lambda: lambda, Src: src}).Rand(); x > 0 {
					counts[key] += x
				}
			}
			continue
		}
		events := int(distuv.Poisson{Lambda: mean, Src: src}.Rand())
		for range events {
			key := uint64(0)
			for m, n := range shape {
				cs := cum[m][c]
				u := r.Float64() * cs[n-1]
				i, _ := slices.BinarySearch(cs, u)
				if i >= n {
					i = n - 1
				}
				key = key*uint64(n) + uint64(i)
			}
			counts[key]++
		}
	}
	keys := make([]uint64, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	t, err := tensor.New(shape, len(keys))
	if err != nil {
		return nil, nil, nil, err
	}
	idx := make([]int, order)
	for _, k := range keys {
		rest := k
		for m := order - 1; m >= 0; m-- {
			idx[m] = int(rest % uint64(shape[m]))
			rest /= uint64(shape[m])
		}
		t.Append(idx, counts[k])
	}
	return t, factors, activities, nil
}
