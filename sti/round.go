package sti

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"math"
	"slices"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/progress"
	"github.com/stirank/stirank/models"
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
	// transient test (Truncation) reads them whole at every round. Controls holds their
	// control variates, CondVar their conditional variances (controls).
	Records, Controls, CondVar []float64
	// Rates holds, at t = 1 under a hyperprior, every factor's prior rate and their product
	// with each record (record-major, appendRates): the report's posterior of the rates; nil
	// otherwise.
	Rates []float64
	// Budget is the records the chain holds at the configured budget (Records at its rung,
	// which the start stage reads for all its chains); 0 reads it from the problem.
	Budget int
	// Warm says the chain starts from a saved state of an earlier run (StartRankFrom), whose
	// burn-in is Config.WarmBurnin.
	Warm bool
	// Plain says the chain records without control variates from now on, and its summary is
	// the plain mean of all its records: the race found that its rank's controls remove less
	// variance than their passes would as records (evidence.RankEvidence.ControlsPay).
	Plain bool
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
// cell's share of a Gibbs sweep per component), where Config.RoundWork does not say: on data
// where round 0 at an eighth of the records, with the whole start stage, costs more, it gives its
// start stage and its records a smaller share of the configuration's (Doublings), so that the
// first answer comes in about the same time whatever the size of the data.
const roundWork = 2e9

// roundZeroWork is what round 0 may cost a rank, Config.RoundWork or else roundWork.
func (c Config) roundZeroWork() float64 {
	if c.RoundWork > 0 {
		return c.RoundWork
	}
	return roundWork
}

// roundWorkRate is about the cell-component operations round 0 makes in a second of wall time
// on two cores, at the slow end of the data measured (large counts, whose splits draw binomials),
// by which a time budget sizes round 0 (TimedRoundWork).
const roundWorkRate = 3e7

// timedRoundShare is the share of a time budget round 0 of all ranks may take, so that the rounds
// that double it have room to run.
const timedRoundShare = 0.25

// TimedRoundWork is the RoundWork that makes round 0 of a race of ranks take about a quarter of
// seconds on two cores, at most roundWork. It depends on the time and the ranks alone, so that a
// rerun with the same --time starts from the same states on any machine; a faster one has more
// rounds to go on with.
func TimedRoundWork(seconds float64, ranks int) float64 {
	return min(roundWork, timedRoundShare*seconds*roundWorkRate/float64(max(ranks, 1)))
}

// Doublings is K, the number of rounds in which rank's records double from round 0 to the
// configured budget: the least K from minDoublings up whose round 0 costs at most
// Config.RoundWork (roundZeroSweeps).
func (p *Problem) Doublings(rank int) int {
	return p.Config.Doublings(rank, p.Spec.FixedComponents(), p.Data.NNZ())
}

// Doublings is Problem.Doublings for data of nnz stored non-zero cells and a model whose cells'
// rates sum fixed components besides the rank's (models.Spec.FixedComponents), which a launcher
// that has not read the data can bound from their manifest.
func (c Config) Doublings(rank, fixed, nnz int) int {
	k := minDoublings
	for c.roundZeroSweeps(rank, k)*float64(nnz)*float64(max(rank+fixed, 1)) > c.roundZeroWork() && k < 30 {
		k++
	}
	return k
}

// roundZeroSweeps is about what round 0 costs a rank whose records double k times, in Gibbs sweeps:
// every replica's start stage (StartStage.Sweeps) and its chains' burn-in at scaleOf(k) of their
// configured lengths, the records at 2^−k, and the phase check.
func (c Config) roundZeroSweeps(rank, k int) float64 {
	cfg := c.AtRank(rank)
	s := scaleOf(k)
	n := float64(len(cfg.Ladder) - 1)
	start := cfg.startStage().Sweeps(cfg) + n*float64(cfg.Burnin)
	records := n * float64(cfg.Steps-cfg.Burnin) * math.Exp2(float64(-k))
	return float64(cfg.Chains)*(s*start+records) + s*float64(cfg.Ascent)*n
}

// scaleOf is the share of the configured lengths of its start stage (mode search, relaxation,
// descent and phase check) and of its chains' burn-in that a rank whose records double k times
// runs: all of them where round 0 is an eighth of the records, and as much less as it is a
// smaller share.
func scaleOf(k int) float64 { return math.Min(1, math.Exp2(float64(minDoublings-k))) }

// startScale is scaleOf of rank's Doublings.
func (p *Problem) startScale(rank int) float64 { return scaleOf(p.Doublings(rank)) }

// scaled is n·s rounded up, at least least.
func scaled(n int, s float64, least int) int {
	return max(least, int(math.Ceil(float64(n)*s)))
}

