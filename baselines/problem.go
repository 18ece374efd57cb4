// Package baselines holds the two estimators of log p(X | R) that stirank measures STI against,
// on the Poisson NMF (order 2) and Poisson CP (order 3) models with exponential priors:
//
//   - Chib's method (Chib 1995) on the output of the engine's Gibbs sampler of the augmented model (models.Blocked):
//     latent per-component counts allocated by a multinomial, conjugate Gamma full conditionals
//     for the factors, plus scale moves along the factorisation's scale ridge. The posterior
//     ordinate at a high-density θ* (the log-factor posterior mode near the best burn-in sweep) is
//     taken over small blocks of rows, each with its own reduced run, Rao–Blackwellised, made
//     exact under the R! relabelings of the components (permanents and an exact relabeling move),
//     with batch-means standard errors (see Chib for why each of these is needed);
//   - annealed importance sampling (Neal 2001) from the prior to the posterior along the power
//     posteriors p(θ) p(X | θ)^t, with the engine's Gibbs kernel of the augmented model
//     (models.Augmented, exact at every t) as the transition, or from a reference fitted to the
//     posterior with coordinate-wise slice sampling of the log-factors (see AIS).
//
// Both are sparse-aware: cells not stored are zeros, which allocate nothing, and every Σ over all
// cells of the Poisson means factorises into products of factor column sums. Every random stream
// is derived from (seed, method, rank, replica), so a rerun is bit-identical. Problem.Chib,
// Problem.AIS and CombineRank are what the chib and ais estimators (package estimators) call for
// the Beam layer. ExactLogEvidence computes the evidence of tiny datasets exactly, by summing over
// allocations; it shares its rank-1 terms with models.Rank1LogEvidence. Nothing here imports
// Beam.
package baselines

import (
	"fmt"
	"math"

	"github.com/stirank/stirank/internal/logtab"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/tensor"
)

// Problem is a count tensor of order 2 or 3 bound to exponential prior rates, one per mode,
// prepared for the samplers: the cells with a positive count, indexed by row of every mode.
// It is read-only and may be shared by any number of concurrent runs.
type Problem struct {
	Data  *tensor.Sparse
	Rates []float64
	// Auto says the rates have the hyperprior of --rate auto (models.AutoPrior at each rank) and
	// Rates is nil: AIS from the prior samples them with the factors, Chib's method takes them as
	// one more block (chibAuto); the fitted references refuse it.
	Auto bool

	// name is the registered model the problem is of: ForModel's, or the default of the data's
	// order (NewProblem).
	name   string
	order  int
	shape  []int
	coords [][]int32 // coords[m][n] for the cells n with a positive count
	x      []float64 // their counts
	xi     []int     // the counts as integers
	// group[n] is cell n's count group (logtab.Group), −1 for a count outside the groups: the
	// slice updates multiply a group's rates and take one logarithm of the product.
	group []int
	// rowPtr[m][i]..rowPtr[m][i+1] are the positions in rowCells[m] of the cells in row i of mode m.
	rowPtr   [][]int
	rowCells [][]int32
	// lgamma is Σ_n log Γ(x_n + 1), the constant of log p(X | θ).
	lgamma float64
	// logFact[k] = log k! up to the largest row total of any mode.
	logFact []float64
	total   float64
	// fixed is the number of components whose mode-0 entries are the dictionary's columns
	// (ssnmf), dict the dictionary (shape[0] × fixed, row-major); 0 and nil otherwise. Chib's
	// method and AIS from the prior take them; the fitted references refuse them (errFixed).
	fixed int
	dict  []float64
}

// checkRank says why method cannot estimate the evidence of free rank R: a rank below 1, or
// below 0 beside a fixed dictionary, whose components alone are a model.
func (p *Problem) checkRank(method string, R int) error {
	if R < 1 && (p.fixed == 0 || R < 0) {
		return fmt.Errorf("%s: rank %d must be at least 1 (0 beside a fixed dictionary)", method, R)
	}
	return nil
}

