package evidence

import (
	"math"
	"slices"
	"testing"

	"github.com/stirank/stirank/rng"
)

func TestDecideLeavesRanksBeyondTheirErrorsBehind(t *testing.T) {
	ev := func(rank int, v, se float64) RankEvidence {
		return RankEvidence{Rank: rank, LogEvidence: v, StdErr: se}
	}
	ranks := []int{1, 2, 3, 4, 5}
	round0 := []RankEvidence{
		ev(1, -1000, 5), // far below: leaves
		ev(2, -110, 3),  // 10 below, combined 3.6: 2.8 standard errors, stays
		ev(3, -100, 2),  // the leader
		ev(4, -120, 6),  // 20 below, combined 6.3: 3.2 standard errors, leaves
		{Rank: 5, LogEvidence: math.NaN(), Diverged: []string{"rank 5, t=1, chain 0: NaN"}},
	}
	s := Decide(Standing{Round: -1}, round0, 0)
	if s.Leader != 3 || s.Round != 0 {
		t.Fatalf("leader %d after round %d, want 3 after 0", s.Leader, s.Round)
	}
	for _, r := range []int{1, 4, 5} {
		if s.Live(r) || s.Why(r) == "" {
			t.Errorf("rank %d still live (why %q)", r, s.Why(r))
		}
	}
	if !s.Live(2) || !s.Live(3) || s.Settled(ranks) {
		t.Errorf("ranks 2 and 3 should still race: %+v", s.Left)
	}
	if got := s.Unresolved(ranks); !slices.Equal(got, []int{2}) {
		t.Errorf("unresolved %v, want [2]", got)
	}
	// Every live rank runs the next round, up to its last.
	if !s.Continues(ranks, round0[1], 1, 3) || s.Continues(ranks, round0[1], 4, 3) || s.Continues(ranks, round0[0], 1, 3) {
		t.Error("Continues: live ranks run until their last round, others not")
	}
	// A rank once left stays left, even when a later round would keep it.
	round1 := []RankEvidence{ev(1, -100, 5), ev(2, -101.5, 0.5), ev(3, -100.5, 0.5), ev(4, -100, 6), round0[4]}
	s = Decide(s, round1, 1)
	if s.Live(1) || s.Live(4) {
		t.Error("a rank left behind came back")
	}
	// Rank 2 lies 1 below, 1.4 combined standard errors: it stays.
	if s.Leader != 3 || !s.Live(2) {
		t.Errorf("leader %d, rank 2 live %v", s.Leader, s.Live(2))
	}
	round2 := []RankEvidence{ev(1, -100, 5), ev(2, -104, 0.5), ev(3, -100, 0.8), ev(4, -100, 6), round0[4]}
	s = Decide(s, round2, 2)
	if !s.Settled(ranks) || s.Live(2) {
		t.Fatalf("rank 2, 4 below with 0.94 combined, should have left: %+v", s.Left)
	}
	// Settled, the leader alone refines its error down to RacePrecision, up to LeaderRounds.
	if !s.Continues(ranks, round2[2], 3, 10) || s.Continues(ranks, round2[2], LeaderRounds+1, 10) {
		t.Error("the leader of a settled race refines up to LeaderRounds")
	}
	// An unsteady leader goes on past LeaderRounds, up to its last round.
	unsteady := round2[2]
	unsteady.Rungs = []Rung{{T: 0.5, Chains: 2, ESS: MinESS / 2}, {T: 1, Chains: 2, ESS: 100}}
	if !unsteady.Unsteady() || round2[2].Unsteady() {
		t.Error("Unsteady: a rung with fewer than MinESS effective samples makes a rank unsteady")
	}
	if !s.Continues(ranks, unsteady, LeaderRounds+1, 10) || s.Continues(ranks, unsteady, 11, 10) {
		t.Error("an unsteady leader refines up to its last round")
	}
	if drifting := (RankEvidence{Rank: 3, LogEvidence: -100, StdErr: 0.8, Drift: 1}); !s.Continues(ranks, drifting, LeaderRounds+1, 10) {
		t.Error("a drifting leader refines past LeaderRounds")
	}
	if s.Continues(ranks, ev(3, -100, RacePrecision/2), 3, 10) {
		t.Error("a leader within RacePrecision goes on")
	}
	if s.Continues(ranks, round2[1], 3, 10) {
		t.Error("a rank left behind goes on")
	}
}

