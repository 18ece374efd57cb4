package estimators

import (
	"context"
	"fmt"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/sti"
)

var (
	_ Racer   = STI{}
	_ Rounder = (*stiProblem)(nil)
)

// Races reports whether the configuration's chains run in rounds: Gibbs chains that start from
// their replicas' walks down the ladder (sti.Default's), whose state is their parameters and
// records alone (sti.ChainState). A rank's first-stage tasks are its replicas' start stages
// (sti.Problem.StartReplica), each of which starts one chain per rung and, for the first
// replica, the rank's phase check (checkChain); the chains then run round after round
// (sti.Problem.Extend).
func (e STI) Races() bool {
	c := e.Config
	return c.Gibbs && c.Annealing == nil && c.Reference == nil && c.Starts > 0 && c.Descent > 0
}

func (p *stiProblem) races() bool { return STI{Config: p.p.Config}.Races() }

// FullRound is the round at which rank's chains hold their configured records
// (sti.Problem.Doublings).
func (p *stiProblem) FullRound(rank int) int { return p.p.Doublings(rank) }

// startSummary is what a replica's start stage reports.
type startSummary struct {
	Steps     int
	CellEvals int64
}

// phaseSummary is what a rank's phase check reports: the walk's means at rungs From, ….
type phaseSummary struct {
	From      int
	Means     []float64
	Steps     int
	CellEvals int64
}

// startRace runs replica t.Replica's start stage and returns its result and the tasks it starts:
// a chain per rung, of round 0, and for the replica that carries it the rank's phase check.
func (p *stiProblem) startRace(ctx context.Context, t Task) (Result, []Task, error) {
	st, err := p.p.StartReplica(ctx, t.Rank, t.Replica)
	if err != nil {
		return Result{}, nil, fmt.Errorf("rank %d, replica %d: start: %w", t.Rank, t.Replica, err)
	}
	res := Result{Task: t, Steps: st.Steps, CellEvals: st.CellEvals, Summary: Pack(startSummary{st.Steps, st.CellEvals})}
	next := make([]Task, 0, len(st.States)+1)
	for i := range st.States {
		next = append(next, Task{Rank: t.Rank, Stage: 1, Index: i, Replica: t.Replica, Payload: Pack(st.States[i])})
	}
	if st.Check != nil {
		next = append(next, Task{Rank: t.Rank, Stage: 1, Index: st.CheckFrom, Replica: t.Replica, Chain: checkChain, Payload: Pack(st.Check)})
	}
	return res, next, nil
}

// runRace runs a chain's round, or the rank's phase check.
func (p *stiProblem) runRace(ctx context.Context, t Task) (Result, error) {
	if t.Chain == checkChain {
		theta, err := Unpack[[]float64](t.Payload)
		if err != nil {
			return Result{}, fmt.Errorf("rank %d: phase check: %w", t.Rank, err)
		}
		means, steps, cells, err := p.p.PhaseCheck(ctx, t.Rank, t.Index, theta)
		if err != nil {
			return Result{}, err
		}
		return Result{Task: t, Steps: steps, CellEvals: cells, Summary: Pack(phaseSummary{t.Index, means, steps, cells})}, nil
	}
	state, err := Unpack[sti.ChainState](t.Payload)
	if err != nil {
		return Result{}, fmt.Errorf("chain rank %d, temperature %d, replica %d, round %d: state: %w", t.Rank, t.Index, t.Replica, t.Round, err)
	}
	sum, next, err := p.p.Extend(ctx, ChainID(t), t.Round, &state)
	res, err := chainResult(t, sum, err)
	if err == nil && next != nil {
		res.State = Pack(*next)
	}
	return res, err
}

// combineRace combines a racing rank's results: the start stages' work, the latest round of
// every chain (Latest) on the ladder, and the phase check. Its Rounds hold the estimate after
// every round its chains ran.
func (e STI) combineRace(rank int, results []Result) (evidence.RankEvidence, error) {
	last := 0
	for _, r := range results {
		last = max(last, r.Task.Round)
	}
	re, err := e.combineRound(rank, results, last)
	if err != nil {
		return re, err
	}
	for k := 0; k <= last; k++ {
		rk := re
		if k < last {
			if rk, err = e.combineRound(rank, results, k); err != nil {
				return re, err
			}
		}
		re.Rounds = append(re.Rounds, evidence.RoundEstimate{Round: k, LogEvidence: rk.LogEvidence, StdErr: rk.StdErr, Steps: rk.Steps})
	}
	re.Round = last
	return re, nil
}

// combineRound is the rank's evidence from its chains' latest rounds up to round.
func (e STI) combineRound(rank int, results []Result, round int) (evidence.RankEvidence, error) {
	var (
		chains     []evidence.ChainSummary
		steps      int
		cells      int64
		check      *phaseSummary
		checkSteps int
	)
	for _, r := range Latest(results, round) {
		switch {
		case r.Task.Stage == 0:
			s, err := Unpack[startSummary](r.Summary)
			if err != nil {
				return evidence.RankEvidence{}, fmt.Errorf("rank %d, replica %d: start: %w", rank, r.Task.Replica, err)
			}
			steps, cells = steps+s.Steps, cells+s.CellEvals
		case r.Task.Chain == checkChain:
			s, err := Unpack[phaseSummary](r.Summary)
			if err != nil {
				return evidence.RankEvidence{}, fmt.Errorf("rank %d: phase check: %w", rank, err)
			}
			check, checkSteps = &s, s.Steps
			cells += s.CellEvals
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
		if l, err = ranLadder(len(l), chains); err != nil {
			return evidence.RankEvidence{}, err
		}
	}
	re, err := evidence.Combine(l, chains)
	if err != nil {
		return re, err
	}
	re.Steps += steps + checkSteps
	re.CellEvals += cells
	if check != nil && len(re.Diverged) == 0 {
		re = evidence.WithPhaseCheck(re, l, check.From, check.Means)
	}
	return re, nil
}