// errFixed is what a method that does not hold a dictionary block fixed says of a Problem that
// has one.
func errFixed(method string) error {
	return fmt.Errorf("%s does not hold a dictionary block fixed (%s): %s and %s from the prior do",
		method, models.Or(models.NamesOf(FixedModels())), MethodChib, MethodAIS)
}

// Models are the registered models the baselines estimate: Poisson factorisations with
// exponential priors (models.Info.ExpPoissonRates).
func Models() []*models.Info {
	return models.Where(func(i *models.Info) bool { return i.ExpPoissonRates != nil })
}

// ChibAISModels are the models Chib's method and AIS from the prior estimate: Models and
// FixedModels.
func ChibAISModels() []*models.Info {
	return models.Where(func(i *models.Info) bool { return i.ExpPoissonRates != nil || fixedPoisson(i) })
}

// FixedModels are the Poisson models with a fixed dictionary block (ssnmf), whose free block has
// the exponential priors of Models.
func FixedModels() []*models.Info { return models.Where(fixedPoisson) }

// fixedPoisson reports whether info is a Poisson NMF with a fixed dictionary (ssnmf).
func fixedPoisson(info *models.Info) bool {
	return info.Dictionary && info.Domain == models.Counts && info.Order == 2
}

// Rates returns the prior rate of every mode of model, one of ChibAISModels, or nil under --rate auto.
func Rates(model models.Spec) ([]float64, error) {
	info, err := models.Lookup(model.Name)
	if err != nil {
		return nil, err
	}
	switch {
	case info.ExpPoissonRates != nil && model.Params.Auto("rates"):
		return nil, nil
	case info.ExpPoissonRates != nil:
		return info.ExpPoissonRates(model.Params), nil
	case fixedPoisson(info):
		return model.Params.Nums("rates"), nil
	}
	return nil, fmt.Errorf("the baselines estimate %s, not %s", models.Or(models.NamesOf(ChibAISModels())), model.Name)
}

// errAuto is the error of a method that takes fixed rates only.
func errAuto(method string) error {
	return fmt.Errorf("%s takes fixed prior rates: give --rate R (the default, --rate %s, samples them)", method, models.AutoWord)
}

// ForModel is NewProblem with the prior rates of model, one of ChibAISModels, and its dictionary
// held fixed when it has one; under --rate auto the data are prepared alike, with rates that
// nothing reads.
func ForModel(data *tensor.Sparse, model models.Spec) (*Problem, error) {
	rates, err := Rates(model)
	if err != nil {
		return nil, err
	}
	auto := rates == nil
	if auto {
		rates = make([]float64, data.Order())
		for m := range rates {
			rates[m] = 1
		}
	}
	p, err := NewProblem(data, rates)
	if err != nil {
		return nil, err
	}
	if auto {
		p.Rates, p.Auto = nil, true
	}
	p.name = model.Name
	if info, _ := models.Lookup(model.Name); fixedPoisson(info) {
		d := model.Dictionary
		if d == nil {
			return nil, fmt.Errorf("%s: no dictionary (--dict)", model.Name)
		}
		if err := d.CheckFor(data.Shape[0]); err != nil {
			return nil, err
		}
		p.fixed, p.dict = d.Cols, d.Values
	}
	return p, nil
}

