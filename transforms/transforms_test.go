package transforms

import (
	"context"
	"errors"
	"fmt"
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

// smallWork is STI on small inline NMF data, with its configuration: SG-MCMC chains from their
// own prior draws, one task each.
func smallWork(t *testing.T) (Work, sti.Config) {
	t.Helper()
	data, _, err := models.GeneratePoisson(rand.New(rand.NewPCG(1, 2)), []int{8, 6}, 2, []float64{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sti.DefaultSGMCMC("nmf")
	cfg.Ladder = evidence.Power(3, 4)
	cfg.Steps, cfg.Burnin, cfg.Start = 30, 10, sti.PriorStart
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
	cfg := sti.Default("gauss")
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

// TestProgress follows a race's tracker: the first stage's tasks, the chains they start joining
// with their plans, steps counted as they are spent and each once (a failed task's no longer),
// the round under way and its tasks, the ETA of the round at the rate it has run, and the ranks
// the race still runs once it publishes its standing.
func TestProgress(t *testing.T) {
	e := estimators.STI{Config: sti.Default("nmf")}
	plan := func(t estimators.Task) int { return 100 * (1 + t.Round) }
	p := Track("t1", e, []int{1, 2}, plan)
	defer Untrack("t1")
	s := p.Snapshot()
	if s.Round != -1 || s.Tasks != 2 || s.TasksDone != 0 || s.ETA != 0 || !reflect.DeepEqual(s.Live, []int{1, 2}) {
		t.Fatalf("fresh snapshot: %+v", s)
	}
	// Rank 1's start stage starts two chains of round 0.
	start := e.Tasks(1)[0]
	chains := []estimators.Task{{Rank: 1, Stage: 1, Index: 1}, {Rank: 1, Stage: 1, Index: 2}}
	ctx, finish := running(context.Background(), "t1", start)
	progress.Add(ctx, 40)
	finish(estimators.Result{Task: start, Steps: 40}, chains, nil)
	if s = p.Snapshot(); s.Round != 0 || s.Tasks != 2 || s.StepsDone != 40 {
		t.Fatalf("after the start stage: %+v", s)
	}
	// A running chain's steps count as it spends them; the round's ETA is its steps left at the
	// rate it has spent them.
	ctx, finish = running(context.Background(), "t1", chains[0])
	progress.Add(ctx, 50)
	time.Sleep(20 * time.Millisecond)
	s = p.Snapshot()
	if r := s.ETA.Seconds() / (s.Elapsed - p.roundStart).Seconds(); s.StepsDone != 90 || s.TasksDone != 0 || r < 2.9 || r > 3.1 {
		t.Fatalf("while the chain runs: %+v (ETA %.2f of the round's time, want 3: 150 steps left after 50)", s, r)
	}
	finish(estimators.Result{Task: chains[0], Steps: 100}, nil, nil)
	// A failed task is not done and its steps no longer count (a retry spends them again).
	ctx, finish = running(context.Background(), "t1", chains[1])
	progress.Add(ctx, 30)
	finish(estimators.Result{}, nil, errors.New("worker lost"))
	if s = p.Snapshot(); s.StepsDone != 90 || s.TasksDone != 1 {
		t.Errorf("after a failed task: %+v", s)
	}
	// Steps reported under another run ID count nowhere.
	other, _ := running(context.Background(), "none", chains[1])
	progress.Add(other, 7)
	// The race's standing says which ranks it still runs; the next round's tasks join.
	publish("t1", evidence.Standing{Round: 0, Leader: 2, Left: []evidence.Departure{{Rank: 1, Round: 0, Leader: 2, Gap: 10, Sigma: 1}}})
	planned("t1", []estimators.Task{{Rank: 2, Stage: 1, Index: 1, Round: 1}})
	if s = p.Snapshot(); s.StepsDone != 90 || !reflect.DeepEqual(s.Live, []int{2}) || s.Round != 1 || s.Tasks != 1 || s.ETA != 0 {
		t.Errorf("after round 0: %+v", s)
	}
}

// A task that revises its plan as it runs (an annealing, whose number of temperatures is
// adaptive) replaces its planned steps in the round's.
func TestProgressFollowsARevisedPlan(t *testing.T) {
	e := estimators.STI{Config: sti.DefaultAnnealed("nmf")}
	p := Track("t2", e, []int{2}, func(estimators.Task) int { return 1000 })
	defer Untrack("t2")
	task := e.Tasks(2)[0]
	ctx, finish := running(context.Background(), "t2", task)
	progress.Add(ctx, 500)
	progress.Expect(ctx, 5000)
	time.Sleep(10 * time.Millisecond)
	s := p.Snapshot()
	// The rank's start stage anneals its replicas in one task: 5 000 steps with 500 done.
	if r := s.ETA.Seconds() / (s.Elapsed - p.roundStart).Seconds(); r < 8.9 || r > 9.1 {
		t.Errorf("after a plan of 5 000: ETA %.2f of the round's time, want 9", r)
	}
	finish(estimators.Result{Task: task, Steps: 5000}, nil, nil)
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
