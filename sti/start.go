package sti

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/internal/par"
	"github.com/stirank/stirank/internal/progress"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// RankStart is a rank's start stage (StartRank, StartRankFrom): the state every chain starts
// from, by replica and rung, and where the rank's phase check starts. All fields are exported:
// it crosses Beam stages.
type RankStart struct {
	// States[q][i] is replica q's start at rung i; the rungs at t = 0 have none.
	States [][]ChainState
	// Check is the state the phase check's walk starts from (PhaseCheck) at rung CheckFrom, nil
	// for a rank that runs none.
	Check     []float64
	CheckFrom int
	// Steps counts the passes over the data the stage made and CellEvals its cell reads.
	Steps     int
	CellEvals int64
	// ModeParams is the model's number of parameters where a chain starts at a mode (the mode
	// search's, or a walk from it), the scale of its start's transient
	// (evidence.RankEvidence.StartAllowance); 0 where every chain starts from a prior draw or from a
	// saved state.
	ModeParams int
}

// StartRank is the start stage of a rank: each replica's mode search (searchModes), and for Gibbs
// chains with a descent each replica's walk from its mode, a relaxation at t = 1 and a walk down the
// ladder whose state at the end of each rung starts that rung's chain of the replica (descend);
// other chains start at their replica's mode, or without a mode search (Starts = 0) each from its own prior
// draw. Every length is the configuration's times startScale. It depends on the seed and the rank
// alone, so a retried stage returns the same states bit for bit.
func (p *Problem) StartRank(ctx context.Context, rank int) (*RankStart, error) {
	cfg := p.RankConfig(rank)
	m, err := p.model(rank)
	if err != nil {
		return nil, err
	}
	budget, err := p.rankRecords(rank)
	if err != nil {
		return nil, err
	}
	if cfg.Starts == 0 {
		out := &RankStart{States: make([][]ChainState, cfg.Chains)}
		for q := range out.States {
			out.States[q] = make([]ChainState, len(cfg.Ladder))
			for i, t := range cfg.Ladder {
				if t > 0 {
					theta := make([]float64, m.Dim())
					m.SamplePrior(p.initStream(ChainID{Rank: rank, TIndex: i, Chain: q}), theta)
					out.States[q][i] = ChainState{Theta: theta}
				}
			}
		}
		out.budget(budget)
		return out, nil
	}
	modes, passes, cells, err := p.searchModes(ctx, m, rank)
	if err != nil {
		return nil, err
	}
	out := &RankStart{States: make([][]ChainState, cfg.Chains), Steps: passes, CellEvals: cells, ModeParams: m.Dim()}
	if !cfg.Gibbs || cfg.Descent == 0 {
		for q := range out.States {
			out.States[q] = make([]ChainState, len(cfg.Ladder))
			for i, t := range cfg.Ladder {
				if t > 0 {
					out.States[q][i] = ChainState{Theta: modes[q]}
				}
			}
		}
	} else if err := p.descend(ctx, m, rank, modes, out); err != nil {
		return nil, err
	}
	out.budget(budget)
	return out, nil
}

// budget sets the records every chain of the stage holds at the configured budget.
func (s *RankStart) budget(records []int) {
	for _, states := range s.States {
		for i := range states {
			states[i].Budget = records[i]
		}
	}
}

