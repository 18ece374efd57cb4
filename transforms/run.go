package transforms

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stirank/stirank/estimators"
)

func init() {
	register.DoFn2x0[[]byte, func(estimators.Task)](&fanOutFn{})
	register.Emitter1[estimators.Task]()
	register.DoFn3x1[context.Context, estimators.Task, func(int, estimators.Result), error](&RunFn{})
	register.Emitter2[int, estimators.Result]()
}

// FanOut returns the estimator's tasks of every rank, the costliest (highest rank) first,
// reshuffled so the runner can spread them over its workers.
func FanOut(s beam.Scope, e estimators.Estimator, ranks []int) beam.PCollection {
	s = s.Scope("FanOut")
	imp := beam.Impulse(s)
	return beam.Reshuffle(s, beam.ParDo(s, &fanOutFn{Tasks: fanOutTasks(e, ranks)}, imp))
}

// fanOutTasks lists the tasks of every rank, the highest rank first.
func fanOutTasks(e estimators.Estimator, ranks []int) []estimators.Task {
	rs := append([]int(nil), ranks...)
	sort.Sort(sort.Reverse(sort.IntSlice(rs)))
	var tasks []estimators.Task
	for _, r := range rs {
		tasks = append(tasks, e.Tasks(r)...)
	}
	return tasks
}

// fanOutFn emits the tasks.
type fanOutFn struct {
	Tasks []estimators.Task
}

func (f *fanOutFn) ProcessElement(_ []byte, emit func(estimators.Task)) {
	for _, t := range f.Tasks {
		emit(t)
	}
}

// Run runs every task of tasks and returns the results keyed by rank:
// a PCollection<KV<int, estimators.Result>>.
func Run(s beam.Scope, fn *RunFn, tasks beam.PCollection) beam.PCollection {
	s = s.Scope("Run")
	return beam.ParDo(s, fn, tasks)
}

// RunFn runs one task per element through the work's prepared problem (estimators.Problem),
// which is prepared once per worker process (see LoadProblem) and shared by every bundle of the
// process.
//
// The tasks of a bundle run concurrently, up to Workers at a time across all the DoFn instances
// of the process: a runner such as prism hands the whole fan-out to one bundle, and running its
// elements one after the other would leave every core but one idle. Results are emitted on the
// bundle's goroutine as tasks finish, and FinishBundle waits for the rest, so a bundle commits
// only when all its tasks are done. Tasks are seeded by themselves alone, so the results do not
// depend on the order or the concurrency they run with.
type RunFn struct {
	Work Work
	// RunID names the in-process progress tracker (see Track) tasks report to; empty for none.
	RunID string
	// Workers bounds the tasks that run at once in a worker process; 0 means GOMAXPROCS.
	Workers int
	// StartDir, when set, is a directory of saved states that tasks resume from, and StateDir,
	// when set, receives every task's final state (see estimators.Resumable; STI chains). Both
	// are local directories the workers share (one machine, or a mount common to a cluster's
	// workers) or Beam filesystem URLs.
	StartDir, StateDir string

	problem estimators.Problem
	tasks   Concurrent[estimators.Result]
}

// Setup prepares (or finds) the worker's problem.
func (f *RunFn) Setup(ctx context.Context) error {
	p, err := LoadProblem(ctx, f.Work)
	if err != nil {
		return err
	}
	if f.StartDir != "" || f.StateDir != "" {
		r, ok := p.(estimators.Resumable)
		if !ok {
			return fmt.Errorf("estimator %s does not resume from or save states", f.Work.Estimator.Name)
		}
		p = r.Resume(f.StartDir, f.StateDir)
	}
	f.problem = p
	f.tasks.Start()
	return nil
}

// Teardown stops any task still running (after a failed bundle).
func (f *RunFn) Teardown() { f.tasks.Stop() }

// ProcessElement starts task t and emits the tasks of the bundle that have finished.
func (f *RunFn) ProcessElement(ctx context.Context, t estimators.Task, emit func(int, estimators.Result)) error {
	if err := f.flush(ctx, emit); err != nil {
		return err
	}
	err := f.tasks.Go(f.Workers, func(ctx context.Context) (estimators.Result, error) {
		r, err := f.problem.Run(ctx, t)
		if err != nil {
			return r, err
		}
		report(f.RunID, r)
		return r, nil
	})
	if err != nil {
		return err
	}
	return f.flush(ctx, emit)
}

// FinishBundle waits for the bundle's tasks and emits the rest.
func (f *RunFn) FinishBundle(ctx context.Context, emit func(int, estimators.Result)) error {
	f.tasks.Wait()
	return f.flush(ctx, emit)
}

// flush emits the finished tasks and counts them in Beam metrics.
func (f *RunFn) flush(ctx context.Context, emit func(int, estimators.Result)) error {
	done, err := f.tasks.Take()
	if err != nil {
		return err
	}
	for _, r := range done {
		StepsCounter(r.Task.Rank).Inc(ctx, int64(r.Steps))
		tasksCounter.Inc(ctx, 1)
		if r.Divergence != "" {
			divergedCounter.Inc(ctx, 1)
		}
		emit(r.Task.Rank, r)
	}
	return nil
}

// Metrics namespace and names of the counters the pipeline reports.
const (
	MetricsNamespace = "stirank"
	TasksMetric      = "tasks_done"
	DivergedMetric   = "tasks_diverged"
)

var (
	tasksCounter    = beam.NewCounter(MetricsNamespace, TasksMetric)
	divergedCounter = beam.NewCounter(MetricsNamespace, DivergedMetric)
)

// StepsMetric names the counter of sampler steps done for a rank.
func StepsMetric(rank int) string { return fmt.Sprintf("steps_rank_%d", rank) }

// StepsCounter is the counter of sampler steps done for a rank.
func StepsCounter(rank int) beam.Counter { return beam.NewCounter(MetricsNamespace, StepsMetric(rank)) }
