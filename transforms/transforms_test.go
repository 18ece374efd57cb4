package transforms

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/progress"
	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/tensor"
	"github.com/stirank/stirank/testdata"
)

// smallWork is STI on small inline NMF data, with its configuration.
func smallWork(t *testing.T) (Work, sti.Config) {
	t.Helper()
	data, _, err := models.GeneratePoisson(rand.New(rand.NewPCG(1, 2)), []int{8, 6}, 2, []float64{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sti.Default("nmf")
	cfg.Ladder = evidence.Power(3, 4)
	cfg.Steps, cfg.Burnin, cfg.Starts = 30, 10, 1
	return Work{Source: Source{Inline: data}, Model: models.PoissonSpec("nmf", []float64{1, 1}, models.LogScale), Estimator: spec(t, estimators.STIName, cfg)}, cfg
}

func spec(t *testing.T, name string, config any) estimators.Spec {
	t.Helper()
	s, err := estimators.NewSpec(name, config)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRankEvidenceFnOrder: the combined evidence is bit-identical whatever order the results
// arrive in and however they are split between accumulators, for STI and for AIS.
func TestRankEvidenceFnOrder(t *testing.T) {
	ctx := context.Background()
	sw, cfg := smallWork(t)
	ais := estimators.AISConfig{Replicas: 3, AISConfig: baselines.DefaultAIS()}
	ais.Temperatures = 20
	for _, w := range []Work{sw, {Source: sw.Source, Model: sw.Model, Estimator: spec(t, baselines.MethodAIS, ais)}} {
		t.Run(w.Estimator.Name, func(t *testing.T) {
			e, err := w.New()
			if err != nil {
				t.Fatal(err)
			}
			p, err := LoadProblem(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			var rs []estimators.Result
			for _, task := range e.Tasks(2) {
				r, err := p.Run(ctx, task)
				if err != nil {
					t.Fatal(err)
				}
				rs = append(rs, r)
			}
			want, err := e.Combine(2, rs)
			if err != nil {
				t.Fatal(err)
			}
			if w.Estimator.Name == estimators.STIName {
				// STI's combine is evidence.Combine over the chain summaries.
				var sums []evidence.ChainSummary
				for _, r := range rs {
					s, err := estimators.Unpack[evidence.ChainSummary](r.Summary)
					if err != nil {
						t.Fatal(err)
					}
					sums = append(sums, s)
				}
				if direct, err := evidence.Combine(cfg.Ladder, sums); err != nil || !reflect.DeepEqual(direct, want) {
					t.Fatalf("STI combine %+v, evidence.Combine %+v (%v)", want, direct, err)
				}
			}
			fn := &RankEvidenceFn{Model: w.Model, Estimator: w.Estimator}
			r := rand.New(rand.NewPCG(3, 4))
			for trial := range 20 {
				perm := r.Perm(len(rs))
				cut := r.IntN(len(rs) + 1)
				a, b := fn.CreateAccumulator(), fn.CreateAccumulator()
				for i, j := range perm {
					if i < cut {
						a = fn.AddInput(a, rs[j])
					} else {
						b = fn.AddInput(b, rs[j])
					}
				}
				got, err := fn.ExtractOutput(fn.MergeAccumulators(b, a))
				if err != nil {
					t.Fatal(err)
				}
				// %v prints every float64 exactly (and NaN, which DeepEqual finds unequal).
				if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
					t.Fatalf("trial %d: combined evidence depends on order:\n%+v\n%+v", trial, got, want)
				}
			}
			// A result seen twice (a bug upstream) is an error, not a silently biased estimate.
			dup := fn.AddInput(fn.AddInput(fn.CreateAccumulator(), rs[0]), rs[0])
			if _, err := fn.ExtractOutput(dup); err == nil {
				t.Error("duplicate result accepted")
			}
		})
	}
}

func TestFanOut(t *testing.T) {
	cfg := sti.Default("nmf")
	cfg.Ladder, cfg.Chains = evidence.Power(3, 4), 3
	cfg.Rank1 = &sti.RankBudget{Rungs: 6, Steps: 10, Burnin: 2}
	seen := map[sti.ChainID]bool{}
	tasks := fanOutTasks(estimators.STI{Config: cfg}, []int{2, 5, 1})
	for _, task := range tasks {
		id := estimators.ChainID(task)
		if seen[id] {
			t.Errorf("%+v twice", id)
		}
		seen[id] = true
	}
	// Ranks 2 and 5 run 4 rungs, rank 1 its own 7.
	if len(seen) != (4+4+7)*3 {
		t.Errorf("%d chains, want 45", len(seen))
	}
	if tasks[0].Rank != 5 || tasks[len(tasks)-1].Rank != 1 {
		t.Errorf("highest rank should come first: %v", tasks)
	}
	got := fanOutTasks(estimators.Chib{Config: estimators.ChibConfig{Replicas: 2}}, []int{1, 3, 2})
	var want []estimators.Task
	for _, r := range []int{3, 2, 1} {
		want = append(want, estimators.Task{Rank: r, Replica: 0}, estimators.Task{Rank: r, Replica: 1})
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("chib tasks %v, want %v", got, want)
	}
}

func TestLoadProblemCachesAndChecks(t *testing.T) {
	w, cfg := smallWork(t)
	a, err := LoadProblem(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadProblem(context.Background(), w)
	if err != nil || a != b {
		t.Errorf("problem prepared twice (%p, %p) or %v", a, b, err)
	}
	cfg.Seed++
	other := w
	other.Estimator = spec(t, estimators.STIName, cfg)
	if c, _ := LoadProblem(context.Background(), other); c == a {
		t.Error("a different configuration shares the problem")
	}
	// Data whose checksum differs from the job's are refused.
	e := Work{Source: Source{Embedded: testdata.Default, Checksum: "0123"}, Model: w.Model, Estimator: w.Estimator}
	if _, err := LoadProblem(context.Background(), e); err == nil {
		t.Error("checksum mismatch accepted")
	}
	e.Source.Checksum = ""
	if _, err := LoadProblem(context.Background(), e); err != nil {
		t.Error(err)
	}
	if err := (Source{}).Validate(); err == nil {
		t.Error("empty source accepted")
	}
	// An unknown estimator, or a configuration it refuses, fails the load.
	e.Estimator.Name = "nope"
	if _, err := LoadProblem(context.Background(), e); err == nil {
		t.Error("unknown estimator accepted")
	}
}

// cold plans a task by steps whether it is warm or not.
func cold(steps func(estimators.Task) int) func(estimators.Task, bool) int {
	return func(t estimators.Task, _ bool) int { return steps(t) }
}

func TestProgress(t *testing.T) {
	cfg := sti.Default("nmf")
	e := estimators.STI{Config: cfg}
	steps := func(t estimators.Task) int { return cfg.ChainSteps(estimators.ChainID(t), false, 2) }
	p := Track("t1", e, []int{1, 2}, Plan{Steps: cold(steps)})
	defer Untrack("t1")
	s := p.Snapshot()
	if s.Tasks != len(e.Tasks(1))+len(e.Tasks(2)) || s.TasksDone != 0 || s.ETA != 0 {
		t.Errorf("fresh snapshot: %+v", s)
	}
	rank1 := int64(0)
	for _, task := range e.Tasks(1) {
		_, finish := running(context.Background(), "t1", task)
		finish(estimators.Result{Task: task, Steps: steps(task)}, nil, nil)
		rank1 += int64(steps(task))
	}
	_, finish := running(context.Background(), "other", estimators.Task{Rank: 2})
	finish(estimators.Result{Task: estimators.Task{Rank: 2}, Steps: 5}, nil, nil)
	s = p.Snapshot()
	if !reflect.DeepEqual(s.RanksDone, []int{1}) || s.TasksDone != len(e.Tasks(1)) || s.ETA <= 0 {
		t.Errorf("after rank 1: %+v", s)
	}
	if s.StepsDone != rank1 {
		t.Errorf("steps %d done, rank 1 planned %d", s.StepsDone, rank1)
	}
}

// A running task's steps count as it reports them, before it ends, each once: its end adds only
// what it spent beyond its plan, to the plan and not again to the steps done.
func TestProgressWhileRunning(t *testing.T) {
	cfg := sti.Default("nmf")
	e := estimators.STI{Config: cfg}
	steps := func(t estimators.Task) int { return cfg.ChainSteps(estimators.ChainID(t), false, 2) }
	p := Track("t2", e, []int{3}, Plan{Steps: cold(steps)})
	defer Untrack("t2")
	total := p.Snapshot().Steps
	task := e.Tasks(3)[len(cfg.Ladder)*cfg.Chains-1]
	ctx, finish := running(context.Background(), "t2", task)
	progress.Add(ctx, 100)
	progress.Add(ctx, 50)
	time.Sleep(10 * time.Millisecond)
	s := p.Snapshot()
	if s.StepsDone != 150 || s.TasksDone != 0 || s.ETA <= 0 {
		t.Fatalf("while running: %+v", s)
	}
	finish(estimators.Result{Task: task, Steps: steps(task) + 40}, nil, nil)
	s = p.Snapshot()
	if s.StepsDone != 150 || s.TasksDone != 1 || s.Steps != total+40 {
		t.Errorf("after the task: %+v (plan %d)", s, total)
	}
	// A failed task is not done and its steps no longer count (a retry spends them again), but
	// the tracker stops counting its time.
	ctx, finish = running(context.Background(), "t2", task)
	progress.Add(ctx, 30)
	finish(estimators.Result{}, nil, fmt.Errorf("worker lost"))
	s = p.Snapshot()
	if s.StepsDone != 150 || s.TasksDone != 1 || p.ranks[3].running != 0 {
		t.Errorf("after a failed task: %+v, %d running", s, p.ranks[3].running)
	}
	// Steps reported under another run ID, or with no tracker, count nowhere.
	other, _ := running(context.Background(), "none", task)
	progress.Add(other, 7)
	if p.Snapshot().StepsDone != 150 {
		t.Error("another run's steps counted")
	}
}

// Steps reported at a higher cost than the rank's others (progress.AddAt) do not price the rest at
// their cost: after a rank's costly task alone, the ETA of its cheap one is what that task's
// steps cost at a third of the price.
func TestProgressWeighsTheStepsByTheirCost(t *testing.T) {
	cfg := sti.Default("nmf")
	cfg.Ladder, cfg.Chains = evidence.Ladder{0, 1}, 1
	e := estimators.STI{Config: cfg}
	steps := func(estimators.Task) int { return 100 }
	work := func(t estimators.Task) float64 { return float64(100 * (1 + 2*t.Index)) }
	p := Track("t3", e, []int{2}, Plan{Steps: cold(steps), Work: func(t estimators.Task, _ bool) float64 { return work(t) }})
	defer Untrack("t3")
	tasks := e.Tasks(2)
	ctx, finish := running(context.Background(), "t3", tasks[1])
	progress.AddAt(ctx, 100, 3)
	time.Sleep(20 * time.Millisecond)
	finish(estimators.Result{Task: tasks[1], Steps: 100}, nil, nil)
	s := p.Snapshot()
	// ETA = elapsed × remaining time / time run, and the remaining time is a third of the time run.
	if r := s.ETA.Seconds() / s.Elapsed.Seconds(); s.StepsDone != 100 || r < 0.3 || r > 0.34 {
		t.Errorf("after the costly task: ETA %v at %v (%.2f of it), want a third", s.ETA, s.Elapsed, r)
	}
}

// trackAnnealing tracks rank 2 of the annealed defaults under runID and returns the tracker, the
// rank's first-stage tasks (its 3 replicas' annealings) and the steps each is planned for.
func trackAnnealing(runID string) (*Progress, []estimators.Task, int) {
	e := estimators.STI{Config: sti.DefaultAnnealed("nmf")}
	steps := func(t estimators.Task) int { return e.TaskSteps(t, false) }
	tasks := e.Tasks(2)
	return Track(runID, e, []int{2}, Plan{Steps: cold(steps)}), tasks, steps(tasks[0])
}

// A task that revises its plan as it runs (an annealing, whose number of temperatures is
// adaptive) replaces its planned steps in the tracker's, both up and down, with those of the
// replicas still waiting; its end adds only what it spent beyond the last plan.
func TestProgressFollowsARevisedPlan(t *testing.T) {
	p, tasks, _ := trackAnnealing("t3")
	defer Untrack("t3")
	task := tasks[0]
	ctx, finish := running(context.Background(), "t3", task)
	progress.Add(ctx, 500)
	progress.Expect(ctx, 70000, 70000)
	if s := p.Snapshot(); s.Steps != 3*70000 || s.StepsDone != 500 {
		t.Fatalf("after a plan of 70 000: %+v", s)
	}
	progress.Expect(ctx, 60000, 60000)
	if s := p.Snapshot(); s.Steps != 3*60000 {
		t.Fatalf("after a plan of 60 000: %+v", s)
	}
	// Steps that cost more as the annealing goes replace the planned work too, its own and that
	// of the replicas waiting.
	progress.Expect(ctx, 60000, 150000)
	if s, w := p.Snapshot(), p.ranks[2].work; s.Steps != 3*60000 || w != 3*150000 {
		t.Fatalf("after a plan of 60 000 steps of work 150 000: %d steps of work %v", s.Steps, w)
	}
	progress.Expect(ctx, 60000, 60000)
	progress.Add(ctx, 60100)
	finish(estimators.Result{Task: task, Steps: 60600}, nil, nil)
	if s := p.Snapshot(); s.Steps != 60600+2*60000 || s.StepsDone != 60600 || s.TasksDone != 1 {
		t.Errorf("after the task: %+v", s)
	}
}

// An annealing's plan holds the chains it will start (progress.Expect); when it ends they join as
// tasks of their own and its plan becomes the steps it spent, as it does for one that diverged and
// starts none.
func TestProgressSwapsAnAnnealingsChainsForTheirTasks(t *testing.T) {
	p, tasks, _ := trackAnnealing("t5")
	defer Untrack("t5")
	ctx, finish := running(context.Background(), "t5", tasks[0])
	progress.Add(ctx, 40000)
	progress.Expect(ctx, 43000, 43000) // 40 000 of its own and 30 chains of 100
	next := make([]estimators.Task, 30)
	for i := range next {
		next[i] = estimators.Task{Rank: 2, Stage: 1, Index: i}
	}
	finish(estimators.Result{Task: tasks[0], Steps: 40000}, next, nil)
	chain, _ := p.planOf(p.ranks[2], next[0])
	if s := p.Snapshot(); s.Steps != int64(40000+30*chain+2*43000) || s.Tasks != 3+30 || s.StepsDone != 40000 {
		t.Errorf("after the annealing: %+v, want a plan of 40 000 + 30 × %d + 2 × 43 000 steps over 33 tasks", s, chain)
	}
	ctx, finish = running(context.Background(), "t5", tasks[1])
	progress.Add(ctx, 20000)
	progress.Expect(ctx, 45000, 45000)
	finish(estimators.Result{Task: tasks[1], Steps: 20000, Divergence: "diverged"}, nil, nil)
	if s := p.Snapshot(); s.Steps != int64(40000+30*chain+20000+45000) {
		t.Errorf("after a diverged annealing: %d steps planned, want 40 000 + 30 × %d + 20 000 + 45 000", s.Steps, chain)
	}
}

// The replicas of an annealing that have not started take the plan a running one revised, and
// one that fails waits again with it.
func TestProgressRevisesTheTasksAlike(t *testing.T) {
	p, tasks, planned := trackAnnealing("t4")
	defer Untrack("t4")
	if len(tasks) != 3 {
		t.Fatalf("%d annealing tasks, want 3", len(tasks))
	}
	ctx, _ := running(context.Background(), "t4", tasks[0])
	progress.Expect(ctx, 70000, 70000)
	if s := p.Snapshot(); s.Steps != 3*70000 {
		t.Fatalf("plan %d after one replica's revision to 70 000, want 3 × 70 000 (each planned %d)", s.Steps, planned)
	}
	ctx, finish := running(context.Background(), "t4", tasks[1])
	progress.Expect(ctx, 80000, 80000)
	if s := p.Snapshot(); s.Steps != 70000+2*80000 {
		t.Fatalf("plan %d after the second replica's revision to 80 000, want 70 000 + 2 × 80 000", s.Steps)
	}
	finish(estimators.Result{}, nil, fmt.Errorf("worker lost"))
	if s := p.Snapshot(); s.Steps != 70000+2*80000 {
		t.Fatalf("plan %d after a failure, want it unchanged", s.Steps)
	}
	ctx, finish = running(context.Background(), "t4", tasks[1])
	progress.Expect(ctx, 75000, 75000)
	finish(estimators.Result{Task: tasks[1], Steps: 75000}, nil, nil)
	if s := p.Snapshot(); s.Steps != 70000+2*75000 || s.TasksDone != 1 {
		t.Errorf("after the retry: %+v, want a plan of 70 000 + 2 × 75 000", s)
	}
}

// A task that says its rank starts cold (progress.Resumes) has the rank's tasks not yet started
// planned cold; its own plan is its to revise (progress.Expect), and that revision does not reach
// the tasks planned cold, even those whose cold plan equals its warm one. The ranks that have not
// said are planned as the ranks that did went, warm and cold in proportion.
func TestProgressTurnsARankCold(t *testing.T) {
	cfg := sti.Default("nmf")
	cfg.Ladder, cfg.Chains = evidence.Ladder{0, 0.5, 1}, 2
	e := estimators.STI{Config: cfg}
	// Every task is planned 100 steps warm; cold, those at t = 1 are planned 500.
	steps := func(t estimators.Task, warm bool) int {
		if !warm && t.Index == 2 {
			return 500
		}
		return 100
	}
	const warmRank, coldRank = 6 * 100, 4*100 + 2*500
	p := Track("t6", e, []int{2, 3, 4}, Plan{Steps: steps, Warm: map[int]bool{2: true, 3: true, 4: true}})
	defer Untrack("t6")
	tasks := e.Tasks(2)
	if s := p.Snapshot(); s.Steps != 3*warmRank {
		t.Fatalf("plan %d, want 3 ranks of 6 tasks of 100 warm", s.Steps)
	}
	first := tasks[0] // at t = 0: planned 100 warm and cold
	ctx, finish := running(context.Background(), "t6", first)
	progress.Resumes(ctx, false)
	// Rank 2's tasks waiting are planned cold, and so are ranks 3 and 4, since every rank that
	// said turned cold.
	if s := p.Snapshot(); s.Steps != 3*coldRank {
		t.Fatalf("plan %d after rank 2 turned cold, want 3 ranks of %d", s.Steps, coldRank)
	}
	progress.Expect(ctx, 300, 300)
	if s := p.Snapshot(); s.Steps != 200+3*coldRank {
		t.Fatalf("plan %d after the task's revision to 300, want 200 more than 3 × %d", s.Steps, coldRank)
	}
	progress.Resumes(ctx, true) // the rank has said
	// It spends its 300 steps and, first of its rank to run, the rank's shared work (a mode
	// search), which the rank's plan holds in the task that accounts for it.
	progress.Add(ctx, 1300)
	finish(estimators.Result{Task: first, Steps: 300}, nil, nil)
	if s, w := p.Snapshot(), p.ranks[2].work+p.ranks[3].work+p.ranks[4].work; s.Steps != 200+3*coldRank || w != float64(s.Steps) {
		t.Fatalf("plan %d steps of work %v after the task, want 200 + 3 × %d of as much", s.Steps, w, coldRank)
	}
	// A task of the rank that starts now takes its cold plan; one that fails waits again with it.
	ctx, finish = running(context.Background(), "t6", tasks[5])
	progress.Add(ctx, 200)
	finish(estimators.Result{}, nil, fmt.Errorf("worker lost"))
	if s := p.Snapshot(); s.Steps != 200+3*coldRank || s.StepsDone != 1300 {
		t.Fatalf("after a cold task failed: %+v", s)
	}
	ctx, finish = running(context.Background(), "t6", tasks[5])
	progress.Add(ctx, 500)
	finish(estimators.Result{Task: tasks[5], Steps: 500}, nil, nil)
	if s := p.Snapshot(); s.Steps != 200+3*coldRank || s.StepsDone != 1800 || s.TasksDone != 2 {
		t.Errorf("after a cold task: %+v", s)
	}
	// Rank 3 says it resumes warm: it is planned warm, and rank 4, which has not said, half warm
	// and half cold, its tasks at t = 1 (100 warm, 500 cold) at 300.
	ctx, _ = running(context.Background(), "t6", e.Tasks(3)[0])
	progress.Resumes(ctx, true)
	if s := p.Snapshot(); s.Steps != 200+coldRank+warmRank+(4*100+2*300) {
		t.Errorf("plan %d after rank 3 said it resumes warm, want 200 + %d + %d + %d", s.Steps, coldRank, warmRank, 4*100+2*300)
	}
}

// The ETA prices the steps left at each rank's own cost so far, and a rank not yet started by
// the line through the ranks seen: here a step costs 2 + rank seconds of a task, one task runs
// at a time, and what remains is known exactly.
func TestETAFromCostsPerRank(t *testing.T) {
	seen := []rankCost{{rank: 2, cost: 4, weight: 10}, {rank: 4, cost: 6, weight: 30}}
	line := costLine(seen)
	if got := line(10); math.Abs(got-12) > 1e-9 {
		t.Errorf("cost at rank 10 from the line: %v, want 12", got)
	}
	if got := costLine(seen[:1])(5); math.Abs(got-8) > 1e-9 {
		t.Errorf("cost at rank 5 from rank 2 alone: %v, want 4·6/3 = 8", got)
	}
	// Rank 1, whose kernel may be another (nmf and cp read its margins), is left out of the line
	// once a higher rank is seen, and scales alone.
	withRank1 := append([]rankCost{{rank: 1, cost: 0.01, weight: 100}}, seen...)
	if got := costLine(withRank1)(10); math.Abs(got-12) > 1e-9 {
		t.Errorf("cost at rank 10 with a cheap rank 1 seen: %v, want 12", got)
	}
	if got := costLine(withRank1[:1])(3); math.Abs(got-0.02) > 1e-9 {
		t.Errorf("cost at rank 3 from rank 1 alone: %v, want 0.01·4/2 = 0.02", got)
	}
	// A line that falls with the rank is not extrapolated: the nearest rank scales.
	if got := costLine([]rankCost{{1, 5, 1}, {3, 4, 1}})(7); math.Abs(got-4*8.0/4) > 1e-9 {
		t.Errorf("falling line: %v, want 8", got)
	}
	p := &Progress{start: time.Now().Add(-100 * time.Second), ranks: map[int]*rankProgress{
		2:  {tasks: 1, tasksDone: 1, steps: 10, stepsDone: 10, work: 10, workDone: 10, busy: 40},
		4:  {tasks: 2, running: 1, started: 40, steps: 30, stepsDone: 10, work: 30, workDone: 10},
		10: {tasks: 1, steps: 5, work: 5},
	}}
	s := p.Snapshot()
	// Rank 4 so far: 60 s over 10 steps. Left: 20 steps of rank 4 at 6 s and 5 of rank 10 at 12
	// s (the line through 4 s at rank 2 and 6 s at rank 4), over the 100 s of task time in 100 s.
	if want := 180 * time.Second; math.Abs(float64(s.ETA-want)) > float64(time.Second) {
		t.Errorf("ETA %v, want %v", s.ETA, want)
	}
}

// A source that names a dataset version reads that version after an append; without the version
// the grown dataset is refused as changed.
func TestSourceReadsItsVersion(t *testing.T) {
	ctx := context.Background()
	w, _ := smallWork(t)
	data := w.Source.Inline
	dir := filepath.Join(t.TempDir(), "ds")
	m, err := tensorio.Write(ctx, dir, data, tensorio.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	more, _ := tensor.New([]int{9, 6}, 1)
	more.Append([]int{8, 0}, 4)
	if _, err := tensorio.Append(ctx, dir, more, tensorio.AppendOptions{Source: "more"}); err != nil {
		t.Fatal(err)
	}
	src := Source{URL: dir, Checksum: m.Checksum(), Version: m.Version}
	got, _, err := src.Load(ctx, tensorio.ReadOptions{Counts: true})
	if err != nil || got.NNZ() != data.NNZ() || !reflect.DeepEqual(got.Shape, data.Shape) {
		t.Fatalf("version %d after an append: %v", m.Version, err)
	}
	src.Version = 0
	if _, _, err := src.Load(ctx, tensorio.ReadOptions{Counts: true}); err == nil {
		t.Error("the current version, changed since, was accepted")
	}
}