// A leader whose estimate rests on too few records to show a transient leaves behind only ranks
// further below it than half its number of parameters beyond RaceZ combined standard errors: on
// large data its round-0 estimate lies thousands of nats above its later ones. Diverged ranks
// leave all the same.
func TestDecideWaitsForATestableLeader(t *testing.T) {
	rungs := func(ess ...float64) []Rung {
		out := []Rung{{T: 0}}
		for _, e := range ess {
			out = append(out, Rung{ESS: e, Chains: 2})
		}
		return out
	}
	near := RankEvidence{Rank: 2, LogEvidence: -5000, StdErr: 10, Rungs: rungs(4, 4, 4)}
	far := RankEvidence{Rank: 3, LogEvidence: -20000, StdErr: 10, Rungs: rungs(4, 4, 4)}
	diverged := RankEvidence{Rank: 4, LogEvidence: math.NaN(), Diverged: []string{"rank 4, t=1, chain 0: NaN"}}
	for _, c := range []struct {
		ess       []float64
		leaveNear bool
	}{
		{[]float64{4, 4, 4}, false},
		{[]float64{4, 9, 30}, false},
		{[]float64{4, 10, 30}, true},
	} {
		// 19 000 parameters: an untestable leader's margin is 9 500 nats.
		leader := RankEvidence{Rank: 1, LogEvidence: -100, StdErr: 10, ModeParams: 19000, Rungs: rungs(c.ess...)}
		s := Decide(Standing{Round: -1}, []RankEvidence{leader, near, far, diverged}, 0)
		if s.Leader != 1 || s.Live(2) == c.leaveNear || s.Live(3) || s.Live(4) {
			t.Errorf("leader's ESS %v: leader %d, live: rank 2 %v (want %v), rank 3 %v, diverged rank 4 %v", c.ess, s.Leader, s.Live(2), !c.leaveNear, s.Live(3), s.Live(4))
		}
	}
}

func TestDriftShowsATransientAndNotItsNoise(t *testing.T) {
	l := Ladder{0, 0.5, 1}
	chain := func(ti, ch int, mean, half float64) ChainSummary {
		return ChainSummary{Rank: 2, TIndex: ti, T: l[ti], Chain: ch, Count: 100, Mean: mean, M2: 99 * 4, ESS: 100, HalfMean: half, HalfCount: 50}
	}
	var still, drifting []ChainSummary
	for ti := range l {
		for ch := range 2 {
			// The rungs' noise is 0.2 per chain: halves 0.1 apart are noise.
			still = append(still, chain(ti, ch, -10*float64(3-ti), -10*float64(3-ti)+0.1))
			drifting = append(drifting, chain(ti, ch, -10*float64(3-ti), -10*float64(3-ti)+5))
		}
	}
	re, err := Combine(l, still)
	if err != nil {
		t.Fatal(err)
	}
	if re.Drift != 0 {
		t.Errorf("drift %v of chains whose halves agree within their noise", re.Drift)
	}
	re2, err := Combine(l, drifting)
	if err != nil {
		t.Fatal(err)
	}
	if re2.Drift < 4 || re2.StdErr < re2.Drift || math.Abs(re2.StdErr-math.Hypot(re.StdErr, re2.Drift)) > 1e-9 {
		t.Errorf("drift %v, stderr %v (without drift %v): a transient of 5 nats at every rung", re2.Drift, re2.StdErr, re.StdErr)
	}
}

