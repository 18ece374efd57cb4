// Package smc is a sequential Monte Carlo sampler (Del Moral, Doucet & Jasra 2006) reduced to its
// driver: a population of particles is carried along a path of targets π_0, …, π_S by importance
// reweighting, resampling when the effective sample size falls, and a move that leaves the current
// target invariant. The path — what the targets are, how π_0 is drawn exactly, which kernel moves
// the particles — is the caller's; annealed importance sampling is the same driver that never
// resamples, and plain importance sampling is a path of one stage with no move. On a path of power
// posteriors, Tempered and Anneal are the driver as explicit state: the caller keeps the particles
// and moves them with streams of its own (one per particle, on any number of cores), and the
// population's weights, temperatures and resampling are this package's.
package smc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/stirank/stirank/internal/quad"
)

// Path is a sequence of unnormalised targets π_0, …, π_S over a state in R^Dim. Only the ratios
// π_n/π_{n−1} matter, through LogTarget, which may drop any term common to every stage (such as a
// prior every stage shares) but must keep every term that differs between stages.
type Path interface {
	// Dim is the length of a particle's state.
	Dim() int
	// Stages is S: the path runs π_0 → π_S.
	Stages() int
	// Init draws x exactly from π_0 normalised and returns log Z_0, its normalising constant.
	Init(r *rand.Rand, x []float64) float64
	// LogTarget is log π_n(x) less the terms common to all stages.
	LogTarget(n int, x []float64) float64
	// Move applies a Markov kernel that leaves π_n invariant.
	Move(n int, r *rand.Rand, x []float64)
}

// Config sets the population.
type Config struct {
	// Particles is the population size N.
	Particles int
	// ResampleBelow resamples when the effective sample size falls below ResampleBelow·N; 0
	// never resamples (annealed importance sampling), 1 resamples at every stage.
	ResampleBelow float64
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Particles < 1:
		return fmt.Errorf("smc: particles %d must be at least 1", c.Particles)
	case !(c.ResampleBelow >= 0 && c.ResampleBelow <= 1):
		return fmt.Errorf("smc: resampling threshold %v must lie in [0, 1]", c.ResampleBelow)
	}
	return nil
}

// Result is one run's estimate.
type Result struct {
	// LogZ is the estimate of log Z_S; exp(LogZ) is unbiased for Z_S.
	LogZ float64
	// Resamplings counts the stages at which the population was resampled.
	Resamplings int
	// MinESS is the smallest effective sample size met before any resampling, as a fraction of N.
	MinESS float64
	// Stages counts the reweightings, one per stage; the particles moved once fewer.
	Stages int
	// Divergence names the first stage at which a weight was not a number, the stage limit an
	// adaptive run reached, or what was wrong with the schedule it was given; empty when none
	// happened.
	Divergence string
	// Schedule is the stages an adaptive run went through, in order (RunAdaptive), for another
	// run to follow (AdaptiveConfig.Schedule).
	Schedule []Stage
}

// Stage is one reweighting of a segmented path: to the point Lambda of segment Segment, from
// the previous stage's point of that segment, or from 0 at its first.
type Stage struct {
	Segment int
	Lambda  float64
}

// Run carries cfg.Particles particles along path and returns the estimate of log Z_S. All
// randomness comes from r, so a run is reproduced by its stream.
func Run(path Path, cfg Config, r *rand.Rand) Result {
	pop := newPopulation(path.Dim(), path.Init, cfg.Particles, r)
	for s := 1; s <= path.Stages(); s++ {
		for i := range pop.n {
			p := pop.particle(i)
			pop.logw[i] += path.LogTarget(s, p) - path.LogTarget(s-1, p)
		}
		if !pop.reweighted(func() string { return fmt.Sprintf("stage %d", s) }, cfg.ResampleBelow, r) {
			return pop.res
		}
		if s == path.Stages() {
			break // a move after the last reweighting would not change the estimate
		}
		for i := range pop.n {
			path.Move(s, r, pop.particle(i))
		}
	}
	return pop.result()
}

