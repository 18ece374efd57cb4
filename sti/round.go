package sti

import (
	"context"
	"fmt"
	"math"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/progress"
	"github.com/stirank/stirank/rng"
)

// A rank's Gibbs chains run in rounds (RoundRecords): round 0 starts every replica (StartReplica)
// and gives each chain a fraction 2^−K of its records, and every later round extends the chains it
// is given to twice the records of the round before (Extend), from where they stood. A rank
// reaches the configured budget at round K and may go on past it. Each round's estimate rests on
// every record its chains have made, so a round that doubles the records costs what it adds and
// wastes nothing; a rank the race leaves behind stops where it is (package estimators decides).

// ChainState is where a chain stands after a round: its parameters and everything its summary is
// computed from, so that a later round carries it on as if it had never stopped. All fields are
// exported: it crosses Beam stages.
type ChainState struct {
	// Theta is the chain's parameters; nil for the prior draws at t = 0, which carry nothing.
	Theta []float64
	// Center is the centre of the Stein variates (the replica's mode), nil without them.
	Center []float64
	// Records are the chain's log-likelihood records after its burn-in, all of them: the
	// transient test (Config.Truncate) reads them whole at every round. Controls holds their
	// control variates, CondVar their conditional variances (controls).
	Records, Controls, CondVar []float64
	// Sweeps counts the chain's sweeps, burn-in included; Steps its passes over the data and
	// CellEvals its cell reads, the start stage's not included.
	Sweeps    int
	Steps     int
	CellEvals int64
}

// minDoublings is the fewest rounds a rank's records double in from round 0 to the configured
// budget: round 0 gives a chain an eighth of its records, enough for the race to leave behind
// the ranks that are far off at about a fifth of the configured cost.
const minDoublings = 3

// roundWork is what round 0 may cost a rank at most, in cell-component operations (a stored
// cell's share of a sweep per component): on data where the configured budget costs more,
// round 0 takes a smaller fraction of it (Doublings), so that the first answer comes in about
// the same time whatever the size of the data.
const roundWork = 4e9

// Doublings is K, the number of rounds in which rank's records double from round 0 to the
// configured budget: minDoublings, or more where the budget's sweeps over the data cost more
// than roundWork·2^minDoublings.
func (p *Problem) Doublings(rank int) int { return p.Config.Doublings(rank, p.Data.NNZ()) }

// Doublings is Problem.Doublings for data of nnz stored non-zero cells, which a launcher that
// has not read the data can bound from their manifest.
func (c Config) Doublings(rank, nnz int) int {
	cfg := c.AtRank(rank)
	sweeps := float64(cfg.Chains * len(cfg.Ladder) * cfg.Steps)
	work := sweeps * float64(nnz) * float64(max(rank, 1))
	k := minDoublings
	for work > roundWork*math.Exp2(float64(k)) && k < 30 {
		k++
	}
	return k
}

// startScale is the fraction of the configured lengths of its start stage (mode search,
// relaxation, descent and phase check) and of its chains' burn-in that rank runs: all of them on
// data where round 0 is an eighth of the budget, and as much less as round 0 is a smaller share.
func (p *Problem) startScale(rank int) float64 {
	return math.Exp2(float64(minDoublings - p.Doublings(rank)))
}

// scaled is n·s rounded up, at least least.
func scaled(n int, s float64, least int) int {
	return max(least, int(math.Ceil(float64(n)*s)))
}

// RoundRecords is the number of records chain (rank, rung ti) holds at the end of round: its
// configured records (Records) times 2^(round − K), at least 2; from round K on, twice those of
// the round before.
func (p *Problem) RoundRecords(rank, ti, round int) int {
	n := float64(p.Records(rank, ti))
	return max(2, int(math.Ceil(n*math.Exp2(float64(round-p.Doublings(rank))))))
}

