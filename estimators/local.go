package estimators

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/tensor"
)

// RunRank computes in this process what the pipeline computes for one rank of e on data: it
// prepares the problem, runs the rank's tasks workers at a time (a staged estimator's first-stage
// tasks through Expand, then the follow-on tasks they return), and combines the results in the
// order Combine expects. Every task depends on itself alone, as on Beam, so the evidence is the
// pipeline's to the last digit; benchmarks and tests use it where a runner would only add cost.
func RunRank(ctx context.Context, e Estimator, data *tensor.Sparse, rank, workers int) (evidence.RankEvidence, error) {
	p, err := e.Prepare(data)
	if err != nil {
		return evidence.RankEvidence{}, err
	}
	x, staged := p.(Expander)
	staged = staged && IsStaged(e)
	var results []Result
	for tasks := e.Tasks(rank); len(tasks) > 0; {
		res, more, errs := make([]Result, len(tasks)), make([][]Task, len(tasks)), make([]error, len(tasks))
		var wg sync.WaitGroup
		sem := make(chan struct{}, max(workers, 1))
		for i, t := range tasks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				if staged && t.Stage == 0 {
					res[i], more[i], errs[i] = x.Expand(ctx, t)
					return
				}
				res[i], errs[i] = p.Run(ctx, t)
			}()
		}
		wg.Wait()
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
