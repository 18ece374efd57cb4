package sti

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/progress"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/samplers/smc"
)

// Annealing configures the annealing stage of a rank: adaptive-tempered SMC (Del Moral, Doucet &
// Jasra 2006; Zhou, Johansen & Aston 2016), also known as population annealing. A population drawn
// from the prior is reweighted by the full-data likelihood from one temperature to the next, the
// next temperature found by bisection so that the conditional ESS of the reweighting is CESS·N,
// resampled when its ESS falls below Resample·N, and moved by a kernel that leaves each tempered
// posterior invariant: the model's data-augmentation kernel where it has one (the Poisson factor
// models), else Metropolis-adjusted Langevin steps. The temperatures it visits form an adaptive
// ladder, dense where f(t) changes fast; the product of the mean incremental weights estimates
// p(X | R).
type Annealing struct {
	Particles int     `json:"particles"`
	CESS      float64 `json:"cess"`
	Resample  float64 `json:"resample"`
	// Chains, when positive, makes the run waste-free (Dau & Chopin 2022): each stage resamples
	// Chains ancestors and runs a chain of Particles/Chains states from each, all of which form
	// the next population; Resample is then not used.
	Chains int `json:"chains,omitempty"`
	// Sweeps is the number of kernel sweeps per particle and stage. A sweep of a model with a
	// data-augmentation kernel (models.Augmentable: Poisson NMF and CP) moves every factor once
	// by it and then rescales the components; for other models it is one MALA step of the whole
	// parameter.
	Sweeps int `json:"sweeps"`
	// Step is MALA's ε at t = 0 (samplers.MALA: drift ε·g·∇, noise √(2εg), g the model's metric);
	// each stage's step follows the acceptance rate of the stage before towards targetAccept. The
	// data-augmentation kernel has no step.
	Step float64 `json:"step"`
	// MaxStages bounds the number of temperatures; reaching it is an error, not a coarser ladder.
	MaxStages int `json:"max_stages"`
	// Rungs is the most temperatures of a replica's ladder that get a chain (see Annealed.Rungs).
	Rungs int `json:"rungs"`
}

// targetAccept is the acceptance rate MALA's steps are tuned to, above the 0.574 that is optimal
// as the dimension grows (Roberts & Rosenthal 1998): with it the Gaussian additive model anneals
// to within a quarter of a nat of its exact evidence at ranks 3, 5 and 8 (TestAnnealGaussianExact).
const targetAccept = 0.75

// Validate checks the configuration.
func (a Annealing) Validate() error {
	switch {
	case a.Particles < 2:
		return fmt.Errorf("annealing: %d particles, want at least 2", a.Particles)
	case !(a.CESS > 0 && a.CESS < 1):
		return fmt.Errorf("annealing: conditional ESS target %v must be in (0, 1)", a.CESS)
	case !(a.Resample > 0 && a.Resample <= 1):
		return fmt.Errorf("annealing: resampling threshold %v must be in (0, 1]", a.Resample)
	case a.Sweeps < 1:
		return fmt.Errorf("annealing: %d sweeps per stage, want at least 1", a.Sweeps)
	case !(a.Step > 0) || math.IsInf(a.Step, 0):
		return fmt.Errorf("annealing: step %v must be positive and finite", a.Step)
	case a.Chains < 0 || (a.Chains > 0 && (a.Particles%a.Chains != 0 || a.Particles/a.Chains < 2)):
		return fmt.Errorf("annealing: %d chains must divide %d particles into chains of at least 2", a.Chains, a.Particles)
	case a.Rungs < 2:
		return fmt.Errorf("annealing: %d rungs, want at least 2", a.Rungs)
	case a.MaxStages < 2:
		return fmt.Errorf("annealing: at most %d stages, want at least 2", a.MaxStages)
	}
	return nil
}

