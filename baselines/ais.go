package baselines

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/logtab"
	"github.com/stirank/stirank/internal/slice"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/samplers/smc"
)

// AISConfig sets annealed importance sampling (Neal 2001) from the prior (t = 0) to the posterior
// (t = 1) through the power posteriors π_t(θ) ∝ p(θ) p(X | θ)^t.
type AISConfig struct {
	// Temperatures is the number K of intermediate distributions t_1 < … < t_K = 1.
	Temperatures int `json:"temperatures"`
	// Schedule is "power" (t_k = (k/K)^Power, dense near t = 0 where log p(X | θ) changes
	// fastest) or "sigmoid" (Grosse et al. 2015: a rescaled logistic of −Scale..Scale).
	Schedule string  `json:"schedule"`
	Power    float64 `json:"power"`
	Scale    float64 `json:"scale"`
	// Sweeps is the number of sweeps at each temperature: of the Gibbs kernel from the prior, of
	// slice sampling over every factor entry from a reference.
	Sweeps int `json:"sweeps"`
	// Width is the slice sampler's initial interval, in log-factor units (e-folds), from a
	// reference.
	Width float64 `json:"width"`
	// ReferenceSweeps, when positive, anneals from a reference fitted to the posterior instead of
	// from the prior (see AIS): a Gibbs run at t = 1 from the best of 4 prior runs of 50 sweeps,
	// ReferenceBurnin sweeps of burn-in, then ReferenceSweeps sweeps whose draws fit it.
	ReferenceBurnin int `json:"reference_burnin,omitempty"`
	ReferenceSweeps int `json:"reference_sweeps,omitempty"`
	// Seed roots the random streams.
	Seed uint64 `json:"seed"`
}

// Reference runs' Gibbs start tournament, as Chib's default, and their default burn-in.
const (
	referenceStarts        = 4
	referenceStartSweeps   = 50
	DefaultReferenceBurnin = 1000
	// ReferenceStartSweeps is what the start tournament of a reference's fit sweeps.
	ReferenceStartSweeps = referenceStarts * referenceStartSweeps
)

// FromReference returns c annealing from a reference fitted to sweeps Gibbs sweeps after
// DefaultReferenceBurnin, on ReferenceTemperatures of the sigmoid:6 schedule, whose temperatures
// are dense at both ends of the path: it starts where the reference differs most from the
// posterior and ends where the posterior sharpens.
func (c AISConfig) FromReference(sweeps int) AISConfig {
	c.ReferenceBurnin, c.ReferenceSweeps, c.Temperatures, c.Schedule, c.Scale = DefaultReferenceBurnin, sweeps, ReferenceTemperatures, "sigmoid", 6
	return c
}

// ReferenceTemperatures is the default number of temperatures from a reference: fewer than from
// the prior, as the path starts near the posterior and a slice sweep costs several of the Gibbs
// kernel's.
const ReferenceTemperatures = 1000

// DefaultAIS is 2000 temperatures on the power-4 schedule, one sweep each: one Gibbs sweep a
// temperature moves a population less than the slice sweep it replaced, so the schedule is twice
// as fine (docs/measurements.md).
func DefaultAIS() AISConfig {
	return AISConfig{Temperatures: 2000, Schedule: "power", Power: 4, Scale: 6, Sweeps: 1, Width: 1, Seed: 1}
}

// Validate checks the configuration.
func (c AISConfig) Validate() error {
	switch {
	case c.Temperatures < 1:
		return fmt.Errorf("ais: temperatures %d must be at least 1", c.Temperatures)
	case c.Schedule != "power" && c.Schedule != "sigmoid":
		return fmt.Errorf("ais: unknown schedule %q (power or sigmoid)", c.Schedule)
	case c.Schedule == "power" && !(c.Power > 0):
		return fmt.Errorf("ais: schedule power %v must be positive", c.Power)
	case c.Schedule == "sigmoid" && !(c.Scale > 0):
		return fmt.Errorf("ais: sigmoid scale %v must be positive", c.Scale)
	case c.Sweeps < 1:
		return fmt.Errorf("ais: sweeps %d must be at least 1", c.Sweeps)
	case !(c.Width > 0):
		return fmt.Errorf("ais: slice width %v must be positive", c.Width)
	case c.ReferenceSweeps < 0 || c.ReferenceSweeps == 1 || c.ReferenceBurnin < 0:
		return fmt.Errorf("ais: reference burn-in %d and sweeps %d: want sweeps 0 (from the prior) or at least 2, burn-in not negative", c.ReferenceBurnin, c.ReferenceSweeps)
	case c.ReferenceSweeps == 0 && c.ReferenceBurnin > 0:
		return fmt.Errorf("ais: reference burn-in %d without reference sweeps", c.ReferenceBurnin)
	}
	return nil
}

