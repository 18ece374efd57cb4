package sti

import (
	"context"
	"math"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/progress"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// On an 8×8 table with counts in the hundreds at rank 4, a chain at t ≈ 0.15 started at the t = 1
// mode spends its first sweeps well above the rung's typical log-likelihood; started from its
// replica's descent it is there from the first sweep. Over 48 replicas, the mean of the first 20
// sweeps from the descent is within 3 standard errors of the mean of sweeps 500–1500 of long
// chains, and the mean from the mode is not. (The transfer moves, models.transferRow, bring a
// chain from the mode down faster: over 16 replicas its first 40 sweeps were only 1.3 standard
// errors above equilibrium.)
func TestDescentStartsAtEquilibrium(t *testing.T) {
	cfg := Default("nmf")
	cfg.Descent, cfg.Chains, cfg.Relax = 20, 48, 0
	p, model, modes := tableModes(t, cfg)
	const R = 4
	ctx := context.Background()
	ti := cfg.Ladder.Nearest(0.15)
	temp := cfg.Ladder[ti]
	st, err := p.StartRank(ctx, R)
	if err != nil {
		t.Fatal(err)
	}
	// mean runs a chain from theta at the rung and returns the mean log-likelihood of its sweeps
	// from..to.
	mean := func(theta []float64, c uint64, from, to int) float64 {
		theta = append([]float64(nil), theta...)
		mv := newMover(model)
		r := rng.New(11, c)
		acc := make([]float64, mv.blocks())
		s := 0.0
		for k := 1; k <= to; k++ {
			ll := mv.move(r, temp, 1, nil, theta, acc)
			if k > from {
				s += ll
			}
		}
		return s / float64(to-from)
	}
	var eq, fromMode, fromDescent []float64
	for c := range cfg.Chains {
		eq = append(eq, mean(modes[0], uint64(c), 500, 1500))
		fromMode = append(fromMode, mean(modes[0], uint64(100+c), 0, 20))
		fromDescent = append(fromDescent, mean(st.States[c][ti].Theta, uint64(200+c), 0, 20))
	}
	e, es := evidence.MeanStdErr(eq)
	a, as := evidence.MeanStdErr(fromMode)
	b, bs := evidence.MeanStdErr(fromDescent)
	t.Logf("t=%.4g: long chains %.2f ± %.2f, first 20 sweeps from the mode %.2f ± %.2f, from the descent %.2f ± %.2f", temp, e, es, a, as, b, bs)
	if z := (b - e) / math.Hypot(bs, es); math.Abs(z) > 3 {
		t.Errorf("from the descent the first sweeps are %.1f standard errors from equilibrium", z)
	}
	if z := (a - e) / math.Hypot(as, es); z < 3 {
		t.Errorf("from the mode the first sweeps are only %.1f standard errors above equilibrium: the test no longer tests the descent", z)
	}
}

// tableModes is the problem of the 8×8 table with counts in the hundreds under cfg, its rank-4
// model and that rank's modes (one per replica).
func tableModes(t *testing.T, cfg Config) (*Problem, models.Model, [][]float64) {
	t.Helper()
	d, rates := poissonData(t, []int{8, 8}, 4, 0.15, 3)
	p, err := NewProblem(d, models.PoissonSpec("nmf", rates, models.LogScale), cfg)
	if err != nil {
		t.Fatal(err)
	}
	model, err := p.model(4)
	if err != nil {
		t.Fatal(err)
	}
	modes, _, _, err := p.searchModes(context.Background(), model, 4)
	if err != nil {
		t.Fatal(err)
	}
	return p, model, modes
}

// A rank's start stage depends on the seed and the rank alone: the same bits on one core and
// on three, a state at every rung above 0 of every replica, each rung's different from the one
// above, the replicas' different from each other's, and the phase check's start the first
// replica's at the check's rung, and each replica searched for a mode of its own. Its steps count
// what it spent: each replica's mode search, relaxation and descent.
func TestStartRankIsItsStreams(t *testing.T) {
	d, rates := poissonData(t, []int{10, 8}, 2, 0.5, 5)
	cfg := Default("nmf")
	cfg.Ladder = evidence.Power(6, 4)
	cfg.Steps, cfg.Burnin, cfg.Descent, cfg.Relax = 30, 10, 5, 20
	cfg.Starts, cfg.StartSteps, cfg.StartEM = 2, 0, 20
	cfg.SteinBelow = 0 // the replicas' modes are their Stein centres
	p, err := NewProblem(d, models.PoissonSpec("nmf", rates, models.LogScale), cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := func(procs int) (*RankStart, int) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var mu sync.Mutex
		spent := 0
		ctx := progress.With(context.Background(), func(s int) {
			mu.Lock()
			spent += s
			mu.Unlock()
		})
		st, err := p.StartRank(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		return st, spent
	}
	a, spent := start(1)
	b, _ := start(3)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the start stage differs with the number of cores")
	}
	for q, rungs := range a.States {
		if rungs[0].Theta != nil {
			t.Errorf("replica %d has a state at t = 0", q)
		}
		for i := 1; i < len(rungs); i++ {
			if rungs[i].Theta == nil || (i+1 < len(rungs) && slices.Equal(rungs[i].Theta, rungs[i+1].Theta)) {
				t.Errorf("replica %d, rung %d: no state, or the rung above's", q, i)
			}
		}
	}
	top := len(cfg.Ladder) - 1
	if slices.Equal(a.States[0][top].Theta, a.States[1][top].Theta) {
		t.Error("the replicas relaxed to the same state")
	}
	if !slices.Equal(a.Check, a.States[0][a.CheckFrom].Theta) {
		t.Error("the phase check does not start from the first replica's state at its rung")
	}
	if c0, c1 := a.States[0][top].Center, a.States[1][top].Center; c0 == nil || slices.Equal(c0, c1) {
		t.Error("the replicas share one mode (their Stein centres), or have none")
	}
	em := cfg.Chains * (cfg.replicaStarts()*cfg.screenEM() + cfg.StartEM - cfg.screenEM()) * emPasses(2)
	walks := cfg.Chains * (cfg.Relax + cfg.Descent*top) * models.SweepPasses(2)
	if a.Steps != em+walks || spent != a.Steps {
		t.Errorf("the start stage counts %d steps and reported %d; its mode search and walks made %d", a.Steps, spent, em+walks)
	}
}

// A chain carried on round after round is the chain it would be in one go: its records grow to
// RoundRecords of each round, a retried round gives the same bits, its steps count its sweeps
// (and at rank 1 the passes of its Stein variates) as it reports them, and its summary rests on
// all its records.
func TestExtendCarriesAChainOn(t *testing.T) {
	p, cfg := roundsProblem(t)
	for _, rank := range []int{1, 2} {
		st, err := p.StartRank(context.Background(), rank)
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range []int{0, 3, len(cfg.Ladder) - 1} {
			id := ChainID{Rank: rank, TIndex: ti, Chain: 1}
			state := &st.States[1][ti]
			for round := 0; round <= p.Doublings(rank)+1; round++ {
				spent := 0
				ctx := progress.With(context.Background(), func(s int) { spent += s })
				sum, next, err := p.Extend(ctx, id, round, state)
				if err != nil || next == nil {
					t.Fatalf("rank %d, rung %d, round %d: %v", rank, ti, round, err)
				}
				again, _, _ := p.Extend(context.Background(), id, round, state)
				if !reflect.DeepEqual(sum, again) {
					t.Errorf("rank %d, rung %d, round %d: a retried round differs", rank, ti, round)
				}
				if len(next.Records) != p.RoundRecords(rank, ti, round) || sum.Count > len(next.Records) || sum.Count < len(next.Records)/2 {
					t.Errorf("rank %d, rung %d, round %d: %d records (%d summarised), want %d", rank, ti, round, len(next.Records), sum.Count, p.RoundRecords(rank, ti, round))
				}
				if !slices.Equal(next.Records[:len(state.Records)], state.Records) {
					t.Errorf("rank %d, rung %d, round %d: the records before the round changed", rank, ti, round)
				}
				if spent != sum.Steps-state.Steps || sum.Steps != next.Steps {
					t.Errorf("rank %d, rung %d, round %d: reported %d steps, the round counts %d", rank, ti, round, spent, sum.Steps-state.Steps)
				}
				if ti > 0 && round == 0 && next.Sweeps != scaled(cfg.Burnin, p.startScale(rank), 1)+len(next.Records) {
					t.Errorf("rank %d, rung %d: %d sweeps for %d records after the burn-in", rank, ti, next.Sweeps, len(next.Records))
				}
				state = next
			}
		}
	}
	if p.RoundRecords(2, 3, p.Doublings(2)) != p.Records(2, 3) {
		t.Errorf("round %d holds %d records, the configuration %d", p.Doublings(2), p.RoundRecords(2, 3, p.Doublings(2)), p.Records(2, 3))
	}
}

// A chain's state crosses Beam stages in single precision: half the bytes of its parameters, and
// a state read back is the same state when it crosses again.
func TestChainStateCrossesInSinglePrecision(t *testing.T) {
	const n = 10000
	s := ChainState{Theta: make([]float64, n), Center: make([]float64, n), Records: []float64{-1.5, -2.25}, Rates: []float64{0.5, 2, 1, 0.25, 4, 1}, Budget: 7, Warm: true, Plain: true, Sweeps: 3, Steps: 4, CellEvals: 5}
	for i := range s.Theta {
		s.Theta[i] = math.Log(float64(i+1)) / 3
		s.Center[i] = -s.Theta[i]
	}
	b, err := s.GobEncode()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 2*4*n+300 { // the rest: the records, the rates and gob's field names
		t.Errorf("%d parameters and centre coordinates take %d bytes, more than single precision", 2*n, len(b))
	}
	var got ChainState
	if err := got.GobDecode(b); err != nil {
		t.Fatal(err)
	}
	for i := range s.Theta {
		if got.Theta[i] != float64(float32(s.Theta[i])) || got.Center[i] != float64(float32(s.Center[i])) {
			t.Fatalf("coordinate %d: %g, %g read back as %g, %g", i, s.Theta[i], s.Center[i], got.Theta[i], got.Center[i])
		}
	}
	if !slices.Equal(got.Records, s.Records) || !slices.Equal(got.Rates, s.Rates) || got.Budget != 7 || !got.Warm || got.Sweeps != 3 || got.Steps != 4 || got.CellEvals != 5 {
		t.Errorf("read back %+v", got)
	}
	again, err := got.GobEncode()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again, b) {
		t.Error("a state read back encodes to other bytes")
	}
}

