package baselines

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/models"
)

// gibbs is a chain of the engine's Gibbs sampler of the augmented Poisson model (Cemgil 2009;
// models.Blocked) at t = 1, in the factors' own units: its θ is the factors' values (the direct
// parameterisation), and State is a view of the kernel's values. The sweeps are plain Gibbs
// sweeps with the scale moves; the moves along the other lines the likelihood leaves flat are
// off, and the callers that want them make them (sliceState.crossFlats, or the kernel's own:
// SetFlat).
type gibbs struct {
	p     *Problem
	m     *models.Poisson
	k     models.Blocked
	theta []float64
	acc   []float64
	// State is the kernel's values (Blocked.Values), which its sweeps keep equal to θ; beside a
	// fixed dictionary they hold the dictionary's columns first (Factors).
	State Factors
	// held[m] rows of mode m are held (Blocked.Hold); nil: none.
	held []int
	// cells is the number of cells a sweep splits, cellEvals the splits so far.
	cells, cellEvals int64
}

// newGibbs returns a chain of free rank R at the kernel's first values, zero but for a
// dictionary's, with nothing held: SetState sets its start.
func (p *Problem) newGibbs(R int) (*gibbs, error) {
	m, err := p.model(R, models.Direct)
	if err != nil {
		return nil, err
	}
	g := &gibbs{p: p, m: m, k: m.NewBlocked(), theta: make([]float64, m.Dim()), acc: make([]float64, p.order),
		State: Factors{R: p.fixed + R}, cells: int64(m.NumCells())}
	g.k.SetFlat(false)
	for k := range m.Factors() {
		g.State.F = append(g.State.F, g.k.Values(k))
	}
	return g, nil
}

// SetState replaces the current point; f's dictionary columns must be the dictionary's.
func (g *gibbs) SetState(f Factors) {
	// State is the kernel's values, which its next sweep derives from θ again (Forget).
	g.State.CopyFrom(f)
	g.m.StoreFactorValues(g.theta, f.F)
	g.k.Forget()
}

// Hold holds rows 0 … rows[m]−1 of every mode m where they are (nil: none).
func (g *gibbs) Hold(rows []int) {
	g.held = rows
	g.k.Hold(rows)
}

// heldRows is the number of mode m's leading rows held.
func (g *gibbs) heldRows(m int) int {
	if g.held == nil {
		return 0
	}
	return g.held[m]
}

// Sweep moves the point by one sweep of the kernel.
func (g *gibbs) Sweep(r *rand.Rand) {
	g.k.Move(r, 1, g.theta, g.acc)
	g.cellEvals += g.cells
}

// Split is the point and the split counts of every mode in the hook of Blocked.OnSplit.
func (g *gibbs) Split() (Factors, [][]float64) {
	var S [][]float64
	for m := range g.p.order {
		S = append(S, g.k.Counts(m))
	}
	return g.State, S
}

// LogJoint returns log p(X | θ) + log p(θ) at the current point.
func (g *gibbs) LogJoint() float64 {
	return g.p.LogLik(g.State) + g.p.LogPrior(g.State)
}

// bestStart returns a chain of rank R at the best of starts prior draws, each run startSweeps
// sweeps, by log joint p(X | θ) p(θ): a guard against a poor local mode, and the sweeps that
// took. With one start it is at its prior draw, unrun.
func (p *Problem) bestStart(ctx context.Context, r *rand.Rand, R, starts, startSweeps int) (*gibbs, int, error) {
	g, err := p.newGibbs(R)
	if err != nil {
		return nil, 0, err
	}
	start := g.State.Clone()
	p.SamplePrior(r, start)
	g.SetState(start)
	if starts <= 1 {
		return g, 0, nil
	}
	best, bestLJ := start.Clone(), math.Inf(-1)
	for s := range starts {
		if s > 0 {
			p.SamplePrior(r, start)
			g.SetState(start)
		}
		for k := range startSweeps {
			g.Sweep(r)
			if k%64 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, 0, err
				}
			}
		}
		if lj := g.LogJoint(); lj > bestLJ || s == 0 {
			best.CopyFrom(g.State)
			bestLJ = lj
		}
	}
	g.SetState(best)
	return g, starts * startSweeps, nil
}