// Ladder returns t_0 = 0, t_1, …, t_K = 1.
func (c AISConfig) Ladder() []float64 {
	if c.Schedule == "sigmoid" {
		return evidence.Sigmoid(c.Temperatures, c.Scale)
	}
	return evidence.Power(c.Temperatures, c.Power)
}

// AISRun is the result of one annealing run: its log importance weight
// log w = Σ_k (t_k − t_{k−1}) log p(X | θ_{k−1}) (from the prior; from a reference q the summand is
// log p(X | θ_{k−1}) + log p(θ_{k−1}) − log q(θ_{k−1})), whose exponential is an unbiased estimate
// of p(X | R).
type AISRun struct {
	Rank, Run int
	LogWeight float64
	// Sweeps is the number of sweeps at the temperatures and of the reference's Gibbs sweeps;
	// CellEvals the cells the Gibbs kernel's sweeps read or the per-cell likelihood terms the
	// slice sampler evaluated, and the reference's Gibbs sweeps' cell allocations.
	Sweeps    int
	CellEvals int64
	// Divergence describes a non-finite weight; LogWeight is then NaN.
	Divergence string
}

// AIS runs one annealing run at rank R. Runs differ only by their random streams, derived from
// (cfg.Seed, rank, run). Beside a fixed dictionary (ssnmf, ForModel) R is the free block's rank
// and may be 0: the dictionary's activations are annealed with the free factors, from the prior
// only.
//
// From the prior the transition at t is cfg.Sweeps sweeps of the engine's Gibbs kernel of the
// augmented model (models.Augmented of models.Poisson, the kernel STI's chains and annealed starts
// run): exact at every temperature, it moves the factors, the components' scales, a matrix's
// shears and, under --rate auto, the rates, and leaves π_t invariant.
//
// From a reference (cfg.ReferenceSweeps > 0) the path is π_t ∝ q(θ)^(1−t) [p(θ) p(X | θ)]^t from
// a density q fitted to the posterior at t = 1 (see reference): the generalised stepping-stone
// path of Fan et al. (2011). From the prior, f(t) = E_t[log p(X | θ)] changes phase on large
// informative data (README at fb09484, Known limits) and AIS needs ever more temperatures to follow it; from
// q, whose mass already lies where the posterior's does, it need not. The estimate is of the mass
// of the basin q was fitted in (and its relabelings): a basin that the Gibbs run did not visit is
// missed, as by Chib's method. q's term has no augmentation, so on this path each temperature
// applies cfg.Sweeps sweeps of coordinate-wise univariate slice sampling (Neal 2003: stepping out
// at most 32 steps of cfg.Width, then shrinkage) of every factor entry in φ = log F, on the exact
// conditional
//
//	log π_t(φ | rest) = t·[Σ_{n in row} x_n log(c_n + e^φ g_n) − e^φ O_r − λ_m e^φ] + (1−t)·log q(θ) + φ + const,
//
// with g_n = Π_{m'≠m} F_m'[i_m'(n), r], c_n = λ_n − F·g_n the other components' share of cell n
// and O_r = Π_{m'≠m} colsum_m'[r]; every sweep ends with the scale moves, a matrix's shear moves
// and the transfer moves (sliceState.pathMoves).
//
// Either way a run is a population of one on the fixed ladder (smc.Tempered, smc.Anneal), whose
// stage k adds (t_k − t_{k−1})·f(θ_{k−1}) to the log weight, f the path's log-likelihood: log
// p(X | θ) from the prior, log p(X | θ) + log p(θ) − log q(θ) from a reference.
func (p *Problem) AIS(ctx context.Context, R, run int, cfg AISConfig) (AISRun, error) {
	if err := cfg.Validate(); err != nil {
		return AISRun{}, err
	}
	if err := p.checkRank("ais", R); err != nil {
		return AISRun{}, err
	}
	if p.fixed > 0 && cfg.ReferenceSweeps > 0 {
		return AISRun{}, errFixed("ais from a reference")
	}
	res := AISRun{Rank: R, Run: run}
	r := rng.New(cfg.Seed, streamAIS, uint64(R), uint64(run))
	var (
		logw float64
		err  error
	)
	if cfg.ReferenceSweeps > 0 {
		logw, err = p.aisFromReference(ctx, r, R, cfg, &res)
	} else {
		logw, err = p.aisFromPrior(ctx, r, R, cfg, &res)
	}
	if err != nil {
		return res, err
	}
	res.LogWeight = logw
	if math.IsNaN(logw) || math.IsInf(logw, 0) {
		res.Divergence = fmt.Sprintf("rank %d, run %d: non-finite AIS weight", R, run)
		res.LogWeight = math.NaN()
	}
	return res, nil
}