// settle sweeps at least least times and at most most, and until its trail holds trailLength
// log-likelihoods; from a state at equilibrium (on the 8×8 table at t ≈ 0.15, after 300 sweeps
// from the mode) it stops there about as often as a trend test on stationary sweeps passes, nine
// times in ten. What it buys on a start cut to a sixteenth (a 257×291 speech mixture) is
// docs/method.md's.
func TestSettleSweepsWhileTheWalkMoves(t *testing.T) {
	cfg := Default("nmf")
	_, model, modes := tableModes(t, cfg)
	const replicas = 24
	ctx := context.Background()
	temp := cfg.Ladder[cfg.Ladder.Nearest(0.15)]
	settled := func(theta []float64, c uint64, least, most int) int {
		w := newRungWalk(model, append([]float64(nil), theta...), rng.New(13, c))
		if err := w.settle(ctx, temp, least, most, "test"); err != nil {
			t.Fatal(err)
		}
		return w.sweeps
	}
	if n := settled(modes[0], 1, 3, 5); n != 5 {
		t.Errorf("settle with most 5 swept %d times, want 5: its trail is not yet full", n)
	}
	if n := settled(modes[0], 1, 30, 200); n < 30 {
		t.Errorf("settle with least 30 swept %d times", n)
	}
	extra := 0
	for c := range uint64(replicas) {
		w := newRungWalk(model, append([]float64(nil), modes[0]...), rng.New(17, c))
		if _, err := w.rung(ctx, temp, 300, 0, "test"); err != nil {
			t.Fatal(err)
		}
		extra += settled(w.theta, 100+c, 1, 200) - trailLength
	}
	if avg := float64(extra) / replicas; avg > 1 {
		t.Errorf("from equilibrium settle swept %.2f times on average beyond its trail, want about 0.1", avg)
	}
}

