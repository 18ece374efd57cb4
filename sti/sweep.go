package sti

import (
	"context"
	"runtime"
	"sort"
	"sync"

	"github.com/stirank/stirank/evidence"
)

// Sweep runs every (rank, temperature, replica) chain of the problem on all cores and returns the
// evidence of each rank, in the order of ranks. Chains are independent and seeded by their
// coordinates, so the result does not depend on the number of workers.
func (p *Problem) Sweep(ctx context.Context, ranks []int, workers int) ([]evidence.RankEvidence, error) {
	res, _, err := p.SweepFrom(ctx, ranks, workers, nil)
	return res, err
}

// States are chain states by chain.
type States map[ChainID]*State

// SweepFrom is Sweep with every chain resumed from the states in from (see Resumption); chains
// without one, or of ranks whose states fail the basin check, start cold. It also returns the final state of every chain that has
// one.
func (p *Problem) SweepFrom(ctx context.Context, ranks []int, workers int, from States) ([]evidence.RankEvidence, States, error) {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	var ids []ChainID
	for _, r := range ranks {
		for ti := range p.RankConfig(r).Ladder {
			for ch := range p.Config.Chains {
				ids = append(ids, ChainID{Rank: r, TIndex: ti, Chain: ch})
			}
		}
	}
	// Longest chains first: higher ranks cost more per step.
	sort.SliceStable(ids, func(a, b int) bool { return ids[a].Rank > ids[b].Rank })
	resume := p.ResumeFrom(func(_ context.Context, id ChainID) (*State, error) { return from[id], nil })
	out := make([]evidence.ChainSummary, len(ids))
	finals := make([]*State, len(ids))
	errs := make([]error, len(ids))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], finals[i], errs[i] = resume.Run(ctx, ids[i])
				if errs[i] != nil {
					cancel()
				}
			}
		}()
	}
feed:
	for i := range ids {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	states := States{}
	for i, s := range finals {
		if s != nil {
			states[ids[i]] = s
		}
	}
	byRank := map[int][]evidence.ChainSummary{}
	for _, s := range out {
		byRank[s.Rank] = append(byRank[s.Rank], s)
	}
	res := make([]evidence.RankEvidence, 0, len(ranks))
	for _, r := range ranks {
		re, err := evidence.Combine(p.RankConfig(r).Ladder, byRank[r])
		if err != nil {
			return nil, nil, err
		}
		res = append(res, re)
	}
	return res, states, nil
}
