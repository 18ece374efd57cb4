package sti

import (
	"strings"
	"testing"

	"github.com/stirank/stirank/evidence"
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
		{"annealed", func(c *Config) { c.Start, c.Annealing = AnnealStart, DefaultAnnealed("nmf").Annealing }, "annealed"},
		{"annealing without its stage", func(c *Config) { c.Annealing = DefaultAnnealed("nmf").Annealing }, "does not anneal"},
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

// A matrix's default chains carry control variates at its lowest rank only (nmf's rank 1, ssnmf's
// rank 0), a 3-way tensor's at every rank, and a negative SteinBelow is refused.
func TestSteinBelow(t *testing.T) {
	for _, c := range []struct {
		model string
		with  []int
		plain []int
	}{{"nmf", []int{1}, []int{2, 5}}, {"ssnmf", []int{0}, []int{1, 3}}, {"cp", []int{1, 2, 6}, nil}} {
		cfg := Default(c.model)
		for _, R := range c.with {
			if !cfg.AtRank(R).Runs(SteinName) {
				t.Errorf("%s rank %d: no control variates", c.model, R)
			}
		}
		for _, R := range c.plain {
			if cfg.AtRank(R).Runs(SteinName) {
				t.Errorf("%s rank %d: control variates", c.model, R)
			}
		}
	}
	cfg := Default("nmf")
	cfg.SteinBelow = -1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "control variates") {
		t.Errorf("SteinBelow −1: %v", err)
	}
}

// A fixed dictionary's columns cost a sweep what a rank's own components do, so round 0 of
// ssnmf beside 64 columns is sized by 65 components at rank 1, not by 1.
func TestDoublingsCountFixedComponents(t *testing.T) {
	c := Default("ssnmf")
	const nnz = 73147
	alone, beside := c.Doublings(1, 0, nnz), c.Doublings(1, 64, nnz)
	if alone != minDoublings || beside <= alone {
		t.Errorf("rank 1 of %d cells: %d doublings alone, %d beside 64 fixed columns", nnz, alone, beside)
	}
	if got := c.roundZeroSweeps(1, beside) * nnz * 65; got > roundWork {
		t.Errorf("round 0 costs %.3g cell-components, more than %.3g", got, float64(roundWork))
	}
}

// A time budget sizes round 0 by TimedRoundWork: less time or more ranks give each rank's round 0
// less work and more doublings, every rank's round 0 within it, and a long time keeps the
// configured round 0 (roundWork), never more.
func TestTimedRoundWorkSizesRoundZero(t *testing.T) {
	const nnz = 70675
	c := Default("nmf")
	if got := TimedRoundWork(1e9, 10); got != roundWork {
		t.Errorf("a long time: round work %.3g, want %.3g", got, float64(roundWork))
	}
	last := c.Doublings(6, 0, nnz)
	for _, budget := range []struct {
		seconds float64
		ranks   int
	}{{3600, 10}, {600, 10}, {60, 10}, {60, 20}} {
		c.RoundWork = TimedRoundWork(budget.seconds, budget.ranks)
		k := c.Doublings(6, 0, nnz)
		if k < last || c.roundZeroSweeps(6, k)*nnz*6 > c.RoundWork {
			t.Errorf("%v s over %d ranks: %d doublings after %d, round 0 %.3g beyond %.3g", budget.seconds, budget.ranks, k, last, c.roundZeroSweeps(6, k)*nnz*6, c.RoundWork)
		}
		last = k
	}
	if last <= Default("nmf").Doublings(6, 0, nnz) {
		t.Errorf("60 s over 20 ranks: %d doublings, no more than untimed", last)
	}
}
