package sti

import (
	"context"
	"fmt"
	"math"

	"github.com/stirank/stirank/internal/par"
	"github.com/stirank/stirank/internal/progress"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// ReplicaStart is the start stage's output for one replica of a rank (StartReplica): the state
// each of its chains starts round 0 from, by rung, and for the replica that runs its rank's phase
// check, where that walk starts. All fields are exported: it crosses Beam stages.
type ReplicaStart struct {
	// States holds each rung's start, by ladder index; the rungs at t = 0 have none.
	States []ChainState
	// Check is the state the phase check's walk starts from (PhaseCheck) at rung CheckFrom,
	// nil for a replica that runs none.
	Check     []float64
	CheckFrom int
	// Steps counts the passes over the data the stage made and CellEvals its cell reads.
	Steps     int
	CellEvals int64
}

// StartReplica is the start stage of replica q of rank: its own mode search (the best of its
// starts carried by EM towards a mode of the posterior), a relaxation at t = 1 and a walk down the
// ladder whose state at the end of each rung starts that rung's chain (see descend for why each
// stage is there). Every length is the configuration's times startScale. It depends on the seed,
// the rank and the replica alone, so a retried stage returns the same states bit for bit.
func (p *Problem) StartReplica(ctx context.Context, rank, q int) (*ReplicaStart, error) {
	cfg := p.RankConfig(rank)
	if !cfg.Gibbs {
		return nil, fmt.Errorf("rank %d: only Gibbs chains run in rounds", rank)
	}
	m, err := p.model(rank)
	if err != nil {
		return nil, err
	}
	s := p.startScale(rank)
	out := &ReplicaStart{States: make([]ChainState, len(cfg.Ladder))}
	mode, passes, cells, err := p.searchMode(ctx, m, rank, s)
	if err != nil {
		return nil, err
	}
	out.Steps, out.CellEvals = passes, cells
	var center []float64
	if cfg.Stein {
		center = mode
	}
	w := newRungWalk(ctx, p, rank, m, append([]float64(nil), mode...), rng.New(p.Config.Seed, uint64(rank), 0, uint64(q), streamDescent))
	where := fmt.Sprintf("rank %d, replica %d: ", rank, q)
	if _, err := w.rung(ctx, 1, scaled(cfg.Relax, s, 0), 1, where+"relaxation at t=1"); err != nil {
		return nil, err
	}
	check := q == 0 && cfg.Ascent > 0 && rank > 1
	out.CheckFrom = cfg.phaseRung()
	descent := scaled(cfg.Descent, s, 1)
	for i := len(cfg.Ladder) - 1; i >= 1; i-- {
		t := cfg.Ladder[i]
		if t == 0 {
			break
		}
		if _, err := w.rung(ctx, t, descent, 1, where+fmt.Sprintf("descent at t=%.6g (rung %d)", t, i)); err != nil {
			return nil, err
		}
		out.States[i] = ChainState{Theta: append([]float64(nil), w.theta...), Center: center}
		if check && i == out.CheckFrom {
			out.Check = append([]float64(nil), w.theta...)
		}
	}
	for i := range out.States {
		out.States[i].Center = center
	}
	out.Steps += w.mv.passes(w.sweeps)
	out.CellEvals += w.mv.cellEvals()
	return out, nil
}

// searchMode is a rank's mode search: Starts prior draws, each carried startEMScreen·s EM
// sweeps, the best by its log posterior then StartEM·s sweeps more. A prior draw can fall into
// the basin of a local mode of negligible mass (two components sharing one source, another
// missing) that a chain at high t never leaves; on large counts such modes are many nats apart and
// only a search over many starts finds the dominant one. It depends on the seed and the rank
// alone: every replica's start stage searches the same starts and finds the same mode, which
// costs what a search per replica would and shares nothing between tasks. It returns the mode,
// the passes over the data it made and its cell reads.
func (p *Problem) searchMode(ctx context.Context, m models.Model, rank int, s float64) ([]float64, int, int64, error) {
	cfg := p.RankConfig(rank)
	n := max(1, cfg.Starts)
	screen := scaled(cfg.screenEM(), s, 1)
	type start struct {
		theta []float64
		score float64
		err   error
	}
	starts := make([]start, n)
	par.Tasks(n, func(k int) {
		theta := make([]float64, m.Dim())
		m.SamplePrior(rng.New(p.Config.Seed, uint64(rank), 0, streamMode, uint64(k)), theta)
		if err := ascendEM(ctx, m, theta, screen); err != nil {
			starts[k].err = err
			return
		}
		starts[k] = start{theta: theta, score: logPosterior(m, theta)}
	})
	best := -1
	for k, st := range starts {
		if st.err != nil {
			return nil, 0, 0, st.err
		}
		if !math.IsNaN(st.score) && (best < 0 || st.score > starts[best].score) {
			best = k
		}
	}
	if best < 0 {
		return nil, 0, 0, fmt.Errorf("rank %d: mode search found no start with a finite log posterior", rank)
	}
	more := scaled(cfg.StartEM-cfg.screenEM(), s, 0)
	theta := starts[best].theta
	if err := ascendEM(ctx, m, theta, more); err != nil {
		return nil, 0, 0, err
	}
	passes := (n*screen + more) * emPasses(len(m.Factors()))
	// Each start's score reads the cells once.
	return theta, passes + n, int64(passes+n) * int64(models.PassCells(m)), nil
}

// ascendEM carries θ sweeps EM sweeps towards a mode of m's posterior.
func ascendEM(ctx context.Context, m models.Model, theta []float64, sweeps int) error {
	a, ok := m.(models.Augmentable)
	if !ok || sweeps == 0 {
		return nil
	}
	k := a.NewAugmented()
	for range sweeps {
		if err := ctx.Err(); err != nil {
			return err
		}
		k.Ascend(1, theta)
		progress.Add(ctx, emPasses(len(m.Factors())))
	}
	return nil
}

// logPosterior is log p(θ) + log p(X | θ), the score of a start.
func logPosterior(m models.Model, theta []float64) float64 {
	e := m.NewEval()
	e.Prepare(theta)
	return e.LogPrior(nil) + models.LogLik(e, m)
}

// PhaseCheck is a rank's phase check (Config.Ascent; evidence.PhaseCheck): from theta, the first
// replica's descent at rung from (ReplicaStart.Check), a walk back up the ladder of Ascent·
// startScale sweeps per rung, whose last half read their log-likelihoods. It returns the mean of
// each rung's reads, from rung from to t = 1, and the passes over the data and cell reads it made.
func (p *Problem) PhaseCheck(ctx context.Context, rank, from int, theta []float64) ([]float64, int, int64, error) {
	cfg := p.RankConfig(rank)
	m, err := p.model(rank)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(theta) != m.Dim() || from < 0 || from >= len(cfg.Ladder) {
		return nil, 0, 0, fmt.Errorf("rank %d: phase check from rung %d with %d parameters", rank, from, len(theta))
	}
	w := newRungWalk(ctx, p, rank, m, append([]float64(nil), theta...), rng.New(p.Config.Seed, uint64(rank), 0, 0, streamAscent))
	if k, ok := w.mv.k.(models.Shearing); ok {
		// The walk must keep the phase it starts in where the chains' has given way, and shear
		// moves let it cross.
		k.SetShear(false)
	}
	n := scaled(cfg.Ascent, p.startScale(rank), 2)
	read := max(1, n/2)
	means := make([]float64, 0, len(cfg.Ladder)-from)
	for i := from; i < len(cfg.Ladder); i++ {
		t := cfg.Ladder[i]
		sum, err := w.rung(ctx, t, n, read, fmt.Sprintf("rank %d: phase check's ascent at t=%.6g (rung %d)", rank, t, i))
		if err != nil {
			return nil, 0, 0, err
		}
		means = append(means, sum/float64(read))
	}
	return means, w.mv.passes(w.sweeps), w.mv.cellEvals(), nil
}
