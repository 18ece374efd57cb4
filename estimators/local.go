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
// first-stage tasks through Expand, then the follow-on tasks they return), and combines the
// results in the order Combine expects. Every task depends on itself alone, as on Beam, so the evidence is the
// pipeline's to the last digit; benchmarks and tests use it where a runner would only add cost.
func RunRank(ctx context.Context, e Estimator, data *tensor.Sparse, rank int) (evidence.RankEvidence, error) {
	p, err := e.Prepare(data)
	if err != nil {
		return evidence.RankEvidence{}, err
	}
	x, staged := p.(Expander)
	staged = staged && IsStaged(e)
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
		}
	}
	slices.SortStableFunc(results, func(a, b Result) int {
		switch {
		case a.Task.Less(b.Task):
			return -1
		case b.Task.Less(a.Task):
			return 1
		}
		return 0
	})
	return e.Combine(rank, results)
}