// rungs is smc.Anneal's next for the ladder: its temperatures one by one, and ctx's error every
// 16 stages.
func rungs(ctx context.Context, ladder []float64) func(k int) (float64, error) {
	return func(k int) (float64, error) {
		if k%16 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		return ladder[k], nil
	}
}

// aisFromPrior is AIS from the prior with the engine's Gibbs kernel; it counts its sweeps and
// the cells they read into res.
func (p *Problem) aisFromPrior(ctx context.Context, r *rand.Rand, R int, cfg AISConfig, res *AISRun) (float64, error) {
	m, err := p.model(R, models.LogScale)
	if err != nil {
		return 0, err
	}
	kernel := m.NewAugmented()
	theta := make([]float64, m.Dim())
	m.SamplePrior(r, theta)
	e := m.NewEval()
	e.Prepare(theta)
	ll := models.LogLik(e, m)
	cells := int64(models.PassCells(m))
	res.CellEvals = cells
	acc := make([]float64, len(m.Factors()))
	ladder := cfg.Ladder()
	pop := smc.NewTempered([]float64{ll})
	err = smc.Anneal(pop, rungs(ctx, ladder), func(k int, _ float64) error {
		if k == len(ladder)-1 {
			return nil // a move after the last reweighting would not change the weight
		}
		// Only the last sweep's log-likelihood is read (models.Augmented.Move).
		for range cfg.Sweeps - 1 {
			kernel.Move(r, pop.T, theta, acc)
		}
		pop.LogLik[0] = kernel.Sweep(r, pop.T, theta, acc)
		res.Sweeps += cfg.Sweeps
		res.CellEvals += int64(cfg.Sweeps*models.SweepPasses(len(acc))) * cells
		return nil
	})
	return pop.LogZ, err
}

// aisFromReference is AIS from a reference fitted to the posterior, with the slice sampler; it
// counts the fit's and the path's sweeps and cell evaluations into res.
func (p *Problem) aisFromReference(ctx context.Context, r *rand.Rand, R int, cfg AISConfig, res *AISRun) (float64, error) {
	if p.Auto {
		return 0, errAuto("AIS from a fitted reference")
	}
	fit, err := p.FitReference(ctx, r, R, cfg.ReferenceBurnin, cfg.ReferenceSweeps)
	if err != nil {
		return 0, err
	}
	s, err := p.newPathState(fit, cfg.Width)
	if err != nil {
		return 0, err
	}
	res.Sweeps = fit.Sweeps
	s.ref.sample(r, s.f)
	// f at the point stage k reweights, from the caches and q's table, which are updated entry by
	// entry: both recomputed, q's every 64 stages, keep rounding from drifting into the weight.
	f := func(k int) float64 {
		s.refresh()
		if k%64 == 0 {
			s.ref.refresh(s.f)
		}
		return s.logLik() + p.LogPrior(s.f) - s.ref.logDensity()
	}
	ladder := cfg.Ladder()
	pop := smc.NewTempered([]float64{f(1)})
	err = smc.Anneal(pop, rungs(ctx, ladder), func(k int, _ float64) error {
		if k == len(ladder)-1 {
			return nil // a move after the last reweighting would not change the weight
		}
		for range cfg.Sweeps {
			s.sweep(r, pop.T)
			s.pathMoves(r, pop.T)
		}
		res.Sweeps += cfg.Sweeps
		pop.LogLik[0] = f(k + 1)
		return nil
	})
	res.CellEvals = s.cellEvals + fit.CellEvals
	return pop.LogZ, err
}

