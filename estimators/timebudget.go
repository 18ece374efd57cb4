package estimators

// TimeBudget is the wall-clock time a race may take (select --time): it starts no round it
// does not expect to end by Deadline. Start and Deadline are Unix times in nanoseconds; the
// zero TimeBudget has no deadline.
type TimeBudget struct {
	Start, Deadline int64
}

// NextFits reports whether the round after round, run by the ranks that go on (goOn), is
// expected to end by the deadline at time now (Unix nanoseconds), from every result so far
// (byRank). The next round doubles the records of this one, so it is expected to take twice
// the share of the time elapsed since Start that the going-on ranks' chains of this round
// took of all the work so far, counted in CPU seconds (wall seconds where a runner reports
// none). Twice is an upper bound where a round repeats the records of the one before (round 0
// to 1): the budget errs towards stopping early rather than overrunning.
func (b TimeBudget) NextFits(now int64, byRank map[int][]Result, round int, goOn map[int]bool) bool {
	if b.Deadline == 0 {
		return true
	}
	if now >= b.Deadline {
		return false
	}
	var all, next float64
	for rank, rs := range byRank {
		_, goes := goOn[rank]
		for _, r := range rs {
			c := r.CPUSeconds
			if c <= 0 {
				c = r.Seconds
			}
			all += c
			if goes && r.Task.Stage == 1 && r.Task.Round == round {
				next += c
			}
		}
	}
	if all <= 0 {
		return true
	}
	return float64(now)+2*float64(now-b.Start)*next/all <= float64(b.Deadline)
}