// descend fills out's states with each replica's walk from its mode (on all cores, one replica
// a task): Config.Relax sweeps at t = 1, then Config.Descent sweeps per rung down the ladder, each
// rung's chain starting where the walk left it, and the first replica's state at phaseRung for
// the phase check. The highest mode sits where the posterior's density peaks, not where its mass
// lies (at a rank above the data's the extra component fits noise there, and the posterior
// spreads it over configurations the kernel reaches only over hundreds of sweeps), and below
// t = 1 a chain from the mode must spread out to its rung's typical set, slowly along the
// directions the kernel mixes badly in: the walk spreads out once for all rungs of a replica,
// each rung's start having relaxed through every rung above it. Each replica relaxes on its own
// stream from its own mode, so that where the search or the relaxation can end in basins of
// different levels the replicas' spread shows it.
func (p *Problem) descend(ctx context.Context, m models.Model, rank int, modes [][]float64, out *RankStart) error {
	cfg := p.RankConfig(rank)
	s := p.startScale(rank)
	check := cfg.Ascent > 0 && rank > 1
	out.CheckFrom = cfg.phaseRung()
	errs := make([]error, cfg.Chains)
	walks := make([]*rungWalk, cfg.Chains)
	par.Tasks(cfg.Chains, func(q int) {
		var center []float64
		if cfg.Runs(SteinName) {
			center = modes[q]
		}
		states := make([]ChainState, len(cfg.Ladder))
		w := newRungWalk(m, append([]float64(nil), modes[q]...), rng.New(p.Config.Seed, uint64(rank), 0, uint64(q), streamDescent))
		walks[q] = w
		where := fmt.Sprintf("rank %d, replica %d: ", rank, q)
		if _, errs[q] = w.rung(ctx, 1, scaled(cfg.Relax, s, 0), 1, where+"relaxation at t=1"); errs[q] != nil {
			return
		}
		for i := len(cfg.Ladder) - 1; i >= 1 && cfg.Ladder[i] > 0; i-- {
			t := cfg.Ladder[i]
			if errs[q] = w.settle(ctx, t, scaled(cfg.Descent, s, 1), cfg.Descent, where+fmt.Sprintf("descent at t=%.6g (rung %d)", t, i)); errs[q] != nil {
				return
			}
			states[i] = ChainState{Theta: append([]float64(nil), w.theta...), Center: center}
			if check && q == 0 && i == out.CheckFrom {
				out.Check = append([]float64(nil), w.theta...)
			}
		}
		out.States[q] = states
	})
	for q, w := range walks {
		if errs[q] != nil {
			return errs[q]
		}
		out.Steps += w.mv.passes(w.sweeps)
		out.CellEvals += w.mv.cellEvals()
	}
	return nil
}

// searchModes is a rank's mode search, one for each replica on streams of its own, so that
// replicas are independent copies of the whole estimator and their spread sees what the search
// makes of a seed: a search cut short on large data ends at different levels from different
// draws, and replicas that shared one mode would share that error unseen. The Starts are shared
// out among the replicas, so the search costs what one search of them all did. Each replica's search takes its share of prior draws, carries each
// StartSteps steps of preconditioned ascent on the posterior and startEMScreen EM sweeps where
// the model has a data-augmentation kernel, scores them by their log posterior and carries the
// best through the rest of StartEM's sweeps. Every length is the configuration's times
// startScale. A prior draw can fall into the basin of a local mode of negligible mass (two
// components sharing one source, another missing) that a chain at high t never leaves; on large
// counts such modes are many nats apart and only a search over many starts finds the dominant
// one. It depends on the seed and the rank alone. It returns every replica's mode, and the passes
// over the data the search made and its cell reads.
func (p *Problem) searchModes(ctx context.Context, m models.Model, rank int) ([][]float64, int, int64, error) {
	cfg := p.RankConfig(rank)
	s := p.startScale(rank)
	ascent, screen := scaled(cfg.StartSteps, s, 0), scaled(cfg.screenEM(), s, 0)
	if cfg.StartEM > 0 {
		screen = max(screen, 1)
	}
	type start struct {
		theta  []float64
		score  float64
		passes int
		cells  int64
		err    error
	}
	per := max(1, cfg.replicaStarts())
	starts := make([]start, cfg.Chains*per)
	par.Tasks(len(starts), func(k int) {
		st := &starts[k]
		w, err := p.NewWalker(ChainID{Rank: rank, TIndex: p.top(rank), Chain: -1})
		if err != nil {
			st.err = err
			return
		}
		q, j := k/per, k%per
		w.SamplePrior(rng.New(p.Config.Seed, uint64(rank), streamMode, uint64(q), uint64(j)))
		for n := 1; n <= ascent; n++ {
			if n%64 == 0 && ctx.Err() != nil {
				st.err = ctx.Err()
				return
			}
			if err := w.Ascend(n); err != nil {
				st.err = fmt.Errorf("mode search of replica %d, start %d: %w", q, j, err)
				return
			}
			st.passes++
			progress.Add(ctx, 1)
		}
		n, err := ascendEM(ctx, m, w.theta, screen)
		st.passes += n
		st.theta, st.score, st.err = w.theta, w.LogPosterior(), err
		st.cells = w.cellEvals + int64(n)*int64(models.PassCells(m))
	})
	passes, cells := 0, int64(0)
	modes := make([][]float64, cfg.Chains)
	for q := range modes {
		best := -1
		for k := q * per; k < (q+1)*per; k++ {
			st := starts[k]
			if st.err != nil {
				return nil, 0, 0, st.err
			}
			passes, cells = passes+st.passes, cells+st.cells
			if !math.IsNaN(st.score) && (best < 0 || st.score > starts[best].score) {
				best = k
			}
		}
		if best < 0 {
			return nil, 0, 0, fmt.Errorf("mode search for rank %d, replica %d found no start with a finite log posterior", rank, q)
		}
		modes[q] = starts[best].theta
	}
	rest := make([]int, len(modes))
	errs := make([]error, len(modes))
	par.Tasks(len(modes), func(q int) {
		rest[q], errs[q] = ascendEM(ctx, m, modes[q], scaled(cfg.StartEM-cfg.screenEM(), s, 0))
	})
	for q, n := range rest {
		if errs[q] != nil {
			return nil, 0, 0, errs[q]
		}
		passes, cells = passes+n, cells+int64(n)*int64(models.PassCells(m))
	}
	return modes, passes, cells, nil
}