// model is the engine's model of the problem at rank R (the free block's rank beside a fixed
// dictionary) sampled in space param, whose Gibbs kernel (models.Augmented) AIS from the prior and
// Chib's method run.
func (p *Problem) model(R int, param models.Param) (*models.Poisson, error) {
	switch {
	case p.fixed > 0 && p.Auto:
		prior, err := models.AutoPriorFixed(p.Data, R, &models.Dictionary{Rows: p.shape[0], Cols: p.fixed, Values: p.dict})
		if err != nil {
			return nil, err
		}
		return models.NewPoissonFixedPrior(p.name, p.Data, R, prior, param, p.dict, p.fixed)
	case p.fixed > 0:
		return models.NewPoissonFixed(p.name, p.Data, R, p.Rates, param, p.dict, p.fixed)
	case p.Auto:
		prior, err := models.AutoPrior(p.Data, R)
		if err != nil {
			return nil, err
		}
		return models.NewPoissonPrior(p.name, p.Data, R, prior, param)
	}
	return models.NewPoisson(p.name, p.Data, R, p.Rates, param)
}

// sliceState is a point on the path from a reference (AIS, RunPath) with the caches its slice
// updates need; without a reference it serves the moves along the likelihood's flat lines
// (crossFlats).
type sliceState struct {
	p     *Problem
	R     int
	width float64
	// ref is the reference the path starts from; nil for crossFlats.
	ref *reference
	f   Factors
	cs  [][]float64
	lam []float64 // λ_n of the positive cells
	// per-row scratch: the cells' g_n, c_n, counts and count groups (Problem.group), whose
	// products prods takes the logarithms of.
	g, c, x []float64
	group   []int
	prods   logtab.Products
	// gb is the second component's g_n of a transfer move; pairs, cos and dot ridgePairs'
	// scratch.
	gb       []float64
	pairs    [][2]int
	cos, dot []float64
	// rowLog[i] is Σ x_n log λ_n over the positive cells of row i of the mode being swept.
	rowLog    []float64
	cellEvals int64
}

func newSliceState(p *Problem, R int, width float64) *sliceState {
	s := &sliceState{p: p, R: R, width: width, f: p.NewFactors(R), lam: make([]float64, len(p.x))}
	maxRow := 0
	for m := range p.order {
		s.cs = append(s.cs, make([]float64, R))
		for i := range p.shape[m] {
			maxRow = max(maxRow, p.rowPtr[m][i+1]-p.rowPtr[m][i])
		}
	}
	s.g, s.c, s.x = make([]float64, maxRow), make([]float64, maxRow), make([]float64, maxRow)
	s.group = make([]int, maxRow)
	s.gb, s.cos, s.dot = make([]float64, maxRow), make([]float64, R*R), make([]float64, R*R)
	s.rowLog = make([]float64, slices.Max(p.shape))
	return s
}

// refresh recomputes the column sums and cell rates from the factors (no drift from the
// incremental updates).
func (s *sliceState) refresh() {
	for m := range s.p.order {
		models.ColSums(s.f.F[m], s.R, s.cs[m])
	}
	for n := range s.lam {
		s.lam[n] = s.p.rate(s.f, n)
	}
}

// logLik is log p(X | θ) from the caches.
func (s *sliceState) logLik() float64 {
	ll := -s.p.lgamma
	for r := range s.R {
		prod := 1.0
		for m := range s.p.order {
			prod *= s.cs[m][r]
		}
		ll -= prod
	}
	p := s.p
	for i := range p.shape[0] {
		ll += s.cellsLog(p.rowCells[0][p.rowPtr[0][i]:p.rowPtr[0][i+1]])
	}
	return ll
}

// cellsLog is Σ x_n log λ_n over the given cells, one logarithm per count of a few
// (logtab.Products).
func (s *sliceState) cellsLog(cells []int32) float64 {
	v := 0.0
	for _, n := range cells {
		if i := s.p.group[n]; i >= 0 {
			s.prods.Mul(i, s.lam[n])
		} else {
			v += s.p.x[n] * logtab.Log(s.lam[n])
		}
	}
	return s.prods.Counted(v)
}

