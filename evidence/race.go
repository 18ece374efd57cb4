package evidence

import (
	"fmt"
	"math"
	"slices"
)

// RaceZ is how many combined standard errors a rank's evidence must lie below the leader's for
// the race to leave it behind (Decide), and for a final choice to count as separated from it.
const RaceZ = 3

// Standing is where a race between ranks stands after a round: which ranks it has left behind,
// when and why. Every field is exported: it crosses Beam stages between rounds.
type Standing struct {
	// Round is the last round decided, and Leader the live rank with the highest evidence
	// then (0 when none is live).
	Round, Leader int
	// Left are the ranks the race no longer runs, in the order it left them.
	Left []Departure
	// TimeUp says the race stopped after Round because its next round would not have ended
	// within its time budget (select --time): the ranks it still ran are unresolved.
	TimeUp bool
}

// Departure is a rank the race left behind after Round: Leader's evidence lay Gap above its own,
// more than RaceZ times Sigma, their combined standard error, and the leader's start allowance;
// or it diverged (Diverged set). Allowance is the rank's own start allowance then.
type Departure struct {
	Rank, Round, Leader   int
	Gap, Sigma, Allowance float64
	Diverged              bool
}

// Live reports whether the race still runs rank.
func (s Standing) Live(rank int) bool {
	return !slices.ContainsFunc(s.Left, func(d Departure) bool { return d.Rank == rank })
}

// Why says in words why the race left rank behind; empty for a rank it still runs.
func (s Standing) Why(rank int) string {
	for _, d := range s.Left {
		if d.Rank != rank {
			continue
		}
		if d.Diverged {
			return fmt.Sprintf("diverged in round %d", d.Round)
		}
		return fmt.Sprintf("after round %d: %.4g below rank %d, %.1f combined standard errors", d.Round, d.Gap, d.Leader, d.Gap/d.Sigma)
	}
	return ""
}

// Decide is the race's standing after round, from every rank's latest evidence (those it left
// behind included): a live rank leaves when its chains diverged, or when its evidence lies more
// than RaceZ combined standard errors below the leader's, the live rank with the highest
// evidence, and the leader's StartAllowance more. A rank once left stays left.
func Decide(prev Standing, ranks []RankEvidence, round int) Standing {
	s := Standing{Round: round, Left: slices.Clone(prev.Left)}
	leader := -1
	for i, r := range ranks {
		if !s.Live(r.Rank) {
			continue
		}
		if len(r.Diverged) > 0 || math.IsNaN(r.LogEvidence) {
			s.Left = append(s.Left, Departure{Rank: r.Rank, Round: round, Diverged: true})
			continue
		}
		if leader < 0 || r.LogEvidence > ranks[leader].LogEvidence {
			leader = i
		}
	}
	if leader < 0 {
		return s
	}
	l := ranks[leader]
	s.Leader = l.Rank
	margin := l.StartAllowance()
	for _, r := range ranks {
		if !s.Live(r.Rank) || r.Rank == l.Rank {
			continue
		}
		gap, sigma := l.LogEvidence-r.LogEvidence, math.Hypot(l.StdErr, r.StdErr)
		if gap > RaceZ*sigma+margin {
			s.Left = append(s.Left, Departure{Rank: r.Rank, Round: round, Leader: l.Rank, Gap: gap, Sigma: sigma, Allowance: r.StartAllowance()})
		}
	}
	return s
}

// RacePrecision is the standard error, in nats, down to which a settled race refines its leader
// (Standing.Continues), where that costs at most 2^LeaderRounds times its round 0: on small data
// a rank's configured budget, on large data a fraction of it. Where ranks differ by thousands of
// nats the choice does not need more, and on small data the leader's estimate is as good as a
// run of the whole budget.
const RacePrecision = 0.5

// LeaderRounds is the last round in which a settled race refines its leader (RacePrecision)
// when its chains are steady (RankEvidence.Unsteady).
const LeaderRounds = 3

// MinESS is the fewest effective samples a rung's mean may rest on before its rank counts as
// unsteady (RankEvidence.Unsteady).
const MinESS = 10

// Continues reports whether rank runs round next, given its evidence after the round before:
// while the race is unresolved every live rank runs up to round last; once it is settled the
// leader alone runs on while its standard error is above RacePrecision, up to round
// min(last, LeaderRounds), and on up to round last while its chains are unsteady: an error bar
// computed from chains that barely moved or still drift may not cover its estimate, and the
// leader's is the one the verdict rests on. Within its configured rounds it stops instead where
// the race lets it go (lets).
func (s Standing) Continues(ranks []int, re RankEvidence, next, last int) bool {
	switch {
	case !s.Live(re.Rank) || next > last:
		return false
	case !s.Settled(ranks):
		return true
	}
	return re.Rank == s.Leader && re.StdErr > RacePrecision && (next <= LeaderRounds || re.Unsteady()) && !s.letsGo(re, next)
}