// Stage is one temperature of an annealing run, after its reweighting, resampling and moves.
type Stage struct {
	T float64
	// LogZ is the log of the stage's mean incremental weight, log Σ_n W_n exp((t − t_prev) ℓ_n).
	LogZ float64
	// ESS is the effective sample size after reweighting; Resampled whether it led to resampling.
	ESS       float64
	Resampled bool
	// Accept is the moves' mean acceptance probability and Step their step size, per block of
	// parameters the kernel moves separately (the factors of a factor model).
	Accept, Step []float64
	// MeanLogLik and VarLogLik are the population's weighted mean and variance of log p(X | θ):
	// estimates of f(t) and of its derivative.
	MeanLogLik, VarLogLik float64
	// ESSMean is the effective sample size of MeanLogLik: the ESS after reweighting, or for a
	// waste-free run the number of chains (their states are correlated).
	ESSMean float64
	// Start is a point drawn from the population in proportion to the weights: the start of a
	// chain at this temperature.
	Start []float64
}

// Annealed is one annealing run of a rank.
type Annealed struct {
	Rank, Replica int
	Stages        []Stage
	// LogZ is the sum of the stages' LogZ: an estimate of log p(X | R).
	LogZ float64
	// Steps counts full passes over the data (each a likelihood or a conditional gradient of
	// every cell); CellEvals the cells they read.
	Steps     int
	CellEvals int64
	// Divergence says where a log-likelihood became NaN or +∞; the run stopped there.
	Divergence string
	// Population and LogWeights are the particles at t = 1 and their normalised log weights.
	Population [][]float64
	LogWeights []float64
}

// Summary is what the run reports to the evidence of its rank (evidence.CombineAnnealed).
func (a *Annealed) Summary() evidence.AnnealSummary {
	s := evidence.AnnealSummary{Rank: a.Rank, Replica: a.Replica, LogZ: a.LogZ, Steps: a.Steps, CellEvals: a.CellEvals, Divergence: a.Divergence}
	if len(a.Stages) > 1 {
		s.FirstLogZ = a.Stages[1].LogZ
	}
	for _, st := range a.Stages {
		s.T = append(s.T, st.T)
		s.Mean = append(s.Mean, st.MeanLogLik)
		s.Var = append(s.Var, st.VarLogLik)
		s.ESS = append(s.ESS, st.ESSMean)
	}
	return s
}

// Ladder returns the temperatures the run visited, 0 first and 1 last.
func (a *Annealed) Ladder() []float64 {
	l := make([]float64, len(a.Stages))
	for i, s := range a.Stages {
		l[i] = s.T
	}
	return l
}

// Rungs returns the indices of the stages that get a chain: all of them when there are at most n,
// else n spread evenly over the stage indices, the first and the last included. Consecutive stages
// are equally far apart in the sense of the ESS target, so an even spread in index keeps the
// ladder dense where f(t) changes fast.
func (a *Annealed) Rungs(n int) []int {
	k := len(a.Stages)
	if k <= n {
		idx := make([]int, k)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = int(math.Round(float64(i) * float64(k-1) / float64(n-1)))
	}
	return idx
}

// Purposes of the annealing streams, apart from those of the chains.
const (
	streamParticle = iota + 100
	streamMove
	streamResample
	streamStarts
)

