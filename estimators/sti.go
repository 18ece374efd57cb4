package estimators

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strings"

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

// STI is Stochastic Thermodynamic Integration (package sti), configured by sti.Config. A rank's
// tasks take one of two shapes:
//
//   - a start stage (sti.Problem.StartRank, the one sti.Config.Start names: the mode search and,
//     for Gibbs chains, each replica's walk down the ladder, or each replica's annealing), whose
//     follow-on tasks are one chain per (rung, replica) from its state there and, where the
//     configuration has one, the phase check; Gibbs chains then run in rounds (Racer:
//     sti.Problem.Extend), SG-MCMC chains once (sti.Problem.RunChain), and chains on a replica's
//     annealed ladder once from its population (sti.Problem.RunFrom);
//   - under the prior start stage, one SG-MCMC chain per (rung, replica) from its own prior draw,
//     which needs no stage of its own.
//
// The chains' summaries (evidence.ChainSummary) combine by the ladder's rule (evidence.Combine),
// or on the replicas' own ladders with their annealings (evidence.CombineAnnealed).
type STI struct {
	Model  models.Spec
	Config sti.Config
}

var (
	_ Staged    = STI{}
	_ Racer     = STI{}
	_ Resumable = (*stiProblem)(nil)
	_ Expander  = (*stiProblem)(nil)
	_ Rounder   = (*stiProblem)(nil)
	_ Planner   = (*stiProblem)(nil)
)

// Staged reports whether a rank's tasks start from a first stage: a start stage other than the
// chains' own prior draws, or the start of a race.
func (e STI) Staged() bool { return e.Config.Start != sti.PriorStart || e.Races() }

// Races reports whether the configuration's chains run in rounds: Gibbs chains on a fixed
// ladder (sti.Default's; the annealed start, which makes its own, refuses Gibbs chains), whose
// state is their parameters and records alone (sti.ChainState).
func (e STI) Races() bool { return e.Config.Gibbs }

func (e STI) Validate() error {
	if err := e.Model.Validate(); err != nil {
		return err
	}
	return e.Config.Validate()
}

func (e STI) Tasks(rank int) []Task {
	var ts []Task
	if e.Staged() {
		return []Task{{Rank: rank}}
	}
	for ti := range e.Config.AtRank(rank).Ladder {
		for c := range e.Config.Chains {
			ts = append(ts, Task{Rank: rank, Index: ti, Replica: c})
		}
	}
	return ts
}

