// Package estimators is the one interface through which the Beam layer (packages transforms and
// pipelines) runs every estimator of log p(X | R): an Estimator fans a rank out into Tasks, a
// worker binds it to the data once (Prepare) and runs the tasks it receives (Problem.Run), and a
// rank's Results combine into its evidence (Combine). Estimators register by name, so that the
// command line and the pipelines ask the registry instead of switching on methods. Nothing here
// or in the engines it adapts (sti, baselines) builds or runs a pipeline: the only Beam package
// linked in is its filesystem, through io/chainstate, which reads and writes STI's saved states.
//
// Adding an estimator is one file here (see docs/extending.md): its configuration type, its
// tasks, how one runs and how a rank's results combine, and a Register call in init.
package estimators

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/tensor"
)

// Task names one unit of work of a rank. Index and Replica mean what the estimator says: for
// STI the temperature index and the chain, for Chib and AIS Index is 0 and Replica the replica.
// Every random stream of a task derives from the seed and the task alone, so a retried task
// reproduces its result bit for bit, whatever worker runs it.
//
// A staged estimator (see Staged) has two kinds of tasks: the first-stage tasks Tasks lists
// (Stage 0), and the follow-on tasks (Stage 1) each first-stage task starts when it runs
// (Expander), which carry what they start from in Payload. Every field is exported because
// Beam encodes only exported fields.
type Task struct {
	Rank, Index, Replica int
	// Stage is 0 for the tasks Estimator.Tasks lists, 1 for follow-on tasks.
	Stage int
	// Chain numbers a follow-on task among those of its (Rank, Index, Replica); 0 for
	// first-stage tasks, or what the estimator makes of it.
	Chain int
	// Kind names what a follow-on task runs where it is not the estimator's own work but a
	// check of it (the phase check: PhaseKind), whose result the rank's combiner merges with
	// the estimate; empty otherwise.
	Kind string
	// Round is the round of a follow-on task of a racing estimator (see Racer): a task of round
	// k + 1 carries on from where its round-k self stopped (Continue). 0 otherwise.
	Round int
	// Payload is the follow-on task's starting point as its first-stage task encoded it (a
	// few bytes to a few hundred KB); empty for first-stage tasks. The Beam layer drops it from
	// the task of a Result before the results combine, so Combine must not need it.
	Payload []byte
	// Stored names the file the Beam layer left Payload in while the task travelled outside the
	// pipeline's collections (transforms.RunFn.Spill); empty when Payload holds it.
	Stored string
	// Plain says a follow-on task of a racing estimator records without control variates from
	// its round on (Rounder.Controlled).
	Plain bool
}

// Less orders tasks by rank, stage, index, replica, chain and kind; the payload plays no part, so
// two tasks neither of which is less than the other are the same task.
func (t Task) Less(u Task) bool {
	switch {
	case t.Rank != u.Rank:
		return t.Rank < u.Rank
	case t.Stage != u.Stage:
		return t.Stage < u.Stage
	case t.Index != u.Index:
		return t.Index < u.Index
	case t.Replica != u.Replica:
		return t.Replica < u.Replica
	case t.Chain != u.Chain:
		return t.Chain < u.Chain
	case t.Kind != u.Kind:
		return t.Kind < u.Kind
	}
	return t.Round < u.Round
}

// ByTask orders results by their tasks (Task.Less), for slices.SortFunc.
func ByTask(a, b Result) int {
	switch {
	case a.Task.Less(b.Task):
		return -1
	case b.Task.Less(a.Task):
		return 1
	}
	return 0
}

// Same reports whether t and u are the same unit of work, in the same or another round.
func (t Task) Same(u Task) bool {
	t.Round, u.Round = 0, 0
	return !t.Less(u) && !u.Less(t)
}

