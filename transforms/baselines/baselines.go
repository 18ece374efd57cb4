// Package baselines holds the Beam DoFns and CombineFns of the baseline estimators (Chib's method
// and annealed importance sampling, package github.com/stirank/stirank/baselines): the fan-out of
// (rank, replica) tasks, the DoFn that runs one replica per task, and the CombineFn that reduces a
// rank's replicas into its evidence. Like package transforms for STI, it is a thin layer: every
// number comes from the Beam-free package.
package baselines

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	core "github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/transforms"
)

func init() {
	register.DoFn2x0[[]byte, func(Task)](&fanOutFn{})
	register.Emitter1[Task]()
	register.DoFn3x1[context.Context, Task, func(int, core.Summary), error](&RunFn{})
	register.Emitter2[int, core.Summary]()
	register.Combiner3[replicas, core.Summary, evidence.RankEvidence](&RankFn{})
}

// Work is what every replica shares: the data, the prior rates, the method and its
// configuration. It holds plain exported values only (it travels JSON-encoded in DoFns).
type Work struct {
	Source transforms.Source
	Rates  []float64
	// Method is core.MethodChib or core.MethodAIS.
	Method string
	Chib   core.ChibConfig
	AIS    core.AISConfig
}

// Validate checks the method and its configuration.
func (w Work) Validate() error {
	if err := w.Source.Validate(); err != nil {
		return err
	}
	switch w.Method {
	case core.MethodChib:
		return w.Chib.Validate()
	case core.MethodAIS:
		return w.AIS.Validate()
	}
	return fmt.Errorf("unknown method %q (chib or ais)", w.Method)
}

// Task names one replica: a Chib replica or an AIS run of a rank.
type Task struct {
	Rank, Replica int
}

// FanOut returns one Task per (rank, replica), reshuffled so the runner can spread them.
func FanOut(s beam.Scope, ranks []int, replicas int) beam.PCollection {
	s = s.Scope("BaselineFanOut")
	imp := beam.Impulse(s)
	tasks := beam.ParDo(s, &fanOutFn{Ranks: ranks, Replicas: replicas}, imp)
	return beam.Reshuffle(s, tasks)
}

// fanOutFn emits the tasks, the costliest (highest rank) first.
type fanOutFn struct {
	Ranks    []int
	Replicas int
}

func (f *fanOutFn) ProcessElement(_ []byte, emit func(Task)) {
	ranks := append([]int(nil), f.Ranks...)
	sort.Sort(sort.Reverse(sort.IntSlice(ranks)))
	for _, r := range ranks {
		for k := range f.Replicas {
			emit(Task{Rank: r, Replica: k})
		}
	}
}

// Run runs one replica per Task of tasks and returns their summaries keyed by rank:
// a PCollection<KV<int, core.Summary>>.
func Run(s beam.Scope, fn *RunFn, tasks beam.PCollection) beam.PCollection {
	s = s.Scope("RunReplicas")
	return beam.ParDo(s, fn, tasks)
}

// RunFn runs one replica per element (core.Problem.Run). The problem is prepared once per worker
// process and shared. As transforms.RunChainFn does for STI chains, the replicas of a bundle run
// concurrently, up to Workers at a time per process, and FinishBundle waits for them; replicas are
// seeded by (seed, rank, replica) alone, so results do not depend on scheduling.
type RunFn struct {
	Work Work
	// Workers bounds the replicas that run at once in a worker process; 0 means GOMAXPROCS.
	Workers int

	problem  *core.Problem
	replicas transforms.Concurrent[core.Summary]
}

// Setup prepares (or finds) the worker's problem.
func (f *RunFn) Setup(ctx context.Context) error {
	p, err := LoadProblem(ctx, f.Work)
	if err != nil {
		return err
	}
	f.problem = p
	f.replicas.Start()
	return nil
}

// Teardown stops any replica still running.
func (f *RunFn) Teardown() { f.replicas.Stop() }

