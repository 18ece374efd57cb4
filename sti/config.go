// Package sti is the Stochastic Thermodynamic Integration engine: it runs one SG-MCMC chain for a
// (rank, temperature, replica) and summarises its log-likelihood records, and it runs whole sweeps
// over ranks × ladder × replicas in-process on all cores. A chain is a Walker driven by RunChain or
// Resume; the Beam layer (package estimators, the sti estimator) calls Resume, tests and benchmarks
// call Sweep. Nothing here imports Beam.
package sti

import (
	"fmt"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/samplers"
)

// Config is everything that decides the numbers a sweep produces, besides the data and the model.
// It is the configuration of the sti estimator that evidence.json records (package estimators),
// hence the JSON names.
type Config struct {
	Ladder evidence.Ladder `json:"ladder"`
	// FitLadder replaces Ladder, in NewProblem, when it is the default power ladder (exponent
	// evidence.DefaultPower, any number of rungs), by the power ladder of as many rungs whose
	// exponent evidence.FitPower fits to the data through the model's exact rank-1 curve (nmf and
	// cp, the models with models.Info.ExpPoissonRates; others keep Ladder, as does any other
	// ladder). Every worker fits it from the same data, so they all run the same temperatures,
	// which the chains' summaries carry.
	FitLadder bool `json:"fit_ladder,omitempty"`
	// Chains is the number of independent replicas per (rank, temperature).
	Chains int `json:"chains"`
	// Steps counts all steps of a chain, burn-in included; Burnin of them are discarded.
	Steps  int `json:"steps"`
	Burnin int `json:"burnin"`
	// WarmBurnin is the burn-in of a chain that resumes from a saved state (Problem.Resume), 0 for
	// Burnin; it records Steps−Burnin steps after it, like a cold chain. SettleSteps is the number
	// of ascent steps that carry the rows the saved state did not have to their conditional mode
	// before that burn-in.
	WarmBurnin  int `json:"warm_burnin,omitempty"`
	SettleSteps int `json:"settle_steps,omitempty"`
	// Sampler names the SG-MCMC kernel (see samplers.Register) and SamplerParams sets its
	// parameters (the kernel's defaults for those not given). Config holds only plain values so
	// it can cross Beam stages.
	Sampler       string             `json:"sampler"`
	SamplerParams map[string]float64 `json:"sampler_params,omitempty"`
	// Gibbs runs the chains of a model with a data-augmentation kernel (models.Augmentable, the
	// Poisson models) by that kernel instead of the SG-MCMC sampler, with Steps, Burnin and
	// WarmBurnin counted in sweeps; the sampler then serves the mode search only. It needs every
	// cell at every sweep (no Blocks or Subsample).
	Gibbs bool `json:"gibbs,omitempty"`
	// Post names the post-processors of the chains' records (PostProcessor: "truncate" drops the
	// records of a start's transient, "stein" controls the rung means with variates recorded beside
	// them), in the order they act; none summarises every record as it is.
	Post []string `json:"post_processors,omitempty"`
	// SteinBelow, when positive, keeps the control variates (Stein) to the ranks below it. The
	// likelihood of a matrix factorisation is flat along the directions that mix its components
	// (W → W·A, H → A⁻¹·H while both stay non-negative, and beside a fixed dictionary D,
	// W → W + D·B), which the Gibbs kernel crosses a count's worth at a time; the Stein variates
	// weigh where θ sits along them, through the prior's gradient and θ − centre, where the
	// log-likelihood does not, so chains that have not crossed them bias the controlled means and
	// leave the plain ones right. A CP factorisation of a 3-way tensor has no such directions.
	SteinBelow int `json:"stein_below,omitempty"`
	// Step is the step size after burn-in. For kernels that use the model's metric it is
	// dimensionless (about 1 is the stability limit along the stiffest direction).
	Step float64 `json:"step"`
	// StepStart is the ratio of the first step to Step; StepDecay the exponent b of the (a/k)^b
	// burn-in schedule. StepA, when positive, gives the papers' a directly (and StepStart is ignored).
	StepStart float64 `json:"step_start"`
	StepDecay float64 `json:"step_decay"`
	StepA     float64 `json:"step_a,omitempty"`
	// Subsample is |S| for random subsamples (models without factor blocks, or Blocks = 1);
	// zero uses all cells at every step.
	Subsample int `json:"subsample"`
	// Blocks is B of the parts schedule for factor models; 1 uses the whole tensor at every step.
	Blocks int `json:"blocks"`
	// Stratified visits the parts (or batches) of a round in a random order, each once per round,
	// instead of drawing each step's part independently.
	Stratified bool `json:"stratified"`
	// ControlVariates centres the subsampled gradient and log-likelihood on a reference point
	// refreshed every CVRefresh steps (a full pass over the data each time).
	ControlVariates bool `json:"control_variates"`
	CVRefresh       int  `json:"cv_refresh,omitempty"`
	// Start names the start stage of a rank's chains (StartStage): "prior" starts every chain
	// from a prior draw of its own, "modes" at its replica's mode, "descent" where its replica's
	// walk from that mode down the ladder arrives, "anneal" from its replica's annealed
	// population, which also makes the replica's ladder (AnnealStage).
	Start string `json:"start"`
	// Starts is the number of prior draws that compete, StartSteps steps of ascent each, in a
	// rank's mode search (searchModes), shared out among its replicas.
	Starts     int `json:"starts"`
	StartSteps int `json:"start_steps,omitempty"`
	// StartEM is the number of EM sweeps (models.Augmented.Ascend) that carry the search's best
	// start on to a mode of the posterior after its ascent, for models with a data-augmentation
	// kernel; other models ignore it. The starts compete after the first few of them (searchModes).
	StartEM int `json:"start_em,omitempty"`
	// Descent, for the descent start stage, is the number of sweeps per rung of a walk down the
	// ladder from the rank's mode, one per replica, whose state at each rung starts that rung's
	// chain of the replica (see descend).
	Descent int `json:"descent,omitempty"`
	// Relax, for the descent start stage, is the number of sweeps at t = 1 that carry the
	// rank's mode towards a draw of its posterior before each replica's descent (see descend).
	Relax int `json:"relax,omitempty"`
	// Ascent, for the descent start stage, is the number of sweeps per rung of the phase
	// check's walk back up the ladder (see ascend), from the first replica's descent at the
	// first rung with t ≥ phaseFrom; 0 runs none.
	Ascent int `json:"ascent,omitempty"`
	// Annealing, for the anneal start stage (AnnealStage), configures each replica's annealing
	// of a population from the prior to t = 1 (see Annealing), which gives the replica its own
	// adaptive ladder and an SMC estimate of the evidence; the replica then runs one chain of
	// Steps steps (Burnin of them discarded) from a population draw at each of at most
	// Annealing.Rungs of its temperatures. Ladder is then not used.
	Annealing *Annealing `json:"annealing,omitempty"`
	// Allocate gives each rung of the ladder its share of the chains' records, (Steps − Burnin)
	// times the number of rungs above t = 0 in all, in proportion to the standard deviation it
	// adds to the integral on an exact curve: the rank-1 curve of the models with
	// models.Info.ExpPoissonRates, or the model's own (models.Info.PowerVariance); others keep
	// Steps − Burnin at every rung (see allocateRecords). Every worker computes it from the same
	// data, and Problem.ChainSteps counts it.
	Allocate bool `json:"allocate,omitempty"`
	// RoundWork is what round 0 of the race may cost a rank at most, in cell-component
	// operations (see Doublings); 0 is roundWork. A time budget (select --time) sets it so that
	// round 0 of every rank fits in a share of the time.
	RoundWork float64 `json:"round_work,omitempty"`
	// Rank1, when set, replaces at rank 1 the ladder by the power ladder of Rank1.Rungs
	// temperatures (fitted to the data like Ladder under FitLadder) and the chains' lengths by
	// Rank1's; every other rank runs Ladder and Steps. See AtRank.
	Rank1 *RankBudget `json:"rank1,omitempty"`
	// Seed roots every random stream.
	Seed uint64 `json:"seed"`
}

