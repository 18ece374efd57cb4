package estimators

import (
	"context"
	"fmt"
	"slices"
	"time"

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
// that completes its configured budget (Rounder.FullRound), and no round starts that budget does
// not expect to end in time (TimeBudget.NextFits). It returns each rank's evidence, in the order
// of ranks, and the final standing. Every task depends on itself alone, as on Beam.
func RunRace(ctx context.Context, e Estimator, data *tensor.Sparse, ranks []int, extra int, budget TimeBudget) ([]evidence.RankEvidence, evidence.Standing, error) {
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
	var (
		standing evidence.Standing
		evs      []evidence.RankEvidence
	)
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
		var goOn map[int]bool
		evs, standing, goOn, err = Judge(e, rd, ranks, byRank, standing, round, extra, budget, time.Now().UnixNano())
		if err != nil {
			return nil, standing, err
		}
		for _, r := range done {
			if plain, ok := goOn[r.Task.Rank]; ok && r.State != nil {
				tasks = append(tasks, Continue(r, plain))
			}
		}
	}
	if evs == nil {
		// No start stage started a round, so nothing was judged; otherwise the last judgement
		// combined every result there is.
		evs, err = combineAll(e, ranks, byRank)
	}
	return evs, standing, err
}

// Judge is what a racing estimator's race decides after round: every rank's evidence from its
// results so far (byRank, each rank's in any order), in the order of ranks; the standing after
// the round (evidence.Decide, from before); and the ranks whose chains go on to the next round
// (evidence.Standing.Continues; at most extra rounds past the one that completes a rank's
// configured budget, Rounder.FullRound), each with whether they go on plain, without their
// control variates (Rounder.Controlled). When the next round is not expected to end by the time
// budget at time now (TimeBudget.NextFits), no rank goes on and the standing says the time is
// up; a race whose time is up keeps that standing. The pipeline's race (package transforms) and
// RunRace both judge by it, so that they decide alike to the bit.
func Judge(e Estimator, rd Rounder, ranks []int, byRank map[int][]Result, before evidence.Standing, round, extra int, budget TimeBudget, now int64) ([]evidence.RankEvidence, evidence.Standing, map[int]bool, error) {
	evs, err := combineAll(e, ranks, byRank)
	if err != nil {
		return nil, before, nil, err
	}
	if before.TimeUp {
		return evs, before, map[int]bool{}, nil
	}
	after := evidence.Decide(before, evs, round)
	goOn := map[int]bool{}
	for _, re := range evs {
		if after.Continues(ranks, re, round+1, rd.FullRound(re.Rank)+extra) {
			goOn[re.Rank] = !rd.Controlled(re)
		}
	}
	if len(goOn) > 0 && !budget.NextFits(now, byRank, round, goOn) {
		after.TimeUp = true
		goOn = map[int]bool{}
	}
	return evs, after, goOn, nil
}

// combineAll combines every rank's results so far, the ranks on every core.
func combineAll(e Estimator, ranks []int, byRank map[int][]Result) ([]evidence.RankEvidence, error) {
	out, errs := make([]evidence.RankEvidence, len(ranks)), make([]error, len(ranks))
	par.Tasks(len(ranks), func(i int) {
		out[i], errs[i] = CombineRank(e, ranks[i], byRank[ranks[i]])
	})
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", ranks[i], err)
		}
	}
	return out, nil
}

// CombineRank is e.Combine of rank's results rs, given in any order: sorted by task, each task
// once.
func CombineRank(e Estimator, rank int, rs []Result) (evidence.RankEvidence, error) {
	if len(rs) == 0 {
		return evidence.RankEvidence{}, fmt.Errorf("no task results")
	}
	rs = slices.Clone(rs)
	slices.SortStableFunc(rs, ByTask)
	for i, r := range rs {
		if r.Task.Rank != rank {
			return evidence.RankEvidence{}, fmt.Errorf("results of ranks %d and %d mixed", rank, r.Task.Rank)
		}
		// Sorted, a task that does not follow the one before is the same task.
		if i > 0 && !rs[i-1].Task.Less(r.Task) {
			return evidence.RankEvidence{}, fmt.Errorf("task %+v reported twice", r.Task)
		}
	}
	return e.Combine(rank, rs)
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