// Anneal runs the annealing stage of a rank, replica number replica, on samplers/smc's tempered
// population (smc.Tempered, smc.Anneal): the weights, the temperatures and the resampling are
// its; the particles, their moves and the stages' summaries are here. Every random number derives
// from (seed, rank, stage, replica, particle): a particle's prior draw and its moves at a stage
// use streams of their own, so the run does not depend on how its particles are scheduled over
// cores. A log-likelihood that is NaN or +∞ stops the run with a
// Divergence naming the rank, the stage and the particle; −∞ (a count where the model's mean is
// zero) gives the particle weight zero.
func (p *Problem) Anneal(ctx context.Context, rank, replica int, a Annealing) (*Annealed, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	m, err := p.model(rank)
	if err != nil {
		return nil, err
	}
	seed := p.Config.Seed
	n := a.Particles
	theta := make([][]float64, n)
	ll := make([]float64, n)
	out := &Annealed{Rank: rank, Replica: replica}
	diverged := func(stage, particle int, what string) error {
		out.Divergence = fmt.Sprintf("annealing rank %d, replica %d, stage %d, particle %d: %s", rank, replica, stage, particle, what)
		return errDiverged
	}
	workers := min(runtime.GOMAXPROCS(0), n)
	movers := make([]mover, workers)
	for i := range movers {
		movers[i] = newMover(m)
	}
	blocks := movers[0].blocks()
	for i := range n {
		theta[i] = make([]float64, m.Dim())
		m.SamplePrior(rng.New(seed, uint64(rank), 0, uint64(replica), streamParticle, uint64(i)), theta[i])
		ll[i] = movers[0].logLik(theta[i])
		if math.IsNaN(ll[i]) || math.IsInf(ll[i], 1) {
			diverged(0, i, fmt.Sprintf("log-likelihood is %v", ll[i]))
			return out, nil
		}
	}
	pop := smc.NewTempered(ll)
	out.Steps += n
	progress.Add(ctx, n)
	step := make([]float64, blocks)
	for b := range step {
		step[b] = a.Step
	}
	out.Stages = append(out.Stages, p.stage(0, 0, float64(n), theta, pop, rank, replica))
	reported := out.Steps
	next := func(k int) (float64, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if k >= a.MaxStages {
			return 0, fmt.Errorf("annealing rank %d, replica %d: %d stages did not reach t = 1 (raise the stage limit or lower the ESS target)", rank, replica, a.MaxStages)
		}
		// The largest temperature whose reweighting by exp((t' − t) ℓ) keeps the conditional ESS
		// at CESS·N.
		return pop.NextCESS(a.CESS), nil
	}
	stage := func(k int, logZ float64) error {
		t := pop.T
		ess := pop.ESS()
		key := func(i int) uint64 {
			return rng.Key(seed, uint64(rank), uint64(k), uint64(replica), streamMove, uint64(i))
		}
		var (
			acc []float64
			err error
		)
		resampled := a.Chains > 0 || ess < a.Resample*float64(n)
		if a.Chains > 0 {
			// Waste-free SMC (Dau & Chopin 2022): a.Chains ancestors, each the start of a chain of
			// n/a.Chains states, all of which form the next population.
			anc := smc.Systematic(rng.New(seed, uint64(rank), uint64(k), uint64(replica), streamResample).Float64(), pop.LogW, a.Chains)
			P := n / a.Chains
			nt := make([][]float64, n)
			nl := make([]float64, n)
			acc, err = runAll(ctx, movers, a.Chains, blocks, key, func(mv mover, r *rand.Rand, c int, acc []float64) {
				cur := append([]float64(nil), theta[anc[c]]...)
				nt[c*P], nl[c*P] = append([]float64(nil), cur...), pop.LogLik[anc[c]]
				for j := 1; j < P; j++ {
					nl[c*P+j] = mv.move(r, t, a.Sweeps, step, cur, acc)
					nt[c*P+j] = append([]float64(nil), cur...)
				}
				for b := range acc {
					acc[b] /= float64(P - 1)
				}
			})
			theta, pop.LogLik = nt, nl
			pop.Uniform()
			out.Steps += a.Chains * (P - 1) * movers[0].passes(a.Sweeps)
		} else {
			if resampled {
				theta = pop.Resample(rng.New(seed, uint64(rank), uint64(k), uint64(replica), streamResample).Float64(), theta)
			}
			var alive []int
			for i, lw := range pop.LogW {
				if !math.IsInf(lw, -1) {
					alive = append(alive, i)
				}
			}
			out.Steps += len(alive) * movers[0].passes(a.Sweeps)
			acc, err = runAll(ctx, movers, len(alive), blocks, func(j int) uint64 { return key(alive[j]) }, func(mv mover, r *rand.Rand, j int, acc []float64) {
				pop.LogLik[alive[j]] = mv.move(r, t, a.Sweeps, step, theta[alive[j]], acc)
			})
		}
		if err != nil {
			return err
		}
		for i, v := range pop.LogLik {
			if math.IsNaN(v) || math.IsInf(v, 1) {
				return diverged(k, i, fmt.Sprintf("log-likelihood is %v at t = %v", v, t))
			}
		}
		s := p.stage(k, logZ, ess, theta, pop, rank, replica)
		if a.Chains > 0 {
			s.ESSMean = float64(a.Chains)
		}
		s.Resampled, s.Accept, s.Step = resampled, acc, append([]float64(nil), step...)
		out.Stages = append(out.Stages, s)
		out.LogZ += logZ
		progress.Add(ctx, out.Steps-reported)
		reported = out.Steps
		expectStages(ctx, out.Stages, out.Steps, m.Dim(), a.MaxStages, a.Rungs, p.Config.Steps)
		// The next stage's step follows this one's acceptance towards the target.
		for b := range step {
			step[b] *= math.Exp(4 * (acc[b] - targetAccept))
		}
		return nil
	}
	switch err := smc.Anneal(pop, next, stage); {
	case errors.Is(err, errDiverged):
		return out, nil
	case err != nil:
		return nil, err
	}
	for _, mv := range movers {
		out.CellEvals += mv.cellEvals()
	}
	out.Population, out.LogWeights = theta, pop.LogW
	return out, nil
}

