package estimators

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"

	"github.com/stirank/stirank/baselines"
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
	_ Staged    = STI{}
	_ Resumable = (*stiProblem)(nil)
	_ Expander  = (*stiProblem)(nil)
)

// Staged reports whether the configuration anneals (sti.Config.Annealing) or runs the path from a
// reference (sti.Config.Reference): each replica of a rank is then a first-stage task (Expand)
// that anneals a population and starts one follow-on chain at each of some of its temperatures,
// from a member of the population there, or that fits its reference and starts one follow-on
// chain at each rung of the ladder, which carries the reference. A path with a check
// (sti.Config.Check) lists the check's chains among its first-stage tasks (checkChain); each
// runs as the check's own estimator would run it and starts nothing.
func (e STI) Staged() bool {
	return e.Config.Annealing != nil || e.Config.Reference != nil || e.Races()
}

func (e STI) Validate() error {
	if err := e.Model.Validate(); err != nil {
		return err
	}
	return e.Config.Validate()
}

func (e STI) Tasks(rank int) []Task {
	var ts []Task
	if e.Races() {
		for q := range e.Config.Chains {
			ts = append(ts, Task{Rank: rank, Replica: q})
		}
		return ts
	}
	if e.Staged() {
		for q := range e.Config.Chains {
			ts = append(ts, Task{Rank: rank, Replica: q})
		}
		if chk, ok := e.check(); ok {
			for _, t := range chk.Tasks(rank) {
				t.Chain = checkChain
				ts = append(ts, t)
			}
		}
		return ts
	}
	for ti := range e.Config.AtRank(rank).Ladder {
		for c := range e.Config.Chains {
			ts = append(ts, Task{Rank: rank, Index: ti, Replica: c})
		}
	}
	return ts
}

// TaskSteps is the number of steps task t is expected to report, for progress estimates; warm says
// its chain resumes from a saved state. An annealing's length is known only when it ends; it costs
// about as much as the chains it starts, which is what the estimate assumes until then.
func (e STI) TaskSteps(t Task, warm bool) int {
	if e.Races() {
		return 0
	}
	if a := e.Config.Annealing; a != nil {
		if t.Stage == 0 {
			return a.Rungs * e.Config.Steps
		}
		return e.Config.Steps
	}
	if ref := e.Config.Reference; ref != nil {
		if chk, ok := e.check(); ok && isCheck(t) {
			return chk.TaskSteps(checkTask(t), warm)
		}
		if t.Stage == 0 {
			return baselines.ReferenceStartSweeps + ref.Burnin + ref.Sweeps
		}
		return e.Config.Steps
	}
	order, _ := e.Model.Order()
	return e.Config.ChainSteps(ChainID(t), warm, order)
}

// checkChain marks in Task.Chain a first-stage task of a path from references that is a chain of
// its check (sti.Config.Check) on the power posteriors' ladder, whose Index and Replica are the
// check's temperature index and chain.
const checkChain = 1

// isCheck reports whether t is a chain of the check.
func isCheck(t Task) bool { return t.Stage == 0 && t.Chain == checkChain }

// checkTask is the check's chain t as the check's own estimator lists it.
func checkTask(t Task) Task {
	t.Chain = 0
	return t
}

// check is the estimator of the configuration's check, if it has one.
func (e STI) check() (STI, bool) {
	if e.Config.Check == nil {
		return STI{}, false
	}
	return STI{Model: e.Model, Config: *e.Config.Check}, true
}

// ChainID is the chain of task t.
func ChainID(t Task) sti.ChainID { return sti.ChainID{Rank: t.Rank, TIndex: t.Index, Chain: t.Replica} }

func (e STI) Prepare(data *tensor.Sparse) (Problem, error) {
	p, err := sti.NewProblem(data, e.Model, e.Config)
	if err != nil {
		return nil, err
	}
	sp := &stiProblem{p: p}
	if chk, ok := e.check(); ok {
		cp, err := chk.Prepare(data)
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		sp.check = cp.(*stiProblem)
	}
	return sp, nil
}

func (e STI) Combine(rank int, results []Result) (evidence.RankEvidence, error) {
	if e.Races() {
		return e.combineRace(rank, results)
	}
	if e.Config.Reference != nil {
		var path, checks []Result
		for _, r := range results {
			if isCheck(r.Task) {
				r.Task = checkTask(r.Task)
				checks = append(checks, r)
				continue
			}
			path = append(path, r)
		}
		re, err := combineReferencePath(e.Config.Ladder, path)
		chk, ok := e.check()
		if err != nil || !ok {
			return re, err
		}
		ce, err := chk.Combine(rank, checks)
		if err != nil {
			return re, fmt.Errorf("rank %d: check: %w", rank, err)
		}
		return evidence.WithCheck(re, ce), nil
	}
	if e.Staged() {
		first, rest := stages(results)
		anneals, err := unpackAll[evidence.AnnealSummary](first)
		if err != nil {
			return evidence.RankEvidence{}, err
		}
		chains, err := unpackAll[evidence.ChainSummary](rest)
		if err != nil {
			return evidence.RankEvidence{}, err
		}
		return evidence.CombineAnnealed(anneals, chains)
	}
	sums, err := unpackAll[evidence.ChainSummary](results)
	if err != nil {
		return evidence.RankEvidence{}, err
	}
	l := e.Config.AtRank(rank).Ladder
	if e.Config.FitLadder {
		// The workers fitted the ladder to the data (sti.Config.FitLadder); the chains say
		// where its rungs are.
		if l, err = ranLadder(len(l), sums); err != nil {
			return evidence.RankEvidence{}, err
		}
	}
	return evidence.Combine(l, sums)
}

