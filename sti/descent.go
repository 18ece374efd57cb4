package sti

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat"

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
	// trail holds the log-likelihoods of the walk's last sweeps (settle); the log-likelihood is
	// a function of θ alone, so the trail runs on across rungs.
	trail []float64
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

// settle makes least sweeps at t, and more, up to most, until the walk holds trailLength
// log-likelihoods and while they still trend (moving). A walk down the ladder from a mode spreads
// out over tens of sweeps at the rungs where the kernel mixes slowly and within a few elsewhere,
// so a start stage cut short spends its sweeps where its rungs need them, and its chains start
// with less of a transient for their rounds to wash out (docs/method.md, starts). It reads the
// log-likelihood of the sweeps a decision to go on reads, and of the last, which must be finite;
// with least = most it sweeps as rung does.
func (w *rungWalk) settle(ctx context.Context, t float64, least, most int, where string) error {
	per := w.mv.passes(1)
	for s := 1; s <= most && (s <= least || len(w.trail) < trailLength || moving(w.trail)); s++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		w.sweeps++
		progress.Add(ctx, per)
		if s < most && (least == most || s <= least-trailLength) {
			w.mv.moveOn(w.r, t, w.theta, w.acc)
			continue
		}
		ll := w.mv.move(w.r, t, 1, nil, w.theta, w.acc)
		if math.IsNaN(ll) || math.IsInf(ll, 0) {
			return fmt.Errorf("%s, sweep %d: log-likelihood %v", where, s, ll)
		}
		if len(w.trail) < trailLength {
			w.trail = append(w.trail, ll)
		} else {
			copy(w.trail, w.trail[1:])
			w.trail[trailLength-1] = ll
		}
	}
	return nil
}

// trailLength is how many of the walk's last log-likelihoods moving reads: over eight sweeps a
// drift of a third of the sweeps' noise per sweep reaches tCrit.
const trailLength = 8

// tCrit is the slope's t beyond which the walk counts as moving: with trailLength − 2 degrees
// of freedom, stationary sweeps exceed it one time in ten either way: a walk that stops too early
// leaves its transient to every round of the rank's chains, one that sweeps on costs a sweep.
const tCrit = 2

// sweepIndex is 0, 1, …, trailLength − 1, the abscissae of moving's regression.
var sweepIndex = func() []float64 {
	x := make([]float64, trailLength)
	for i := range x {
		x[i] = float64(i)
	}
	return x
}()

// moving reports whether the walk's last trailLength log-likelihoods still trend: their
// least-squares slope lies more than tCrit of its standard errors from 0, as it does along a
// transient and, with independent sweeps, one time in ten once the walk is stationary.
func moving(trail []float64) bool {
	if len(trail) != trailLength {
		return false
	}
	alpha, beta := stat.LinearRegression(sweepIndex, trail, nil, false)
	var rss, sxx float64
	mx := float64(trailLength-1) / 2
	for i, y := range trail {
		e := y - alpha - beta*sweepIndex[i]
		rss += e * e
		sxx += (sweepIndex[i] - mx) * (sweepIndex[i] - mx)
	}
	return beta*beta*sxx*(trailLength-2) > tCrit*tCrit*rss
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