// sweep updates every factor entry once at temperature t on the path from the reference,
// component by component (a column of the factor at a time): the column's entries share the
// reference's permanent minors (see reference).
func (s *sliceState) sweep(r *rand.Rand, t float64) {
	p, R := s.p, s.R
	for m := range p.order {
		s.rowLogs(m)
		for k := range R {
			o := s.others(m, k)
			s.ref.beginColumn(k)
			for i := range p.shape[m] {
				s.updateEntry(r, t, m, i, k, o)
			}
		}
	}
}

// rowLogs computes rowLog for the rows of mode m, which its entries' updates keep (sliceEntry).
func (s *sliceState) rowLogs(m int) {
	p := s.p
	for i := range p.shape[m] {
		s.rowLog[i] = s.cellsLog(p.rowCells[m][p.rowPtr[m][i]:p.rowPtr[m][i+1]])
	}
	s.cellEvals += int64(len(p.x))
}

// others is O_k = Π_{m'≠m} colsum_m'[k].
func (s *sliceState) others(m, k int) float64 {
	o := 1.0
	for m2 := range s.p.order {
		if m2 != m {
			o *= s.cs[m2][k]
		}
	}
	return o
}

// updateEntry draws entry (i, k) of mode m's factor from its conditional at t on the path from
// the reference and updates the caches.
func (s *sliceState) updateEntry(r *rand.Rand, t float64, m, i, k int, o float64) {
	p, R := s.p, s.R
	fm := s.f.F[m]
	cells := p.rowCells[m][p.rowPtr[m][i]:p.rowPtr[m][i+1]]
	old := fm[i*R+k]
	s.ref.prepare(m, i*R+k, k, old)
	nu := s.sliceEntry(r, t, m, i*R+k, k, old, cells, t*p.Rates[m], o)
	if nu == old {
		return
	}
	s.ref.update(m, i*R+k, k, old, nu)
	fm[i*R+k] = nu
	d := nu - old
	s.cs[m][k] += d
	for j, n := range cells {
		s.lam[n] += d * s.g[j]
		if s.lam[n] < 0 {
			s.lam[n] = 0
		}
	}
}

// sliceEntry draws a new value of entry `entry` = old (component k) of mode m in a row whose positive
// cells are cells, by univariate slice sampling in φ = log F (slice.Step); lm is the prior's rate on
// the path at t. It leaves g filled with the cells' g_n.
func (s *sliceState) sliceEntry(r *rand.Rand, t float64, m, entry, k int, old float64, cells []int32, lm, o float64) float64 {
	p, R := s.p, s.R
	nc := len(cells)
	g, c, x, group := s.g[:nc], s.c[:nc], s.x[:nc], s.group[:nc]
	for j, n := range cells {
		gn := 1.0
		for m2 := range p.order {
			if m2 != m {
				gn *= s.f.F[m2][int(p.coords[m2][n])*R+k]
			}
		}
		g[j] = gn
		c[j] = max(s.lam[n]-old*gn, 0)
		x[j] = p.x[n]
		group[j] = p.group[n]
	}
	a := t*o + lm
	// v and at keep the cells' sum at the last φ h evaluated: the row's rowLog once the entry
	// moves there.
	var v, at float64
	h := func(phi float64) float64 {
		e := math.Exp(phi)
		v, at = 0, phi
		// Most cells hold a few counts: their rates are multiplied by count, and a count's
		// product takes one logarithm (logtab.Products), the cells' evaluations most of a
		// sweep's time on large data.
		for j, i := range group {
			if i >= 0 {
				s.prods.Mul(i, c[j]+e*g[j])
			} else {
				v += x[j] * logtab.Log(c[j]+e*g[j])
			}
		}
		v = s.prods.Counted(v)
		s.cellEvals += int64(len(g))
		return t*v - a*e + phi + (1-t)*s.ref.entryLog(m, entry, phi)
	}
	// h at φ0 from the caches: the row's Σ x log λ, and from a reference log q (up to h's
	// constant) by the expansion of the permanent along row k of L.
	i := entry / R
	phi0 := math.Log(old)
	h0 := t*s.rowLog[i] - a*old + phi0
	h0 += (1 - t) * s.ref.rowExpansion(k)
	phi := slice.StepAt(r, h, phi0, h0, s.width)
	if phi == phi0 {
		// The shrinkage collapsed onto φ0 (only through rounding): stay exactly where it was.
		return old
	}
	if phi != at {
		h(phi)
	}
	s.rowLog[i] = v
	return math.Exp(phi)
}