// letsGo reports whether a settled race's leader, which would run round next while its chains
// are unsteady, stops instead because the race lets it go (lets).
func (s Standing) letsGo(re RankEvidence, next int) bool {
	return re.Rank == s.Leader && next > LeaderRounds && re.StdErr > RacePrecision && re.Unsteady() && s.lets(re, next)
}

// lets reports whether a settled race lets its unsteady leader go before round next, within the
// rounds that reach its configured records (RankEvidence.FullRound): every rank it left lies
// further below than RaceZ combined standard errors, both their start allowances and the
// leader's half the number of parameters, where its estimate may still be bound (Laplace's
// scale, as StartAllowance). On large data a leader can climb out of its start for longer than
// any budget runs, thousands of nats below ranks tens of thousands apart: more rounds would
// not change the choice, and the allowance, which it then carries, says how far its number
// may be off. A leader near another rank, or alone, runs on as before.
func (s Standing) lets(re RankEvidence, next int) bool {
	if next > re.FullRound || re.ModeParams == 0 {
		return false
	}
	allowance, apart := float64(re.ModeParams)/2, 0
	for _, d := range s.Left {
		if d.Diverged {
			continue
		}
		apart++
		i := slices.IndexFunc(re.Rounds, func(k RoundEstimate) bool { return k.Round == d.Round })
		if d.Leader != re.Rank || i < 0 {
			return false
		}
		gap := d.Gap + re.LogEvidence - re.Rounds[i].LogEvidence
		if gap <= RaceZ*d.Sigma+allowance+d.Allowance {
			return false
		}
	}
	return apart > 0 // a race of one rank decides nothing: its leader's number is what was asked for
}

// Unsteady reports whether the rank's chains still drift (Drift), its estimate's last two moves
// between rounds went the same way (trending), or a rung's mean rests on fewer than MinESS
// effective samples.
func (re RankEvidence) Unsteady() bool {
	if re.Drift > 0 || trending(re.Rounds) {
		return true
	}
	for _, r := range re.Rungs {
		if r.Chains > 0 && r.ESS < MinESS {
			return true
		}
	}
	return false
}

// StartAllowance is how far from its value, either way and beyond its standard error, the rank's
// estimate may lie because its records cannot yet show a transient (testable). A chain that
// starts from a mode records log-likelihoods above its rung's until it has spread out, by about
// half the number of parameters at t = 1 (the gap between the mode's log-likelihood and the
// posterior mean's, by Laplace's approximation); on large data, where the start stage is cut
// short, it may start below its rung's instead. Half the number of parameters is the scale
// allowed, not a bound: Decide leaves behind only ranks that lie further than it below a leader
// that has one, and the verdict counts a rank as near the best within both of theirs
// (docs/method.md, the race). It is 0 for a testable estimate the race did not let go (LetGo) and
// where no chain started at a mode.
func (re RankEvidence) StartAllowance() float64 {
	if re.testable() && !re.LetGo {
		return 0
	}
	return float64(re.ModeParams) / 2
}

// testable reports whether a rank's estimate rests on records that can show a transient: half
// or more of its rungs hold MinESS effective samples.
func (re RankEvidence) testable() bool {
	var ess []float64
	for _, r := range re.Rungs {
		if r.Chains > 0 {
			ess = append(ess, r.ESS)
		}
	}
	if len(ess) == 0 {
		return true
	}
	slices.Sort(ess)
	return ess[len(ess)/2] >= MinESS
}

// Unresolved lists the live ranks other than the leader: those the race could not tell from it
// within its budget.
func (s Standing) Unresolved(ranks []int) []int {
	var out []int
	for _, r := range ranks {
		if s.Live(r) && r != s.Leader {
			out = append(out, r)
		}
	}
	return out
}

// Settled reports whether at most one of ranks is still live.
func (s Standing) Settled(ranks []int) bool {
	live := 0
	for _, r := range ranks {
		if s.Live(r) {
			live++
		}
	}
	return live <= 1
}

// RoundDrift is how far a racing rank's last estimate moved from the latest earlier round's that
// rests on fewer steps beyond what that one's noise explains: √(d² − σ²) where d stands out by
// more than RaceZ·σ, σ being the earlier standard error less its own drift (a bias measure, not
// noise: counting it would let an earlier transient hide a later one), and 0 otherwise or before
// round 1. Each round doubles the records, so a transient the chains have not left weighs half as
// much as the round before and the move measures what remains of it; the records' own drift
// (RankEvidence.Drift) misses a transient slower than a round's records. With nested estimates
// the move's variance is the earlier one's less the later one's, so σ² bounds it. A round that
// added no records (round 0 and 1 at the least records on large data) moved nothing and says
// nothing. A transient can also climb by steps that each stay within the round before's noise
// while two of them stand out: over two doublings it loses three quarters of itself, so a move
// from the round two back that stands out leaves a third of itself, and RoundDrift is the larger.
func RoundDrift(rounds []RoundEstimate) float64 {
	moves := recentMoves(rounds)
	drift := 0.0
	for i, m := range moves {
		drift = max(drift, m/float64(1+2*i))
	}
	return drift
}

