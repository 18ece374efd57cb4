package estimators

import "testing"

// TestTimeBudgetNextFits: the next round is expected to take twice the share of the elapsed time
// that the going-on ranks' chains of this round took of all the work so far, in CPU seconds
// (wall where a result has none); it fits when it would end by the deadline.
func TestTimeBudgetNextFits(t *testing.T) {
	const s = int64(1e9)
	chain := func(rank, round int, cpu, wall float64) Result {
		return Result{Task: Task{Rank: rank, Stage: 1, Round: round}, CPUSeconds: cpu, Seconds: wall}
	}
	byRank := map[int][]Result{
		// Rank 1: a start stage of 10 CPU seconds, chains of 10 in round 0 and 10 in round 1.
		1: {{Task: Task{Rank: 1}, CPUSeconds: 10}, chain(1, 0, 10, 99), chain(1, 1, 10, 99)},
		// Rank 2 reports wall seconds only: 10 in round 1.
		2: {chain(2, 1, 0, 10)},
	}
	// 40 CPU seconds in all took 100 s of wall time: a round of rank 1 alone, 10 CPU seconds,
	// is expected to take 2 × 100 × 10/40 = 50 s; with rank 2, 100 s.
	b := TimeBudget{Start: 0, Deadline: 160 * s}
	for _, c := range []struct {
		name string
		now  int64
		goOn map[int]bool
		want bool
	}{
		{"rank 1 ends at 150 s", 100 * s, map[int]bool{1: true}, true},
		{"ranks 1 and 2 would end at 200 s", 100 * s, map[int]bool{1: true, 2: false}, false},
		{"rank 2 alone ends at 150 s", 100 * s, map[int]bool{2: true}, true},
		{"rank 1 would end at 165 s", 110 * s, map[int]bool{1: true}, false},
		{"past the deadline", 170 * s, map[int]bool{}, false},
	} {
		if got := b.NextFits(c.now, byRank, 1, c.goOn); got != c.want {
			t.Errorf("%s: fits %v, want %v", c.name, got, c.want)
		}
	}
	if !(TimeBudget{}).NextFits(1e18, byRank, 1, map[int]bool{1: true}) {
		t.Error("no deadline: a round did not fit")
	}
}