// RankBudget is the ladder length and chain lengths of one rank (Config.Rank1), counted as
// Config's are.
type RankBudget struct {
	Rungs      int `json:"rungs"`
	Steps      int `json:"steps"`
	Burnin     int `json:"burnin"`
	WarmBurnin int `json:"warm_burnin,omitempty"`
	Descent    int `json:"descent,omitempty"`
	Ascent     int `json:"ascent,omitempty"`
}

// AtRank returns the configuration the chains of that rank run with: c, without control variates
// from SteinBelow up, and at rank 1 with Rank1 set with Rank1's budget on the power ladder of
// Rank1.Rungs temperatures of exponent evidence.DefaultPower (which a problem fits to its data
// under FitLadder, Problem.RankConfig), and Rank1 cleared.
func (c Config) AtRank(rank int) Config {
	if c.SteinBelow > 0 && rank >= c.SteinBelow {
		c = c.With(SteinName, false)
	}
	b := c.Rank1
	if b == nil || rank != 1 {
		return c
	}
	c.Ladder = evidence.Power(b.Rungs, evidence.DefaultPower)
	c.Steps, c.Burnin, c.WarmBurnin, c.Descent, c.Ascent = b.Steps, b.Burnin, b.WarmBurnin, b.Descent, b.Ascent
	c.Rank1 = nil
	return c
}

