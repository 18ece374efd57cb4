package transforms

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/runners"
	"github.com/stirank/stirank/tensor"
)

// stagedName is the staged test estimator's name.
const stagedName = "staged-test"

func init() {
	estimators.Register(stagedName, func(_ models.Spec, config []byte) (estimators.Estimator, error) {
		var c stagedConfig
		err := json.Unmarshal(config, &c)
		return stagedEstimator{c}, err
	})
	register.DoFn1x0[[]evidence.RankEvidence](&collectFn{})
}

// stagedConfig configures stagedEstimator: per rank Replicas first-stage tasks, each starting
// one follow-on task per (index < Indexes, chain < Chains) whose payload is Floats float64s.
// With ResumeExpands its resumed problem expands too (see estimators.Resumable).
type stagedConfig struct {
	Replicas, Indexes, Chains, Floats int
	ResumeExpands                     bool
}

// Steps each task of the staged test estimator reports, by stage.
const firstSteps, nextSteps = 1, 3

// stagedEstimator is a two-stage estimator whose numbers are sums of integers, exact whatever
// order they add in, so that a test can predict them; it checks what the Beam layer must
// guarantee instead: that the payloads arrive intact and that Combine gets each task once, in
// order.
type stagedEstimator struct{ c stagedConfig }

var (
	_ estimators.Staged    = stagedEstimator{}
	_ estimators.Expander  = (*stagedProblem)(nil)
	_ estimators.Resumable = (*stagedProblem)(nil)
)

func (e stagedEstimator) Validate() error {
	if e.c.Replicas < 1 || e.c.Indexes < 1 || e.c.Chains < 1 || e.c.Floats < 0 {
		return fmt.Errorf("bad configuration %+v", e.c)
	}
	return nil
}

func (e stagedEstimator) Staged() bool { return true }

func (e stagedEstimator) Tasks(rank int) []estimators.Task {
	var ts []estimators.Task
	for r := range e.c.Replicas {
		ts = append(ts, estimators.Task{Rank: rank, Replica: r})
	}
	return ts
}

// followOns lists the follow-on tasks of first-stage task t, payloads left out, in the order
// Task.Less puts them in.
func (e stagedEstimator) followOns(t estimators.Task) []estimators.Task {
	var ts []estimators.Task
	for i := range e.c.Indexes {
		for c := range e.c.Chains {
			ts = append(ts, estimators.Task{Rank: t.Rank, Stage: 1, Index: i, Replica: t.Replica, Chain: c})
		}
	}
	return ts
}

// allTasks lists every task of rank, payloads left out, ordered by Task.Less.
func (e stagedEstimator) allTasks(rank int) []estimators.Task {
	first := e.Tasks(rank)
	all := append([]estimators.Task(nil), first...)
	for _, t := range first {
		all = append(all, e.followOns(t)...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Less(all[j]) })
	return all
}

func (e stagedEstimator) Prepare(data *tensor.Sparse) (estimators.Problem, error) {
	return &stagedProblem{e: e, cells: data.NNZ()}, nil
}

// Combine checks that every task of the rank arrived once, in order and without its payload,
// and sums the tasks' values into LogEvidence.
func (e stagedEstimator) Combine(rank int, results []estimators.Result) (evidence.RankEvidence, error) {
	want := e.allTasks(rank)
	if len(results) != len(want) {
		return evidence.RankEvidence{}, fmt.Errorf("rank %d: %d results, want %d", rank, len(results), len(want))
	}
	ev := evidence.RankEvidence{Rank: rank}
	for i, r := range results {
		if !reflect.DeepEqual(r.Task, want[i]) {
			return evidence.RankEvidence{}, fmt.Errorf("result %d is of task %s with %d payload bytes, want %s", i, markName(r.Task), len(r.Task.Payload), markName(want[i]))
		}
		v, err := estimators.Unpack[float64](r.Summary)
		if err != nil {
			return evidence.RankEvidence{}, err
		}
		ev.LogEvidence += v
		ev.Steps += r.Steps
	}
	return ev, nil
}

// stagedProblem is the staged test estimator on data of cells cells.
type stagedProblem struct {
	e     stagedEstimator
	cells int
}

// value is the number a task contributes, or the j-th number of a follow-on task's payload:
// an integer that names the task, so a payload sent to the wrong task or damaged shows.
func (p *stagedProblem) value(t estimators.Task, j int) float64 {
	return float64(p.cells + t.Rank*1e6 + t.Index*1e5 + t.Replica*1e4 + t.Chain*1e3 + t.Stage*100 + j%100)
}

func (p *stagedProblem) Expand(_ context.Context, t estimators.Task) (estimators.Result, []estimators.Task, error) {
	next := p.e.followOns(t)
	// Emitted last first, so that only sorting puts them in order.
	for i, j := 0, len(next)-1; i < j; i, j = i+1, j-1 {
		next[i], next[j] = next[j], next[i]
	}
	for i := range next {
		b := make([]byte, 8*p.e.c.Floats)
		for j := range p.e.c.Floats {
			binary.LittleEndian.PutUint64(b[8*j:], math.Float64bits(p.value(next[i], j)))
		}
		next[i].Payload = b
	}
	return estimators.Result{Task: t, Steps: firstSteps, Summary: estimators.Pack(p.value(t, 0))}, next, nil
}

