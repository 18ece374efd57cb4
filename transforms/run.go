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
	register.DoFn4x1[context.Context, estimators.Task, func(int, estimators.Result), func(estimators.Task), error](&expandFn{})
}

// Estimate runs every task of estimator e for ranks and combines them: a PCollection<KV<int,
// evidence.RankEvidence>>, one element per rank, and what the tasks of each rank cost, a
// PCollection<KV<int, RankTime>>. e is fn.Work's estimator; fn configures the
// workers of both stages when e is staged (see estimators.Staged): its first-stage tasks run
// through Expand, each emitting its own result and its follow-on tasks, which are reshuffled
// so the runner can spread them, and run like the tasks of a single-stage estimator; the
// results of both stages then combine per rank.
func Estimate(s beam.Scope, e estimators.Estimator, ranks []int, fn *RunFn) (evidence, times beam.PCollection) {
	s = s.Scope("Estimate")
	tasks := FanOut(s, e, ranks)
	var results beam.PCollection
	if !estimators.IsStaged(e) {
		results = Run(s, fn, tasks)
	} else {
		first, next := Expand(s, fn, tasks)
		results = beam.Flatten(s, first, Run(s, fn, beam.Reshuffle(s, next)))
	}
	return CombinePerRank(s, fn.Work, results), TimePerRank(s, results)
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
	// Spill, when set, is a local directory the tasks' payloads and states travel through
	// instead of the collections (spill.go): for workers in the launching process only.
	Spill string

	problem estimators.Problem
	tasks   Concurrent[estimators.Result]
}

// Setup prepares (or finds) the worker's problem.
func (f *RunFn) Setup(ctx context.Context) error {
	_, p, err := loadResumed(ctx, f.Work, f.StartDir, f.StateDir)
	if err != nil {
		return err
	}
	f.problem = p
	f.tasks.Start()
	return nil
}

// loadResumed returns the work's prepared problem, and the problem that resumes from startDir
// and saves into stateDir (see estimators.Resumable), which is the prepared one when both are
// empty.
func loadResumed(ctx context.Context, w Work, startDir, stateDir string) (prepared, resumed estimators.Problem, err error) {
	p, err := LoadProblem(ctx, w)
	if err != nil || (startDir == "" && stateDir == "") {
		return p, p, err
	}
	r, ok := p.(estimators.Resumable)
	if !ok {
		return nil, nil, fmt.Errorf("estimator %s does not resume from or save states", w.Estimator.Name)
	}
	return p, r.Resume(startDir, stateDir), nil
}

// Teardown stops any task still running (after a failed bundle).
func (f *RunFn) Teardown() { f.tasks.Stop() }

