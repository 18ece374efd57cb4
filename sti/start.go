package sti

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/stirank/stirank/evidence"
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
	// Annealed is, from a stage that makes each replica's own ladder (AnnealStage), every
	// replica's annealing: States[q][k] starts replica q's chain at Annealed[q].T[k], and only the
	// states with parameters start one. It is the one thing such a stage adds to a start, because
	// the rank's evidence is read on those ladders (evidence.CombineAnnealed); nil otherwise.
	Annealed []evidence.AnnealSummary
}

// A StartStage hands every chain of a rank its start, once per rank before its chains run.
// Config.Start names the one a rank runs; each is one file that registers itself
// (registerStart), as start_prior.go, start_modes.go and start_descent.go do. The zero value of
// every implementation is the stage.
type StartStage interface {
	// Start returns the start of rank, whose model is m, on p: a state for every replica at
	// every rung above t = 0, and what the stage spent. It depends on the seed and the rank
	// alone, so that a retried stage returns the same states bit for bit; StartRank sets the
	// states' Budget.
	Start(ctx context.Context, p *Problem, m models.Model, rank int) (*RankStart, error)
	// Steps is about what Start makes at a rank whose configuration is c (Config.AtRank) with
	// its lengths scaled by s (scaleOf), in passes over the data of a model of that order, for a
	// progress plan (Config.StartStageSteps).
	Steps(c Config, s float64, order int) int
	// Sweeps is about what Start costs a replica of a rank configured as c at the configured
	// lengths, in Gibbs sweeps (an EM sweep is half of one): the share of round 0 by which
	// Config.Doublings sizes it.
	Sweeps(c Config) float64
	// Check says why a rank configured as c cannot run the stage, nil where it can.
	Check(c Config) error
}

// A resumer is a StartStage that can also start a rank's chains from the states of an earlier
// run on data that have grown since (StartRankFrom); it returns the start and whether every
// replica resumed.
type resumer interface {
	StartStage
	resume(ctx context.Context, p *Problem, m models.Model, rank int, load func(context.Context, ChainID) (*models.State, error)) (*RankStart, bool, error)
}

// A laddered stage makes each replica's own ladder as it starts it (AnnealStage): the configured
// ladder, its fitting and its allocation do not apply, and its chains run once from their
// starts (RunFrom), not in rounds.
type laddered interface {
	StartStage
	ownLadders()
}

// startStages are the registered start stages by name.
var startStages = map[string]StartStage{}

// registerStart makes s available under name to Config.Start. It panics on a name taken.
func registerStart(name string, s StartStage) { register(startStages, "start stage", name, s) }

// StartNames lists the registered start stages' names, sorted.
func StartNames() []string { return slices.Sorted(maps.Keys(startStages)) }

// validateStart checks that Config.Start names a registered start stage that can run c.
func (c Config) validateStart() error {
	s, ok := startStages[c.Start]
	if !ok {
		return fmt.Errorf("no start stage %q (there are %v)", c.Start, StartNames())
	}
	if err := s.Check(c); err != nil {
		return fmt.Errorf("start stage %q: %w", c.Start, err)
	}
	if c.Annealing != nil && !c.OwnLadders() {
		return fmt.Errorf("start stage %q does not anneal: drop the annealing settings", c.Start)
	}
	return nil
}

// startStage is the start stage of c (validateStart has checked the name).
func (c Config) startStage() StartStage { return startStages[c.Start] }

// OwnLadders reports whether c's start stage makes each replica's own ladder (the annealed
// start), in place of Ladder.
func (c Config) OwnLadders() bool {
	_, ok := c.startStage().(laddered)
	return ok
}

// Resumes reports whether c's start stage can resume a rank's chains from saved states
// (StartRankFrom).
func (c Config) Resumes() bool {
	_, ok := c.startStage().(resumer)
	return ok
}

// StartRank is the start stage of a rank, the one its configuration names (Config.Start), with
// every chain's records at the configured budget set.
func (p *Problem) StartRank(ctx context.Context, rank int) (*RankStart, error) {
	cfg := p.RankConfig(rank)
	m, err := p.model(rank)
	if err != nil {
		return nil, err
	}
	out, err := cfg.startStage().Start(ctx, p, m, rank)
	if err != nil || cfg.OwnLadders() {
		// Chains on a replica's own ladder record Steps − Burnin each (Records).
		return out, err
	}
	budget, err := p.rankRecords(rank)
	if err != nil {
		return nil, err
	}
	out.budget(budget)
	return out, nil
}

// StartRankFrom is the start stage of a rank whose chains resume from the states of an earlier
// run on data that have grown since (stirank reanalyze), read through load, which returns nil,
// nil for a chain without one; its configuration's stage must resume (Config.Resumes: the
// descent's resume). It returns the stage and whether every replica resumed.
func (p *Problem) StartRankFrom(ctx context.Context, rank int, load func(context.Context, ChainID) (*models.State, error)) (*RankStart, bool, error) {
	cfg := p.RankConfig(rank)
	r, ok := cfg.startStage().(resumer)
	if !ok {
		return nil, false, fmt.Errorf("rank %d: the %q start stage does not resume from saved states", rank, cfg.Start)
	}
	m, err := p.model(rank)
	if err != nil {
		return nil, false, err
	}
	budget, err := p.rankRecords(rank)
	if err != nil {
		return nil, false, err
	}
	out, warm, err := r.resume(ctx, p, m, rank, load)
	if err != nil {
		return nil, false, err
	}
	out.budget(budget)
	return out, warm, nil
}

// budget sets the records every chain of the stage holds at the configured budget.
func (s *RankStart) budget(records []int) {
	for _, states := range s.States {
		for i := range states {
			states[i].Budget = records[i]
		}
	}
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