func (p *stagedProblem) Run(_ context.Context, t estimators.Task) (estimators.Result, error) {
	if t.Stage != 1 {
		return estimators.Result{}, fmt.Errorf("first-stage task %+v run", t)
	}
	if len(t.Payload) != 8*p.e.c.Floats {
		return estimators.Result{}, fmt.Errorf("task %d/%d/%d/%d: payload of %d bytes", t.Rank, t.Index, t.Replica, t.Chain, len(t.Payload))
	}
	var sum float64
	for j := range p.e.c.Floats {
		v := math.Float64frombits(binary.LittleEndian.Uint64(t.Payload[8*j:]))
		if v != p.value(t, j) {
			return estimators.Result{}, fmt.Errorf("task %d/%d/%d/%d: payload value %d is %v, want %v", t.Rank, t.Index, t.Replica, t.Chain, j, v, p.value(t, j))
		}
		sum += v
	}
	return estimators.Result{Task: t, Steps: nextSteps, Summary: estimators.Pack(sum)}, nil
}

// Resume returns a problem that marks each task it runs with a file in stateDir, the
// first-stage ones only when it expands (ResumeExpands).
func (p *stagedProblem) Resume(_, stateDir string) estimators.Problem {
	r := stagedResumed{p: p, dir: stateDir}
	if p.e.c.ResumeExpands {
		return stagedResumedExpander{r}
	}
	return r
}

type stagedResumed struct {
	p   *stagedProblem
	dir string
}

func (r stagedResumed) Run(ctx context.Context, t estimators.Task) (estimators.Result, error) {
	if err := mark(r.dir, t); err != nil {
		return estimators.Result{}, err
	}
	return r.p.Run(ctx, t)
}

type stagedResumedExpander struct{ stagedResumed }

func (r stagedResumedExpander) Expand(ctx context.Context, t estimators.Task) (estimators.Result, []estimators.Task, error) {
	if err := mark(r.dir, t); err != nil {
		return estimators.Result{}, nil, err
	}
	return r.p.Expand(ctx, t)
}

// markName names the file that marks task t.
func markName(t estimators.Task) string {
	return fmt.Sprintf("%d-%d-%d-%d-%d", t.Stage, t.Rank, t.Index, t.Replica, t.Chain)
}

func mark(dir string, t estimators.Task) error {
	return os.WriteFile(filepath.Join(dir, markName(t)), nil, 0o644)
}

// collected holds what collectFn received, by key.
var collected sync.Map

// collectFn keeps the gathered evidence of a test's pipeline (which runs in the test process).
type collectFn struct{ Key string }

func (f *collectFn) ProcessElement(ranks []evidence.RankEvidence) { collected.Store(f.Key, ranks) }

// runStaged runs the staged test estimator on ranks through Estimate, with fn's workers and
// directories, and returns the gathered evidence, the job's result and the progress tracked.
func runStaged(t *testing.T, c stagedConfig, ranks []int, fn *RunFn) ([]evidence.RankEvidence, runners.Result, ProgressSnapshot) {
	t.Helper()
	sw, _ := smallWork(t)
	fn.Work = Work{Source: sw.Source, Model: sw.Model, Estimator: spec(t, stagedName, c)}
	fn.RunID = t.Name()
	e, err := fn.Work.New()
	if err != nil {
		t.Fatal(err)
	}
	progress := Track(fn.RunID, e, ranks, func(task estimators.Task) int {
		if task.Stage == 0 {
			return firstSteps
		}
		return nextSteps
	})
	defer Untrack(fn.RunID)
	p, s := beam.NewPipelineWithRoot()
	ev, _ := Estimate(s, e, ranks, fn)
	beam.ParDo0(s, &collectFn{Key: t.Name()}, Gather(s, beam.DropKey(s, ev)))
	rr, err := runners.Run(context.Background(), p, runners.Logging{})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := collected.LoadAndDelete(t.Name())
	if !ok {
		t.Fatal("no evidence gathered")
	}
	return got.([]evidence.RankEvidence), rr, progress.Snapshot()
}

// wantStaged is the evidence the staged test estimator must give for ranks on smallWork's data,
// computed from its definition without Beam.
func wantStaged(t *testing.T, c stagedConfig, ranks []int) []evidence.RankEvidence {
	sw, _ := smallWork(t)
	p := &stagedProblem{e: stagedEstimator{c}, cells: sw.Source.Inline.NNZ()}
	var want []evidence.RankEvidence
	for _, r := range ranks {
		ev := evidence.RankEvidence{Rank: r}
		for _, task := range p.e.allTasks(r) {
			if task.Stage == 0 {
				ev.LogEvidence += p.value(task, 0)
				ev.Steps += firstSteps
				continue
			}
			for j := range c.Floats {
				ev.LogEvidence += p.value(task, j)
			}
			ev.Steps += nextSteps
		}
		want = append(want, ev)
	}
	return want
}