// A rank whose estimate moved between its last two rounds by more than RaceZ of the earlier
// standard error drifts by what the move has beyond that noise; a move within it, or a single
// round, does not.
func TestRoundDrift(t *testing.T) {
	for _, c := range []struct {
		rounds []RoundEstimate
		want   float64
	}{
		{nil, 0},
		{[]RoundEstimate{{LogEvidence: -100, StdErr: 3, Steps: 10}}, 0},
		{[]RoundEstimate{{LogEvidence: -100, StdErr: 3, Steps: 10}, {LogEvidence: -92, StdErr: 2, Steps: 20}}, 0},
		// The move from two rounds back leaves a third of itself, more than the last move here.
		{[]RoundEstimate{{LogEvidence: -120, StdErr: 4, Steps: 10}, {LogEvidence: -100, StdErr: 1, Steps: 20}, {LogEvidence: -95, StdErr: 0.5, Steps: 40}}, math.Sqrt(625-16) / 3},
		// A climb by steps that each stay within the round before's noise, which together stand out.
		{[]RoundEstimate{{LogEvidence: -100, StdErr: 10, Steps: 10}, {LogEvidence: -80, StdErr: 8, Steps: 20}, {LogEvidence: -65, StdErr: 1, Steps: 40}}, math.Sqrt(1225-100) / 3},
		{[]RoundEstimate{{LogEvidence: -738162, StdErr: 4130, Steps: 10}, {LogEvidence: -722633, StdErr: 2913, Steps: 20}, {LogEvidence: -711040, StdErr: 1461, Steps: 40}}, math.Sqrt(11593*11593 - 2913*2913)},
		// The earlier round's own drift is a bias, not noise: the move is measured against the rest.
		{[]RoundEstimate{{LogEvidence: -100, StdErr: 5, Drift: 4, Steps: 10}, {LogEvidence: -90, StdErr: 1, Steps: 20}}, math.Sqrt(100 - 9)},
		// A round that added no records moved nothing: the move is measured from the round before it.
		{[]RoundEstimate{{LogEvidence: -120, StdErr: 1, Steps: 10}, {LogEvidence: -100, StdErr: 1, Steps: 20}, {LogEvidence: -100, StdErr: 1, Steps: 20}}, math.Sqrt(400 - 1)},
	} {
		if got := RoundDrift(c.rounds); math.Abs(got-c.want) > 1e-6*max(1, c.want) {
			t.Errorf("%+v: drift %v, want %v", c.rounds, got, c.want)
		}
	}
}

// A rank left behind keeps in its error bar the largest move from any earlier round, not only
// the latest two, where its path turned back or grew: rounds 1–3 climb by a growing step, and
// all lie far below round 0. A rank whose last two doublings left it in place, or moved it the
// same way by a shrinking step, keeps its own where its records can show a transient and no
// phase check parted.
func TestLeftKeepsTheLargestMove(t *testing.T) {
	rounds := []RoundEstimate{
		{Round: 0, LogEvidence: -100, StdErr: 1, Steps: 10},
		{Round: 1, LogEvidence: -3000, StdErr: 60, Steps: 20},
		{Round: 2, LogEvidence: -2950, StdErr: 50, Steps: 40},
		{Round: 3, LogEvidence: -2700, StdErr: 40, Steps: 80},
	}
	latest := RoundDrift(rounds)
	if want := math.Sqrt(250*250 - 50*50); math.Abs(latest-want) > 1e-9 {
		t.Fatalf("RoundDrift %v, want %v", latest, want)
	}
	re := RankEvidence{Rank: 2, LogEvidence: -2700, StdErr: math.Hypot(40, latest), Drift: latest, Rounds: rounds}
	left := re.Left()
	if want := math.Sqrt(2600*2600 - 1); math.Abs(left.Drift-want) > 1e-9 || math.Abs(left.StdErr-math.Hypot(40, want)) > 1e-9 {
		t.Errorf("left: drift %v, stderr %v; want %v and %v", left.Drift, left.StdErr, want, math.Hypot(40, want))
	}
	rounds[3].LogEvidence = -2900
	steady := RankEvidence{Rank: 2, LogEvidence: -2900, StdErr: 40, Rounds: rounds}
	if d := RoundDrift(rounds); d != 0 {
		t.Fatalf("RoundDrift %v, want 0: the last round moved within the noise of the two before", d)
	}
	if got := steady.Left(); got.StdErr != steady.StdErr || got.Drift != 0 {
		t.Errorf("a rank two doublings left in place widened: %+v", got)
	}
	// A transient that falls by shrinking steps keeps the error bar its latest moves give it.
	settling := []RoundEstimate{rounds[0], rounds[1], {Round: 2, LogEvidence: -3600, StdErr: 50, Steps: 40}, {Round: 3, LogEvidence: -3800, StdErr: 40, Steps: 80}}
	re = RankEvidence{Rank: 2, LogEvidence: -3800, StdErr: math.Hypot(40, RoundDrift(settling)), Rounds: settling}
	if got := re.Left(); got.StdErr != re.StdErr {
		t.Errorf("a settling transient widened from %v to %v", re.StdErr, got.StdErr)
	}
	// Records that cannot show a transient cannot tell a settling one from an excursion, nor
	// chains in a basin the walk back up did not reach.
	phase := re
	phase.Phase = true
	re.Rungs = []Rung{{Chains: 2, ESS: 4}, {Chains: 2, ESS: 4}, {Chains: 2, ESS: 40}}
	for name, r := range map[string]RankEvidence{"an untestable": re, "a phase-flagged": phase} {
		if got := r.Left(); !(got.StdErr > 3000) {
			t.Errorf("%s rank's fall kept %v, want its move from round 0", name, got.StdErr)
		}
	}
	short := RankEvidence{Rank: 2, LogEvidence: -2950, StdErr: 50, Rounds: rounds[:3]}
	if got := short.Left(); !(got.StdErr > 2500) {
		t.Errorf("a rank with one doubling since its move kept %v, want its move from round 0", got.StdErr)
	}
}