// ProcessElement starts task t and emits the tasks of the bundle that have finished.
func (f *RunFn) ProcessElement(ctx context.Context, t estimators.Task, emit func(int, estimators.Result)) error {
	reportReads(ctx)
	if err := f.flush(ctx, emit); err != nil {
		return err
	}
	err := f.tasks.Go(f.Workers, func(ctx context.Context) (estimators.Result, error) {
		stop := startClock()
		ctx, finish := running(ctx, f.RunID, t)
		if err := unspill(&t); err != nil {
			return estimators.Result{Task: t}, err
		}
		r, err := f.problem.Run(ctx, t)
		r.Seconds, r.CPUSeconds = stop()
		if err == nil {
			err = spillState(f.Spill, &r)
		}
		if err != nil {
			finish(r, nil, err)
			return r, err
		}
		// The payload served the run; the results that combine need not carry it.
		r.Task.Payload = nil
		finish(r, nil, nil)
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
		count(ctx, r)
		emit(r.Task.Rank, r)
	}
	return nil
}

// count counts a finished task, of either stage, in Beam metrics.
func count(ctx context.Context, r estimators.Result) {
	StepsCounter(r.Task.Rank).Inc(ctx, int64(r.Steps))
	tasksCounter.Inc(ctx, 1)
	if r.Divergence != "" {
		divergedCounter.Inc(ctx, 1)
	}
}

// Expand runs the first-stage tasks of a staged estimator (see estimators.Expander), with the
// workers fn configures, and returns their results keyed by rank, a PCollection<KV<int,
// estimators.Result>>, and their follow-on tasks, a PCollection<estimators.Task>.
func Expand(s beam.Scope, fn *RunFn, tasks beam.PCollection) (results, next beam.PCollection) {
	s = s.Scope("Expand")
	return beam.ParDo2(s, &expandFn{Work: fn.Work, RunID: fn.RunID, Workers: fn.Workers, StartDir: fn.StartDir, StateDir: fn.StateDir, Spill: fn.Spill}, tasks)
}

// expandFn is RunFn's counterpart for first-stage tasks: it runs them concurrently through the
// worker's Expander, sharing RunFn's bound on the tasks that run at once in a process, and emits
// each one's result and its follow-on tasks as it finishes; FinishBundle waits for the rest.
// Its fields are RunFn's. With StartDir or StateDir set it expands through the resumed problem
// when that is an Expander, and through the prepared problem otherwise (see
// estimators.Resumable).
type expandFn struct {
	Work               Work
	RunID              string
	Workers            int
	StartDir, StateDir string
	Spill              string

	problem estimators.Expander
	tasks   Concurrent[expansion]
}

// expansion is what a first-stage task gives.
type expansion struct {
	result estimators.Result
	next   []estimators.Task
}

func (f *expandFn) Setup(ctx context.Context) error {
	p, resumed, err := loadResumed(ctx, f.Work, f.StartDir, f.StateDir)
	if err != nil {
		return err
	}
	x, ok := resumed.(estimators.Expander)
	if !ok {
		x, ok = p.(estimators.Expander)
	}
	if !ok {
		return fmt.Errorf("estimator %s is staged but its problem does not expand tasks", f.Work.Estimator.Name)
	}
	f.problem = x
	f.tasks.Start()
	return nil
}

// Teardown stops any task still running (after a failed bundle).
func (f *expandFn) Teardown() { f.tasks.Stop() }

// ProcessElement starts first-stage task t and emits what the tasks of the bundle that have
// finished gave.
func (f *expandFn) ProcessElement(ctx context.Context, t estimators.Task, emit func(int, estimators.Result), emitNext func(estimators.Task)) error {
	reportReads(ctx)
	if err := f.flush(ctx, emit, emitNext); err != nil {
		return err
	}
	err := f.tasks.Go(f.Workers, func(ctx context.Context) (expansion, error) {
		stop := startClock()
		ctx, finish := running(ctx, f.RunID, t)
		r, next, err := f.problem.Expand(ctx, t)
		r.Seconds, r.CPUSeconds = stop()
		if err == nil {
			err = checkExpansion(t, r, next)
		}
		for i := range next {
			if err == nil {
				err = spill(f.Spill, &next[i])
			}
		}
		finish(r, next, err)
		if err != nil {
			return expansion{}, err
		}
		return expansion{r, next}, nil
	})
	if err != nil {
		return err
	}
	return f.flush(ctx, emit, emitNext)
}

// checkExpansion fails unless first-stage task t reported as itself and started follow-on tasks
// of its rank, which combine with it.
func checkExpansion(t estimators.Task, r estimators.Result, next []estimators.Task) error {
	if t.Stage != 0 {
		return fmt.Errorf("task %+v of stage %d expanded", t, t.Stage)
	}
	if t.Less(r.Task) || r.Task.Less(t) {
		return fmt.Errorf("task %+v reported as %+v", t, r.Task)
	}
	for _, u := range next {
		if u.Stage != 1 || u.Rank != t.Rank {
			return fmt.Errorf("task %+v started task rank %d, stage %d (index %d, replica %d, chain %d)", t, u.Rank, u.Stage, u.Index, u.Replica, u.Chain)
		}
	}
	return nil
}

// FinishBundle waits for the bundle's tasks and emits the rest.
func (f *expandFn) FinishBundle(ctx context.Context, emit func(int, estimators.Result), emitNext func(estimators.Task)) error {
	f.tasks.Wait()
	return f.flush(ctx, emit, emitNext)
}

// flush emits the finished tasks' results and follow-on tasks, and counts them in Beam metrics.
func (f *expandFn) flush(ctx context.Context, emit func(int, estimators.Result), emitNext func(estimators.Task)) error {
	done, err := f.tasks.Take()
	if err != nil {
		return err
	}
	for _, x := range done {
		count(ctx, x.result)
		emit(x.result.Task.Rank, x.result)
		for _, u := range x.next {
			emitNext(u)
		}
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