// replicaStarts is each replica's share of the Starts of its rank's mode search.
func (c Config) replicaStarts() int { return (c.Starts + c.Chains - 1) / c.Chains }

// startEMScreen is the number of EM sweeps every start of the mode search gets before the starts
// are compared; the best gets the rest of Config.StartEM. Most of what EM changes in a start's
// log posterior it changes early, and the search costs a sixth of what full EM of every start
// would.
const startEMScreen = 50

// screenEM is the number of EM sweeps of every start of the mode search.
func (c Config) screenEM() int { return min(c.StartEM, startEMScreen) }

// ascendEM carries θ sweeps EM sweeps towards a mode of m's posterior where m has a
// data-augmentation kernel, and returns the passes over the data they made.
func ascendEM(ctx context.Context, m models.Model, theta []float64, sweeps int) (int, error) {
	a, ok := m.(models.Augmentable)
	if !ok || sweeps == 0 {
		return 0, nil
	}
	k := a.NewAugmented()
	for range sweeps {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		k.Ascend(1, theta)
		progress.Add(ctx, emPasses(len(m.Factors())))
	}
	return sweeps * emPasses(len(m.Factors())), nil
}

// basinTolerance is by how many nats of log posterior a fresh mode search may beat a replica's
// saved state, carried to its mode, before a warm start drops the state (StartRankFrom). In one
// diagnostic on growing CP data (rank 2, true rank 3) the saved states beat the fresh search by
// 1.7–2.5 nats or trailed it by about 3 where warm chains were accurate, and trailed by 4–6 where
// they were 9 nats low. The margin errs towards cold starts, which cost a full start stage but
// no accuracy.
const basinTolerance = 2

// StartRankFrom is the start stage of a rank whose chains resume from the states of an earlier
// run on data that have grown since (stirank reanalyze), read through load, which returns nil,
// nil for a chain without one. Each replica resumes where its saved state at t = 1, carried to
// its mode as the search's best start is, comes within basinTolerance of the log posterior of a
// fresh mode search: data growth can move the dominant mode (after CP data grew by a third,
// warm chains that stayed in the old basin were 9 nats low at rank 2, while the fresh search
// beat their basin by 4–6 nats). Its chain at rung i then resumes from its saved state at the
// rung whose temperature is closest, on a log scale, to min(1, g·t_i), g being how much the data
// grew (their size ratio): the power posterior at t of data g times larger is close to the old
// data's at g·t. The rows the data gained are drawn from the prior, and the chain's first sweep
// draws them from their conditionals. A replica that fails the check, or has no states, starts
// cold (StartRank's walk). It returns the stage and whether every replica resumed.
func (p *Problem) StartRankFrom(ctx context.Context, rank int, load func(context.Context, ChainID) (*models.State, error)) (*RankStart, bool, error) {
	cfg := p.RankConfig(rank)
	if !cfg.Gibbs || cfg.Descent == 0 || cfg.Starts == 0 {
		return nil, false, fmt.Errorf("rank %d: only Gibbs chains that start from walks down the ladder resume in rounds", rank)
	}
	m, err := p.model(rank)
	if err != nil {
		return nil, false, err
	}
	budget, err := p.rankRecords(rank)
	if err != nil {
		return nil, false, err
	}
	modes, passes, cells, err := p.searchModes(ctx, m, rank)
	if err != nil {
		return nil, false, err
	}
	out := &RankStart{States: make([][]ChainState, cfg.Chains), Steps: passes, CellEvals: cells}
	defer out.budget(budget)
	warm := true
	for q := range cfg.Chains {
		states, n, err := p.resumeReplica(ctx, m, rank, q, load, logPosterior(m, modes[q]))
		if err != nil {
			return nil, false, err
		}
		out.Steps += n
		out.CellEvals += int64(n) * int64(models.PassCells(m))
		out.States[q] = states
		warm = warm && states != nil
	}
	if warm {
		return out, true, nil
	}
	// The replicas that did not resume walk from their fresh modes, as a cold rank's do.
	cold := &RankStart{States: make([][]ChainState, cfg.Chains)}
	if err := p.descend(ctx, m, rank, modes, cold); err != nil {
		return nil, false, err
	}
	for q := range cfg.Chains {
		if out.States[q] == nil {
			out.States[q] = cold.States[q]
		}
	}
	out.Check, out.CheckFrom, out.ModeParams = cold.Check, cold.CheckFrom, m.Dim()
	out.Steps += cold.Steps
	out.CellEvals += cold.CellEvals
	return out, false, nil
}

