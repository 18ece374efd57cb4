package sti

import (
	"context"
	"fmt"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/par"
	"github.com/stirank/stirank/internal/progress"
	"github.com/stirank/stirank/models"
)

// AnnealStart is the name of the AnnealStage start stage in Config.Start.
const AnnealStart = "anneal"

func init() { registerStart(AnnealStart, AnnealStage{}) }

// AnnealStage starts each replica of a rank from its own annealing (Problem.Anneal, configured
// by Config.Annealing): the temperatures the population visits are the replica's ladder, and a
// chain of Steps steps starts from a population draw at each of at most Annealing.Rungs of them
// (Annealed.Rungs). It makes the ladders, so the configured ladder, its fitting and its
// allocation do not apply, and its chains run once (RunFrom), not in rounds.
type AnnealStage struct{}

var _ laddered = AnnealStage{}

// Start anneals every replica at once, each on its own streams (Anneal), and starts its chains
// at the chosen stages; a replica whose annealing diverged starts none.
func (AnnealStage) Start(ctx context.Context, p *Problem, _ models.Model, rank int) (*RankStart, error) {
	cfg := p.RankConfig(rank)
	runs, errs := make([]*Annealed, cfg.Chains), make([]error, cfg.Chains)
	par.Tasks(cfg.Chains, func(q int) {
		runs[q], errs[q] = p.Anneal(progress.Part(ctx, cfg.Chains), rank, q, *cfg.Annealing)
	})
	out := &RankStart{States: make([][]ChainState, cfg.Chains), Annealed: make([]evidence.AnnealSummary, cfg.Chains)}
	for q, run := range runs {
		if errs[q] != nil {
			return nil, errs[q]
		}
		out.Annealed[q] = run.Summary()
		out.Steps += run.Steps
		out.CellEvals += run.CellEvals
		out.States[q] = make([]ChainState, len(run.Stages))
		if run.Divergence != "" {
			continue
		}
		for _, k := range run.Rungs(cfg.Annealing.Rungs) {
			out.States[q][k] = ChainState{Theta: run.Stages[k].Start}
		}
	}
	return out, nil
}

// Steps is what the annealings' chains make, which the annealings themselves cost about as
// much as; an annealing's length is known only as it runs, and it says so (expectStages).
func (AnnealStage) Steps(c Config, _ float64, _ int) int {
	return c.Chains * c.Annealing.Rungs * c.Steps
}

// Sweeps is what a replica's chains make (Steps).
func (AnnealStage) Sweeps(c Config) float64 { return float64(c.Annealing.Rungs * c.Steps) }

// Check wants a valid annealing and no ladder of the configuration's to fit, allocate or give
// rank 1.
func (AnnealStage) Check(c Config) error {
	switch {
	case c.Annealing == nil:
		return fmt.Errorf("the annealing needs its settings (annealing)")
	case c.Rank1 != nil:
		return fmt.Errorf("an annealed run makes its own ladder at every rank: it cannot take rank 1's")
	case c.FitLadder:
		return fmt.Errorf("an annealed run makes its own ladder: it cannot fit one")
	case c.Allocate:
		return fmt.Errorf("an annealed run's chains record Steps − Burnin each: it cannot allocate records to rungs")
	case c.Gibbs:
		return fmt.Errorf("an annealed run's chains run once from their populations, not in rounds: drop gibbs")
	}
	return c.Annealing.Validate()
}

func (AnnealStage) ownLadders() {}
