// Package models holds the likelihoods and priors stirank selects the rank of: their log densities
// and gradients in the parameterisation the samplers move in, a diagonal metric for preconditioned
// kernels, exact evidence where it exists, and the generative processes used to make test data.
//
// A model splits log p(X | θ) into a dense term that it computes exactly at every step in time
// proportional to the number of parameters (the Poisson Σ λ over all cells, which factorises into
// column sums; constants such as −Σ log Γ(x+1)), and a sum over stored cells ℓ_n(θ) that the sampler
// subsamples. The model never applies the temperature or the N/|S| scaling: callers pass the weight
// they want the gradient multiplied by.
package models

import (
	"math/rand/v2"
)

// Cells names a set of stored cells: positions Lo..Hi-1 of the data, or, when Index is set,
// the positions Index[Lo:Hi].
type Cells struct {
	Lo, Hi int
	Index  []int32
}

// Len is the number of cells in the set.
func (c Cells) Len() int { return c.Hi - c.Lo }

// Factor describes one factor matrix of a factor model: Rows×Cols parameters stored row-major
// at θ[Offset:Offset+Rows*Cols]. Mode m of the data indexes the rows of factor m.
type Factor struct {
	Offset, Rows, Cols int
}

// Params returns the parameter range of rows [lo, hi) of the factor.
func (f Factor) Params(lo, hi int) (int, int) {
	return f.Offset + lo*f.Cols, f.Offset + hi*f.Cols
}

// ColSums writes the column sums of a row-major matrix f with R columns into cs, adding the rows in
// order.
func ColSums(f []float64, R int, cs []float64) {
	clear(cs)
	for i := 0; i < len(f); i += R {
		for r, v := range f[i : i+R] {
			cs[r] += v
		}
	}
}

// Model is a likelihood and prior bound to a dataset, for one rank. It is immutable and safe to share
// between chains; per-chain scratch lives in the Eval it makes.
type Model interface {
	// Name is the model's short name (gauss, nmf, cp).
	Name() string
	// Rank is the number of components R.
	Rank() int
	// Dim is the number of parameters.
	Dim() int
	// NumCells is N, the number of terms of the subsampled sum.
	NumCells() int
	// Factors describes the parameter layout by data mode, for the parts schedules; nil when the
	// parameters are not tied to data modes (the Gaussian additive model).
	Factors() []Factor
	// Positive reports whether the parameterisation is constrained to θ ≥ 0 (kernels then mirror).
	Positive() bool
	// DriftScale is the natural length of one step in the parameterisation (one e-fold for log
	// factors), the most a step may move one coordinate by its drift (samplers.Input.MaxDrift);
	// zero when the likelihood is quadratic and long steps are safe.
	DriftScale() float64
	// SamplePrior draws θ from the prior.
	SamplePrior(r *rand.Rand, theta []float64)
	// NewEval returns a fresh evaluator with its own scratch.
	NewEval() Eval
}

// Eval evaluates a model at one point θ. Prepare must be called whenever θ changes; the other
// methods then read the cached point. Cells may be called concurrently for cell sets whose
// parameter rows are disjoint (the blocks of one part); the other methods may not.
type Eval interface {
	// Prepare caches what the other methods need at θ (factor values, column sums).
	Prepare(theta []float64)
	// LogPrior returns log p(θ) in the sampling parameterisation (Jacobian included) and adds
	// its gradient to grad when grad is not nil.
	LogPrior(grad []float64) float64
	// Dense returns the exactly computed term of log p(X | θ) and adds w times its gradient to
	// grad when grad is not nil.
	Dense(w float64, grad []float64) float64
	// Cells returns Σ_{n∈c} ℓ_n(θ) and adds w times its gradient to grad when grad is not nil.
	Cells(c Cells, w float64, grad []float64) float64
	// Metric writes a diagonal metric for the power posterior at temperature t: g[i] is an inverse
	// curvature scale for θ_i, bounded so that the metric-scaled Hessian of the tempered log
	// posterior has spectral radius of about one or less, and gamma[i] = ∂g[i]/∂θ_i, the divergence
	// term a position-dependent diagonal metric needs for Langevin dynamics to stay exact.
	Metric(t float64, g, gamma []float64)
}

// SteinVariates is implemented by evaluators of factor models that compute Stein control variates
// of the tempered posterior π_t(θ) ∝ p(θ) p(X | θ)^t at the prepared point, in one pass over the
// cells without forming the gradient g = ∇_θ log π_t: the control variates of a chain's records
// (package sti), recorded after every sweep. For a centre c fixed apart from the chain they are,
// for each factor k with d_k parameters, z_k = (θ_k − c_k)·g_k + d_k, and last Σ_j g_j. Each has
// mean zero under π_t by Stein's identity (integration by parts along the parameters it involves,
// where π_t vanishes at infinity).
type SteinVariates interface {
	// SteinVariates writes the len(Factors()) + 1 variates about c at t into z.
	SteinVariates(c []float64, t float64, z []float64)
}

