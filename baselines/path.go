package baselines

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
)

// PathChain is one chain's run at a temperature of the path from a reference: its records and
// what they cost.
type PathChain struct {
	// Records are log p(X | θ) + log p(θ) − log q(θ) after each recorded sweep; their mean over
	// π_t estimates f(t) = d/dt log Z(t) with Z(t) = ∫ q^(1−t) (p(θ) p(X | θ))^t dθ, Z(0) = 1 and
	// Z(1) = p(X | R), and their variance is f′(t).
	Records []float64
	// Sweeps counts the slice-sampling sweeps, burn-in included; CellEvals the per-cell
	// likelihood terms they evaluated.
	Sweeps    int
	CellEvals int64
	// Divergence describes a non-finite record; Records then stop before it.
	Divergence string
}

// RunPath runs a chain at temperature t of the path π_t ∝ q(θ)^(1−t) [p(θ) p(X | θ)]^t from the
// reference fit describes (see AIS for the kernel: slice sweeps of every entry on its exact
// conditional, then sliceState.pathMoves): a draw from q, burnin sweeps, then records sweeps each followed by
// a record. Thermodynamic integration of f over a ladder of t then estimates log p(X | R) of the
// basin the reference was fitted in, as AIS from it does.
func (p *Problem) RunPath(ctx context.Context, r *rand.Rand, fit ReferenceFit, t, width float64, burnin, records int) (PathChain, error) {
	var c PathChain
	if !(t >= 0 && t <= 1) {
		return c, fmt.Errorf("reference path: temperature %v outside [0, 1]", t)
	}
	s, err := p.newPathState(fit, width)
	if err != nil {
		return c, err
	}
	q := s.ref
	q.sample(r, s.f)
	c.Records = make([]float64, 0, records)
	s.refresh()
	for k := range burnin + records {
		if k%16 == 0 {
			if err := ctx.Err(); err != nil {
				return c, err
			}
		}
		s.sweep(r, t)
		s.pathMoves(r, t)
		// The caches and q's table are updated entry by entry; recomputing them keeps rounding
		// from drifting into the records.
		s.refresh()
		q.refresh(s.f)
		c.Sweeps++
		if k < burnin {
			continue
		}
		f := s.logLik() + p.LogPrior(s.f) - q.logDensity()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			c.Divergence = fmt.Sprintf("rank %d, t=%.6g: record %d after %d sweeps is %v", fit.Rank, t, len(c.Records), c.Sweeps, f)
			break
		}
		c.Records = append(c.Records, f)
	}
	c.CellEvals = s.cellEvals
	return c, nil
}

// newPathState is a slice sampler's state on the path from the reference fit describes, with
// width its initial interval.
func (p *Problem) newPathState(fit ReferenceFit, width float64) (*sliceState, error) {
	if p.fixed > 0 {
		return nil, errFixed("the reference path")
	}
	q, err := p.newReference(fit)
	if err != nil {
		return nil, err
	}
	s := newSliceState(p, fit.Rank, width)
	s.ref = q
	return s, nil
}
