package transforms

import (
	"context"
	"testing"

	"github.com/stirank/stirank/estimators"
)

// The pipeline's next round carries on every chain of a rank that goes on and that stopped in a
// state, plain where the judge says so (estimators.Judge), as estimators.RunRace does in
// process; a chain once plain stays plain, and a rank that does not go on stops.
func TestContinueCarriesOnTheRanksThatGoOn(t *testing.T) {
	for _, c := range []struct {
		plain, before, want bool
	}{{false, false, false}, {true, false, true}, {false, true, true}} {
		results := []estimators.Result{
			{Task: estimators.Task{Rank: 1, Index: 2, Stage: 1, Plain: c.before}, State: []byte{1}},
			{Task: estimators.Task{Rank: 1, Index: 3, Stage: 1}},                   // stopped without a state
			{Task: estimators.Task{Rank: 2, Index: 2, Stage: 1}, State: []byte{1}}, // its rank stops
		}
		next := func(r *estimators.Result) bool {
			if len(results) == 0 {
				return false
			}
			*r, results = results[0], results[1:]
			return true
		}
		g := goOn{Ranks: []int{1}, Plain: []bool{c.plain}}
		var emitted []estimators.Task
		err := (&continueFn{}).ProcessElement(context.Background(), 7, next, func(p *goOn) bool { *p = g; return true }, func(t estimators.Task) { emitted = append(emitted, t) })
		if err != nil {
			t.Fatal(err)
		}
		if len(emitted) != 1 || emitted[0].Rank != 1 || emitted[0].Round != 1 || emitted[0].Plain != c.want {
			t.Errorf("plain %v, plain before %v: emitted %+v, want one task of rank 1, round 1, plain %v", c.plain, c.before, emitted, c.want)
		}
	}
}