// Segmented is a path made of segments, each a continuous family of unnormalised targets
// π_{s,λ}, λ ∈ [0, 1], that meet end to start (π_{s,1} = π_{s+1,0}); RunAdaptive chooses the λs
// a run visits.
type Segmented interface {
	Dim() int
	// Segments is the number of segments; with none the path is π_{0,0} alone.
	Segments() int
	// Init draws x exactly from π_{0,0} normalised and returns log Z_{0,0}.
	Init(r *rand.Rand, x []float64) float64
	// LogRatios sets out[i] = log π_{s,to}(x_i) − log π_{s,from}(x_i) for every particle x_i of
	// xs (Dim values each, one after another).
	LogRatios(s int, from, to float64, xs, out []float64)
	// Move applies a Markov kernel that leaves π_{s,λ} invariant.
	Move(s int, lambda float64, r *rand.Rand, x []float64)
}

// AdaptiveConfig sets the population and the schedule of RunAdaptive.
type AdaptiveConfig struct {
	Config
	// CESS is the conditional effective sample size, as a fraction of the particles, that every
	// reweighting keeps (Zhou, Johansen & Aston 2016): each stage goes as far along its segment as
	// it can while the weights stay that even. 0 lets every stage take the longest step, MaxStep.
	CESS float64
	// MaxStep bounds a stage's step along a segment, so that a run takes at least 1/MaxStep
	// stages a segment: the conditional ESS says how far the weights let a stage go, not how far
	// the moves can follow, and where the weights change slowly a run of the target alone takes
	// steps too long for one move each. 0 means 1.
	MaxStep float64
	// MaxSteps, when set, holds the longest step of each segment in MaxStep's place, so that a
	// path can spend more of its stages on the segments its moves find hardest to follow.
	MaxSteps []float64
	// MaxStages bounds the stages of a run; a run that needs more fails (Result.Divergence).
	MaxStages int
	// Schedule, when set, is followed in place of steps chosen from the particles (CESS, MaxStep
	// and MaxSteps are then unused): a schedule chosen from the particles that are then weighted
	// on it biases the estimate of log Z upward, by order 1/N a stage, and one chosen by a pilot
	// run on particles of their own (its Result.Schedule) does not. It must go through every
	// segment in order, λ rising to 1 in each, within MaxStages stages; a run given any other
	// fails (Result.Divergence).
	Schedule []Stage
}

// Validate checks the configuration.
func (c AdaptiveConfig) Validate() error {
	switch {
	case !(c.CESS >= 0 && c.CESS < 1):
		return fmt.Errorf("smc: conditional ESS target %v must lie in [0, 1)", c.CESS)
	case !(c.MaxStep >= 0 && c.MaxStep <= 1):
		return fmt.Errorf("smc: longest step %v must lie in [0, 1]", c.MaxStep)
	case slices.ContainsFunc(c.MaxSteps, func(s float64) bool { return !(s > 0 && s <= 1) }):
		return fmt.Errorf("smc: longest steps %v must lie in (0, 1]", c.MaxSteps)
	case c.MaxStages < 1:
		return fmt.Errorf("smc: stage limit %d must be at least 1", c.MaxStages)
	}
	return c.Config.Validate()
}

// stepPrecision is how finely RunAdaptive's bisection places a stage: to 1% of the step, so that
// the conditional ESS is at least, and about, the target.
const stepPrecision = 0.01