// StartStageSteps is what rank's start stage makes (StartStage.Steps), in passes over the data of
// a model of that order with nnz stored non-zero cells, for a progress plan.
func (c Config) StartStageSteps(rank, fixed, order, nnz int) int {
	cfg := c.AtRank(rank)
	return cfg.startStage().Steps(cfg, scaleOf(c.Doublings(rank, fixed, nnz)), order)
}

// RoundSteps is what a chain of rank above t = 0 makes in round (Extend), in passes over the
// data of a model of that order with nnz stored non-zero cells, for a progress plan: its burn-in
// in round 0 and the records the round adds (Steps − Burnin at the budget, as a uniform ladder
// has), and a Stein variate's pass per record.
func (c Config) RoundSteps(rank, fixed, round, order, nnz int) int {
	cfg := c.AtRank(rank)
	k := c.Doublings(rank, fixed, nnz)
	n := cfg.Steps - cfg.Burnin
	records := roundRecords(n, round, k)
	sweeps := records
	if round == 0 {
		sweeps += scaled(cfg.Burnin, scaleOf(k), 1)
	} else {
		sweeps -= roundRecords(n, round-1, k)
		records = sweeps
	}
	steps := sweeps * models.SweepPasses(order)
	if cfg.Runs(SteinName) {
		steps += records
	}
	return steps
}

// CheckSteps is what rank's phase check makes (PhaseCheck), in passes over the data, for a
// progress plan.
func (c Config) CheckSteps(rank, fixed, order, nnz int) int {
	cfg := c.AtRank(rank)
	return scaled(cfg.Ascent, scaleOf(c.Doublings(rank, fixed, nnz)), 2) * (len(cfg.Ladder) - cfg.phaseRung()) * models.SweepPasses(order)
}

// RoundRecords is the number of records chain (rank, rung ti) holds at the end of round: its
// configured records (Records) times 2^(round − K), at least 2; from round K on, twice those of
// the round before.
func (p *Problem) RoundRecords(rank, ti, round int) int {
	return roundRecords(p.Records(rank, ti), round, p.Doublings(rank))
}

// roundRecords is RoundRecords of a chain of n records at the configured budget whose rank's
// records double k times.
func roundRecords(n, round, k int) int {
	return max(2, int(math.Ceil(float64(n)*math.Exp2(float64(round-k)))))
}

// Extend carries chain id on through round: a chain that has not swept yet (state.Sweeps == 0)
// first burns in (Config.Burnin times startScale, or Config.WarmBurnin for a chain resumed from a
// saved state), then every chain records until it holds RoundRecords. It returns the summary of
// all its records and its new state; state is not changed. A chain that diverges reports where in
// the summary's Divergence and returns no state. At t = 0 the records are independent prior
// draws, each round's from a stream of its own.
func (p *Problem) Extend(ctx context.Context, id ChainID, round int, state *ChainState) (evidence.ChainSummary, *ChainState, error) {
	cfg := p.RankConfig(id.Rank)
	if !cfg.Gibbs {
		return evidence.ChainSummary{}, nil, fmt.Errorf("rank %d: only Gibbs chains run in rounds", id.Rank)
	}
	if id.TIndex < 0 || id.TIndex >= len(cfg.Ladder) {
		return evidence.ChainSummary{}, nil, fmt.Errorf("rank %d: rung %d outside the ladder of %d", id.Rank, id.TIndex, len(cfg.Ladder))
	}
	t := cfg.Ladder[id.TIndex]
	sum := evidence.ChainSummary{Rank: id.Rank, TIndex: id.TIndex, T: t, Chain: id.Chain, Warm: state.Warm}
	m, err := p.model(id.Rank)
	if err != nil {
		return sum, nil, err
	}
	next := &ChainState{
		Records: slices.Clone(state.Records), Controls: slices.Clone(state.Controls), CondVar: slices.Clone(state.CondVar),
		Rates: slices.Clone(state.Rates), Center: state.Center, Budget: state.Budget, Warm: state.Warm, Plain: state.Plain, Sweeps: state.Sweeps, Steps: state.Steps, CellEvals: state.CellEvals,
	}
	if next.Plain {
		next.Center, next.Controls, next.CondVar = nil, nil, nil
	}
	if next.Budget == 0 {
		next.Budget = p.Records(id.Rank, id.TIndex)
	}
	want := roundRecords(next.Budget, round, p.Doublings(id.Rank))
	r := rng.New(p.Config.Seed, uint64(id.Rank), uint64(round), uint64(id.TIndex), uint64(id.Chain), streamSweep)
	var div string
	var cv *controls
	if t == 0 {
		theta := make([]float64, m.Dim())
		b := &moverBase{m: m, e: m.NewEval()}
		for len(next.Records) < want && div == "" {
			m.SamplePrior(r, theta)
			ll := b.logLik(theta)
			next.Steps++
			progress.Add(ctx, 1)
			if math.IsNaN(ll) || math.IsInf(ll, 0) {
				div = fmt.Sprintf("rank %d, t=0, chain %d, prior draw %d: log-likelihood %v", id.Rank, id.Chain, len(next.Records)+1, ll)
			}
			next.Records = append(next.Records, ll)
		}
		next.CellEvals += b.cellEvals()
	} else {
		if len(state.Theta) != m.Dim() {
			return sum, nil, fmt.Errorf("rank %d, rung %d, chain %d: state has %d parameters, the model %d", id.Rank, id.TIndex, id.Chain, len(state.Theta), m.Dim())
		}
		next.Theta = slices.Clone(state.Theta)
		mv := newGibbsMover(m)
		if !next.Plain {
			cv = recording(cfg.postProcessors(), mv, next)
		}
		burn := 0
		switch {
		case state.Sweeps > 0:
		case state.Warm:
			burn = cfg.warmBurnin()
		default:
			burn = scaled(cfg.Burnin, p.startScale(id.Rank), 1)
		}
		before := next.Sweeps
		div = advance(ctx, mv, cv, r, t, burn, want-len(next.Records), next, func(sweep int) string {
			return fmt.Sprintf("rank %d, t=%.6g (rung %d), chain %d, round %d, sweep %d", id.Rank, t, id.TIndex, id.Chain, round, sweep)
		})
		next.Steps += mv.passes(next.Sweeps - before)
		next.CellEvals += mv.cellEvals()
		if cv != nil {
			next.Controls, next.CondVar = cv.z, cv.condVar
			next.Steps += cv.passes
		}
	}
	sum.Steps, sum.CellEvals = next.Steps, next.CellEvals
	sum, err = p.summarize(ctx, sum, div, next.Records, next.Rates, cv)
	if err != nil || div != "" {
		return sum, nil, err
	}
	return sum, next, nil
}