// A staged estimator's first-stage tasks start their follow-on tasks, whose payloads (here
// 200 KB each) reach them intact; every result of both stages combines once, in order, into the
// same evidence whatever the number of workers; and metrics and progress count both stages.
func TestEstimateStaged(t *testing.T) {
	c := stagedConfig{Replicas: 2, Indexes: 2, Chains: 3, Floats: 25000}
	ranks := []int{3, 1, 2}
	want := wantStaged(t, c, []int{1, 2, 3})
	tasksPerRank := c.Replicas * (1 + c.Indexes*c.Chains)
	for _, workers := range []int{1, 3} {
		got, rr, progress := runStaged(t, c, ranks, &RunFn{Workers: workers})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d workers: evidence\n%+v, want\n%+v", workers, got, want)
		}
		miscounted := func(rr runners.Result) []string {
			var bad []string
			if n, ok := rr.Counter(MetricsNamespace, TasksMetric); !ok || n != int64(len(ranks)*tasksPerRank) {
				bad = append(bad, fmt.Sprintf("tasks counted %d (%v), want %d", n, ok, len(ranks)*tasksPerRank))
			}
			for _, ev := range want {
				if n, ok := rr.Counter(MetricsNamespace, StepsMetric(ev.Rank)); !ok || n != int64(ev.Steps) {
					bad = append(bad, fmt.Sprintf("rank %d steps counted %d (%v), want %d", ev.Rank, n, ok, ev.Steps))
				}
			}
			return bad
		}
		if bad := miscounted(rr); bad != nil {
			t.Logf("%d workers: %v; running again (see runners.Result.Counter on prism)", workers, bad)
			_, rr, _ = runStaged(t, c, ranks, &RunFn{Workers: workers})
			for _, b := range miscounted(rr) {
				t.Errorf("%d workers, run again: %s", workers, b)
			}
		}
		// The tracker counts the follow-on tasks, the round the job ends in, and every step.
		steps := int64(0)
		for _, ev := range want {
			steps += int64(ev.Steps)
		}
		if progress.Round != 0 || progress.Tasks != len(ranks)*c.Replicas*c.Indexes*c.Chains || progress.TasksDone != progress.Tasks || progress.StepsDone != steps {
			t.Errorf("%d workers: progress %+v", workers, progress)
		}
	}
}

// With a state directory both stages run through the resumed problem: the follow-on tasks
// always, the first-stage tasks when the resumed problem expands; the evidence is unchanged.
func TestEstimateStagedResumes(t *testing.T) {
	ranks := []int{1, 2}
	for _, expands := range []bool{false, true} {
		t.Run(fmt.Sprint("expands=", expands), func(t *testing.T) {
			c := stagedConfig{Replicas: 2, Indexes: 2, Chains: 2, Floats: 4, ResumeExpands: expands}
			dir := t.TempDir()
			got, _, _ := runStaged(t, c, ranks, &RunFn{StateDir: dir})
			if want := wantStaged(t, c, ranks); !reflect.DeepEqual(got, want) {
				t.Errorf("evidence\n%+v, want\n%+v", got, want)
			}
			var want []string
			e := stagedEstimator{c}
			for _, r := range ranks {
				for _, task := range e.allTasks(r) {
					if task.Stage == 1 || expands {
						want = append(want, markName(task))
					}
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var marked []string
			for _, en := range entries {
				marked = append(marked, en.Name())
			}
			sort.Strings(want)
			if !reflect.DeepEqual(marked, want) {
				t.Errorf("tasks run resumed %v, want %v", marked, want)
			}
		})
	}
}

// A first-stage task must report as itself and start follow-on tasks of stage 1 and its rank.
func TestCheckExpansion(t *testing.T) {
	task := estimators.Task{Rank: 2, Replica: 1}
	ok := []estimators.Task{{Rank: 2, Stage: 1, Replica: 1}, {Rank: 2, Stage: 1, Index: 3, Chain: 4, Payload: []byte{1}}}
	if err := checkExpansion(task, estimators.Result{Task: task}, ok); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		t    estimators.Task
		r    estimators.Task
		next []estimators.Task
	}{
		{estimators.Task{Rank: 2, Stage: 1}, estimators.Task{Rank: 2, Stage: 1}, nil},
		{task, estimators.Task{Rank: 2, Replica: 0}, nil},
		{task, task, []estimators.Task{{Rank: 2, Stage: 0, Replica: 1}}},
		{task, task, []estimators.Task{{Rank: 3, Stage: 1, Replica: 1}}},
	} {
		if err := checkExpansion(bad.t, estimators.Result{Task: bad.r}, bad.next); err == nil {
			t.Errorf("task %+v reporting as %+v and starting %+v accepted", bad.t, bad.r, bad.next)
		}
	}
}
