package sti

import (
	"strings"
	"testing"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
)

// Rank 1 of a configuration with Config.Rank1 runs its own ladder and chain lengths, every other
// rank the configured ones, and a budget that could not run, or one beside an annealing (which
// makes its own ladders), is refused.
func TestRank1Budget(t *testing.T) {
	cfg := Default("nmf")
	b := cfg.Rank1
	if b == nil || b.Rungs != 2*(len(cfg.Ladder)-1) || 2*b.Steps != cfg.Steps || 2*b.Burnin != cfg.Burnin || 2*b.Descent != cfg.Descent {
		t.Fatalf("nmf's rank 1 budget %+v, the other ranks' %d rungs, %d steps, %d burn-in, %d descent", b, len(cfg.Ladder)-1, cfg.Steps, cfg.Burnin, cfg.Descent)
	}
	r1 := cfg.AtRank(1)
	if len(r1.Ladder) != b.Rungs+1 || r1.Ladder[1] != evidence.Power(b.Rungs, evidence.DefaultPower)[1] || r1.Steps != b.Steps || r1.Burnin != b.Burnin || r1.Descent != b.Descent || r1.Rank1 != nil {
		t.Errorf("rank 1 runs %d rungs, %d steps, %d burn-in, %d descent (%+v)", len(r1.Ladder)-1, r1.Steps, r1.Burnin, r1.Descent, r1.Rank1)
	}
	if r2 := cfg.AtRank(2); len(r2.Ladder) != len(cfg.Ladder) || r2.Steps != cfg.Steps || r2.Rank1 != b {
		t.Errorf("rank 2 does not run the configuration: %d rungs, %d steps", len(r2.Ladder), r2.Steps)
	}
	if Default("gauss").Rank1 != nil || DefaultAnnealed("nmf").Rank1 != nil {
		t.Error("a rank-1 budget where rank 1 has no exact conditional, or beside an annealing")
	}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no rungs", func(c *Config) { c.Rank1.Rungs = 0 }, "rank 1's ladder"},
		{"burn-in past the steps", func(c *Config) { c.Rank1.Burnin = c.Rank1.Steps }, "rank 1: burn-in"},
		{"annealed", func(c *Config) { c.Annealing = DefaultAnnealed("nmf").Annealing }, "annealed"},
	} {
		c0 := Default("nmf")
		rb := *c0.Rank1
		c0.Rank1 = &rb
		c.edit(&c0)
		if err := c0.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
}

// The Gibbs defaults of nmf and cp spend at most twice the steps per rank of the SG-MCMC defaults
// they replaced, 30 rungs × 2 chains × 600 steps, 2 × 400 prior draws at t = 0 and 16 × 100
// mode-search steps, on matrices and tensors of several sizes: every stage counted as the chains
// report it (their summaries' Steps are what ChainSteps plans, TestDescentDeterminism and
// TestTruncationDropsTheTransientAndSweepsNoMore), rank 1's ladder and chains, the records
// allocated to rungs by the data's exact rank-1 curve and the phase check above rank 1.
func TestDefaultsSpendAtMostTwiceTheSGMCMCSteps(t *testing.T) {
	for _, c := range budgetSets {
		d, rates := poissonData(t, c.shape, 3, c.rate, 11)
		p, err := NewProblem(d, models.PoissonSpec(c.model, rates, models.LogScale), Default(c.model))
		if err != nil {
			t.Fatal(err)
		}
		for R := 1; R <= 5; R++ {
			if n := plannedSteps(p, R); n > 2*SGMCMCSteps {
				t.Errorf("%s %v rank %d: %d steps, more than twice the SG-MCMC defaults' %d", c.model, c.shape, R, n, SGMCMCSteps)
			}
		}
	}
}

// budgetSets are the data, drawn at rank 3, on which the budget tests count steps.
var budgetSets = []struct {
	model string
	shape []int
	rate  float64
}{
	{"nmf", []int{30, 20}, 0.5},
	{"nmf", []int{100, 75}, 0.05},
	{"cp", []int{6, 5, 4}, 0.3},
	{"cp", []int{15, 12, 10}, 0.5},
}

