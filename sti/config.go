// Package sti is the Stochastic Thermodynamic Integration engine: it runs one SG-MCMC chain for a
// (rank, temperature, replica) and summarises its log-likelihood records, and it runs whole sweeps
// over ranks × ladder × replicas in-process on all cores. A chain is a Walker driven by RunChain or
// Resume; the Beam layer (package estimators, the sti estimator) calls Resume, tests and benchmarks
// call Sweep. Nothing here imports Beam.
package sti

import (
	"fmt"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
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
	// Truncate lets a Gibbs chain (Config.Gibbs) find the end of its start's transient in its own
	// records (evidence.Truncation, MSER-5) and discard the records before it, at most half of
	// them. It sweeps none to replace them, so a rank's steps are those planned (ChainSteps) and
	// stay within twice the SG-MCMC defaults' whatever the transients.
	Truncate bool `json:"truncate,omitempty"`
	// Stein makes a Gibbs chain's records carry control variates of mean zero that share their
	// fluctuations (see controls: Stein variates about the rank's mode and, where the kernel has
	// them, conditional expectations of the log-likelihood), so the rung means keep their
	// expectation with a fraction of their variance.
	Stein bool `json:"stein,omitempty"`
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
	// Starts is the number of prior draws that compete, StartSteps steps of ascent each, for the
	// start shared by a rank's chains (see Problem.mode); 0 starts every chain from its own prior draw.
	Starts     int `json:"starts"`
	StartSteps int `json:"start_steps,omitempty"`
	// StartEM is the number of EM sweeps (models.Augmented.Ascend) that carry the search's best
	// start on to a mode of the posterior after its ascent, for models with a data-augmentation
	// kernel; other models ignore it. The starts compete after the first few of them (Problem.mode).
	StartEM int `json:"start_em,omitempty"`
	// Descent, for Gibbs chains with a mode search, is the number of sweeps per rung of a walk
	// down the ladder from the rank's mode, one per replica, whose state at each rung starts that
	// rung's chain of the replica (see descent); 0 starts every chain at the mode.
	Descent int `json:"descent,omitempty"`
	// Relax, for Gibbs chains with a descent, is the number of sweeps at t = 1 that carry the
	// rank's mode towards a draw of its posterior before each replica's descent (see descend).
	Relax int `json:"relax,omitempty"`
	// Ascent, for Gibbs chains with a descent, is the number of sweeps per rung of the phase
	// check's walk back up the ladder (see ascend), from the first replica's descent at the
	// first rung with t ≥ phaseFrom; 0 runs none.
	Ascent int `json:"ascent,omitempty"`
	// Annealing, when set, replaces the fixed ladder and the mode search: each replica of a rank
	// (Chains of them) first anneals a population from the prior to t = 1 (see Annealing), which
	// gives the replica its own adaptive ladder and an SMC estimate of the evidence, and then runs
	// one chain of Steps steps (Burnin of them discarded) from a population draw at each of at
	// most Annealing.Rungs of its temperatures. Ladder is then not used.
	Annealing *Annealing `json:"annealing,omitempty"`
	// Allocate gives each rung of the ladder its share of the chains' records, (Steps − Burnin)
	// times the number of rungs above t = 0 in all, in proportion to the standard deviation it
	// adds to the integral on an exact curve: the rank-1 curve of the models with
	// models.Info.ExpPoissonRates, or the model's own (models.Info.PowerVariance); others keep
	// Steps − Burnin at every rung (see allocateRecords). Every worker computes it from the same
	// data, and Problem.ChainSteps counts it.
	Allocate bool `json:"allocate,omitempty"`
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
		c.Stein = false
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
		if c.Annealing != nil {
			return fmt.Errorf("an annealed run makes its own ladder at every rank: it cannot take rank 1's")
		}
		if c.Rank1.Rungs < 1 {
			return fmt.Errorf("rank 1's ladder needs at least 1 temperature above 0, not %d", c.Rank1.Rungs)
		}
		r1 := c.AtRank(1)
		if err := r1.Validate(); err != nil {
			return fmt.Errorf("rank 1: %w", err)
		}
	}
	if c.Annealing != nil {
		if err := c.Annealing.Validate(); err != nil {
			return err
		}
	} else if err := c.Ladder.Validate(); err != nil {
		return err
	}
	if c.FitLadder && c.Annealing != nil {
		return fmt.Errorf("an annealed run makes its own ladder: it cannot fit one")
	}
	if c.Allocate && c.Annealing != nil {
		return fmt.Errorf("an annealed run's chains record Steps − Burnin each: it cannot allocate records to rungs")
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

// DefaultSGMCMC returns the defaults for the registered model of that name with its chains on the
// SG-MCMC kernels, by its properties
// (models.Info.Factored), so a new model gets the settings of its kind; it panics on a name not
// registered (callers look the name up first: models.Lookup). They were chosen on the ICASSP 2016 Gaussian setting
// (where the exact evidence is known) and on small Poisson NMF/CP problems against long runs; the
// README gives what they cost.
//
//   - A power ladder t_i = (i/30)^6: the papers' uniform 10-rung ladder is biased by hundreds of nats
//     even with exact expectations, because f(t) falls off like −d/(2t) near t = 0.
//   - Short chains on many rungs, two replicas (the standard error comes from their spread).
//   - The Leimkuhler–Matthews kernel preconditioned by the model's metric: exact for Gaussian
//     targets at any stable step, O(ε²) bias otherwise.
//   - Control variates whenever a step reads a subsample, refreshed every 10 steps.
//   - Factor models (Poisson NMF/CP): factors sampled in log space; every chain of a rank starts
//     from the best of 16 prior draws carried towards a mode by 100 steps of ascent and 50 EM
//     sweeps, then carried on by 250 more.
//   - Chains resumed from saved states (stirank reanalyze) burn in for 100 steps (20 for the
//     Gaussian), after 50 steps that settle the rows the data gained.
func DefaultSGMCMC(model string) Config {
	info, err := models.Lookup(model)
	if err != nil {
		panic(fmt.Sprintf("sti: %v", err))
	}
	c := Config{
		Ladder:          evidence.Power(30, evidence.DefaultPower),
		FitLadder:       info.ExpPoissonRates != nil,
		Chains:          2,
		Sampler:         samplers.DefaultKernel,
		StepStart:       1,
		StepDecay:       0.51,
		Blocks:          1,
		ControlVariates: true,
		CVRefresh:       10,
		Starts:          0,
		Seed:            1,
	}
	if !info.Factored {
		// The Gaussian additive model: 30 rungs × 2 chains × 480 steps + 2 × 400 prior draws at t = 0 = 29 600 steps per rank,
		// within the ICASSP budget of 10 temperatures × 3000 steps.
		c.Steps, c.Burnin = 480, 80
		// A resumed chain has no new parameters (θ does not grow with the data).
		c.WarmBurnin = 20
		c.Subsample = 250
		c.Step = 1
		// Records go where the model's exact curve puts the integral's variance
		// (Config.Allocate): over ranks 1–10 of four sets and 8 seeds, 320 estimates in all, the
		// RMS offset from the exact evidence fell from 0.14–0.26 nats to 0.10–0.16 (README).
		c.Allocate = info.PowerVariance != nil
		return c
	}
	// LM's O(ε²) bias grows with the number of parameters: ε = 0.5 is ~6–10 nats low on 30×20
	// NMF at ranks 3–5, ε = 0.25 within about one standard error of exact MALA runs.
	c.Steps, c.Burnin = 600, 200
	// Resumed chains on CP data grown by a third to a double (bench/engine -workload warm, two
	// seeds): 50 steps settle the new rows; after a warm burn-in of 100 the RMS error over
	// R = 2…5 averages 5.3 nats (4.3 after 200, 6.8 for a cold default run), in 0.93–0.95 of the
	// cold run's steps.
	c.WarmBurnin, c.SettleSteps = 100, 50
	c.Step = 0.25
	c.Starts, c.StartSteps = 16, 100
	// The ascent leaves a large model short of the mode, and chains started there spend their
	// sweeps climbing: on the 257×1661 speech spectrogram at R = 16 the Gibbs chains at t = 1
	// averaged log p(X | θ) = −525 043 from the ascent's point and −523 039 after EM, and the
	// evidence rose by 2 188 nats for the same CPU time (README).
	if info.Gibbs {
		c.StartEM = 300
	}
	return c
}

// Default returns DefaultSGMCMC(model), except that the chains of models with a Gibbs kernel
// (models.Info.Gibbs: Poisson NMF and CP) run that kernel (Config.Gibbs), 200 sweeps of which 40
// burn-in, 40 for a resumed chain (132, 28 and 28 on 3-way tensors), each started from its
// replica's descent of 20 sweeps per rung (Config.Descent) from the rank's mode carried 1 000
// sweeps at t = 1 (500 on 3-way tensors; Config.Relax), their records controlled by the Stein
// variates (Config.Stein) and shared among the rungs where they reduce the integral's variance
// most (Config.Allocate); the mode search keeps its SG-MCMC ascent. The kernel is
// exact at every temperature and moves whole factor rows, where the SG-MCMC kernels' bias grows
// with the number of parameters: against long AIS runs on the ICASSP 100×75 NMF, −5.4 and −11.6 nats at
// ranks 5 and 8 with SG-MCMC, −0.2 and −0.7 with Gibbs (go run ./bench/anneal -only ICASSP), and
// on a 10⁵-non-zero CP tensor 1 190 nats low at rank 1 against +8 ± 7 (README). On small data with
// large counts, whose split costs per event, it takes about twice the SG-MCMC defaults' time.
func Default(model string) Config {
	c := DefaultSGMCMC(model)
	if info, _ := models.Lookup(model); info.Gibbs {
		c.Gibbs = true
		c.Steps, c.Burnin, c.WarmBurnin = 200, 40, 40
		if info.Order == 3 {
			// A sweep of a 3-way tensor makes six passes over the data where a matrix's makes
			// four: 140 sweeps keep a CP rank within twice the SG-MCMC defaults' 38 400 steps
			// (75 thousand with the mode search, the relaxation, the descents and the control
			// variate below). On the CP set of go run ./bench/anneal the offsets of
			// ranks 3 and 4 from their references were +0.72 and +1.19 nats with 140 sweeps,
			// +0.61 and +0.78 with 160 (10 seeds each, standard errors 0.2–0.4).
			c.Steps, c.Burnin, c.WarmBurnin = 140, 28, 28
		}
		// On large data a chain from the t = 1 mode needs far more than 40 sweeps at small t: on
		// the 257×1661 speech spectrogram at R = 16 and t = 0.01 its log-likelihood falls
		// 70 000 below the rung's typical value within 40 sweeps and climbs back over the next
		// 110 (README).
		c.Truncate = true
		c.Stein = true
		if info.Order == 2 {
			// A matrix's chains record plain means above rank 1 (ssnmf: above rank 0): there
			// the control variates narrowed the spread at some ranks of small sets, at a pass
			// per record, and where counts are large they bias the means (Config.SteinBelow).
			// On a 12×10 matrix with counts up to 1.4·10⁵ (generate --model nmf --shape 12x10
			// --rank 2 --rate 0.01 --seed 5) rank 2 came out 3.7 nats below 100 000-temperature
			// AIS with them and within 0.01 without (six seeds). The shear moves
			// (models.Poisson.shear) have since taken the bias away, but with them the variates
			// narrowed nothing measured. A CP tensor's kept the spread of
			// rank 2 of the 8×6×5 tensor of go run ./bench/anneal at 0.46 nat, against 1.19
			// without (eight seeds; README).
			c.SteinBelow = 2
			if info.ZeroRank {
				c.SteinBelow = 1
			}
		}
		// Most rungs of the ladder sit where the prior dominates and add little to the
		// integral's variance: records go where it is (Config.Allocate). On the ICASSP 100×75
		// NMF that halved the squared standard errors of ranks 1–10 for the same steps (README).
		c.Allocate = info.ExpPoissonRates != nil
		// At intermediate t it drifts down from the mode over hundreds of sweeps; on that
		// spectrogram the rungs at t from 0.065 to 0.2 were 260–5 700 nats high and the
		// evidence 365 nats above a run with 3.5 times the sweeps, 51 nats with a descent of 20
		// sweeps per rung (README).
		c.Descent = 20
		// The highest mode sits where the density peaks, not where the mass lies: on the CP
		// set of go run ./bench/anneal, whose true rank is 3, chains from the mode at rank 4
		// averaged log p(X | θ) 2.2 nats above long chains at t = 1 and the evidence was 2.1
		// nats high (10 seeds), so that 3 of 10 runs chose rank 4. 1 000 sweeps at t = 1 in
		// each replica's walk brought it to +0.8 with 160-sweep chains and +1.2 with the 140
		// above, rank 3 chosen for 10 of 10 seeds, and 17 of that bench's 18 rows within 1 nat
		// of their references, 16 before (README).
		c.Relax = 1000
		if info.Order == 3 {
			// Each record's control variate costs a pass (Config.Stein), 6 720 per CP rank,
			// which 500 fewer sweeps of relaxation per replica pay for: rank 4 of that set
			// was +1.29 nats from its reference with 500 and the variate (10 seeds).
			c.Relax = 500
		}
		// On sparse data with heavy-tailed rows f(t) can change phase: the descent keeps the
		// phase of t = 1 below where it gives way, and the evidence came out 3–17 nats high
		// with error bars of 1–4 (README, Known limits). A walk back up from the first
		// replica's descent at t = 0.01 shows it (evidence.PhaseCheck), and its area goes into
		// the error bar, for 17 × 20 sweeps (1 360 passes) per rank of a matrix on the default
		// ladder (CP: below).
		c.Ascent = 20
		if info.ExpPoissonRates != nil {
			// Rank 1 draws every row from its exact conditional (models.Poisson.rank1), so its
			// chains need little burn-in, and what is left of its integral's error is mostly
			// the rule's derivative terms, which shrink with the square of the rungs'
			// spacing: twice the rungs at half the sweeps, the same cost, narrowed the spread
			// of rank 1 of the Facebook-size tensor from 8.6 to 7.0 nats (10 seeds; its
			// reported standard error from 12.5–14.9 to 9.1–10.1) and of a 250×250 matrix from
			// 0.62 to 0.38, left the speech-size spectrogram's as it was (1.14 and 1.26 over
			// 40 seeds), and kept the small sets' rank 1 within 0.06 nat of their references,
			// where at every rank it moved them further (README). Its posterior is log-concave
			// in log θ, one phase at every t, so it runs no phase check.
			c.Rank1 = &RankBudget{Rungs: 2 * (len(c.Ladder) - 1), Steps: c.Steps / 2, Burnin: c.Burnin / 2, WarmBurnin: c.WarmBurnin / 2, Descent: c.Descent / 2}
		}
		if info.Order == 3 {
			// A CP walk lags its rungs' chains at 10 and 20 sweeps per rung, and the check then
			// fires on well-behaved tensors (3 of 10 and 1 of 6 rank-runs of the CP set of go
			// run ./bench/anneal at ranks 3–4); at 40 it fired on 1 of 60 at ranks 2–4 of both
			// CP sets there, and on every run of a tensor with heavy-tailed rows (README). The
			// 4 080 passes come from 8 fewer records per chain (104 of 132 sweeps; rank 1, which
			// runs no check, keeps its 70): the sets' offsets stayed within their noise (12
			// seeds), where taking them from the burn-in or the relaxation moved rank 3 of the
			// 8×6×5 tensor there by 0.8 to 1.7 nats.
			c.Ascent = 40
			c.Steps -= 8
		}
	}
	return c
}

// DefaultAnnealed returns DefaultSGMCMC(model) with the annealing stage on (Config.Annealing): the fixed
// ladder and the mode search give way to Chains = 3 replicas per rank, each annealing a population
// to t = 1 and then running a chain of 100 steps (25 of burn-in) at each of 30 of its
// temperatures. Factor models anneal 56 particles waste-free (8 chains of 7 states per
// temperature) with one sweep of the data-augmentation kernel per state, and their chains run that
// kernel too; the Gaussian additive model keeps 64 particles with five MALA steps each. On 30×20
// NMF at ranks 1–10 that is 52–75 thousand steps per rank, within twice the fixed ladder's 38 400;
// the number of temperatures, and with it the cost, grows with the information in the data.
func DefaultAnnealed(model string) Config {
	c := DefaultSGMCMC(model)
	c.Ladder, c.FitLadder, c.Starts, c.StartSteps, c.StartEM = nil, false, 0, 0, 0
	c.Chains, c.Steps, c.Burnin, c.Allocate = 3, 100, 25, false
	a := &Annealing{Particles: 56, CESS: 0.8, Resample: 0.5, Sweeps: 1, Chains: 8, Step: 0.125, MaxStages: 10000, Rungs: 30}
	if info, _ := models.Lookup(model); !info.Factored {
		a.Particles, a.Sweeps, a.Chains = 64, 5, 0
	}
	c.Annealing = a
	return c
}