// Validate checks the configuration against itself.
func (c Config) Validate() error {
	if c.Rank1 != nil {
		if c.Rank1.Rungs < 1 {
			return fmt.Errorf("rank 1's ladder needs at least 1 temperature above 0, not %d", c.Rank1.Rungs)
		}
		r1 := c.AtRank(1)
		if err := r1.Validate(); err != nil {
			return fmt.Errorf("rank 1: %w", err)
		}
	}
	if !c.OwnLadders() {
		if err := c.Ladder.Validate(); err != nil {
			return err
		}
	}
	switch {
	case c.Chains < 1:
		return fmt.Errorf("chains %d must be at least 1", c.Chains)
	case c.Steps < 2:
		return fmt.Errorf("steps %d must be at least 2", c.Steps)
	case c.Burnin < 0 || c.Burnin >= c.Steps:
		return fmt.Errorf("burn-in %d must be in [0, steps=%d)", c.Burnin, c.Steps)
	case c.WarmBurnin < 0:
		return fmt.Errorf("warm burn-in %d must not be negative", c.WarmBurnin)
	case c.Descent < 0:
		return fmt.Errorf("descent sweeps %d must not be negative", c.Descent)
	case c.Relax < 0:
		return fmt.Errorf("relaxation sweeps %d must not be negative", c.Relax)
	case c.Ascent < 0:
		return fmt.Errorf("ascent sweeps %d must not be negative", c.Ascent)
	case c.StartEM < 0:
		return fmt.Errorf("EM sweeps of the start %d must not be negative", c.StartEM)
	case c.SteinBelow < 0:
		return fmt.Errorf("the rank from which chains record without control variates, %d, must not be negative", c.SteinBelow)
	case c.SettleSteps < 0:
		return fmt.Errorf("settle steps %d must not be negative", c.SettleSteps)
	case c.Subsample < 0:
		return fmt.Errorf("subsample %d must not be negative", c.Subsample)
	case c.Blocks < 1:
		return fmt.Errorf("blocks %d must be at least 1", c.Blocks)
	case c.ControlVariates && c.CVRefresh < 1:
		return fmt.Errorf("control-variate refresh interval %d must be at least 1", c.CVRefresh)
	case c.Gibbs && (c.Blocks > 1 || c.Subsample > 0):
		return fmt.Errorf("the Gibbs kernel sweeps every cell: drop blocks and subsample")
	}
	if err := c.validatePost(); err != nil {
		return err
	}
	if err := c.validateStart(); err != nil {
		return err
	}
	if _, err := samplers.New(c.Sampler, c.SamplerParams); err != nil {
		return err
	}
	_, err := c.Schedule()
	return err
}

// Schedule returns the step-size schedule.
func (c Config) Schedule() (samplers.StepSchedule, error) { return c.schedule(c.Burnin) }

// warmBurnin is the burn-in of a chain resumed from a saved state.
func (c Config) warmBurnin() int {
	if c.WarmBurnin == 0 {
		return c.Burnin
	}
	return c.WarmBurnin
}

// schedule returns the step-size schedule of a chain that burns in for burn steps.
func (c Config) schedule(burn int) (samplers.StepSchedule, error) {
	if burn < 1 {
		burn = 1
	}
	if c.StepA > 0 {
		s := samplers.StepSchedule{A: c.StepA, B: c.StepDecay, Burnin: burn}
		return s, s.Validate()
	}
	return samplers.DecayTo(c.Step, c.StepStart, c.StepDecay, burn)
}