// RunAdaptive carries cfg.Particles particles along every segment of path in turn, each stage
// going from λ to the largest λ' ≤ min(1, λ + cfg.MaxStep) whose reweighting keeps the
// conditional ESS at cfg.CESS (NextStep), or to the next λ of cfg.Schedule when it is set,
// resampling when the ESS falls below cfg.ResampleBelow, and moving the particles at every stage
// but the last. Result.Stages counts the stages; the particles moved Stages − 1 times;
// Result.Schedule lists them. All randomness comes from r (the schedule is a function of the
// particles), so a run is reproduced by its stream.
func RunAdaptive(path Segmented, cfg AdaptiveConfig, r *rand.Rand) Result {
	pop := newPopulation(path.Dim(), path.Init, cfg.Particles, r)
	if cfg.Schedule != nil {
		if err := checkSchedule(cfg.Schedule, path.Segments(), cfg.MaxStages); err != nil {
			pop.fail(err.Error())
			return pop.res
		}
	}
	inc := make([]float64, pop.n)
	normalised := make([]float64, pop.n)
	last := path.Segments() - 1
	maxStep := cfg.MaxStep
	if maxStep == 0 {
		maxStep = 1
	}
	if cfg.MaxSteps != nil && len(cfg.MaxSteps) != last+1 {
		pop.fail(fmt.Sprintf("%d longest steps for a path of %d segments", len(cfg.MaxSteps), last+1))
		return pop.res
	}
	for s := range path.Segments() {
		if cfg.MaxSteps != nil {
			maxStep = cfg.MaxSteps[s]
		}
		for lambda := 0.0; lambda < 1; {
			if pop.res.Stages == cfg.MaxStages {
				pop.fail(fmt.Sprintf("segment %d of %d at λ = %.3g: %d stages did not reach the end of the path (raise the stage limit or lower the conditional ESS target)", s+1, last+1, lambda, cfg.MaxStages))
				return pop.res
			}
			from := lambda
			if cfg.Schedule != nil {
				lambda = cfg.Schedule[pop.res.Stages].Lambda
			} else {
				lse := quad.LogSumExp(pop.logw)
				for i, lw := range pop.logw {
					normalised[i] = lw - lse
				}
				// The end of the segment, when the longest step falls short of it by rounding alone.
				hi := from + maxStep
				if hi > 1-1e-9*maxStep {
					hi = 1
				}
				lambda = NextStep(from, hi, cfg.CESS, stepPrecision, normalised, func(to float64, out []float64) {
					path.LogRatios(s, from, to, pop.x, out)
				})
			}
			pop.res.Schedule = append(pop.res.Schedule, Stage{s, lambda})
			path.LogRatios(s, from, lambda, pop.x, inc)
			for i, d := range inc {
				pop.logw[i] += d
			}
			if !pop.reweighted(func() string { return fmt.Sprintf("segment %d at λ = %.3g", s+1, lambda) }, cfg.ResampleBelow, r) {
				return pop.res
			}
			if s == last && lambda == 1 {
				break // a move after the last reweighting would not change the estimate
			}
			for i := range pop.n {
				path.Move(s, lambda, r, pop.particle(i))
			}
		}
	}
	return pop.result()
}

// checkSchedule returns why sched is not a schedule RunAdaptive can follow over a path of the
// given number of segments within maxStages stages, or nil.
func checkSchedule(sched []Stage, segments, maxStages int) error {
	if len(sched) > maxStages {
		return fmt.Errorf("a schedule of %d stages exceeds the stage limit %d", len(sched), maxStages)
	}
	seg, lambda := 0, 0.0
	for i, st := range sched {
		if st.Segment != seg || !(st.Lambda > lambda && st.Lambda <= 1) {
			return fmt.Errorf("stage %d of the schedule, segment %d at λ = %v, does not follow segment %d at λ = %v (%d segments)", i+1, st.Segment+1, st.Lambda, seg+1, lambda, segments)
		}
		if lambda = st.Lambda; lambda == 1 {
			seg, lambda = seg+1, 0
		}
	}
	if seg != segments {
		return fmt.Errorf("the schedule ends in segment %d at λ = %v, not at the end of segment %d", seg+1, lambda, segments)
	}
	return nil
}

