package estimators

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/io/chainstate"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/tensor"
)

// STIName is the name the STI estimator registers under.
const STIName = "sti"

func init() {
	Register(STIName, func(model models.Spec, config []byte) (Estimator, error) {
		cfg, err := decodeConfig[sti.Config](config)
		return STI{Model: model, Config: cfg}, err
	})
}

// STI is Stochastic Thermodynamic Integration (package sti): one task per (rank, temperature
// index, chain), each one chain whose summary (evidence.ChainSummary) the corrected trapezoid
// over the ladder combines (evidence.Combine). Its configuration is sti.Config.
type STI struct {
	Model  models.Spec
	Config sti.Config
}

var (
	_ Estimator = STI{}
	_ Resumable = (*stiProblem)(nil)
)

func (e STI) Validate() error {
	if err := e.Model.Validate(); err != nil {
		return err
	}
	return e.Config.Validate()
}

func (e STI) Tasks(rank int) []Task {
	var ts []Task
	for ti := range e.Config.Ladder {
		for c := range e.Config.Chains {
			ts = append(ts, Task{Rank: rank, Index: ti, Replica: c})
		}
	}
	return ts
}

// ChainID is the chain of task t.
func ChainID(t Task) sti.ChainID { return sti.ChainID{Rank: t.Rank, TIndex: t.Index, Chain: t.Replica} }

func (e STI) Prepare(data *tensor.Sparse) (Problem, error) {
	p, err := sti.NewProblem(data, e.Model, e.Config)
	if err != nil {
		return nil, err
	}
	return &stiProblem{p: p}, nil
}

func (e STI) Combine(rank int, results []Result) (evidence.RankEvidence, error) {
	sums, err := unpackAll[evidence.ChainSummary](results)
	if err != nil {
		return evidence.RankEvidence{}, err
	}
	return evidence.Combine(e.Config.Ladder, sums)
}

// stiProblem runs chains from the configured start, and keeps its resumptions from saved states
// by states directory: the bundles of a process share them (a rank's basin check then runs once)
// and they go when the problem does.
type stiProblem struct {
	p           *sti.Problem
	resumptions sync.Map // string → *sti.Resumption
}

func (p *stiProblem) Run(ctx context.Context, t Task) (Result, error) {
	sum, _, err := p.p.Resume(ctx, ChainID(t), nil)
	return chainResult(t, sum, err)
}

// Resume returns the problem whose chains resume from the chain states (io/chainstate) in
// startDir, when it is set (see sti.Resumption; a chain without a state there starts cold), and
// write their final states into stateDir, when it is set. A retried chain rewrites its state
// with the same bytes.
func (p *stiProblem) Resume(startDir, stateDir string) Problem {
	r := &stiResumed{p: p.p, stateDir: stateDir}
	if startDir != "" {
		r.from = p.resumption(startDir)
	}
	return r
}

// resumption returns the problem resumed from the chain states in dir, made on first use.
func (p *stiProblem) resumption(dir string) *sti.Resumption {
	if v, ok := p.resumptions.Load(dir); ok {
		return v.(*sti.Resumption)
	}
	v, _ := p.resumptions.LoadOrStore(dir, p.p.ResumeFrom(func(ctx context.Context, id sti.ChainID) (*sti.State, error) {
		s, err := chainstate.Read(ctx, chainstate.Path(dir, id))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return s, err
	}))
	return v.(*sti.Resumption)
}

// stiResumed runs chains resumed from saved states and saves theirs.
type stiResumed struct {
	p        *sti.Problem
	from     *sti.Resumption // nil: cold starts
	stateDir string          // empty: states not saved
}

func (r *stiResumed) Run(ctx context.Context, t Task) (Result, error) {
	id := ChainID(t)
	var (
		sum   evidence.ChainSummary
		final *sti.State
		err   error
	)
	if r.from != nil {
		sum, final, err = r.from.Run(ctx, id)
	} else {
		sum, final, err = r.p.Resume(ctx, id, nil)
	}
	if err == nil && final != nil && r.stateDir != "" {
		err = chainstate.Write(ctx, chainstate.Path(r.stateDir, id), final)
	}
	return chainResult(t, sum, err)
}

// chainResult is the result of the chain of task t.
func chainResult(t Task, sum evidence.ChainSummary, err error) (Result, error) {
	if err == nil && (sum.Rank != t.Rank || sum.TIndex != t.Index || sum.Chain != t.Replica) {
		err = fmt.Errorf("reported as chain %d/%d/%d", sum.Rank, sum.TIndex, sum.Chain)
	}
	if err != nil {
		return Result{}, fmt.Errorf("chain rank %d, temperature %d, replica %d: %w", t.Rank, t.Index, t.Replica, err)
	}
	return Result{Task: t, Steps: sum.Steps, CellEvals: sum.CellEvals, Divergence: sum.Divergence, Summary: Pack(sum)}, nil
}
