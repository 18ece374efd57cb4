package sti

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/stirank/stirank/internal/progress"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// descent is one replica's walk down the ladder from its rank's mode (Config.Descent): Descent
// sweeps of the Gibbs kernel at every temperature above 0, from t = 1 down, its state at the end
// of each rung kept as the start of that rung's chain of the replica. A chain started at the t = 1
// mode below t = 1 must spread out to the rung's typical set, and it does so slowly along the
// directions the kernel mixes badly in; the descent spreads out once for all rungs of a replica,
// each rung's start having relaxed through every rung above it. Like the mode search, a descent
// depends only on the seed, the rank and the replica, so every worker process that runs a chain
// of the replica computes the same one; until the chains take them it holds a ladder of
// parameter vectors (8 bytes × parameters × rungs: 7.4 MB at R = 16 on a 257×1661 matrix).
type descent struct {
	once      sync.Once
	states    [][]float64 // by ladder index; nil at t = 0 and once taken
	ascent    []float64   // the first replica's state at phaseRung, for the ascent; nil once taken
	passes    int
	cellEvals int64
	err       error
	mu        sync.Mutex
}

// descentKey names the descent of a replica of a rank.
type descentKey struct{ rank, chain int }

// descentStart returns the start of chain id from its replica's descent (computing the descent
// when no chain of the replica has asked for it yet) and the passes over the data and cell reads
// the descent cost, which the chain at t = 1 accounts for. A state is handed out once and then
// dropped, so the descents of a worker hold at most a ladder of states each; a chain that asks
// again (a retried bundle) walks the descent afresh to its rung, on the same streams.
func (p *Problem) descentStart(ctx context.Context, id ChainID) ([]float64, int, int64, error) {
	v, _ := p.descents.LoadOrStore(descentKey{id.Rank, id.Chain}, &descent{})
	d := v.(*descent)
	d.once.Do(func() {
		top := p.top(id.Rank)
		d.states = make([][]float64, top+1)
		// The check's start is kept only where the rank runs the check (and dropped unused
		// where its chain runs in another worker process).
		cfg := p.RankConfig(id.Rank)
		check := id.Chain == 0 && cfg.phaseCheck(ChainID{Rank: id.Rank, TIndex: top}, false)
		from := cfg.phaseRung()
		d.passes, d.cellEvals, d.err = p.descend(ctx, id, 0, func(i int, theta []float64) {
			d.states[i] = append([]float64(nil), theta...)
			if check && i == from {
				d.ascent = append([]float64(nil), theta...)
			}
		})
	})
	if d.err != nil {
		return nil, 0, 0, d.err
	}
	passes, cells := 0, int64(0)
	if id.TIndex == p.top(id.Rank) {
		passes, cells = d.passes, d.cellEvals
	}
	d.mu.Lock()
	theta := d.states[id.TIndex]
	d.states[id.TIndex] = nil
	d.mu.Unlock()
	if theta != nil {
		return theta, passes, cells, nil
	}
	theta, err := p.DescentState(ctx, id)
	return theta, passes, cells, err
}

// DescentState returns the state a cold chain id starts from where its rank's chains start from
// walks down the ladder (Gibbs chains with a mode search and Config.Descent, Default's): its
// replica's walk from the rank's mode, after the relaxation at t = 1, at id's rung. It is for
// checks run from the chains' own points, such as Chib's method from the state at t = 1
// (bench/chibstart); it walks the descent afresh and costs what the descent costs.
func (p *Problem) DescentState(ctx context.Context, id ChainID) ([]float64, error) {
	cfg := p.RankConfig(id.Rank)
	if !cfg.Gibbs || cfg.Starts == 0 || cfg.Descent == 0 {
		return nil, fmt.Errorf("rank %d: chains start from walks down the ladder only with the Gibbs kernel, a mode search and a descent", id.Rank)
	}
	if id.TIndex < 1 || id.TIndex > p.top(id.Rank) {
		return nil, fmt.Errorf("rank %d: rung %d is not one of the walk's rungs 1–%d", id.Rank, id.TIndex, p.top(id.Rank))
	}
	var theta []float64
	_, _, err := p.descend(ctx, id, id.TIndex, func(i int, th []float64) {
		if i == id.TIndex {
			theta = append([]float64(nil), th...)
		}
	})
	return theta, err
}

// descend walks replica id.Chain of rank id.Rank down the ladder from the rank's mode to rung
// stop (stop ≥ 1), handing keep the state at the end of every rung, and returns the passes over
// the data and the cell reads it made. It first carries the mode Config.Relax sweeps at t = 1:
// the highest of the mode search's modes sits where the posterior's density peaks, not where its
// mass lies (at a rank above the data's the extra component fits noise there, and the posterior
// spreads it over configurations of lower likelihood that the kernel reaches only over hundreds
// of sweeps), and each replica relaxes on its own stream, so that where the relaxation can end in
// basins of different levels the replicas' spread shows it. Its stream depends on the seed, the
// rank and the replica only, so every walk of a replica's descent gives the same states.
func (p *Problem) descend(ctx context.Context, id ChainID, stop int, keep func(i int, theta []float64)) (int, int64, error) {
	m, err := p.mode(ctx, id.Rank)
	if err != nil {
		return 0, 0, err
	}
	model, err := p.model(id.Rank)
	if err != nil {
		return 0, 0, err
	}
	w := newRungWalk(ctx, p, id.Rank, model, append([]float64(nil), m.theta...), rng.New(p.Config.Seed, uint64(id.Rank), 0, uint64(id.Chain), streamDescent))
	cfg := p.RankConfig(id.Rank)
	where := fmt.Sprintf("rank %d, replica %d: ", id.Rank, id.Chain)
	if _, err := w.rung(ctx, 1, cfg.Relax, 1, where+"relaxation at t=1"); err != nil {
		return 0, 0, err
	}
	for i := len(cfg.Ladder) - 1; i >= max(stop, 1); i-- {
		t := cfg.Ladder[i]
		if _, err := w.rung(ctx, t, cfg.Descent, 1, where+fmt.Sprintf("descent at t=%.6g (rung %d)", t, i)); err != nil {
			return 0, 0, err
		}
		keep(i, w.theta)
	}
	return w.mv.passes(w.sweeps), w.mv.cellEvals(), nil
}