// resumeReplica is replica q's warm start (StartRankFrom): its chains' saved states mapped to
// the grown data's rungs, or nil where it has none or fails the basin check against fresh, the
// log posterior of the replica's fresh mode; and the passes over the data the check made.
func (p *Problem) resumeReplica(ctx context.Context, m models.Model, rank, q int, load func(context.Context, ChainID) (*models.State, error), fresh float64) ([]ChainState, int, error) {
	cfg := p.RankConfig(rank)
	l := cfg.Ladder
	top, err := load(ctx, ChainID{Rank: rank, TIndex: len(l) - 1, Chain: q})
	if err != nil || top == nil {
		return nil, 0, err
	}
	r := rng.New(p.Config.Seed, uint64(rank), 0, uint64(q), streamInit)
	theta, err := resumed(m, top, r)
	if err != nil {
		return nil, 0, fmt.Errorf("rank %d, replica %d: %w", rank, q, err)
	}
	n, err := ascendEM(ctx, m, theta, cfg.StartEM)
	if err != nil || logPosterior(m, theta) < fresh-basinTolerance {
		return nil, n, err
	}
	var center []float64
	if cfg.Runs(SteinName) {
		center = theta
	}
	states := make([]ChainState, len(l))
	for i, t := range l {
		if t == 0 {
			continue
		}
		j := i
		if top.Size > 0 {
			j = l.Nearest(min(1, t*p.size/top.Size))
		}
		s, err := load(ctx, ChainID{Rank: rank, TIndex: j, Chain: q})
		if err != nil {
			return nil, n, err
		}
		if s == nil {
			return nil, n, nil
		}
		th, err := resumed(m, s, r)
		if err != nil {
			return nil, n, fmt.Errorf("rank %d, replica %d, rung %d: %w", rank, q, j, err)
		}
		states[i] = ChainState{Theta: th, Center: center, Warm: true}
	}
	return states, n, nil
}

// resumed is a point of m with the parameters s knows and, at the indices the data gained since,
// prior draws from r.
func resumed(m models.Model, s *models.State, r *rand.Rand) ([]float64, error) {
	theta := make([]float64, m.Dim())
	m.SamplePrior(r, theta)
	_, err := restore(m, s, theta)
	return theta, err
}

// logPosterior is log p(θ) + log p(X | θ), the score of a start.
func logPosterior(m models.Model, theta []float64) float64 {
	e := m.NewEval()
	e.Prepare(theta)
	return e.LogPrior(nil) + models.LogLik(e, m)
}

// PhaseCheck is a rank's phase check (Config.Ascent; evidence.PhaseCheck): from theta, the first
// replica's descent at rung from (RankStart.Check), a walk back up the ladder of Ascent·
// startScale sweeps per rung, whose last half read their log-likelihoods. It returns the mean of
// each rung's reads, from rung from to t = 1, and the passes over the data and cell reads it made.
// Where f(t) has one phase the walk follows the rungs' chains, which start from the same descent;
// where it changes phase the descent has kept the phase of t = 1 below where it gives way, and
// the walk, started below that, keeps the other phase above it.
func (p *Problem) PhaseCheck(ctx context.Context, rank, from int, theta []float64) ([]float64, int, int64, error) {
	cfg := p.RankConfig(rank)
	m, err := p.model(rank)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(theta) != m.Dim() || from < 0 || from >= len(cfg.Ladder) {
		return nil, 0, 0, fmt.Errorf("rank %d: phase check from rung %d with %d parameters", rank, from, len(theta))
	}
	w := newRungWalk(m, append([]float64(nil), theta...), rng.New(p.Config.Seed, uint64(rank), 0, 0, streamAscent))
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