// moving sees a drift of twice the noise a sweep, and passes stationary noise about one time in
// ten.
func TestMovingSeesATrendNotNoise(t *testing.T) {
	r := rng.New(5, 1)
	trend, flat := 0, 0
	const n = 4000
	for range n {
		var a, b []float64
		for i := range trailLength {
			e := r.NormFloat64()
			a = append(a, -float64(i)+e*0.5)
			b = append(b, e)
		}
		if moving(a) {
			trend++
		}
		if moving(b) {
			flat++
		}
	}
	if trend < n*95/100 {
		t.Errorf("a drift of twice the noise a sweep: moving %d times in %d", trend, n)
	}
	if f := float64(flat) / n; f < 0.06 || f > 0.13 {
		t.Errorf("stationary noise: moving %.3f of the time, want about 0.09", f)
	}
	if moving([]float64{3, 2, 1}) {
		t.Error("moving with fewer than trailLength values")
	}
}

// A chain told to go plain (ChainState.Plain, set by the race where its rank's controls do not pay)
// records without its control variates from then on: its summary is the plain mean of all its
// records, and its records cost no Stein pass.
func TestAPlainChainDropsItsControls(t *testing.T) {
	p, _ := roundsProblem(t)
	st, err := p.StartRank(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	id := ChainID{Rank: 1, TIndex: 3, Chain: 0}
	sum, state, err := p.Extend(context.Background(), id, 0, &st.States[0][3])
	if err != nil || state == nil {
		t.Fatal(err)
	}
	if len(sum.SteinMean) == 0 || len(state.Controls) == 0 || state.Center == nil {
		t.Fatalf("rank 1 records no controls (%d variates, %d stored)", len(sum.SteinMean), len(state.Controls))
	}
	controlled, cnext, err := p.Extend(context.Background(), id, 1, state)
	if err != nil {
		t.Fatal(err)
	}
	state.Plain = true
	plain, next, err := p.Extend(context.Background(), id, 1, state)
	if err != nil || next == nil {
		t.Fatal(err)
	}
	if len(plain.SteinMean) != 0 || next.Controls != nil || next.CondVar != nil || next.Center != nil || !next.Plain {
		t.Errorf("a plain chain kept its controls: %d variates, %d stored, centre %v", len(plain.SteinMean), len(next.Controls), next.Center != nil)
	}
	if !slices.Equal(next.Records, cnext.Records) {
		t.Error("going plain changed the chain's records")
	}
	if added := len(next.Records) - len(state.Records); plain.Steps != controlled.Steps-added {
		t.Errorf("a plain round made %d passes, the controlled one %d for %d records", plain.Steps-state.Steps, controlled.Steps-state.Steps, added)
	}
}

// roundsProblem is a 10×8 count matrix's problem on a short ladder with short chains, for the
// tests of a chain's rounds.
func roundsProblem(t *testing.T) (*Problem, Config) {
	t.Helper()
	d, rates := poissonData(t, []int{10, 8}, 2, 0.5, 5)
	cfg := Default("nmf")
	cfg.Ladder = evidence.Power(6, 4)
	cfg.Steps, cfg.Burnin, cfg.Descent, cfg.Relax, cfg.Starts, cfg.StartEM, cfg.Rank1 = 40, 8, 4, 10, 2, 10, nil
	p, err := NewProblem(d, models.PoissonSpec("nmf", rates, models.LogScale), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, cfg
}