// ranLadder is the ladder of n rungs the chains ran on: rung i at the temperature of the chains
// with index i, which must all agree.
func ranLadder(n int, chains []evidence.ChainSummary) (evidence.Ladder, error) {
	l := make(evidence.Ladder, n)
	seen := make([]bool, n)
	for _, c := range chains {
		if c.TIndex < 0 || c.TIndex >= n {
			return nil, fmt.Errorf("rank %d: chain %d has temperature index %d outside the ladder of %d", c.Rank, c.Chain, c.TIndex, n)
		}
		if seen[c.TIndex] && l[c.TIndex] != c.T {
			return nil, fmt.Errorf("rank %d: chains at temperature index %d ran at t=%v and t=%v", c.Rank, c.TIndex, l[c.TIndex], c.T)
		}
		l[c.TIndex], seen[c.TIndex] = c.T, true
	}
	if slices.Contains(seen, false) {
		// A rung no chain reported is Combine's to name.
		return l, nil
	}
	return l, l.Validate()
}

var _ Planner = (*stiProblem)(nil)

// TaskSteps is STI.TaskSteps with the records the problem gives each rung (sti.Config.Allocate).
func (p *stiProblem) TaskSteps(t Task, warm bool) int {
	if p.races() {
		return 0
	}
	if p.check != nil && isCheck(t) {
		return p.check.TaskSteps(checkTask(t), warm)
	}
	if t.Stage == 0 && !(STI{Config: p.p.Config}).Staged() {
		return p.p.ChainSteps(ChainID(t), warm)
	}
	return STI{Model: p.p.Spec, Config: p.p.Config}.TaskSteps(t, warm)
}

// TaskWork is what task t's steps cost in all (sti.Problem.ChainWork). An annealing's chain costs
// its steps at its temperature (sti.Problem.SweepPrice), which its payload holds; an annealing
// itself plans its steps at cost 1 until its first stages revise the plan (progress.Expect). A
// reference's fit and the chains on its path cost their sweeps at their times
// (sti.Problem.PathSweepSeconds) in the unit of its check, whose chains cost what the check
// prices them at (sti.Problem.UnitSeconds), or without a check in sweeps of the fit.
func (p *stiProblem) TaskWork(t Task, warm bool) float64 {
	if p.races() {
		return 0
	}
	if p.check != nil && isCheck(t) {
		return p.check.TaskWork(checkTask(t), warm)
	}
	steps := float64(p.TaskSteps(t, warm))
	switch {
	case p.p.Config.Reference != nil:
		fit, path := p.p.PathSweepSeconds(t.Rank)
		unit := fit
		if p.check != nil {
			if u := p.check.p.UnitSeconds(t.Rank); u > 0 {
				unit = u
			}
		}
		if t.Stage == 1 {
			return steps * path / unit
		}
		return steps * fit / unit
	case p.p.Config.Annealing == nil:
		return p.p.ChainWork(ChainID(t), warm)
	case t.Stage == 1:
		if start, err := Unpack[chainStart](t.Payload); err == nil && start.T > 0 {
			return steps * p.p.SweepPrice(start.T, t.Rank)
		}
	}
	return steps
}

// stiProblem runs chains from the configured start, and keeps its resumptions from saved states
// by states directory: the bundles of a process share them (a rank's basin check then runs once)
// and they go when the problem does.
type stiProblem struct {
	p           *sti.Problem
	resumptions sync.Map // string → *sti.Resumption
	// check runs the chains of the configuration's check (sti.Config.Check); nil without one.
	check *stiProblem
}

func (p *stiProblem) Run(ctx context.Context, t Task) (Result, error) {
	if p.races() {
		return p.runRace(ctx, t)
	}
	if t.Stage == 1 && p.p.Config.Reference != nil {
		fit, err := Unpack[baselines.ReferenceFit](t.Payload)
		if err != nil {
			return Result{}, fmt.Errorf("chain rank %d, temperature %d, replica %d: reference: %w", t.Rank, t.Index, t.Replica, err)
		}
		sum, err := p.p.RunPath(ctx, ChainID(t), fit)
		return chainResult(t, sum, err)
	}
	if t.Stage == 1 {
		start, err := Unpack[chainStart](t.Payload)
		if err != nil {
			return Result{}, fmt.Errorf("chain rank %d, stage %d, replica %d: start: %w", t.Rank, t.Index, t.Replica, err)
		}
		sum, err := p.p.RunFrom(ctx, ChainID(t), start.T, start.Theta)
		return chainResult(t, sum, err)
	}
	sum, _, err := p.p.Resume(ctx, ChainID(t), nil)
	return chainResult(t, sum, err)
}