// chainWire is a ChainState as it crosses Beam stages: its parameters and centre as little-endian
// single-precision floats, which halves the bytes a large model's chains move between rounds
// (7 MB a chain at rank 11 of a 10⁶-non-zero CP tensor) and moves a chain by a rounding of its
// log-parameters, far below anything its next sweep does. Every rerun rounds the same, and a chain
// run in one process (estimators.RunRace) crosses the same encoding.
type chainWire struct {
	Theta, Center              []byte
	Records, Controls, CondVar []float64
	Rates                      []float64
	Budget                     int
	Warm, Plain                bool
	Sweeps, Steps              int
	CellEvals                  int64
}

// GobEncode writes s as a chainWire.
func (s ChainState) GobEncode() ([]byte, error) {
	w := chainWire{Theta: single(s.Theta), Center: single(s.Center), Records: s.Records, Controls: s.Controls, CondVar: s.CondVar, Rates: s.Rates,
		Budget: s.Budget, Warm: s.Warm, Plain: s.Plain, Sweeps: s.Sweeps, Steps: s.Steps, CellEvals: s.CellEvals}
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(w)
	return b.Bytes(), err
}

// GobDecode reads what GobEncode wrote.
func (s *ChainState) GobDecode(b []byte) error {
	var w chainWire
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&w); err != nil {
		return err
	}
	theta, err := double(w.Theta)
	if err != nil {
		return fmt.Errorf("chain state: parameters: %w", err)
	}
	center, err := double(w.Center)
	if err != nil {
		return fmt.Errorf("chain state: centre: %w", err)
	}
	*s = ChainState{Theta: theta, Center: center, Records: w.Records, Controls: w.Controls, CondVar: w.CondVar, Rates: w.Rates,
		Budget: w.Budget, Warm: w.Warm, Plain: w.Plain, Sweeps: w.Sweeps, Steps: w.Steps, CellEvals: w.CellEvals}
	return nil
}

// single is x as little-endian single-precision floats, nil for nil.
func single(x []float64) []byte {
	if x == nil {
		return nil
	}
	out := make([]byte, 0, 4*len(x))
	for _, v := range x {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(v)))
	}
	return out
}

// double reads what single wrote.
func double(b []byte) ([]float64, error) {
	if b == nil {
		return nil, nil
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%d bytes are not a whole number of single-precision floats", len(b))
	}
	out := make([]float64, len(b)/4)
	for i := range out {
		out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return out, nil
}
