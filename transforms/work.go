package transforms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/stirank/stirank/io/chainstate"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/sti"
)

// Work is what every chain of a sweep shares: the data, the model and the STI configuration.
// It holds plain exported values only, so it survives the JSON encoding Beam gives DoFn fields.
type Work struct {
	Source Source
	Model  models.Spec
	Config sti.Config
}

// key identifies the prepared problem: the data's checksum (or location) and everything in the
// model and configuration, which decide how the data are blocked and what RunChain computes.
func (w Work) key() string {
	data := w.Source.Checksum
	if data == "" {
		data = w.Source.String()
		if w.Source.Inline != nil {
			data = InlineChecksum(w.Source.Inline)
		}
	}
	mc, err := json.Marshal(struct {
		Model  models.Spec
		Config sti.Config
	}{w.Model, w.Config})
	if err != nil {
		panic(fmt.Sprintf("transforms: work does not encode: %v", err))
	}
	return data + "\x00" + string(mc)
}

// Prepare reads the data and prepares them for the model and configuration, without the cache.
func (w Work) Prepare(ctx context.Context) (*sti.Problem, error) {
	t, _, err := w.Source.Load(ctx, w.Model.Counts())
	if err != nil {
		return nil, err
	}
	return sti.NewProblem(t, w.Model, w.Config)
}

// The problems of a worker process: each dataset is read and prepared once per process and
// shared, read-only, by every chain of every bundle that needs it. A few recent ones are kept
// (a process may serve several jobs: tests, a long-lived loopback worker).
var problems = struct {
	sync.Mutex
	entries []*problemEntry // most recently used last
}{}

const maxProblems = 4

type problemEntry struct {
	key  string
	once sync.Once
	p    *sti.Problem
	err  error
	// resumptions are p's resumptions from saved states, by states directory: shared by the
	// bundles of the process (a rank's basin check then runs once) and dropped with p.
	resumptions sync.Map // string → *sti.Resumption
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
func LoadProblem(ctx context.Context, w Work) (*sti.Problem, error) {
	e, err := loadEntry(ctx, w)
	if err != nil {
		return nil, err
	}
	return e.p, nil
}

// loadEntry returns the cache entry of the work's prepared problem (see LoadProblem).
func loadEntry(ctx context.Context, w Work) (*problemEntry, error) {
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
	return e, nil
}

// resumption returns the entry's problem resumed from the chain states in dir
// (io/chainstate), made on first use.
func (e *problemEntry) resumption(dir string) *sti.Resumption {
	if v, ok := e.resumptions.Load(dir); ok {
		return v.(*sti.Resumption)
	}
	v, _ := e.resumptions.LoadOrStore(dir, e.p.ResumeFrom(func(ctx context.Context, id sti.ChainID) (*sti.State, error) {
		s, err := chainstate.Read(ctx, chainstate.Path(dir, id))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return s, err
	}))
	return v.(*sti.Resumption)
}

// Preload puts a problem the launcher has already prepared for w into this process's cache, so
// chains that run in the launching process (prism, direct, loopback workers) do not read the data
// again. p must have been prepared from w's data, model and configuration.
func Preload(w Work, p *sti.Problem) {
	e := entryFor(w.key())
	e.once.Do(func() { e.p = p })
}
