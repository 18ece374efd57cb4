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

// ModesStart is the name of the ModeStage start stage in Config.Start.
const ModesStart = "modes"

func init() { registerStart(ModesStart, ModeStage{}) }

// ModeStage starts every chain of a replica at the mode its replica's search found
// (searchModes: Starts, StartSteps, StartEM).
type ModeStage struct{}

var _ StartStage = ModeStage{}

// Start searches every replica's mode and starts its chains there.
func (ModeStage) Start(ctx context.Context, p *Problem, m models.Model, rank int) (*RankStart, error) {
	modes, out, err := p.modeStart(ctx, m, rank)
	if err != nil {
		return nil, err
	}
	l := p.RankConfig(rank).Ladder
	for q := range out.States {
		out.States[q] = make([]ChainState, len(l))
		for i, t := range l {
			if t > 0 {
				out.States[q][i] = ChainState{Theta: modes[q]}
			}
		}
	}
	return out, nil
}

// Steps counts every replica's share of the starts' ascent and EM sweeps and the rest of its
// best start's EM sweeps.
func (ModeStage) Steps(c Config, s float64, order int) int {
	starts := c.replicaStarts() * c.Chains
	em := (starts*scaled(c.screenEM(), s, 0) + c.Chains*scaled(c.StartEM-c.screenEM(), s, 0)) * emPasses(order)
	return starts*scaled(c.StartSteps, s, 0) + em
}

// Sweeps counts a replica's share of the starts' EM screens and the rest of its best start's EM
// sweeps.
func (ModeStage) Sweeps(c Config) float64 {
	return 0.5 * float64(c.replicaStarts()*c.screenEM()+c.StartEM-c.screenEM())
}

// Check wants a start to search from.
func (ModeStage) Check(c Config) error {
	if c.Starts < 1 {
		return fmt.Errorf("the mode search needs at least 1 start, not %d", c.Starts)
	}
	return nil
}

// modeStart is the mode search of a rank (searchModes) as a start stage with no states yet: it
// returns every replica's mode and the stage that spent what the search spent.
func (p *Problem) modeStart(ctx context.Context, m models.Model, rank int) ([][]float64, *RankStart, error) {
	modes, passes, cells, err := p.searchModes(ctx, m, rank)
	if err != nil {
		return nil, nil, err
	}
	return modes, &RankStart{States: make([][]ChainState, len(modes)), Steps: passes, CellEvals: cells, ModeParams: m.Dim()}, nil
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