// Once the race is settled, the leader runs on past LeaderRounds while its last two moves went
// the same way, each within its noise, and stops where they parted.
func TestLeaderRunsOnWhileItTrends(t *testing.T) {
	rounds := []RoundEstimate{
		{Round: 3, LogEvidence: -1000, StdErr: 150, Steps: 20},
		{Round: 4, LogEvidence: -1240, StdErr: 60, Steps: 40},
		{Round: 5, LogEvidence: -1360, StdErr: 55, Steps: 80},
	}
	if d := RoundDrift(rounds); d != 0 {
		t.Fatalf("RoundDrift %v: the moves should stay within their noise", d)
	}
	s := Standing{Round: 5, Leader: 1, Left: []Departure{{Rank: 2, Round: 3, Leader: 1, Gap: 900, Sigma: 100}}}
	leader := RankEvidence{Rank: 1, LogEvidence: -1360, StdErr: 55, Rounds: rounds, Rungs: []Rung{{Chains: 2, ESS: 40}}}
	if !s.Continues([]int{1, 2}, leader, 6, 7) {
		t.Error("a leader that fell twice stopped")
	}
	rounds[2].LogEvidence = -1200
	if s.Continues([]int{1, 2}, leader, 6, 7) {
		t.Error("a leader whose last moves parted ran on")
	}
}

// A settled race lets an unsteady leader go after LeaderRounds, within its configured rounds, where
// every rank it left lies further below than RaceZ combined standard errors and the leader's
// half number of parameters, counting the leader's moves since; its final estimate carries that
// allowance. A leader nearer, alone, or in rounds past its configured records runs on as before.
func TestARaceLetsAFarLeaderGo(t *testing.T) {
	ranks := []int{1, 2}
	leader := func(at3 float64, full int) RankEvidence {
		return RankEvidence{Rank: 1, LogEvidence: at3, StdErr: 10, Drift: 5, ModeParams: 1000, FullRound: full, Round: 3,
			Rounds: []RoundEstimate{{Round: 0, LogEvidence: -1000, StdErr: 10}, {Round: 3, LogEvidence: at3, StdErr: 10, Drift: 5}}}
	}
	race := func(other float64) Standing {
		return Decide(Standing{Round: -1}, []RankEvidence{leader(-1000, 7), {Rank: 2, LogEvidence: other, StdErr: 100}}, 0)
	}
	far, near := race(-2000), race(-1500) // 1 000 and 500 below, combined standard error 100.5
	if !far.Settled(ranks) || !near.Settled(ranks) {
		t.Fatalf("rank 2 should have left: %+v, %+v", far.Left, near.Left)
	}
	for _, c := range []struct {
		name    string
		s       Standing
		re      RankEvidence
		last    int
		letsGo  bool
		allowed float64
	}{
		{"apart", far, leader(-1000, 7), 7, true, 500},
		{"apart after climbing", far, leader(-900, 7), 7, true, 500},
		{"within the leader's allowance", near, leader(-1000, 7), 7, false, 0},
		{"fallen within it", far, leader(-1200, 7), 7, false, 0}, // 800 below: 301.5 + 500 more
		{"past its configured rounds", far, leader(-1000, 3), 7, false, 0},
		{"alone", Decide(Standing{Round: -1}, []RankEvidence{leader(-1000, 7)}, 0), leader(-1000, 7), 7, false, 0},
	} {
		in := ranks
		if c.name == "alone" {
			in = ranks[:1]
		}
		if got := c.s.Continues(in, c.re, LeaderRounds+1, c.last); got == c.letsGo {
			t.Errorf("%s: Continues %v", c.name, got)
		}
		final := c.s.Final([]RankEvidence{c.re, {Rank: 2, LogEvidence: -2000, StdErr: 100}})
		if got := final[0].StartAllowance(); got != c.allowed || final[0].LetGo != c.letsGo {
			t.Errorf("%s: final allowance %v (let go %v), want %v", c.name, got, final[0].LetGo, c.allowed)
		}
	}
	steady := leader(-1000, 7)
	steady.Drift, steady.Rounds[1].Drift = 0, 0
	if far.Continues(ranks, steady, LeaderRounds+1, 7) || far.Final([]RankEvidence{steady})[0].LetGo {
		t.Error("a steady leader stops at LeaderRounds as before and is not let go")
	}
}