// NewProblem validates count data and prepares them. rates holds the rate of the exponential
// prior of every factor entry, one per mode.
func NewProblem(data *tensor.Sparse, rates []float64) (*Problem, error) {
	order := data.Order()
	if order < 2 || order > 3 {
		return nil, fmt.Errorf("baselines: order %d not supported (2 for nmf, 3 for cp)", order)
	}
	if len(rates) != order {
		return nil, fmt.Errorf("baselines: %d prior rates for order %d", len(rates), order)
	}
	for m, l := range rates {
		if !(l > 0) || math.IsInf(l, 0) {
			return nil, fmt.Errorf("baselines: prior rate %v of mode %d must be positive and finite", l, m)
		}
	}
	if err := data.Validate(true); err != nil {
		return nil, err
	}
	info, err := models.ForOrder(order)
	if err != nil {
		return nil, err
	}
	p := &Problem{Data: data, Rates: append([]float64(nil), rates...), name: info.Name, order: order, shape: append([]int(nil), data.Shape...)}
	p.coords = make([][]int32, order)
	for n, v := range data.Values {
		if v == 0 {
			continue
		}
		for m := range order {
			p.coords[m] = append(p.coords[m], data.Coords[m][n])
		}
		p.x = append(p.x, v)
		p.xi = append(p.xi, int(v))
		g, ok := logtab.Group(v)
		if !ok {
			g = -1
		}
		p.group = append(p.group, g)
		lg, _ := math.Lgamma(v + 1)
		p.lgamma += lg
		p.total += v
	}
	maxRow := 0
	p.rowPtr = make([][]int, order)
	p.rowCells = make([][]int32, order)
	for m := range order {
		p.rowPtr[m], p.rowCells[m] = tensor.RowIndex(p.coords[m], p.shape[m])
		sums := make([]int, p.shape[m])
		for n, i := range p.coords[m] {
			sums[i] += p.xi[n]
		}
		for _, s := range sums {
			maxRow = max(maxRow, s)
		}
	}
	p.logFact = make([]float64, maxRow+1)
	for k := 1; k <= maxRow; k++ {
		p.logFact[k] = p.logFact[k-1] + math.Log(float64(k))
	}
	return p, nil
}

// Order is the order of the data (2 for NMF, 3 for CP).
func (p *Problem) Order() int { return p.order }

// NumCells is the number of cells with a positive count.
func (p *Problem) NumCells() int { return len(p.x) }

// Factors is a point θ of a rank-R model: F[m] is the shape[m]×R factor of mode m, row-major.
// Beside a fixed dictionary R counts its columns too: they lead every row of F[0] and hold the
// dictionary's entries, which are not parameters (models.Poisson.FactorValues).
type Factors struct {
	R int
	F [][]float64
}

// NewFactors returns zero factors of rank R for the problem's shape. Beside a fixed dictionary
// it panics: the methods that hold one start from the Gibbs kernel's values (gibbs.State), which
// hold its entries.
func (p *Problem) NewFactors(R int) Factors {
	if p.fixed > 0 {
		panic("baselines: NewFactors beside a fixed dictionary")
	}
	f := Factors{R: R, F: make([][]float64, p.order)}
	for m, n := range p.shape {
		f.F[m] = make([]float64, n*R)
	}
	return f
}

// lead is the number of fixed leading columns of mode m's factor: the dictionary's in mode 0.
func (p *Problem) lead(m int) int { return models.FixedLead(m, p.fixed) }

// params calls do with every parameter of f (every entry but the dictionary's) in mode order.
func (p *Problem) params(f Factors, do func(m, entry int)) {
	for m, fm := range f.F {
		lead := p.lead(m)
		for e := range fm {
			if e%f.R >= lead {
				do(m, e)
			}
		}
	}
}

// rescale multiplies component k of mode m1's factor by c and divides it in mode m2's, and their
// column sums cs likewise: the orbit of the scale moves, along which no cell's rate changes.
func (f Factors) rescale(cs [][]float64, m1, m2, k int, c float64) {
	f1, f2 := f.F[m1], f.F[m2]
	for i := k; i < len(f1); i += f.R {
		f1[i] *= c
	}
	for i := k; i < len(f2); i += f.R {
		f2[i] /= c
	}
	cs[m1][k] *= c
	cs[m2][k] /= c
}

