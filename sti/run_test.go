package sti

import (
	"context"
	"testing"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/par"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/tensor"
)

// runRank runs rank's whole estimate in this process, every chain on its own core: the start
// stage where the configuration has one, the chains (Gibbs chains round after round up to the
// configured budget, SG-MCMC chains once) and the ladder's rule over them. It is what the
// estimator of package estimators computes, without its tasks.
func runRank(t testing.TB, p *Problem, rank int) evidence.RankEvidence {
	t.Helper()
	ctx := context.Background()
	cfg := p.RankConfig(rank)
	starts := make([][]ChainState, cfg.Chains)
	var st *RankStart
	if cfg.Start != PriorStart {
		var err error
		if st, err = p.StartRank(ctx, rank); err != nil {
			t.Fatal(err)
		}
		starts = st.States
	}
	type job struct{ q, i int }
	var jobs []job
	for q := range cfg.Chains {
		for i := range cfg.Ladder {
			jobs = append(jobs, job{q, i})
		}
	}
	sums := make([]evidence.ChainSummary, len(jobs))
	errs := make([]error, len(jobs))
	par.Tasks(len(jobs), func(k int) {
		j := jobs[k]
		id := ChainID{Rank: rank, TIndex: j.i, Chain: j.q}
		var s ChainState
		if starts[j.q] != nil {
			s = starts[j.q][j.i]
		}
		if !cfg.Gibbs {
			sums[k], _, errs[k] = p.RunChain(ctx, id, s.Theta)
			return
		}
		state := &s
		for round := 0; round <= p.Doublings(rank) && state != nil && errs[k] == nil; round++ {
			sums[k], state, errs[k] = p.Extend(ctx, id, round, state)
		}
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var (
		checks []evidence.Check
		steps  int
	)
	if st != nil && st.Check != nil {
		means, n, _, err := p.PhaseCheck(ctx, rank, st.CheckFrom, st.Check)
		if err != nil {
			t.Fatal(err)
		}
		checks, steps = append(checks, evidence.PhaseWalk{From: st.CheckFrom, Means: means}), n
	}
	re, err := evidence.Combine(cfg.Ladder, sums, checks...)
	if err != nil {
		t.Fatal(err)
	}
	if st != nil {
		re.Steps += st.Steps + steps
	}
	return re
}

// sweep runs every rank of rs (runRank) on d under spec and cfg.
func sweep(t testing.TB, d *tensor.Sparse, spec models.Spec, cfg Config, rs []int) []evidence.RankEvidence {
	t.Helper()
	p, err := NewProblem(d, spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]evidence.RankEvidence, len(rs))
	for i, r := range rs {
		out[i] = runRank(t, p, r)
	}
	return out
}
