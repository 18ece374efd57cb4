package sti

import (
	"context"
	"math"
	"reflect"
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
	d, rates := poissonData(t, []int{8, 8}, 4, 0.15, 3)
	cfg := Default("nmf")
	cfg.Descent, cfg.Chains, cfg.Relax = 20, 48, 0
	p, err := NewProblem(d, models.PoissonSpec("nmf", rates, models.LogScale), cfg)
	if err != nil {
		t.Fatal(err)
	}
	const R = 4
	ctx := context.Background()
	ti := cfg.Ladder.Nearest(0.15)
	temp := cfg.Ladder[ti]
	m, err := p.mode(ctx, R)
	if err != nil {
		t.Fatal(err)
	}
	model, err := p.model(R)
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
		start, _, _, err := p.descentStart(ctx, ChainID{Rank: R, TIndex: ti, Chain: c})
		if err != nil {
			t.Fatal(err)
		}
		eq = append(eq, mean(m.theta, uint64(c), 500, 1500))
		fromMode = append(fromMode, mean(m.theta, uint64(100+c), 0, 20))
		fromDescent = append(fromDescent, mean(start, uint64(200+c), 0, 20))
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

// Descents are shared by a replica's chains and handed out once; a chain that asks again walks
// its descent afresh, and the phase check its first replica's descent to where the check starts.
// Both give the same bits, on any number of workers, and the steps the descents cost, their
// relaxation at t = 1 included, are counted once per replica, and the check's once per rank, as
// Problem.ChainSteps expects.
func TestDescentDeterminism(t *testing.T) {
	d, rates := poissonData(t, []int{10, 8}, 2, 0.5, 5)
	cfg := Default("nmf")
	cfg.Ladder = evidence.Power(6, 4)
	cfg.Steps, cfg.Burnin, cfg.Descent = 30, 10, 5
	cfg.Starts, cfg.StartSteps, cfg.StartEM = 2, 10, 20
	spec := models.PoissonSpec("nmf", rates, models.LogScale)
	p, err := NewProblem(d, spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.Sweep(context.Background(), []int{1, 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Sweep(context.Background(), []int{1, 2}, 3) // every descent state already taken
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("a second sweep differs:\n%+v\n%+v", a[1], b[1])
	}
	noDescent := cfg
	noDescent.Descent = 0
	c := sweep(t, d, spec, noDescent, []int{1, 2})
	order := 2
	want := 0
	for ti := range cfg.Ladder {
		for ch := range cfg.Chains {
			want += p.ChainSteps(ChainID{Rank: 2, TIndex: ti, Chain: ch}, false)
		}
	}
	descents := cfg.Chains * (cfg.Relax + cfg.Descent*(len(cfg.Ladder)-1)) * sweepPasses(order)
	// The phase check walks back up from the first replica's descent (Config.Ascent), which
	// without a descent it does not.
	ascent := cfg.Ascent * (len(cfg.Ladder) - cfg.phaseRung()) * sweepPasses(order)
	if a[1].Steps != want || a[1].Steps-c[1].Steps != descents+ascent || ascent == 0 {
		t.Errorf("rank 2: %d steps with descents, %d without, %d expected: descents cost %d, the phase check %d", a[1].Steps, c[1].Steps, want, descents, ascent)
	}
	if a[1].LogEvidence == c[1].LogEvidence {
		t.Errorf("the descent did not change the estimate")
	}
}

// DescentState hands out the state a chain starts from: what the chain's own descent keeps at its
// rung, for every rung and replica, and a different state at each rung; it refuses chains that do
// not start from walks down the ladder, and the prior's rung.
func TestDescentStateIsTheChainsStart(t *testing.T) {
	d, rates := poissonData(t, []int{10, 8}, 2, 0.5, 5)
	cfg := Default("nmf")
	cfg.Ladder = evidence.Power(6, 4)
	cfg.Steps, cfg.Burnin, cfg.Descent, cfg.Relax = 30, 10, 5, 20
	cfg.Starts, cfg.StartSteps, cfg.StartEM = 2, 10, 20
	spec := models.PoissonSpec("nmf", rates, models.LogScale)
	p, err := NewProblem(d, spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for ch := range cfg.Chains {
		var prev []float64
		for ti := len(cfg.Ladder) - 1; ti >= 1; ti-- {
			id := ChainID{Rank: 2, TIndex: ti, Chain: ch}
			want, _, _, err := p.descentStart(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.DescentState(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("replica %d, rung %d: DescentState is not the chain's start", ch, ti)
			}
			if slices.Equal(got, prev) {
				t.Errorf("replica %d, rung %d: the same state as the rung above", ch, ti)
			}
			prev = got
		}
	}
	if _, err := p.DescentState(ctx, ChainID{Rank: 2, TIndex: 0}); err == nil {
		t.Error("the prior's rung had a walk's state")
	}
	sg, err := NewProblem(d, spec, DefaultSGMCMC("nmf"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sg.DescentState(ctx, ChainID{Rank: 2, TIndex: 1}); err == nil {
		t.Error("SG-MCMC chains, which start from no descent, had a descent's state")
	}
}

// A chain reports the steps it spends as it spends them (internal/progress), in the units of its
// summary's Steps: the chain that computes its rank's mode search and its replica's walk reports
// those too, and in all the chains of a rank report what their summaries count.
func TestChainsReportTheirSteps(t *testing.T) {
	d, rates := poissonData(t, []int{8, 6}, 2, 0.5, 5)
	// Without a mode search (Starts 0) a rank-1 chain's controls are its conditional
	// expectations alone, which make no pass over the data.
	for _, starts := range []int{2, 0} {
		cfg := Default("nmf")
		cfg.Ladder = evidence.Power(4, evidence.DefaultPower)
		cfg.Steps, cfg.Burnin, cfg.Starts, cfg.Chains = 30, 10, starts, 2
		// Rank 1 runs a ladder and chains of its own (Config.Rank1).
		cfg.Rank1 = &RankBudget{Rungs: 7, Steps: 16, Burnin: 4, Descent: 5}
		p, err := NewProblem(d, models.PoissonSpec("nmf", rates, models.LogScale), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(p.RankConfig(1).Ladder); n != 8 {
			t.Fatalf("rank 1's ladder has %d rungs, want 8", n)
		}
		for _, rank := range []int{1, 2} {
			reported, counted, plan := 0, 0, 0
			var work, planned float64
			top := len(p.RankConfig(rank).Ladder) - 1
			for ti := top; ti >= 0; ti-- {
				for c := range cfg.Chains {
					var mu sync.Mutex // the mode search's starts report from several goroutines
					spent, cost := 0, 0.0
					ctx := progress.With(context.Background(), func(s int, w float64) {
						mu.Lock()
						spent, cost = spent+s, cost+float64(s)*w
						mu.Unlock()
					})
					id := ChainID{Rank: rank, TIndex: ti, Chain: c}
					sum, err := p.RunChain(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					if ti == top && c == 0 && spent != sum.Steps {
						t.Errorf("rank %d: the chain that computes the mode search and its walk reported %d steps, its summary counts %d", rank, spent, sum.Steps)
					}
					reported += spent
					counted += sum.Steps
					work += cost
					planned += p.ChainWork(id, false)
					plan += p.ChainSteps(id, false)
				}
			}
			if reported != counted || counted != plan {
				t.Errorf("rank %d: the chains reported %d steps, their summaries count %d, the plan %d", rank, reported, counted, plan)
			}
			// The chains report their steps at the prices the plan counts them at, the rank's
			// timed ones.
			if pr := p.prices(rank); pr.ascent == 1 || pr.read1 == 1 || pr.stein == 1 {
				t.Errorf("rank %d: prices %+v not timed", rank, pr)
			}
			if math.Abs(work-planned) > 1e-9*planned || planned == float64(reported) {
				t.Errorf("rank %d: the chains reported steps costing %v, the plan %v (%d steps)", rank, work, planned, reported)
			}
		}
	}
}

// A warm rank's chains report what the warm plan counts: the chain that accounts for the rank's
// mode search accounts for its basin check too (each replica's saved state settled on the rows the
// data gained and carried to its mode), reported as spent at the prices the plan counts it at.
// Where the check refuses the states (here every factor entry of the states at t = 1 is e^−20, as
// in TestResumeOnGrownData), the rank's chains start cold and revise their plans to a cold
// chain's, the basin check included, so that the revised plans count what they report.
func TestWarmChainsReportTheirSteps(t *testing.T) {
	for _, c := range []struct{ gibbs, refused bool }{{true, false}, {false, false}, {false, true}} {
		cfg := DefaultSGMCMC("cp")
		if c.gibbs {
			cfg = Default("cp")
			cfg.Relax, cfg.Descent = 10, 2
		}
		cfg.Ladder = evidence.Power(4, 4)
		cfg.Steps, cfg.Burnin, cfg.WarmBurnin, cfg.SettleSteps, cfg.Starts, cfg.StartSteps, cfg.StartEM = 20, 10, 4, 3, 2, 5, 6
		_, pf, states := grownCP(t, cfg)
		top := len(cfg.Ladder) - 1
		if c.refused {
			for id, st := range states {
				if id.TIndex == top {
					b := *st
					b.Theta = make([]float64, len(st.Theta))
					for i := range b.Theta {
						b.Theta[i] = -20
					}
					states[id] = &b
				}
			}
		}
		r := pf.ResumeFrom(func(_ context.Context, c ChainID) (*State, error) { return states[c], nil })
		reported, counted, plan, said := 0, 0, 0, 0
		var work, planned float64
		var mu sync.Mutex
		report := progress.With(context.Background(), func(s int, w float64) {
			mu.Lock()
			reported, work = reported+s, work+float64(s)*w
			mu.Unlock()
		})
		for ti := top; ti >= 0; ti-- {
			for ch := range cfg.Chains {
				id := ChainID{Rank: 2, TIndex: ti, Chain: ch}
				// The launcher plans the rank warm: it has saved states.
				n, w := pf.ChainSteps(id, true), pf.ChainWork(id, true)
				ctx := progress.WithPlan(report, func(steps int, work float64) { n, w = steps, work })
				ctx = progress.WithResumes(ctx, func(warm bool) {
					if warm == c.refused {
						t.Errorf("%+v: chain %+v said the rank resumes warm: %v", c, id, warm)
					}
					said++
				})
				sum, _, err := r.Run(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if ti > 0 && sum.Warm == c.refused {
					t.Fatalf("%+v: chain %+v warm %v", c, id, sum.Warm)
				}
				counted += sum.Steps
				plan += n
				planned += w
			}
		}
		if reported != counted || counted != plan {
			t.Errorf("%+v: the chains reported %d steps, their summaries count %d, their plans %d", c, reported, counted, plan)
		}
		if math.Abs(work-planned) > 1e-9*planned {
			t.Errorf("%+v: the chains reported steps costing %v, their plans %v", c, work, planned)
		}
		// Every chain above t = 0 says whether the rank resumes (each may be the first to run in
		// its process).
		if said != top*cfg.Chains {
			t.Errorf("%+v: %d chains said whether the rank resumes, want %d", c, said, top*cfg.Chains)
		}
	}
}
