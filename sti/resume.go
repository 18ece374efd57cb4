package sti

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/progress"
)

// Resumption resumes the chains of a problem from one set of saved states (those of the previous
// run), read through load, which returns nil, nil for a chain without one. It holds, per rank,
// the verdict of the basin check (see warmBasin), which depends on the states, so a problem that
// resumes from another set of states needs another Resumption. It is safe for concurrent use.
type Resumption struct {
	p      *Problem
	load   func(context.Context, ChainID) (*State, error)
	basins sync.Map // rank → *rankBasin
}

// ResumeFrom returns the resumption of p's chains from the states load reads.
func (p *Problem) ResumeFrom(load func(context.Context, ChainID) (*State, error)) *Resumption {
	return &Resumption{p: p, load: load}
}

// Run runs chain id from the state Start picks (cold when there is none) and returns its summary
// and final state, like Problem.Resume. The chain that accounts for the rank's mode search (the
// first replica at t = 1) also accounts for the basin check, and for the search when the rank
// stayed warm (a cold chain's run accounts for the search itself). A chain that consulted the
// basin check passes its verdict on, which is the rank's (progress.Resumes), and states its
// plan, since the progress display may have planned it neither warm nor cold; a chain that
// starts cold revises its plan (expectCold).
func (r *Resumption) Run(ctx context.Context, id ChainID) (evidence.ChainSummary, *State, error) {
	from, b, err := r.start(ctx, id)
	if err != nil {
		return evidence.ChainSummary{}, nil, err
	}
	if b != nil {
		progress.Resumes(ctx, b.warm)
	}
	switch {
	case from == nil && r.p.RankConfig(id.Rank).Ladder[id.TIndex] > 0:
		r.expectCold(ctx, id, b)
	case b != nil:
		n, w := r.p.chainPlan(id, true, r.p.reportPrices(ctx, id.Rank))
		progress.Expect(ctx, n, w)
	}
	sum, final, err := r.p.Resume(ctx, id, from)
	if err != nil || id.Chain != 0 || id.TIndex != r.p.top(id.Rank) {
		return sum, final, err
	}
	if v, ok := r.basins.Load(id.Rank); ok {
		b := v.(*rankBasin)
		sum.Steps += b.steps
		sum.CellEvals += b.cellEvals
		if rm, ok := r.p.modes.Load(id.Rank); ok && sum.Warm {
			sum.Steps += rm.(*rankMode).steps
			sum.CellEvals += rm.(*rankMode).cellEvals
		}
	}
	return sum, final, nil
}

// expectCold revises the plan of chain id, which starts cold though its rank may have been planned
// warm (its basin check refused the states, or the chain had none): a cold chain's steps, and
// for the chain that accounts for its rank's mode search the basin check b it accounts for too
// when it ran (Run; b is nil when the chain did not consult it), so that the progress display's
// estimate follows.
func (r *Resumption) expectCold(ctx context.Context, id ChainID, b *rankBasin) {
	p := r.p
	pr := p.reportPrices(ctx, id.Rank) // the prices the chain reports at
	n, w := p.chainPlan(id, false, pr)
	if b != nil && id.Chain == 0 && id.TIndex == p.top(id.Rank) && b.checked {
		order, _ := p.Spec.Order()
		bn, bw := p.RankConfig(id.Rank).basinPlan(order, pr)
		n, w = n+bn, w+bw
	}
	progress.Expect(ctx, n, w)
}

// Start picks the saved state that chain id resumes from; nil means the chain starts cold.
//
// It is the state of the same replica at the rung whose temperature is closest, on a log scale,
// to min(1, g·t), g being how much the data grew since the states were saved (their size ratio):
// the power posterior at t of data g times larger is close to the old data's at g·t, so that
// rung's state is already as concentrated as the chain's target. Resuming at the same rung
// instead leaves a chain to find, within its warm burn-in, the structure that the grown data
// support at t, which over-fitted ranks (many modes) do slowly: on CP data that doubled, ranks 4
// and 5 (true rank 3) were 8–11 nats low from the same rung and 1–7 from the mapped one (one
// diagnostic run, two seeds).
//
// A rank whose saved states no longer lie in the best basin the grown data have (see warmBasin)
// starts cold instead.
func (r *Resumption) Start(ctx context.Context, id ChainID) (*State, error) {
	s, _, err := r.start(ctx, id)
	return s, err
}