// chainStart is the payload of a follow-on chain: its temperature and its start, a member of
// the population its replica's annealing had there.
type chainStart struct {
	T     float64
	Theta []float64
}

// Expand anneals replica t.Replica of rank t.Rank (sti.Problem.Anneal) and returns the summary of
// its annealing and one chain per rung (sti.Annealed.Rungs) starting from the population there;
// on the path from a reference it fits the replica's reference (fitReference), or runs a chain of
// the check, which starts nothing.
func (p *stiProblem) Expand(ctx context.Context, t Task) (Result, []Task, error) {
	if p.races() {
		return p.startRace(ctx, t)
	}
	if p.check != nil && isCheck(t) {
		res, err := p.check.Run(ctx, checkTask(t))
		res.Task = t
		return res, nil, err
	}
	if p.p.Config.Reference != nil {
		return p.fitReference(ctx, t)
	}
	a := p.p.Config.Annealing
	if a == nil {
		return Result{}, nil, fmt.Errorf("rank %d, replica %d: the configuration does not anneal", t.Rank, t.Replica)
	}
	run, err := p.p.Anneal(ctx, t.Rank, t.Replica, *a)
	if err != nil {
		return Result{}, nil, err
	}
	sum := run.Summary()
	res := Result{Task: t, Steps: sum.Steps, CellEvals: sum.CellEvals, Divergence: sum.Divergence, Summary: Pack(sum)}
	var next []Task
	if sum.Divergence == "" {
		for _, k := range run.Rungs(a.Rungs) {
			s := run.Stages[k]
			next = append(next, Task{Rank: t.Rank, Stage: 1, Index: k, Replica: t.Replica,
				Payload: Pack(chainStart{T: s.T, Theta: s.Start})})
		}
	}
	return res, next, nil
}

// Resume returns the problem whose chains resume from the chain states (io/chainstate) in
// startDir, when it is set (see sti.Resumption; a chain without a state there starts cold), and
// write their final states into stateDir, when it is set. A retried chain rewrites its state
// with the same bytes.
func (p *stiProblem) Resume(startDir, stateDir string) Problem {
	if p.p.Config.Annealing != nil || p.p.Config.Reference != nil {
		// Annealed chains start from their populations and the path's from their references,
		// not from saved states; nothing is saved for them either.
		return p
	}
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

// referenceFit is the summary of a replica's fit of its reference, the first stage of the path
// from a reference.
type referenceFit struct {
	Rank, Replica int
	Sweeps        int
	CellEvals     int64
}

// fitReference fits the reference of replica t.Replica of rank t.Rank (sti.Problem.FitReference)
// and returns the summary of the fit and one chain per rung of the ladder, each carrying the fit.
func (p *stiProblem) fitReference(ctx context.Context, t Task) (Result, []Task, error) {
	fit, err := p.p.FitReference(ctx, t.Rank, t.Replica)
	if err != nil {
		return Result{}, nil, err
	}
	res := Result{Task: t, Steps: fit.Sweeps, CellEvals: fit.CellEvals,
		Summary: Pack(referenceFit{Rank: t.Rank, Replica: t.Replica, Sweeps: fit.Sweeps, CellEvals: fit.CellEvals})}
	payload := Pack(fit)
	next := make([]Task, len(p.p.Config.Ladder))
	for i := range next {
		next[i] = Task{Rank: t.Rank, Stage: 1, Index: i, Replica: t.Replica, Payload: payload}
	}
	return res, next, nil
}

// combineReferencePath combines a rank's fits and the chains on their paths
// (evidence.CombineReferencePath), the fits' sweeps counted in the rank's steps.
func combineReferencePath(l evidence.Ladder, results []Result) (evidence.RankEvidence, error) {
	first, rest := stages(results)
	fits, err := unpackAll[referenceFit](first)
	if err != nil {
		return evidence.RankEvidence{}, err
	}
	chains, err := unpackAll[evidence.ChainSummary](rest)
	if err != nil {
		return evidence.RankEvidence{}, err
	}
	re, err := evidence.CombineReferencePath(l, chains)
	for _, f := range fits {
		re.Steps += f.Sweeps
		re.CellEvals += f.CellEvals
	}
	return re, err
}

// stages splits a staged rank's results, first-stage results first (Estimator.Combine), into the
// two stages'.
func stages(results []Result) (first, rest []Result) {
	n := 0
	for n < len(results) && results[n].Task.Stage == 0 {
		n++
	}
	return results[:n], results[n:]
}