// Extend carries chain id on through round: a chain that has not swept yet (state.Sweeps == 0)
// first burns in for the scaled burn-in, then every chain records until it holds RoundRecords.
// It returns the summary of all its records and its new state; state is not changed. A chain
// that diverges reports where in the summary's Divergence and returns no state. At t = 0 the
// records are independent prior draws, each round's from a stream of its own.
func (p *Problem) Extend(ctx context.Context, id ChainID, round int, state *ChainState) (evidence.ChainSummary, *ChainState, error) {
	cfg := p.RankConfig(id.Rank)
	if !cfg.Gibbs {
		return evidence.ChainSummary{}, nil, fmt.Errorf("rank %d: only Gibbs chains run in rounds", id.Rank)
	}
	if id.TIndex < 0 || id.TIndex >= len(cfg.Ladder) {
		return evidence.ChainSummary{}, nil, fmt.Errorf("rank %d: rung %d outside the ladder of %d", id.Rank, id.TIndex, len(cfg.Ladder))
	}
	t := cfg.Ladder[id.TIndex]
	sum := evidence.ChainSummary{Rank: id.Rank, TIndex: id.TIndex, T: t, Chain: id.Chain}
	m, err := p.model(id.Rank)
	if err != nil {
		return sum, nil, err
	}
	next := &ChainState{
		Records: append([]float64(nil), state.Records...), Controls: append([]float64(nil), state.Controls...),
		CondVar: append([]float64(nil), state.CondVar...), Center: state.Center,
		Sweeps: state.Sweeps, Steps: state.Steps, CellEvals: state.CellEvals,
	}
	want := p.RoundRecords(id.Rank, id.TIndex, round)
	r := rng.New(p.Config.Seed, uint64(id.Rank), uint64(round), uint64(id.TIndex), uint64(id.Chain), streamSweep)
	if t == 0 {
		theta := make([]float64, m.Dim())
		e := m.NewEval()
		for len(next.Records) < want {
			m.SamplePrior(r, theta)
			ll := (&moverBase{m: m, e: e}).logLik(theta)
			next.Steps++
			next.CellEvals += int64(m.NumCells())
			progress.Add(ctx, 1)
			if math.IsNaN(ll) || math.IsInf(ll, 0) {
				sum.Divergence = fmt.Sprintf("rank %d, t=0, chain %d, prior draw %d: log-likelihood %v", id.Rank, id.Chain, len(next.Records)+1, ll)
				return p.finish(sum, next, nil), nil, nil
			}
			next.Records = append(next.Records, ll)
		}
		sum.Steps, sum.CellEvals = next.Steps, next.CellEvals
		return p.finish(sum, next, nil), next, nil
	}
	if len(state.Theta) != m.Dim() {
		return sum, nil, fmt.Errorf("rank %d, rung %d, chain %d: state has %d parameters, the model %d", id.Rank, id.TIndex, id.Chain, len(state.Theta), m.Dim())
	}
	next.Theta = append([]float64(nil), state.Theta...)
	mv := newGibbsMover(m)
	var cv *controls
	if cfg.Stein {
		if cv = newControls(mv, state.Center); cv != nil {
			cv.z, cv.condVar = next.Controls, next.CondVar
		}
	}
	burn := 0
	if state.Sweeps == 0 {
		burn = scaled(cfg.Burnin, p.startScale(id.Rank), 1)
	}
	acc := make([]float64, mv.blocks())
	per := mv.passes(1)
	sweeps := burn + max(0, want-len(next.Records))
	for s := 1; s <= sweeps; s++ {
		if s%16 == 0 && ctx.Err() != nil {
			return sum, nil, ctx.Err()
		}
		next.Sweeps++
		progress.Add(ctx, per)
		if s < burn {
			mv.moveOn(r, t, next.Theta, acc)
			continue
		}
		ll := mv.move(r, t, 1, nil, next.Theta, acc)
		if math.IsNaN(ll) || math.IsInf(ll, 1) {
			sum.Divergence = fmt.Sprintf("rank %d, t=%.6g (rung %d), chain %d, round %d, sweep %d: log-likelihood %v", id.Rank, t, id.TIndex, id.Chain, round, next.Sweeps, ll)
			break
		}
		if s == burn {
			continue // the burn-in's last sweep reads its log-likelihood, where a divergence shows
		}
		next.Records = append(next.Records, ll)
		if cv != nil {
			cv.record(t, next.Theta, ll)
		}
	}
	next.Steps += mv.passes(next.Sweeps - state.Sweeps)
	next.CellEvals += mv.cellEvals()
	if cv != nil {
		next.Controls, next.CondVar = cv.z, cv.condVar
		next.Steps += cv.passes
		progress.Add(ctx, cv.passes)
	}
	sum.Steps, sum.CellEvals = next.Steps, next.CellEvals
	if err := ctx.Err(); err != nil {
		return sum, nil, err
	}
	if sum.Divergence != "" {
		return sum, nil, nil
	}
	return p.finish(sum, next, cv), next, nil
}

// finish completes a chain's summary from all the records of its state: with Config.Truncate the
// records before the end of the start's transient (evidence.Truncation) are left out, and the
// summary carries its control variates where it has them.
func (p *Problem) finish(sum evidence.ChainSummary, s *ChainState, cv *controls) evidence.ChainSummary {
	if sum.Divergence != "" {
		return sum
	}
	records := s.Records
	d := 0
	if p.Config.Truncate && len(records) > 0 {
		d = evidence.Truncation(records)
	}
	records = records[d:]
	sum.Count = len(records)
	sum.Mean, sum.M2, sum.ESS = evidence.Summarize(records)
	if h := len(records) / 2; h > 0 {
		sum.HalfMean, _, _ = evidence.Summarize(records[:h])
		sum.HalfCount = h
	}
	if cv != nil && d < len(s.Records) {
		kept := *cv
		kept.z = cv.z[d*cv.p:]
		if cv.rb != nil {
			kept.condVar = cv.condVar[d*(cv.p-cv.stein):]
		}
		kept.summarize(records, &sum)
	}
	return sum
}