// errDiverged ends an annealing run whose log-likelihood became NaN or +∞; Annealed.Divergence
// says where.
var errDiverged = errors.New("annealing diverged")

// expectStages tells the progress display how many steps the annealing will have spent when it
// reaches t = 1, from the stages so far (spent steps, the last stage's temperature below 1) and
// the number of parameters d. Where the power posterior is near Gaussian, Var_t[log p(X | θ)] ≈
// d_t/(2t²), d_t the parameters the data inform at t, and a stage of a fixed conditional ESS
// moves log t by about 1/√d_t: the stages left are −log t over the mean step in log t of the last
// five stages, times √(d/d_t) for the parameters the data will inform by t = 1 (d_t from the
// population's variance), each making the steps the stages so far did on average. On the 257×275
// speech spectrogram at rank 2 the count is within 20% of the stages the annealing takes from a
// tenth of them on; without the √(d/d_t) it is half of them there. It expects no more stages than
// the limit, maxStages. The plan holds the chains the annealing starts too, chains of chainSteps
// steps each, which the progress display counts as tasks of their own once the annealing ends.
func expectStages(ctx context.Context, stages []Stage, spent, d, maxStages, chains, chainSteps int) {
	k := len(stages) - 1
	t := stages[k].T
	w := min(5, k-1)
	if w < 1 || t >= 1 {
		return
	}
	step := math.Log(t/stages[k-w].T) / float64(w)
	if !(step > 0) {
		return
	}
	informed := 2 * t * t * stages[k].VarLogLik
	left := -math.Log(t) / step
	if grow := math.Sqrt(float64(d) / informed); grow > 1 && !math.IsInf(grow, 1) {
		left *= grow
	}
	left = min(math.Ceil(left), float64(maxStages-k))
	n := spent + int(left)*(spent/k) + chains*chainSteps
	progress.Expect(ctx, n)
}

// runAll runs job(i) for i < jobs over the movers, each with the stream key(i) and an
// accumulator of acceptance per block, and returns the mean accumulator.
func runAll(ctx context.Context, movers []mover, jobs, blocks int, key func(int) uint64, job func(mv mover, r *rand.Rand, i int, acc []float64)) ([]float64, error) {
	accs := make([][]float64, jobs)
	next := make(chan int)
	var wg sync.WaitGroup
	for _, mv := range movers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rng.NewStream(0)
			for i := range next {
				r.Reset(key(i))
				accs[i] = make([]float64, blocks)
				// Which mover runs job i depends on scheduling.
				mv.forget()
				job(mv, r.Rand, i, accs[i])
			}
		}()
	}
	for i := range jobs {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	acc := make([]float64, blocks)
	for _, a := range accs {
		for b := range acc {
			acc[b] += a[b]
		}
	}
	for b := range acc {
		acc[b] /= float64(jobs)
	}
	return acc, nil
}

// stage summarises the population pop at stage k, whose log mean incremental weight was logZ and
// ESS after reweighting ess, and draws its chain's start.
func (p *Problem) stage(k int, logZ, ess float64, theta [][]float64, pop *smc.Tempered, rank, replica int) Stage {
	s := Stage{T: pop.T, LogZ: logZ, ESS: ess, ESSMean: pop.ESS()}
	for i, lw := range pop.LogW {
		if !math.IsInf(lw, -1) {
			s.MeanLogLik += math.Exp(lw) * pop.LogLik[i]
		}
	}
	for i, lw := range pop.LogW {
		if !math.IsInf(lw, -1) {
			d := pop.LogLik[i] - s.MeanLogLik
			s.VarLogLik += math.Exp(lw) * d * d
		}
	}
	r := rng.New(p.Config.Seed, uint64(rank), uint64(k), uint64(replica), streamStarts)
	s.Start = append([]float64(nil), theta[smc.Systematic(r.Float64(), pop.LogW, 1)[0]]...)
	return s
}
