package transforms

import (
	"context"
	"testing"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
)

// rounderOf is an estimators.Rounder whose ranks reach their configured records in round full
// and whose controls pay or not; its other methods are not called.
type rounderOf struct {
	estimators.Problem
	full     int
	controls bool
}

func (r rounderOf) FullRound(int) int                     { return r.full }
func (r rounderOf) Controlled(evidence.RankEvidence) bool { return r.controls }

// The pipeline's next round carries on every chain that stopped in a state, and tells it to go
// plain where the worker's problem finds its rank's controls do not pay (Rounder.Controlled), as
// estimators.RunRace does in process; a chain once plain stays plain.
func TestContinueTellsTheNextRoundToGoPlain(t *testing.T) {
	for _, c := range []struct {
		controls, before, want bool
	}{{true, false, false}, {false, false, true}, {true, true, true}} {
		f := &continueFn{Ranks: []int{1, 2}, rounder: rounderOf{full: 3, controls: c.controls}}
		results := []estimators.Result{
			{Task: estimators.Task{Rank: 1, Index: 2, Stage: 1, Plain: c.before}, State: []byte{1}},
			{Task: estimators.Task{Rank: 1, Index: 3, Stage: 1}}, // stopped without a state
		}
		next := func(r *estimators.Result) bool {
			if len(results) == 0 {
				return false
			}
			*r, results = results[0], results[1:]
			return true
		}
		v := verdict{Standing: evidence.Standing{Leader: 1}, Evidence: evidence.RankEvidence{Rank: 1}}
		var emitted []estimators.Task
		err := f.ProcessElement(context.Background(), 1, next, func(p *verdict) bool { *p = v; return true }, func(t estimators.Task) { emitted = append(emitted, t) })
		if err != nil {
			t.Fatal(err)
		}
		if len(emitted) != 1 || emitted[0].Round != 1 || emitted[0].Plain != c.want {
			t.Errorf("controls pay %v, plain before %v: emitted %+v, want one task of round 1, plain %v", c.controls, c.before, emitted, c.want)
		}
	}
}
