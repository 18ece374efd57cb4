package transforms

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
)

// Work is what every task of a job shares: the data, the model and the estimator with its
// configuration. It holds plain exported values only, so it survives the JSON encoding Beam
// gives DoFn fields.
type Work struct {
	Source    Source
	Model     models.Spec
	Estimator estimators.Spec
}

// New builds the work's estimator (see estimators.New).
func (w Work) New() (estimators.Estimator, error) { return estimators.New(w.Model, w.Estimator) }

// key identifies the prepared problem: the data's checksum (or location) and everything in the
// model and the estimator, which decide how the data are prepared and what the tasks compute.
func (w Work) key() string {
	data := w.Source.Checksum
	if data == "" {
		data = w.Source.String()
		if w.Source.Inline != nil {
			data = InlineChecksum(w.Source.Inline)
		}
	}
	mc, err := json.Marshal(struct {
		Model     models.Spec
		Estimator estimators.Spec
	}{w.Model, w.Estimator})
	if err != nil {
		panic(fmt.Sprintf("transforms: work does not encode: %v", err))
	}
	return data + "\x00" + string(mc)
}

// Prepare reads the data and prepares them for the estimator, without the cache.
func (w Work) Prepare(ctx context.Context) (estimators.Problem, error) {
	e, err := w.New()
	if err != nil {
		return nil, err
	}
	// The estimator checks the values against its model.
	t, _, err := w.Source.Load(ctx, tensorio.ReadOptions{})
	if err != nil {
		return nil, err
	}
	return e.Prepare(t)
}

// The problems of a worker process: each dataset is read and prepared once per process and
// shared, read-only, by every task of every bundle that needs it. A few recent ones are kept
// (a process may serve several jobs: tests, a long-lived loopback worker).
var problems = struct {
	sync.Mutex
	entries []*problemEntry // most recently used last
}{}

const maxProblems = 4

type problemEntry struct {
	key  string
	once sync.Once
	p    estimators.Problem
	err  error
}

func entryFor(key string) *problemEntry {
	problems.Lock()
	defer problems.Unlock()
	for i, e := range problems.entries {
		if e.key == key {
			problems.entries = append(append(problems.entries[:i:i], problems.entries[i+1:]...), e)
			return e
		}
	}
	e := &problemEntry{key: key}
	problems.entries = append(problems.entries, e)
	if len(problems.entries) > maxProblems {
		problems.entries = problems.entries[len(problems.entries)-maxProblems:]
	}
	return e
}

// LoadProblem returns the work's prepared problem, reading the data on the first call in this
// process. A failed load is not cached: the next call tries again.
func LoadProblem(ctx context.Context, w Work) (estimators.Problem, error) {
	e := entryFor(w.key())
	e.once.Do(func() { e.p, e.err = w.Prepare(ctx) })
	if e.err != nil {
		problems.Lock()
		for i, x := range problems.entries {
			if x == e {
				problems.entries = append(problems.entries[:i:i], problems.entries[i+1:]...)
				break
			}
		}
		problems.Unlock()
		return nil, e.err
	}
	return e.p, nil
}

// Preload puts a problem the launcher has already prepared for w into this process's cache, so
// tasks that run in the launching process (prism, direct, loopback workers) do not read the data
// again. p must have been prepared from w's data, model and estimator.
func Preload(w Work, p estimators.Problem) {
	e := entryFor(w.key())
	e.once.Do(func() { e.p = p })
}