// plannedSteps is the number of steps p plans for the cold chains of rank R in all.
func plannedSteps(p *Problem, R int) int {
	rc, n := p.RankConfig(R), 0
	for ti := range rc.Ladder {
		for ch := range rc.Chains {
			n += p.ChainSteps(ChainID{Rank: R, TIndex: ti, Chain: ch}, false)
		}
	}
	return n
}

// A matrix's default chains carry control variates at its lowest rank only (nmf's rank 1, ssnmf's
// rank 0), a 3-way tensor's at every rank; a rank without them spends no pass on them, and a
// negative SteinBelow is refused.
func TestSteinBelow(t *testing.T) {
	for _, c := range []struct {
		model string
		with  []int
		plain []int
	}{{"nmf", []int{1}, []int{2, 5}}, {"ssnmf", []int{0}, []int{1, 3}}, {"cp", []int{1, 2, 6}, nil}} {
		cfg := Default(c.model)
		for _, R := range c.with {
			if !cfg.AtRank(R).Stein {
				t.Errorf("%s rank %d: no control variates", c.model, R)
			}
		}
		for _, R := range c.plain {
			if cfg.AtRank(R).Stein {
				t.Errorf("%s rank %d: control variates", c.model, R)
			}
		}
	}
	cfg := Default("nmf")
	every := cfg
	every.SteinBelow = 0
	id := ChainID{Rank: 2, TIndex: 10, Chain: 1}
	if got, want := every.ChainSteps(id, false, 2)-cfg.ChainSteps(id, false, 2), cfg.Steps-cfg.Burnin; got != want {
		t.Errorf("rank 2 without the variates spends %d steps fewer, not a pass per record (%d)", got, want)
	}
	cfg.SteinBelow = -1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "control variates") {
		t.Errorf("SteinBelow −1: %v", err)
	}
}

// A path from a reference with its check spends at most twice the SG-MCMC defaults' steps per
// rank (CheckSteps, Within): every stage of the check counted as its chains report it on data
// of several sizes, and the check keeps the records it can, planning within two records of every
// chain of its budget.
func TestCheckWithinBudget(t *testing.T) {
	for _, c := range budgetSets {
		budget := CheckSteps(c.model)
		if path := DefaultReference(c.model).PathSteps(); path+budget != 2*SGMCMCSteps {
			t.Errorf("%s: the path's %d steps and the check's %d, want %d", c.model, path, budget, 2*SGMCMCSteps)
		}
		check, err := Default(c.model).Within(budget, c.model)
		if err != nil {
			t.Fatal(err)
		}
		d, rates := poissonData(t, c.shape, 3, c.rate, 11)
		spec := models.PoissonSpec(c.model, rates, models.LogScale)
		// most is the largest number of steps a rank from 1 to 5 of cfg's chains takes, with its
		// records allocated to the rungs.
		most := func(cfg Config) int {
			p, err := NewProblem(d, spec, cfg)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for R := 1; R <= 5; R++ {
				n = max(n, plannedSteps(p, R))
			}
			return n
		}
		// A record more in every chain costs record steps at the costliest rank.
		longer := check
		longer.Steps++
		if check.Rank1 != nil {
			r1 := *check.Rank1
			r1.Steps++
			longer.Rank1 = &r1
		}
		n, record := most(check), 0
		for R := 1; R <= 5; R++ {
			record = max(record, longer.RankSteps(R, len(c.shape))-check.RankSteps(R, len(c.shape)))
		}
		t.Logf("%s %v: %d records per chain at ranks 2–5, at most %d steps a rank, %d a record more", c.model, c.shape, check.Steps-check.Burnin, n, record)
		if n > budget || n <= budget-2*record {
			t.Errorf("%s %v: the check takes %d steps at a rank, want at most its %d and within two records' %d of them", c.model, c.shape, n, budget, 2*record)
		}
		if check.Steps >= Default(c.model).Steps {
			t.Errorf("%s: the check keeps all %d records per chain", c.model, check.Steps)
		}
	}
}