// rungWalk is a walk's state as it sweeps the ladder's rungs one after another (the descent and
// the phase check's ascent): its parameters, the Gibbs kernel's mover, its stream and the sweeps
// it has made, each reported to the progress line at its rank's prices.
type rungWalk struct {
	mv          *gibbsMover
	r           *rand.Rand
	theta, acc  []float64
	pr          prices
	per, sweeps int
}

// newRungWalk starts a walk of rank at theta on the stream r.
func newRungWalk(ctx context.Context, p *Problem, rank int, model models.Model, theta []float64, r *rand.Rand) *rungWalk {
	mv := newGibbsMover(model)
	return &rungWalk{mv: mv, r: r, theta: theta, acc: make([]float64, mv.blocks()), pr: p.reportPrices(ctx, rank), per: mv.passes(1)}
}

// rung makes n sweeps at t and returns the sum of the log-likelihoods of the last read of them,
// the only ones it reads; where names the walk and the rung in an error, where one of them is not
// finite.
func (w *rungWalk) rung(ctx context.Context, t float64, n, read int, where string) (float64, error) {
	sum := 0.0
	for s := 1; s <= n; s++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		w.sweeps++
		if s <= n-read {
			w.mv.moveOn(w.r, t, w.theta, w.acc)
			progress.AddAt(ctx, w.per, w.pr.sweep(t, false))
			continue
		}
		ll := w.mv.move(w.r, t, 1, nil, w.theta, w.acc)
		progress.AddAt(ctx, w.per, w.pr.sweep(t, true))
		if math.IsNaN(ll) || math.IsInf(ll, 0) {
			return 0, fmt.Errorf("%s, sweep %d: log-likelihood %v", where, s, ll)
		}
		sum += ll
	}
	return sum, nil
}

// phaseFrom is the lowest temperature of the phase check (Config.Ascent). Below it the rungs'
// variance is large and their weight in the integral small; on the sparse matrices with
// heavy-tailed rows measured, the walk and the chains parted by 3 standard deviations above
// t = 0.08 only, and on a CP tensor above 0.03 (README, the method table). The walk must start
// below the change, in the phase of small t.
const phaseFrom = 0.01

// phaseRung is the first rung of the ladder at or above phaseFrom, where the ascent starts.
func (cfg Config) phaseRung() int {
	i := 0
	for i < len(cfg.Ladder)-1 && cfg.Ladder[i] < phaseFrom {
		i++
	}
	return i
}

// ascentReads is how many of the ascent's Ascent sweeps per rung read their log-likelihood: the
// last half.
func (cfg Config) ascentReads() int { return max(1, cfg.Ascent/2) }

// ascend is the phase check of a rank (Config.Ascent): from the first replica's descent at
// phaseRung it walks back up the ladder, Ascent sweeps per rung, and returns the mean
// log-likelihood of the last half of each rung's sweeps (evidence.ChainSummary.Ascent), the rung
// it started at, and the passes over the data and cell reads it made. Where f(t) has one phase
// the walk follows the rungs' chains, which start from the same descent; where it changes phase
// the descent has kept the phase of t = 1 below where it gives way, and the walk, started below
// that, keeps the other phase above it (evidence.PhaseCheck). Like the descent it depends on the
// seed and the rank only, and a retried chain walks the descent again to get its start.
func (p *Problem) ascend(ctx context.Context, rank int) ([]float64, int, int, int64, error) {
	id := ChainID{Rank: rank, TIndex: p.top(rank), Chain: 0}
	cfg := p.RankConfig(rank)
	from := cfg.phaseRung()
	var theta []float64
	if v, ok := p.descents.Load(descentKey{rank, 0}); ok {
		d := v.(*descent)
		d.mu.Lock()
		theta, d.ascent = d.ascent, nil
		d.mu.Unlock()
	}
	if theta == nil {
		if _, _, err := p.descend(ctx, id, from, func(i int, th []float64) {
			if i == from {
				theta = append([]float64(nil), th...)
			}
		}); err != nil {
			return nil, 0, 0, 0, err
		}
	}
	model, err := p.model(rank)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	w := newRungWalk(ctx, p, rank, model, theta, rng.New(p.Config.Seed, uint64(rank), 0, 0, streamAscent))
	if k, ok := w.mv.k.(models.Shearing); ok {
		// The walk must keep the phase it starts in where the chains' has given way, and shear
		// moves let it cross: with them the check missed rank 2 of the heavy-tailed 40×30
		// matrix of TestPhaseCheckWidensTheErrorOfAPhaseChange (README, the shear row).
		k.SetShear(false)
	}
	read := cfg.ascentReads()
	means := make([]float64, 0, len(cfg.Ladder)-from)
	for i := from; i < len(cfg.Ladder); i++ {
		t := cfg.Ladder[i]
		sum, err := w.rung(ctx, t, cfg.Ascent, read, fmt.Sprintf("rank %d: phase check's ascent at t=%.6g (rung %d)", rank, t, i))
		if err != nil {
			return nil, 0, 0, 0, err
		}
		means = append(means, sum/float64(read))
	}
	return means, from, w.mv.passes(w.sweeps), w.mv.cellEvals(), nil
}