// ProcessElement starts the replica and emits those of the bundle that have finished.
func (f *RunFn) ProcessElement(ctx context.Context, t Task, emit func(int, core.Summary)) error {
	if err := f.flush(ctx, emit); err != nil {
		return err
	}
	w := f.Work
	err := f.replicas.Go(f.Workers, func(ctx context.Context) (core.Summary, error) {
		sum, err := f.problem.Run(ctx, w.Method, t.Rank, t.Replica, w.Chib, w.AIS)
		if err != nil {
			return sum, fmt.Errorf("%s rank %d, replica %d: %w", w.Method, t.Rank, t.Replica, err)
		}
		return sum, nil
	})
	if err != nil {
		return err
	}
	return f.flush(ctx, emit)
}

// FinishBundle waits for the bundle's replicas and emits the rest.
func (f *RunFn) FinishBundle(ctx context.Context, emit func(int, core.Summary)) error {
	f.replicas.Wait()
	return f.flush(ctx, emit)
}

func (f *RunFn) flush(ctx context.Context, emit func(int, core.Summary)) error {
	done, err := f.replicas.Take()
	if err != nil {
		return err
	}
	for _, s := range done {
		transforms.StepsCounter(s.Rank).Inc(ctx, int64(s.Sweeps))
		replicasCounter.Inc(ctx, 1)
		emit(s.Rank, s)
	}
	return nil
}

// ReplicasMetric counts the replicas done.
const ReplicasMetric = "baseline_replicas_done"

var replicasCounter = beam.NewCounter(transforms.MetricsNamespace, ReplicasMetric)

// CombinePerRank reduces a PCollection<KV<int, core.Summary>> into a PCollection<KV<int,
// evidence.RankEvidence>> with core.CombineRank.
func CombinePerRank(s beam.Scope, method string, sums beam.PCollection) beam.PCollection {
	s = s.Scope("BaselineCombinePerRank")
	return beam.CombinePerKey(s, &RankFn{Method: method}, sums)
}

// replicas is the accumulator of RankFn.
type replicas struct {
	Sums []core.Summary
}

// RankFn is a CombineFn from the replica summaries of one rank to its evidence. core.CombineRank
// sorts them by replica, so the result does not depend on the order bundles arrive in.
type RankFn struct {
	Method string
}

func (f *RankFn) CreateAccumulator() replicas { return replicas{} }

func (f *RankFn) AddInput(a replicas, s core.Summary) replicas {
	a.Sums = append(a.Sums, s)
	return a
}

func (f *RankFn) MergeAccumulators(a, b replicas) replicas {
	a.Sums = append(a.Sums, b.Sums...)
	return a
}

func (f *RankFn) ExtractOutput(a replicas) (evidence.RankEvidence, error) {
	return core.CombineRank(f.Method, a.Sums)
}

// The problems of a worker process, keyed by data and rates.
var problems = struct {
	sync.Mutex
	m map[string]*entry
}{m: map[string]*entry{}}

type entry struct {
	once sync.Once
	p    *core.Problem
	err  error
}

func (w Work) key() string {
	data := w.Source.Checksum
	if data == "" {
		data = w.Source.String()
		if w.Source.Inline != nil {
			data = transforms.InlineChecksum(w.Source.Inline)
		}
	}
	b, _ := json.Marshal(w.Rates)
	return data + "\x00" + string(b)
}

func entryFor(key string) *entry {
	problems.Lock()
	defer problems.Unlock()
	e := problems.m[key]
	if e == nil {
		if len(problems.m) >= 4 {
			problems.m = map[string]*entry{}
		}
		e = &entry{}
		problems.m[key] = e
	}
	return e
}

// LoadProblem returns the work's prepared problem, reading the data on the first call in this
// process. A failed load is not cached.
func LoadProblem(ctx context.Context, w Work) (*core.Problem, error) {
	key := w.key()
	e := entryFor(key)
	e.once.Do(func() {
		t, _, err := w.Source.Load(ctx, true)
		if err != nil {
			e.err = err
			return
		}
		e.p, e.err = core.NewProblem(t, w.Rates)
	})
	if e.err != nil {
		problems.Lock()
		if problems.m[key] == e {
			delete(problems.m, key)
		}
		problems.Unlock()
		return nil, e.err
	}
	return e.p, nil
}

// Preload puts a problem the launcher has already prepared for w into this process's cache.
func Preload(w Work, p *core.Problem) {
	e := entryFor(w.key())
	e.once.Do(func() { e.p = p })
}