// Control variates pay where the chains' own noise, which is all they remove, is a material part
// of a rank's variance: with records y = 3z + e they remove most of it, unless the replicas'
// spread, which they leave, is much larger; without variates there is nothing to
// weigh.
func TestControlsPayWhereTheChainsNoiseCounts(t *testing.T) {
	r := rng.New(4, 1)
	l := Ladder{0, 0.5, 1}
	rank := func(spread float64, variates bool) RankEvidence {
		var cs []ChainSummary
		for i, temp := range l {
			for chain := range 2 {
				y, z := make([]float64, 200), make([]float64, 200)
				for k := range y {
					z[k] = r.NormFloat64()
					y[k] = 3*z[k] + 0.1*r.NormFloat64() + spread*float64(chain)
				}
				c := steinSummary(y, [][]float64{z})
				if !variates {
					c = ChainSummary{Count: c.Count, Mean: c.Mean, M2: c.M2, ESS: c.ESS}
				}
				c.Rank, c.TIndex, c.T, c.Chain = 2, i, temp, chain
				cs = append(cs, c)
			}
		}
		re, err := Combine(l, cs)
		if err != nil {
			t.Fatal(err)
		}
		return re
	}
	const cost = 1.0 / 6 // a Stein pass beside a 3-way tensor's sweep
	agree, apart, none := rank(0, true), rank(3, true), rank(0, false)
	if agree.StdErrPlain < 2*agree.StdErrWithin || !agree.ControlsPay(cost) {
		t.Errorf("replicas that agree: plain %.3g, controlled %.3g, total %.3g: the controls should pay", agree.StdErrPlain, agree.StdErrWithin, agree.StdErr)
	}
	if apart.ControlsPay(cost) {
		t.Errorf("replicas 3 apart: plain %.3g, controlled %.3g, total %.3g: the controls should not pay", apart.StdErrPlain, apart.StdErrWithin, apart.StdErr)
	}
	if none.StdErrPlain != 0 || !none.ControlsPay(cost) {
		t.Errorf("no variates: StdErrPlain %v", none.StdErrPlain)
	}
}

// Controls that add noise, as slopes from a few records do, are not judged: their inflated
// spread says nothing of what they would remove later.
func TestControlsAreNotJudgedWhileTheyAddNoise(t *testing.T) {
	const cost = 1.0 / 6
	noisy := RankEvidence{StdErr: 51, StdErrWithin: 51, StdErrPlain: 2.3}
	inflated := RankEvidence{StdErr: 958, StdErrWithin: 902, StdErrPlain: 2.5}
	apart := RankEvidence{StdErr: 1230, StdErrWithin: 40, StdErrPlain: 64}
	if !noisy.ControlsPay(cost) || !inflated.ControlsPay(cost) || apart.ControlsPay(cost) {
		t.Errorf("ControlsPay: %v and %v (want true: controls adding noise), %v (want false)", noisy.ControlsPay(cost), inflated.ControlsPay(cost), apart.ControlsPay(cost))
	}
}
