package sti

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/internal/progress"
	"github.com/stirank/stirank/models"
)

// rungWalk is a walk's state as it sweeps the ladder's rungs one after another (the start stage's
// relaxation and descent, the phase check's ascent): its parameters, the Gibbs kernel's mover,
// its stream and the sweeps it has made.
type rungWalk struct {
	mv         *gibbsMover
	r          *rand.Rand
	theta, acc []float64
	sweeps     int
}

// newRungWalk starts a walk of model m at theta on the stream r.
func newRungWalk(m models.Model, theta []float64, r *rand.Rand) *rungWalk {
	mv := newGibbsMover(m)
	return &rungWalk{mv: mv, r: r, theta: theta, acc: make([]float64, mv.blocks())}
}

// rung makes n sweeps at t and returns the sum of the log-likelihoods of the last read of them,
// the only ones it reads; where names the walk and the rung in an error, where one of them is not
// finite.
func (w *rungWalk) rung(ctx context.Context, t float64, n, read int, where string) (float64, error) {
	sum := 0.0
	per := w.mv.passes(1)
	for s := 1; s <= n; s++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		w.sweeps++
		progress.Add(ctx, per)
		if s <= n-read {
			w.mv.moveOn(w.r, t, w.theta, w.acc)
			continue
		}
		ll := w.mv.move(w.r, t, 1, nil, w.theta, w.acc)
		if math.IsNaN(ll) || math.IsInf(ll, 0) {
			return 0, fmt.Errorf("%s, sweep %d: log-likelihood %v", where, s, ll)
		}
		sum += ll
	}
	return sum, nil
}

// phaseFrom is the lowest temperature of the phase check (Config.Ascent). Below it the rungs'
// variance is large and their weight in the integral small; on the sparse matrices with
// heavy-tailed rows measured, the walk and the chains parted by 3 standard deviations above
// t = 0.08 only, and on a CP tensor above 0.03. The walk must start below the change, in the
// phase of small t.
const phaseFrom = 0.01

// phaseRung is the first rung of the ladder at or above phaseFrom, where the ascent starts.
func (cfg Config) phaseRung() int {
	i := 0
	for i < len(cfg.Ladder)-1 && cfg.Ladder[i] < phaseFrom {
		i++
	}
	return i
}