// Result is what one task reports: the accounting every estimator shares, which the Beam layer
// reads for its metrics and progress, and the estimator's own summary of the task, which only
// the estimator's Combine reads. It holds plain exported values, so it crosses Beam stages.
type Result struct {
	Task Task
	// Steps counts sampler steps (or sweeps), CellEvals per-cell likelihood evaluations.
	Steps     int
	CellEvals int64
	// Divergence describes a non-finite value the task met; empty when there was none.
	Divergence string
	// Summary is the estimator's record of the task, encoded by Pack.
	Summary []byte
	// State is where a racing estimator's task stopped (Racer), encoded by the estimator: the
	// next round's task continues from it (Continue). The Beam layer drops it before the
	// results combine, so Combine must not need it. Empty for a task that does not go on.
	State []byte
	// Stored names the file the Beam layer left State in (Task.Stored); empty when State holds
	// it.
	Stored string
	// Seconds and CPUSeconds are the wall-clock and CPU time the task took on its worker, set by
	// the Beam layer that ran it (transforms.RunFn). No estimate depends on them.
	Seconds, CPUSeconds float64
}

// Estimator is an estimation method with its model and configuration, before any data.
type Estimator interface {
	// Validate checks the configuration without data.
	Validate() error
	// Tasks lists the tasks of a rank.
	Tasks(rank int) []Task
	// Prepare binds the estimator to data. A worker prepares once and shares the problem, read
	// only, by every task it runs.
	Prepare(data *tensor.Sparse) (Problem, error)
	// Combine reduces the results of every task of a rank, ordered by Task.Less and each task
	// once, into the rank's evidence; for a staged estimator, the first-stage results and then
	// the follow-on ones.
	Combine(rank int, results []Result) (evidence.RankEvidence, error)
}

// Problem is an estimator bound to its data: it runs tasks, concurrently.
type Problem interface {
	Run(ctx context.Context, t Task) (Result, error)
}

// Staged is an Estimator that may run in two stages, which the Beam layer must know while it
// builds the graph, before any data. When Staged reports true, Prepare returns an Expander: the
// first-stage tasks (Tasks) run through Expand, their follow-on tasks through Run, and Combine
// gets the results of both stages of a rank. It is a method, not just a type, so that one
// estimator type can be staged or not according to its configuration.
type Staged interface {
	Estimator
	Staged() bool
}

// IsStaged reports whether e runs in two stages (see Staged).
func IsStaged(e Estimator) bool {
	s, ok := e.(Staged)
	return ok && s.Staged()
}

// Expander is the Problem of a staged estimator. Expand runs a first-stage task and returns its
// own result and its follow-on tasks, each with Stage 1, the rank of t and its Payload set;
// Run runs the follow-on tasks. Like Run, Expand depends on t alone, so a retried first stage
// returns the same result and the same follow-on tasks, payloads included, bit for bit.
type Expander interface {
	Problem
	Expand(ctx context.Context, t Task) (Result, []Task, error)
}

// Racer is an estimator whose follow-on tasks run in rounds: each round a rank's tasks carry
// their work on from the states the round before left (Result.State) to about twice the
// records, and package transforms runs as many rounds as the race needs (evidence.Decide).
// Combine then gets every round's results of a task and keeps the latest.
type Racer interface {
	Staged
	Races() bool
}

// IsRacer reports whether e runs in rounds (see Racer).
func IsRacer(e Estimator) bool {
	r, ok := e.(Racer)
	return ok && r.Staged() && r.Races()
}

// Rounder is the problem of a racing estimator: it knows from its data the round at which a
// rank's tasks reach the configured budget.
type Rounder interface {
	Problem
	// FullRound is the round at which rank's tasks have made the configured budget's records.
	FullRound(rank int) int
	// Controlled reports whether the chains of the rank whose evidence so far is re keep their
	// control variates in its next round (Continue).
	Controlled(re evidence.RankEvidence) bool
}

// Continue is the task of the next round that carries on from result r, whose task stopped in
// state r.State; plain drops its control variates from then on (Rounder.Controlled).
func Continue(r Result, plain bool) Task {
	t := r.Task
	t.Round++
	t.Payload, t.Stored, t.Plain = r.State, r.Stored, t.Plain || plain
	return t
}

