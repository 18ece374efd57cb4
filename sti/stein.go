package sti

import (
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
)

// stein is the control variate a Gibbs chain's records carry. For a fixed centre c, Stein's
// identity gives E_t[(θ − c)·∇ log π_t(θ)] = −d under the power posterior π_t on ℝ^d (its density
// vanishes at infinity faster than |θ|), so z = (θ − c)·∇ log π_t(θ) + d has mean zero at every
// temperature, and ℓ − β z, with ℓ = log p(X | θ), has the mean of ℓ for any β fixed
// independently of the chain. Where π_t is close to a Gaussian about c, ℓ − ℓ* ≈ −½ δᵀHδ and
// z ≈ d − t δᵀHδ: they share the χ²_d fluctuation that makes Var_t[ℓ] ≈ d/(2t²) and the
// thermodynamic integral's standard error grow like √d, and β ≈ 1/(2t) removes it. This is the
// zero-variance control variate of Mira, Solgi & Imparato (2013) for the polynomial ½|θ − c|²,
// which Oates, Papamarkou & Girolami (2016) applied to thermodynamic integration.
//
// The centre is the rank's mode, the same point for every chain of the rank and fixed before any
// of them runs: a centre taken from the chain's own states (its burn-in mean) correlates with its
// records and moved the mean of z by a few tenths, a bias that β ≈ 1/(2t) turns into nats. β
// comes from the rung's other chains (evidence.Combine), for the same reason.
type stein struct {
	mv     *moverBase
	virial models.Virial // mv's evaluator
	center []float64
	z      []float64
	// passes counts the passes over the data the variate made, one per record
	// (dropped ones included): they are part of the chain's steps.
	passes int
}

// newStein returns the control variate about center for a chain of mv's model, or nil without a
// centre, for a model whose evaluator does not compute it (models.Virial), or where Stein's
// identity does not hold in the sampling parameterisation: a non-negative one
// (models.Model.Positive) has a boundary at zero where the density need not vanish.
func newStein(mv mover, center []float64) *stein {
	b := mv.base()
	v, ok := b.e.(models.Virial)
	if center == nil || !ok || b.m.Positive() {
		return nil
	}
	return &stein{mv: b, virial: v, center: center}
}

// record appends the variate of θ at temperature t, the chain's next record.
func (s *stein) record(t float64, theta []float64) {
	s.mv.e.Prepare(theta)
	s.mv.cells += int64(s.mv.m.NumCells())
	s.passes++
	s.z = append(s.z, float64(len(theta))+s.virial.Virial(s.center, t))
}

// drop discards the first n variates, with the records the chain discards.
func (s *stein) drop(n int) { s.z = append(s.z[:0], s.z[n:]...) }

// summarize adds the variate's summary to sum (evidence.ChainSummary.SteinMean and the fields
// after it), whose Count and Mean already summarise records, the chain's records in the order the
// variates were recorded.
func (s *stein) summarize(records []float64, sum *evidence.ChainSummary) {
	if len(records) < 2 || len(records) != len(s.z) {
		return
	}
	mz := 0.0
	for _, z := range s.z {
		mz += z
	}
	mz /= float64(len(s.z))
	var co, m2 float64
	for k, l := range records {
		dz := s.z[k] - mz
		co += (l - sum.Mean) * dz
		m2 += dz * dz
	}
	if m2 == 0 {
		return
	}
	// The effective sample size of the controlled records, with the chain's own slope: it
	// measures their autocorrelation, which the slope Combine uses barely changes.
	beta := co / m2
	y := make([]float64, len(records))
	for k, l := range records {
		y[k] = l - beta*s.z[k]
	}
	_, _, ess := evidence.Summarize(y)
	sum.SteinMean, sum.SteinM2, sum.SteinCo, sum.SteinESS = mz, m2, co, ess
}
