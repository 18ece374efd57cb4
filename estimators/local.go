package estimators

import (
	"context"
	"fmt"
	"slices"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/par"
	"github.com/stirank/stirank/tensor"
)

// RunRank computes in this process what the pipeline computes for one rank of e on data: it
// prepares the problem, runs the rank's tasks on every core (par.Tasks; a staged estimator's
// first-stage tasks through Expand, then the follow-on tasks they return, and a racing
// estimator's every round up to its configured budget, Rounder.FullRound), and combines the
// results in the order Combine expects. Every task depends on itself alone, as on Beam, so the evidence is the
// pipeline's to the last digit; benchmarks and tests use it where a runner would only add cost.
func RunRank(ctx context.Context, e Estimator, data *tensor.Sparse, rank int) (evidence.RankEvidence, error) {
	p, err := e.Prepare(data)
	if err != nil {
		return evidence.RankEvidence{}, err
	}
	x, staged := p.(Expander)
	staged = staged && IsStaged(e)
	rd, racing := p.(Rounder)
	racing = racing && IsRacer(e)
	var results []Result
	for tasks := e.Tasks(rank); len(tasks) > 0; {
		res, more, errs := make([]Result, len(tasks)), make([][]Task, len(tasks)), make([]error, len(tasks))
		par.Tasks(len(tasks), func(i int) {
			if t := tasks[i]; staged && t.Stage == 0 {
				res[i], more[i], errs[i] = x.Expand(ctx, t)
			} else {
				res[i], errs[i] = p.Run(ctx, t)
			}
		})
		tasks = nil
		for i, err := range errs {
			if err != nil {
				return evidence.RankEvidence{}, fmt.Errorf("rank %d: %w", rank, err)
			}
			results, tasks = append(results, res[i]), append(tasks, more[i]...)
			// A racing estimator's chains run every round up to its configured budget.
			if r := res[i]; racing && r.State != nil && r.Task.Round < rd.FullRound(rank) {
				tasks = append(tasks, Continue(r, false))
			}
		}
	}
	slices.SortStableFunc(results, ByTask)
	return e.Combine(rank, results)
}

// RunRace computes in this process what the racing pipeline computes (package transforms, Race)
// for ranks of a racing estimator e on data: every rank's start stage, then rounds of its chains,
// each round run on every core, the race's standing decided after each (evidence.Decide), until
// no rank continues (evidence.Standing.Continues); a rank runs at most extra rounds past the one
// that completes its configured budget (Rounder.FullRound). It returns each rank's evidence, in
// the order of ranks, and the final standing. Every task depends on itself alone, as on Beam.
func RunRace(ctx context.Context, e Estimator, data *tensor.Sparse, ranks []int, extra int) ([]evidence.RankEvidence, evidence.Standing, error) {
	p, err := e.Prepare(data)
	if err != nil {
		return nil, evidence.Standing{}, err
	}
	x, ok := p.(Expander)
	rd, ok2 := p.(Rounder)
	if !ok || !ok2 || !IsRacer(e) {
		return nil, evidence.Standing{}, fmt.Errorf("estimator does not race")
	}
	byRank := map[int][]Result{}
	var tasks []Task
	for _, r := range ranks {
		tasks = append(tasks, e.Tasks(r)...)
	}
	var standing evidence.Standing
	for round := -1; len(tasks) > 0; round++ {
		res, more, errs := make([]Result, len(tasks)), make([][]Task, len(tasks)), make([]error, len(tasks))
		par.Tasks(len(tasks), func(i int) {
			if t := tasks[i]; t.Stage == 0 {
				res[i], more[i], errs[i] = x.Expand(ctx, t)
			} else {
				res[i], errs[i] = p.Run(ctx, t)
			}
		})
		tasks = nil
		var done []Result
		for i, err := range errs {
			if err != nil {
				return nil, standing, err
			}
			byRank[res[i].Task.Rank] = append(byRank[res[i].Task.Rank], res[i])
			tasks = append(tasks, more[i]...)
			done = append(done, res[i])
		}
		if round < 0 {
			continue // the start stages started round 0
		}
		evs, err := combineAll(e, ranks, byRank)
		if err != nil {
			return nil, standing, err
		}
		standing = evidence.Decide(standing, evs, round)
		for _, r := range done {
			re := evs[slices.Index(ranks, r.Task.Rank)]
			if r.State != nil && standing.Continues(ranks, re, round+1, rd.FullRound(r.Task.Rank)+extra) {
				tasks = append(tasks, Continue(r, !rd.Controlled(re)))
			}
		}
	}
	evs, err := combineAll(e, ranks, byRank)
	return evs, standing, err
}

// combineAll combines every rank's results so far.
func combineAll(e Estimator, ranks []int, byRank map[int][]Result) ([]evidence.RankEvidence, error) {
	out := make([]evidence.RankEvidence, len(ranks))
	for i, r := range ranks {
		rs := slices.Clone(byRank[r])
		slices.SortStableFunc(rs, ByTask)
		re, err := e.Combine(r, rs)
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
		out[i] = re
	}
	return out, nil
}

// RunRanks is RunRank for every rank of ranks, in their order: each rank's tasks up to its
// configured budget, none left behind by a race.
func RunRanks(ctx context.Context, e Estimator, data *tensor.Sparse, ranks []int) ([]evidence.RankEvidence, error) {
	out := make([]evidence.RankEvidence, len(ranks))
	for i, r := range ranks {
		re, err := RunRank(ctx, e, data, r)
		if err != nil {
			return nil, err
		}
		out[i] = re
	}
	return out, nil
}