// Latest keeps, of results sorted by Task.Less, the last round of each task: the results a
// racing estimator's Combine reads. With upTo ≥ 0 it ignores rounds after upTo.
func Latest(results []Result, upTo int) []Result {
	var out []Result
	for _, r := range results {
		if upTo >= 0 && r.Task.Round > upTo {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Task.Same(r.Task) {
			out[n-1] = r
			continue
		}
		out = append(out, r)
	}
	return out
}

// Planner is a Problem that knows, from its data, about how many steps each task will report,
// for a progress display's plan.
type Planner interface {
	Problem
	TaskSteps(t Task) int
}

// Resumable is a Problem whose tasks can resume from the states a previous run saved in
// startDir and save their final states in stateDir (either may be empty), as stirank reanalyze
// does with STI chains. For a staged estimator the Beam layer runs the follow-on tasks through
// the resumed problem, and the first-stage tasks through it too when it is an Expander; when it
// is not, the first stage runs through the problem itself and neither resumes nor saves.
type Resumable interface {
	Problem
	Resume(startDir, stateDir string) Problem
}

// Spec names a registered estimator and holds its configuration as JSON: a plain value, so it
// crosses Beam stages, and what evidence.json records as the run's configuration. Every
// configuration keeps its seed under "seed", which evidence.json repeats at the top level.
type Spec struct {
	Name   string
	Config json.RawMessage
}

// NewSpec encodes the configuration of the estimator name.
func NewSpec(name string, config any) (Spec, error) {
	b, err := json.Marshal(config)
	if err != nil {
		return Spec{}, fmt.Errorf("estimator %s: %w", name, err)
	}
	return Spec{Name: name, Config: b}, nil
}

// Builder makes an estimator of a model from its configuration (Spec.Config).
type Builder func(model models.Spec, config []byte) (Estimator, error)

var registry = struct {
	sync.RWMutex
	m map[string]Builder
}{m: map[string]Builder{}}

// Register makes an estimator available by name; call it from an init function.
func Register(name string, b Builder) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[name]; dup {
		panic("estimators: " + name + " registered twice")
	}
	registry.m[name] = b
}

// Names lists the registered estimators.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	var out []string
	for n := range registry.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// New builds and validates the estimator s names, for model.
func New(model models.Spec, s Spec) (Estimator, error) {
	registry.RLock()
	b := registry.m[s.Name]
	registry.RUnlock()
	if b == nil {
		return nil, fmt.Errorf("unknown estimator %q (%v)", s.Name, Names())
	}
	e, err := b(model, s.Config)
	if err != nil {
		return nil, fmt.Errorf("estimator %s: %w", s.Name, err)
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return e, nil
}

// decodeConfig is the Builder's usual first step: config into a value of type C.
func decodeConfig[C any](config []byte) (C, error) {
	var c C
	if err := json.Unmarshal(config, &c); err != nil {
		return c, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}

// Pack encodes an estimator's summary of a task for Result.Summary. gob keeps every float64
// bit for bit, NaN and infinities included, which JSON cannot; only a negative zero reads back
// as zero (gob leaves zero fields out), which no summary of sti or baselines holds.
func Pack(v any) []byte {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		panic(fmt.Sprintf("estimators: summary %T does not encode: %v", v, err))
	}
	return b.Bytes()
}

// Unpack decodes what Pack encoded.
func Unpack[T any](b []byte) (T, error) {
	var v T
	err := gob.NewDecoder(bytes.NewReader(b)).Decode(&v)
	return v, err
}

// unpackAll decodes the summaries of results.
func unpackAll[T any](results []Result) ([]T, error) {
	out := make([]T, len(results))
	for i, r := range results {
		v, err := Unpack[T](r.Summary)
		if err != nil {
			return nil, fmt.Errorf("task %+v: summary: %w", r.Task, err)
		}
		out[i] = v
	}
	return out, nil
}