// start is Start, and the rank's basin check when the chain consulted it (it had a state above
// t = 0).
func (r *Resumption) start(ctx context.Context, id ChainID) (*State, *rankBasin, error) {
	p := r.p
	own, err := r.load(ctx, id)
	l := p.RankConfig(id.Rank).Ladder
	if err != nil || own == nil || l[id.TIndex] == 0 {
		return own, nil, err
	}
	b, err := r.warmBasin(ctx, id.Rank)
	if err != nil || !b.warm {
		return nil, b, err
	}
	if !(own.Size > 0) {
		return own, b, nil
	}
	ti := l.Nearest(min(1, l[id.TIndex]*p.size/own.Size))
	if ti == id.TIndex {
		return own, b, nil
	}
	s, err := r.load(ctx, ChainID{Rank: id.Rank, TIndex: ti, Chain: id.Chain})
	if err != nil || s == nil {
		return own, b, err
	}
	return s, b, nil
}

// basinTolerance is by how many nats of log posterior a fresh mode search may beat the saved
// states, carried to their modes, before they are dropped. In one diagnostic on growing CP data
// (rank 2, true rank 3) the saved states beat the fresh search by 1.7–2.5 nats or trailed it by
// about 3 where warm chains were accurate, and trailed by 4–6 where they were 9 nats low. The
// margin errs towards cold starts, which cost a full burn-in but no accuracy.
const basinTolerance = 2

// rankBasin is the verdict of a rank's basin check, shared by its chains, and what it cost.
type rankBasin struct {
	once sync.Once
	// checked says the check ran (the rank searches modes); warm is its verdict.
	checked, warm bool
	steps         int
	cellEvals     int64
	err           error
}

// warmBasin checks, once per rank, whether the rank's saved states still lie in the best basin of
// the grown data's posterior: each replica's state at t = 1 (its new rows settled) is carried
// StartSteps steps of ascent and StartEM sweeps of EM, as the search's best start is, and scored
// by its log posterior, and the best of them must come within basinTolerance of the rank's fresh
// mode search (Problem.mode). Data growth can move the dominant mode, most visibly at ranks below
// the true one, where the data decide which true components the model merges: after CP data grew
// by a third, warm chains that stayed in the old basin were 9 nats low at rank 2 while the fresh
// search beat their basin by 4–6 nats. A rank that fails the check starts cold from the fresh
// mode. Everything it reads is seeded or saved, so every worker reaches the same verdict. Without
// a mode search (Starts = 0) there is nothing to compare with and the states are kept.
func (r *Resumption) warmBasin(ctx context.Context, rank int) (*rankBasin, error) {
	p := r.p
	v, _ := r.basins.LoadOrStore(rank, &rankBasin{})
	b := v.(*rankBasin)
	b.once.Do(func() {
		if p.Config.Starts == 0 {
			b.warm = true
			return
		}
		b.checked = true
		m, err := p.mode(ctx, rank)
		if err != nil {
			b.err = err
			return
		}
		best := math.Inf(-1)
		pr := p.reportPrices(ctx, rank)
		for ch := range p.Config.Chains {
			id := ChainID{Rank: rank, TIndex: p.top(rank), Chain: ch}
			s, err := r.load(ctx, id)
			if err != nil {
				b.err = err
				return
			}
			if s == nil {
				continue
			}
			w, err := p.NewWalker(id)
			if err != nil {
				b.err = err
				return
			}
			newRows, err := p.warmStart(w, s)
			if err != nil {
				b.err = fmt.Errorf("rank %d, chain %d: %w", rank, ch, err)
				return
			}
			n, err := w.settle(newRows, p.Config.SettleSteps)
			b.steps += n
			progress.Add(ctx, n)
			w.SetBurnin(p.Config.StartSteps) // as in the mode search: the metric follows every step
			for k := 1; k <= p.Config.StartSteps && err == nil; k++ {
				err = w.Ascend(k)
				b.steps++
				progress.AddAt(ctx, 1, pr.ascent)
			}
			if err != nil {
				continue
			}
			n, err = w.emAscend(ctx, p.Config.StartEM, pr.em)
			if err != nil {
				b.err = err
				return
			}
			b.steps += n
			best = max(best, w.LogPosterior())
			b.cellEvals += w.cellEvals
		}
		b.warm = best >= m.score-basinTolerance
	})
	return b, b.err
}
