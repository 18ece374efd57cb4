package sti

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/stirank/stirank/internal/par"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// DescentStart is the name of the DescentStage start stage in Config.Start.
const DescentStart = "descent"

func init() { registerStart(DescentStart, DescentStage{}) }

// DescentStage starts the Gibbs chains of a replica where its walk from its mode (ModeStage's
// search) down the ladder arrives at their rungs (descend: Relax, Descent), and the rank's phase
// check (Ascent) where the first replica's walk passes its rung. It also resumes chains from the
// states of an earlier run (StartRankFrom).
type DescentStage struct{}

var _ resumer = DescentStage{}

// Start searches every replica's mode and walks from it down the ladder.
func (DescentStage) Start(ctx context.Context, p *Problem, m models.Model, rank int) (*RankStart, error) {
	modes, out, err := p.modeStart(ctx, m, rank)
	if err != nil {
		return nil, err
	}
	if err := p.descend(ctx, m, rank, modes, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Steps counts the mode search and every replica's relaxation and descent, each rung's sweeps
// halfway between the least and the most a rung settles in (settle): exact where the stage is not
// cut, and where it is, within a factor two of what the walks made on the ssnmf mixture, the
// speech spectrogram and the Facebook-size tensor (13, 5 and 5–6 sweeps a rung between 1–2 and
// 20).
func (DescentStage) Steps(c Config, s float64, order int) int {
	walks := c.Chains * (scaled(c.Relax, s, 0) + (len(c.Ladder)-1)*(scaled(c.Descent, s, 1)+c.Descent)/2) * models.SweepPasses(order)
	return ModeStage{}.Steps(c, s, order) + walks
}

// Sweeps counts the mode search and a replica's relaxation and its descent at the most a rung
// settles in.
func (DescentStage) Sweeps(c Config) float64 {
	return ModeStage{}.Sweeps(c) + float64(c.Relax+(len(c.Ladder)-1)*c.Descent)
}

// Check wants Gibbs chains, a sweep a rung and the mode search's start.
func (DescentStage) Check(c Config) error {
	switch {
	case !c.Gibbs:
		return fmt.Errorf("the walk down the ladder sweeps by the Gibbs kernel: it needs gibbs")
	case c.Descent < 1:
		return fmt.Errorf("the walk down the ladder needs at least 1 sweep a rung, not %d", c.Descent)
	}
	return ModeStage{}.Check(c)
}

// WithDescent returns c with its chains started by walks down the ladder of n sweeps a rung (the
// descent stage) or, for n = 0, at their replicas' modes (the modes stage): what select's
// --descent says.
func (c Config) WithDescent(n int) Config {
	c.Descent, c.Start = n, DescentStart
	if n == 0 {
		c.Start = ModesStart
	}
	return c
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

// resume is the descent's start of a rank whose chains resume from saved states (StartRankFrom).
// Each replica resumes where its saved state at t = 1, carried to its mode as the search's best
// start is, comes within basinTolerance of the log posterior of a fresh mode search: data growth can move the dominant mode (after CP data grew by a third,
// warm chains that stayed in the old basin were 9 nats low at rank 2, while the fresh search
// beat their basin by 4–6 nats). Its chain at rung i then resumes from its saved state at the
// rung whose temperature is closest, on a log scale, to min(1, g·t_i), g being how much the data
// grew (their size ratio): the power posterior at t of data g times larger is close to the old
// data's at g·t. The rows the data gained are drawn from the prior, and the chain's first sweep
// draws them from their conditionals. A replica that fails the check, or has no states, starts
// cold (Start's walk).
func (DescentStage) resume(ctx context.Context, p *Problem, m models.Model, rank int, load func(context.Context, ChainID) (*models.State, error)) (*RankStart, bool, error) {
	cfg := p.RankConfig(rank)
	modes, passes, cells, err := p.searchModes(ctx, m, rank)
	if err != nil {
		return nil, false, err
	}
	out := &RankStart{States: make([][]ChainState, cfg.Chains), Steps: passes, CellEvals: cells}
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

// basinTolerance is by how many nats of log posterior a fresh mode search may beat a replica's
// saved state, carried to its mode, before a warm start drops the state (StartRankFrom). In one
// diagnostic on growing CP data (rank 2, true rank 3) the saved states beat the fresh search by
// 1.7–2.5 nats or trailed it by about 3 where warm chains were accurate, and trailed by 4–6 where
// they were 9 nats low. The margin errs towards cold starts, which cost a full start stage but
// no accuracy.
const basinTolerance = 2

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