// RaoBlackwell is implemented by a data-augmentation kernel (Augmented) that knows in closed form,
// at the θ its last sweep or move left, the mean and variance of log p(X | θ) under the power
// posterior at t given every factor but one. Each mean has the mean of log p(X | θ) under π_t,
// without the fluctuation of that factor's parameters, so its difference from log p(X | θ) is a
// control variate of mean zero; with the variances, Var_t[log p(X | θ)] is the mean of the
// conditional variance plus the variance of the conditional mean (the law of total variance).
type RaoBlackwell interface {
	// Conditionals writes E_t[log p(X | θ) | every factor but k] into mean[k] and
	// Var_t[log p(X | θ) | every factor but k] into variance[k], one of each per factor.
	Conditionals(t float64, mean, variance []float64)
}

// Reader is implemented by a model whose evaluator reads fewer values than the cells of some cell
// sets: at rank 1 the Poisson models read the data's margins for the set of all cells.
type Reader interface {
	// Reads is the number of values the evaluator reads for the cells of c.
	Reads(c Cells) int
}

// Reads returns the number of values m's evaluator reads for the cells of c: c.Len(), or fewer
// where m says so (Reader). It is what a run's cell evaluations count.
func Reads(m Model, c Cells) int {
	if r, ok := m.(Reader); ok {
		return r.Reads(c)
	}
	return c.Len()
}

// PassCells is Reads of the set of all m's cells: what a full pass over the data reads.
func PassCells(m Model) int { return Reads(m, Cells{Lo: 0, Hi: m.NumCells()}) }

// LogLik returns the full-data log-likelihood log p(X | θ) of a prepared evaluator.
func LogLik(e Eval, m Model) float64 {
	return e.Dense(0, nil) + e.Cells(Cells{Lo: 0, Hi: m.NumCells()}, 0, nil)
}

// LogLikGrad returns log p(X | θ) and adds w times its gradient to grad.
func LogLikGrad(e Eval, m Model, w float64, grad []float64) float64 {
	return e.Dense(w, grad) + e.Cells(Cells{Lo: 0, Hi: m.NumCells()}, w, grad)
}

// Augmentable is implemented by factor models whose likelihood becomes conjugate to each factor
// once every observation is split over the components (the count of a Poisson cell: Cemgil 2009).
// Their Gibbs sampler moves a whole row of a factor to a draw from its conditional in one step,
// where a local kernel takes many small ones.
type Augmentable interface {
	// NewAugmented returns the data-augmentation kernel with scratch of its own.
	NewAugmented() Augmented
}

// Augmented is a data-augmentation kernel for the power posteriors p(θ) p(X | θ)^t; it serves one
// chain at a time.
type Augmented interface {
	// Sweep moves every factor of θ once, and then the scales of the components where the
	// likelihood does not change when a component's column of one factor is multiplied by c and
	// that of another divided by c (directions left to the prior, along which a kernel that moves
	// one factor at a time crawls; a Shearing kernel moves a matrix's components along the lines
	// that mix them too), in place, with r, leaving the power posterior at t invariant,
	// writes each factor's mean acceptance probability (over its rows) into acc and returns
	// log p(X | θ) at the new θ, which the sweep knows without another pass.
	//
	// A chain's next sweep starts where its last left θ, and the kernel keeps what it derived from
	// θ (the factors' values) for it, equal to what θ gives to the last digits, not bit for bit.
	Sweep(r *rand.Rand, t float64, theta, acc []float64) float64
	// Move is Sweep for a sweep whose log-likelihood is not read (a burn-in's, a relaxation's):
	// the same moves from the same draws, without the logarithms that only the log-likelihood
	// needs, and at t = 1, where no count is rounded, without a second read of the cells.
	Move(r *rand.Rand, t float64, theta, acc []float64)
	// Forget drops what the kernel keeps of the θ its last sweep left, so that the next sweep
	// derives everything from θ. A kernel that serves several particles must forget between
	// them wherever the order it serves them in depends on scheduling, or their sweeps differ in
	// the last digits with that order.
	Forget()
	// NewEval returns an evaluator of the model (Model.NewEval) that, prepared at the θ the
	// kernel's last sweep left, takes the factors' values from the kernel instead of deriving
	// them from θ again.
	NewEval() Eval
	// Ascend moves θ, in place, one EM sweep towards a mode of the power posterior at t in log
	// space, deterministically; no sweep lowers t·log p(X | θ) + log p(log F).
	Ascend(t float64, theta []float64)
}

// Shearing is an Augmented kernel of a matrix model whose sweeps also move the components along
// the lines that mix them (Poisson.shear), where the likelihood does not change either.
type Shearing interface {
	Augmented
	// SetShear turns the shear moves on (a new kernel's setting) or off.
	SetShear(on bool)
}

// SweepPasses is the number of passes over the data a sweep of an Augmented kernel of a model
// with that many factors makes: two reads of the cells per factor, the last giving the
// log-likelihood.
func SweepPasses(factors int) int { return 2 * factors }