// NextStep returns the largest t' in (t, hi] at which reweighting a population of normalised log
// weights logW by exp(inc(t')) keeps its conditional ESS (Zhou, Johansen & Aston 2016),
// (Σ W w)² / Σ W w², at cess (a fraction of the particles), found by bisection; inc(t', out) sets
// out[i] to particle i's log incremental weight from t to t'. The bisection stops once its
// interval is within tol of the step t' − t, or at the resolution of float64 when tol is 0.
func NextStep(t, hi, cess, tol float64, logW []float64, inc func(next float64, out []float64)) float64 {
	d := make([]float64, len(logW))
	a := make([]float64, len(logW))
	b := make([]float64, len(logW))
	frac := func(next float64) float64 {
		inc(next, d)
		for i := range logW {
			if math.IsInf(logW[i], -1) {
				a[i], b[i] = math.Inf(-1), math.Inf(-1)
				continue
			}
			a[i] = logW[i] + d[i]
			b[i] = logW[i] + 2*d[i]
		}
		return math.Exp(2*quad.LogSumExp(a) - quad.LogSumExp(b))
	}
	if frac(hi) >= cess {
		return hi
	}
	lo := t
	for range 100 {
		mid := lo + (hi-lo)/2
		if mid == lo || mid == hi || hi-lo <= tol*(lo-t) {
			break
		}
		if frac(mid) >= cess {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo == t { // a single particle carries all the weight even at the smallest step
		return hi
	}
	return lo
}

// population is the particles of a run, their log weights and the estimate so far.
type population struct {
	n, d     int
	x, spare []float64 // n×d, one particle after another
	logw     []float64
	logZ     float64 // log Z of the targets up to the last resampling
	res      Result
}

// newPopulation draws n particles of dimension d by init.
func newPopulation(d int, init func(*rand.Rand, []float64) float64, n int, r *rand.Rand) *population {
	p := &population{n: n, d: d, x: make([]float64, n*d), spare: make([]float64, n*d),
		logw: make([]float64, n), res: Result{MinESS: 1}}
	for i := range n {
		p.logZ = init(r, p.particle(i))
	}
	return p
}

func (p *population) particle(i int) []float64 { return p.x[i*p.d : (i+1)*p.d] }

// reweighted ends a stage whose incremental weights are in logw: it counts the stage, records
// the ESS and resamples when it is below threshold·N. It returns false, the run failed at the
// stage stage names, when a weight is not a number.
func (p *population) reweighted(stage func() string, threshold float64, r *rand.Rand) bool {
	p.res.Stages++
	lse, ess := quad.LogSumExp(p.logw), essFraction(p.logw)
	if math.IsNaN(lse) || math.IsInf(lse, 1) {
		p.fail(fmt.Sprintf("%s: log weight %v", stage(), lse))
		return false
	}
	p.res.MinESS = min(p.res.MinESS, ess)
	if ess < threshold {
		p.logZ += lse - math.Log(float64(p.n))
		for i := range p.logw {
			p.logw[i] -= lse
		}
		for i, j := range Systematic(r.Float64(), p.logw, p.n) {
			copy(p.spare[i*p.d:(i+1)*p.d], p.x[j*p.d:(j+1)*p.d])
		}
		p.x, p.spare = p.spare, p.x
		clear(p.logw)
		p.res.Resamplings++
	}
	return true
}

// fail ends the run at a problem described by why.
func (p *population) fail(why string) {
	p.res.Divergence = why
	p.res.LogZ = math.NaN()
}

// result is the run's estimate after its last stage.
func (p *population) result() Result {
	p.res.LogZ = p.logZ + quad.LogSumExp(p.logw) - math.Log(float64(p.n))
	return p.res
}

// essFraction is the effective sample size (Σw)²/Σw² of the weights exp(logw), divided by N.
func essFraction(logw []float64) float64 {
	m := math.Inf(-1)
	for _, a := range logw {
		m = max(m, a)
	}
	var s, s2 float64
	for _, a := range logw {
		w := math.Exp(a - m)
		s += w
		s2 += w * w
	}
	return s * s / s2 / float64(len(logw))
}

// Combine merges independent runs' estimates log Ẑ_r of one constant into log of their mean —
// itself unbiased for Z, and less biased on the log scale than the mean of the logs — with the
// delta-method standard error of that log, sd(Ẑ)/(√R·mean Ẑ); 0 for a single run.
func Combine(logZ []float64) (logMean, stderr float64) {
	r := float64(len(logZ))
	lse := quad.LogSumExp(logZ)
	logMean = lse - math.Log(r)
	if len(logZ) < 2 || math.IsInf(logMean, 0) || math.IsNaN(logMean) {
		return logMean, 0
	}
	var ss float64
	for _, l := range logZ {
		q := math.Exp(l-logMean) - 1
		ss += q * q
	}
	return logMean, math.Sqrt(ss / (r - 1) / r)
}