// recentMoves is how far a rank's last estimate moved from each of the (up to) two latest
// earlier rounds that rest on fewer steps, beyond their noise (moved), the latest first.
func recentMoves(rounds []RoundEstimate) []float64 {
	at := recentRounds(rounds)
	var moves []float64
	for _, prev := range at[min(1, len(at)):] {
		moves = append(moves, moved(prev, at[0]))
	}
	return moves
}

// recentRounds is a rank's last round and up to two earlier ones, the latest first, each resting
// on fewer steps than the one after it (a round that added no records moved nothing).
func recentRounds(rounds []RoundEstimate) []RoundEstimate {
	var at []RoundEstimate
	for k := len(rounds) - 1; k >= 0 && len(at) < 3; k-- {
		if len(at) == 0 || rounds[k].Steps < at[len(at)-1].Steps {
			at = append(at, rounds[k])
		}
	}
	return at
}

// moved is how far last moved from prev beyond prev's noise (RoundDrift).
func moved(prev, last RoundEstimate) float64 {
	if prev.Steps >= last.Steps {
		return 0
	}
	d, noise := last.LogEvidence-prev.LogEvidence, prev.StdErr*prev.StdErr-prev.Drift*prev.Drift
	if d*d <= RaceZ*RaceZ*noise {
		return 0
	}
	return math.Sqrt(d*d - max(noise, 0))
}

// Final is ranks' evidence as the race reports it at its end: those it left behind as Left says,
// and a leader it let go (Continues) marked LetGo.
func (s Standing) Final(ranks []RankEvidence) []RankEvidence {
	out := slices.Clone(ranks)
	all := make([]int, len(ranks))
	for i, re := range ranks {
		all[i] = re.Rank
	}
	for i, re := range out {
		switch {
		case !s.Live(re.Rank):
			out[i] = re.Left()
		case s.Settled(all) && s.letsGo(re, re.Round+1):
			out[i].LetGo = true
		}
	}
	return out
}

// Left is a rank's evidence as the race leaves it behind. Its chains stop where they stand, and
// no later round shows how much of what they were in remains. A transient shrinks with each
// doubling of the records, so where the records can show one (testable) and the phase check
// found no basin the walk back did not reach (Phase), an estimate whose last two moves shared
// their sign and shrank, or stayed within their noise, is measured by its latest moves
// (RoundDrift, already in its error bar). Otherwise the path may be an excursion, and its error
// bar holds the largest move of its last estimate from any earlier round's beyond that round's
// noise (docs/method.md, the race).
func (re RankEvidence) Left() RankEvidence {
	n := len(re.Rounds)
	if n < 2 || math.IsNaN(re.LogEvidence) || re.testable() && !re.Phase && settling(re.Rounds) {
		return re
	}
	most, latest := 0.0, RoundDrift(re.Rounds)
	for _, prev := range re.Rounds[:n-1] {
		most = max(most, moved(prev, re.Rounds[n-1]))
	}
	if extra := most*most - latest*latest; extra > 0 {
		re.Drift = math.Sqrt(re.Drift*re.Drift + extra)
		re.StdErr = math.Sqrt(re.StdErr*re.StdErr + extra)
	}
	return re
}

// trending reports whether a rank's estimate moved the same way over each of its last two
// doublings, within their noise or not: a slow transient moves every rank's estimate by steps
// each within the round before's noise, which the two moves' agreement shows before either
// stands out; a stationary estimate does so half the time.
func trending(rounds []RoundEstimate) bool {
	at := recentRounds(rounds)
	return len(at) == 3 && (at[0].LogEvidence-at[1].LogEvidence)*(at[1].LogEvidence-at[2].LogEvidence) > 0
}

// settling reports whether a rank's estimate, over its last three rounds that rest on more steps
// each, moved twice within the noise (moved) or twice the same way by a shrinking step (Left).
func settling(rounds []RoundEstimate) bool {
	at := recentRounds(rounds)
	if len(at) < 3 {
		return false
	}
	if moved(at[1], at[0]) == 0 && moved(at[2], at[0]) == 0 {
		return true
	}
	last, before := at[0].LogEvidence-at[1].LogEvidence, at[1].LogEvidence-at[2].LogEvidence
	return last*before > 0 && math.Abs(last) <= math.Abs(before)
}

// ControlsPay reports whether the rank's control variates may remove more of its estimate's
// variance than their passes would as records, cost being their passes per record over a sweep's.
// They can remove at most the chains' own noise, StdErrPlain², where the replicas' spread is the
// larger part of StdErr (StdErr above StdErrWithin); as records, 1 + cost times the records
// remove about cost·StdErr² of it. They are judged only where they do not add noise (StdErrWithin
// at most StdErrPlain): from a few records their slopes are noise, which inflates the replicas'
// spread too. Where no chain carried them (StdErrPlain 0) there is nothing to weigh.
func (re RankEvidence) ControlsPay(cost float64) bool {
	plain, within, total := re.StdErrPlain*re.StdErrPlain, re.StdErrWithin*re.StdErrWithin, re.StdErr*re.StdErr
	return re.StdErrPlain == 0 || within > plain || total <= within || plain > cost*total
}