// chainOf is chain id as a states directory names it.
func chainOf(id sti.ChainID) chainstate.Chain {
	return chainstate.Chain{Rank: id.Rank, Rung: id.TIndex, Replica: id.Chain}
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

// stiProblem runs the tasks of the STI estimator on its data; from and stateDir, when set, are
// where its chains resume from and save their states (Resume).
type stiProblem struct {
	p              *sti.Problem
	from, stateDir string
}

func (p *stiProblem) races() bool { return STI{Config: p.p.Config}.Races() }

// FullRound is the round at which rank's chains hold their configured records
// (sti.Problem.Doublings).
func (p *stiProblem) FullRound(rank int) int { return p.p.Doublings(rank) }

// Controlled reports whether the rank's control variates pay for the pass over the data each of
// their records makes (evidence.RankEvidence.ControlsPay).
func (p *stiProblem) Controlled(re evidence.RankEvidence) bool {
	return re.ControlsPay(1 / float64(models.SweepPasses(p.p.Data.Order())))
}

// Resume returns the problem whose chains resume from the states saved in startDir, when it is
// set, and write their final states into stateDir, when it is set (io/chainstate): a racing
// rank's start stage resumes (sti.Problem.StartRankFrom) and its chains save their state after
// every round, so that stateDir ends with each chain's last; an SG-MCMC chain resumes from its
// own state (sti.Problem.Resume) and saves its final one. A chain without a state starts cold.
// Annealed chains start from their populations and save nothing. A retried task rewrites its
// state with the same bytes.
func (p *stiProblem) Resume(startDir, stateDir string) Problem {
	return &stiProblem{p: p.p, from: startDir, stateDir: stateDir}
}

// load reads chain id's saved state from the problem's start directory; nil, nil where it has
// none.
func (p *stiProblem) load(ctx context.Context, id sti.ChainID) (*models.State, error) {
	s, err := chainstate.Read(ctx, chainstate.Path(p.from, chainOf(id)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return s, err
}

// save writes chain id's state theta into the problem's state directory, if it has one.
func (p *stiProblem) save(ctx context.Context, id sti.ChainID, theta []float64) error {
	if p.stateDir == "" || theta == nil {
		return nil
	}
	s, err := p.p.StateOf(id.Rank, theta)
	if err != nil {
		return err
	}
	return chainstate.Write(ctx, chainstate.Path(p.stateDir, chainOf(id)), s)
}

// startSummary is what a rank's start stage reports.
type startSummary struct {
	Steps     int
	CellEvals int64
	// Warm says every replica resumed from the saved states (sti.Problem.StartRankFrom).
	Warm bool
	// ModeParams is sti.RankStart.ModeParams.
	ModeParams int
	// FullRound is the round in which the rank's chains reach their configured records
	// (sti.Problem.Doublings).
	FullRound int
	// Annealed is sti.RankStart.Annealed: the replicas' annealings, on whose ladders the rank's
	// chains ran.
	Annealed []evidence.AnnealSummary
}

// chainStart is the payload of a chain on its replica's annealed ladder: its temperature and its
// start, a member of the population its replica's annealing had there.
type chainStart struct {
	T     float64
	Theta []float64
}

// Expand runs a first-stage task: a rank's start stage, which starts a chain per rung and replica
// (on an annealed start, per stage of a replica's own ladder that got a start) and its phase
// check.
func (p *stiProblem) Expand(ctx context.Context, t Task) (Result, []Task, error) {
	var (
		st   *sti.RankStart
		warm bool
		err  error
	)
	if p.from != "" && p.races() && p.p.Config.Resumes() {
		st, warm, err = p.p.StartRankFrom(ctx, t.Rank, p.load)
	} else {
		st, err = p.p.StartRank(ctx, t.Rank)
	}
	if err != nil {
		return Result{}, nil, fmt.Errorf("rank %d: start: %w", t.Rank, err)
	}
	res := Result{Task: t, Steps: st.Steps, CellEvals: st.CellEvals, Summary: Pack(startSummary{st.Steps, st.CellEvals, warm, st.ModeParams, p.p.Doublings(t.Rank), st.Annealed})}
	var diverged []string
	for _, a := range st.Annealed {
		if a.Divergence != "" {
			diverged = append(diverged, a.Divergence)
		}
	}
	res.Divergence = strings.Join(diverged, "; ")
	var next []Task
	for q, states := range st.States {
		for i, s := range states {
			var payload []byte
			switch {
			case st.Annealed != nil && s.Theta == nil:
				continue
			case st.Annealed != nil:
				payload = Pack(chainStart{T: st.Annealed[q].T[i], Theta: s.Theta})
			case p.races():
				payload = Pack(s)
			case s.Theta != nil:
				payload = Pack(s.Theta)
			}
			next = append(next, Task{Rank: t.Rank, Stage: 1, Index: i, Replica: q, Payload: payload})
		}
	}
	return res, append(next, phaseTask(t.Rank, st)...), nil
}

func (p *stiProblem) Run(ctx context.Context, t Task) (Result, error) {
	id := ChainID(t)
	switch {
	case t.Kind != "":
		c, err := checkOf(t.Kind)
		if err != nil {
			return Result{}, fmt.Errorf("rank %d: %w", t.Rank, err)
		}
		return c.run(ctx, p.p, t)
	case p.p.Config.OwnLadders():
		start, err := Unpack[chainStart](t.Payload)
		if err != nil {
			return Result{}, fmt.Errorf("chain rank %d, stage %d, replica %d: start: %w", t.Rank, t.Index, t.Replica, err)
		}
		sum, err := p.p.RunFrom(ctx, id, start.T, start.Theta)
		return chainResult(t, sum, err)
	case p.races():
		state, err := Unpack[sti.ChainState](t.Payload)
		if err != nil {
			return Result{}, fmt.Errorf("chain rank %d, temperature %d, replica %d, round %d: state: %w", t.Rank, t.Index, t.Replica, t.Round, err)
		}
		state.Plain = state.Plain || t.Plain
		sum, next, err := p.p.Extend(ctx, id, t.Round, &state)
		if err == nil && next != nil {
			err = p.save(ctx, id, next.Theta)
		}
		res, err := chainResult(t, sum, err)
		if err == nil && next != nil {
			res.State = Pack(*next)
		}
		return res, err
	}
	var start []float64
	if t.Stage == 1 && len(t.Payload) > 0 {
		var err error
		if start, err = Unpack[[]float64](t.Payload); err != nil {
			return Result{}, fmt.Errorf("chain rank %d, temperature %d, replica %d: start: %w", t.Rank, t.Index, t.Replica, err)
		}
	}
	var (
		sum   evidence.ChainSummary
		final *models.State
		err   error
	)
	if from := (*models.State)(nil); p.from != "" && t.Stage == 0 {
		if from, err = p.load(ctx, id); err == nil && from != nil {
			sum, final, err = p.p.Resume(ctx, id, from)
		} else if err == nil {
			sum, final, err = p.p.RunChain(ctx, id, start)
		}
	} else {
		sum, final, err = p.p.RunChain(ctx, id, start)
	}
	if err == nil && final != nil {
		err = p.save(ctx, id, final.Theta)
	}
	return chainResult(t, sum, err)
}

// TaskSteps is about how many steps task t reports: a start stage's what the stage says
// (sti.Config.StartStageSteps), a racing chain's round's from its configuration
// (sti.Config.RoundSteps).
func (p *stiProblem) TaskSteps(t Task) int {
	c := p.p.Config
	order, _ := p.p.Spec.Order()
	nnz, fixed := p.p.Data.NNZ(), p.p.Spec.FixedComponents()
	switch {
	case t.Stage == 0 && STI{Config: c}.Staged():
		return c.StartStageSteps(t.Rank, fixed, order, nnz)
	case t.Kind != "":
		if k, err := checkOf(t.Kind); err == nil {
			return k.steps(c, t, fixed, order, nnz)
		}
		return 0
	case p.races():
		return c.RoundSteps(t.Rank, fixed, t.Round, order, nnz)
	}
	return c.ChainSteps(ChainID(t), p.from != "")
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

// Combine combines a rank's results: an annealed rank's annealings and chains
// (evidence.CombineAnnealed), or its start stage, the latest round of every chain (Latest) on
// the ladder and its phase check. A racing rank's Rounds hold its estimate after every round its
// chains ran, and its Drift and StdErr include how far the last round moved it (RoundDrift).
func (e STI) Combine(rank int, results []Result) (evidence.RankEvidence, error) {
	if e.Config.OwnLadders() {
		first, rest := stages(results)
		if len(first) != 1 {
			return evidence.RankEvidence{}, fmt.Errorf("rank %d: %d start stages, want 1", rank, len(first))
		}
		start, err := Unpack[startSummary](first[0].Summary)
		if err != nil {
			return evidence.RankEvidence{}, fmt.Errorf("rank %d: start: %w", rank, err)
		}
		chains, err := unpackAll[evidence.ChainSummary](rest)
		if err != nil {
			return evidence.RankEvidence{}, err
		}
		return evidence.CombineAnnealed(start.Annealed, chains)
	}
	last := 0
	for _, r := range results {
		last = max(last, r.Task.Round)
	}
	re, err := e.combineRound(rank, results, last)
	if err != nil || !e.Races() {
		return re, err
	}
	for k := 0; k <= last; k++ {
		rk := re
		if k < last {
			if rk, err = e.combineRound(rank, results, k); err != nil {
				return re, err
			}
		}
		re.Rounds = append(re.Rounds, evidence.RoundEstimate{Round: k, LogEvidence: rk.LogEvidence, StdErr: rk.StdErr, Drift: rk.Drift, Steps: rk.Steps})
	}
	re.Round = last
	if d := evidence.RoundDrift(re.Rounds); d > 0 {
		re.Drift = math.Hypot(re.Drift, d)
		re.StdErr = math.Hypot(re.StdErr, d)
	}
	return re, nil
}

// combineRound is the rank's evidence from its chains' latest rounds up to round.
func (e STI) combineRound(rank int, results []Result, round int) (evidence.RankEvidence, error) {
	var (
		chains []evidence.ChainSummary
		steps  int
		cells  int64
		checks []evidence.Check
		warm   bool
		params int
		full   int
	)
	for _, r := range Latest(results, round) {
		switch {
		case r.Task.Stage == 0 && e.Staged():
			s, err := Unpack[startSummary](r.Summary)
			if err != nil {
				return evidence.RankEvidence{}, fmt.Errorf("rank %d: start: %w", rank, err)
			}
			steps, cells, warm, params, full = steps+s.Steps, cells+s.CellEvals, s.Warm, s.ModeParams, s.FullRound
		case r.Task.Kind != "":
			c, err := checkOf(r.Task.Kind)
			if err != nil {
				return evidence.RankEvidence{}, fmt.Errorf("rank %d: %w", rank, err)
			}
			check, err := c.read(r.Summary)
			if err != nil {
				return evidence.RankEvidence{}, fmt.Errorf("rank %d: %s check: %w", rank, r.Task.Kind, err)
			}
			checks = append(checks, check)
			steps, cells = steps+r.Steps, cells+r.CellEvals
		default:
			c, err := Unpack[evidence.ChainSummary](r.Summary)
			if err != nil {
				return evidence.RankEvidence{}, fmt.Errorf("task %+v: summary: %w", r.Task, err)
			}
			chains = append(chains, c)
		}
	}
	l := e.Config.AtRank(rank).Ladder
	var err error
	if e.Config.FitLadder {
		// The workers fitted the ladder to the data (sti.Config.FitLadder); the chains say
		// where its rungs are.
		if l, err = ranLadder(len(l), chains); err != nil {
			return evidence.RankEvidence{}, err
		}
	}
	re, err := evidence.Combine(l, chains, checks...)
	if err != nil {
		return re, err
	}
	re.Steps += steps
	re.CellEvals += cells
	re.ModeParams, re.FullRound = params, full
	if warm && re.WarmChains == 0 {
		re.WarmChains = len(chains)
	}
	return re, nil
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

// stages splits a staged rank's results, first-stage results first (Estimator.Combine), into the
// two stages'.
func stages(results []Result) (first, rest []Result) {
	n := 0
	for n < len(results) && results[n].Task.Stage == 0 {
		n++
	}
	return results[:n], results[n:]
}
