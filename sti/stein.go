package sti

import (
	"slices"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
)

// stein is the control variates a Gibbs chain's records carry. For a centre c fixed apart from
// the chain, Stein's identity gives E_t[(θ_k − c_k)·∇_k log π_t(θ)] = −d_k along the d_k parameters
// of each factor k and E_t[Σ_j ∂_j log π_t(θ)] = 0 under the power posterior π_t on ℝ^d (its
// density vanishes at infinity faster than |θ|), so the variates z (models.SteinVariates) have
// mean zero at every temperature, and ℓ − β·z, with ℓ = log p(X | θ), has the mean of ℓ for any β
// fixed independently of the chain. Where π_t is close to a Gaussian about c, ℓ − ℓ* ≈ −½ δᵀHδ
// and Σ_k z_k ≈ d − t δᵀHδ: they share the χ²_d fluctuation that makes Var_t[ℓ] ≈ d/(2t²) and the
// thermodynamic integral's standard error grow like √d, and β ≈ 1/(2t) removes it. This is the
// zero-variance control variate of Mira, Solgi & Imparato (2013) for the polynomial ½|θ − c|²,
// which Oates, Papamarkou & Girolami (2016) applied to thermodynamic integration. Near the prior
// (small t) the posterior is far from Gaussian: there the factors' parts of that sum move apart,
// and Σ_j ∂_j log π_t, the variate of the constant polynomial, carries the total Σλ that ℓ
// subtracts, so each gets its own slope (at rank 1 of a 30×20 matrix the standard error of a
// rung's mean at t = 0.001 and 0.01 is half what the summed variate leaves: go test ./sti -run
// TestSteinVariate -v; the speech spectrogram in README).
//
// The centre is the rank's mode, the same point for every chain of the rank and fixed before any
// of them runs: a centre taken from the chain's own states (its burn-in mean) correlates with its
// records and moved the mean of z by a few tenths, a bias that β ≈ 1/(2t) turns into nats. β
// comes from the rung's other chains (evidence.Combine), for the same reason.
type stein struct {
	mv       *moverBase
	variates models.SteinVariates // mv's evaluator
	center   []float64
	p        int       // variates per record
	z        []float64 // record k's variates are z[k·p : (k+1)·p]
	// passes counts the passes over the data the variates made, one per record
	// (dropped ones included): they are part of the chain's steps.
	passes int
}

// newStein returns the control variates about center for a chain of mv's model, or nil without a
// centre, for a model whose evaluator does not compute them (models.SteinVariates), or where
// Stein's identity does not hold in the sampling parameterisation: a non-negative one
// (models.Model.Positive) has a boundary at zero where the density need not vanish.
func newStein(mv mover, center []float64) *stein {
	b := mv.base()
	v, ok := b.e.(models.SteinVariates)
	if center == nil || !ok || b.m.Positive() {
		return nil
	}
	return &stein{mv: b, variates: v, center: center, p: len(b.m.Factors()) + 1}
}

// record appends the variates of θ at temperature t, the chain's next record's.
func (s *stein) record(t float64, theta []float64) {
	s.mv.e.Prepare(theta)
	s.mv.cells += int64(models.PassCells(s.mv.m))
	s.passes++
	n := len(s.z)
	s.z = slices.Grow(s.z, s.p)[:n+s.p]
	s.variates.SteinVariates(s.center, t, s.z[n:])
}

// drop discards the first n records' variates, with the records the chain discards.
func (s *stein) drop(n int) { s.z = append(s.z[:0], s.z[n*s.p:]...) }

// summarize adds the variates' summary to sum (evidence.ChainSummary.SteinMean and the fields
// after it), whose Count and Mean already summarise records, the chain's records in the order the
// variates were recorded.
func (s *stein) summarize(records []float64, sum *evidence.ChainSummary) {
	p, n := s.p, len(records)
	if n < 2 || n*p != len(s.z) {
		return
	}
	mz := make([]float64, p)
	for k := range n {
		for l, z := range s.z[k*p : (k+1)*p] {
			mz[l] += z / float64(n)
		}
	}
	co, m2, dz := make([]float64, p), make([]float64, p*p), make([]float64, p)
	for k, y := range records {
		for l, z := range s.z[k*p : (k+1)*p] {
			dz[l] = z - mz[l]
		}
		for l, d := range dz {
			co[l] += (y - sum.Mean) * d
			for q, e := range dz {
				m2[l*p+q] += d * e
			}
		}
	}
	// The effective sample size of the controlled records, with the chain's own slopes: it
	// measures their autocorrelation, which the slopes Combine uses barely change.
	beta := evidence.LeastSquares(m2, co)
	y := make([]float64, n)
	for k, l := range records {
		y[k] = l
		for q, b := range beta {
			y[k] -= b * s.z[k*p+q]
		}
	}
	_, _, ess := evidence.Summarize(y)
	sum.SteinMean, sum.SteinM2, sum.SteinCo, sum.SteinESS = mz, m2, co, ess
}