// balance moves every component along its scale orbit, F_m[·, k]·c_m with Π_m c_m = 1 (no rate
// changes), to where the prior's terms λ_m·colsum_m[k] are equal in every mode, and sets
// logc[k·order + m] = log c_m; cs is scratch of the factors' shape. A reference fitted to balanced
// draws (fitReference) sees how the posterior spreads across the orbits apart from how it spreads
// along them, where only the prior binds it, weakly when the counts are large: a Gamma product
// fitted to the draws as they come spreads its independent entries along every orbit at once and
// its own draws fall far from the data's fit (on a 12×10 matrix with 1.4·10⁵ counts,
// E_q[log p(X, θ) − log q(θ)] was −180 000 at rank 1, where log p(X | R) is −94 445).
func (p *Problem) balance(f Factors, cs [][]float64, logc []float64) {
	for m := range p.order {
		models.ColSums(f.F[m], f.R, cs[m])
	}
	for k := range f.R {
		mean := 0.0
		for m := range p.order {
			mean += math.Log(p.Rates[m]*cs[m][k]) / float64(p.order)
		}
		for m := range p.order {
			lc := mean - math.Log(p.Rates[m]*cs[m][k])
			logc[k*p.order+m] = lc
			c := math.Exp(lc)
			for i := k; i < len(f.F[m]); i += f.R {
				f.F[m][i] *= c
			}
		}
	}
}

// Clone returns a deep copy.
func (f Factors) Clone() Factors {
	c := Factors{R: f.R, F: make([][]float64, len(f.F))}
	for m := range f.F {
		c.F[m] = append([]float64(nil), f.F[m]...)
	}
	return c
}

// CopyFrom copies g into f (same shape).
func (f Factors) CopyFrom(g Factors) {
	for m := range f.F {
		copy(f.F[m], g.F[m])
	}
}

// LogLik returns log p(X | θ) = Σ_n x_n log λ_n − Σ_r Π_m colsum_m[r] − Σ_n log Γ(x_n + 1).
func (p *Problem) LogLik(f Factors) float64 {
	R := f.R
	cs := make([][]float64, p.order)
	for m := range cs {
		cs[m] = make([]float64, R)
		models.ColSums(f.F[m], R, cs[m])
	}
	ll := -p.lgamma
	for r := range R {
		prod := 1.0
		for m := range p.order {
			prod *= cs[m][r]
		}
		ll -= prod
	}
	for n, x := range p.x {
		ll += x * math.Log(p.rate(f, n))
	}
	return ll
}

// rate returns λ_n = Σ_r Π_m F_m[i_m, r] of cell n.
func (p *Problem) rate(f Factors, n int) float64 {
	R := f.R
	lam := 0.0
	a := f.F[0][int(p.coords[0][n])*R : int(p.coords[0][n])*R+R]
	b := f.F[1][int(p.coords[1][n])*R : int(p.coords[1][n])*R+R]
	if p.order == 2 {
		for r := range a {
			lam += a[r] * b[r]
		}
		return lam
	}
	c := f.F[2][int(p.coords[2][n])*R : int(p.coords[2][n])*R+R]
	for r := range a {
		lam += a[r] * b[r] * c[r]
	}
	return lam
}

// LogPrior returns log p(θ) = Σ_m Σ_{i,r} (log λ_m − λ_m F_m[i, r]), with θ the factors themselves
// (a dictionary's entries are not θ's).
func (p *Problem) LogPrior(f Factors) float64 {
	lp := 0.0
	for m, fm := range f.F {
		l, lead := p.Rates[m], p.lead(m)
		s := 0.0
		for e, v := range fm {
			if e%f.R < lead {
				continue
			}
			if v < 0 {
				return math.Inf(-1)
			}
			s += v
		}
		lp += float64(len(fm)/f.R*(f.R-lead))*math.Log(l) - l*s
	}
	return lp
}

// SamplePrior draws every factor entry but a dictionary's from its exponential prior.
func (p *Problem) SamplePrior(r interface{ ExpFloat64() float64 }, f Factors) {
	p.params(f, func(m, e int) { f.F[m][e] = r.ExpFloat64() / p.Rates[m] })
}
