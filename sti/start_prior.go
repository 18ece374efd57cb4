package sti

import (
	"context"

	"github.com/stirank/stirank/models"
)

// PriorStart is the name of the PriorStage start stage in Config.Start.
const PriorStart = "prior"

func init() { registerStart(PriorStart, PriorStage{}) }

// PriorStage starts every chain from a prior draw of its own, on the stream a chain without a
// start draws it from (initStream), so that a rank's SG-MCMC chains, which then need no stage
// (estimators.STI.Staged), start where the stage would start them.
type PriorStage struct{}

var _ StartStage = PriorStage{}

// Start draws every chain's start from the prior.
func (PriorStage) Start(_ context.Context, p *Problem, m models.Model, rank int) (*RankStart, error) {
	cfg := p.RankConfig(rank)
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
	return out, nil
}

// Steps is 0: a prior draw reads no data.
func (PriorStage) Steps(Config, float64, int) int { return 0 }

// Sweeps is 0: a prior draw reads no data.
func (PriorStage) Sweeps(Config) float64 { return 0 }

// Check accepts every configuration.
func (PriorStage) Check(Config) error { return nil }
