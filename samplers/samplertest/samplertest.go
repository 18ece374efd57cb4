// Package samplertest holds targets with known moments and a driver that runs a samplers.Kernel
// on them by the kernel protocol the STI chain follows (samplers.Kernel): the gradient of the whole
// θ is computed first, then every coordinate range is updated through Update with a random stream
// of its own derived from (seed, step, range) — from separate goroutines when asked — then EndStep
// with a stream of its own.
package samplertest

import (
	"math"
	"math/rand/v2"
	"sync"

	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/samplers"
)

// Target is an unnormalised log density.
type Target interface {
	Dim() int
	// LogDensity returns log π(θ) up to a constant and writes its gradient into grad.
	LogDensity(theta, grad []float64) float64
	// Init writes a starting point.
	Init(r *rand.Rand, theta []float64)
}

// Noisy targets have a stochastic gradient (a minibatch estimate).
type Noisy interface {
	NoisyGrad(theta, grad []float64, r *rand.Rand)
}

// Metricer targets supply a diagonal metric (inverse curvature scale), possibly position-dependent.
type Metricer interface {
	Metric(theta, g []float64)
}

// Bounded targets have non-negative coordinates, sampled by mirroring.
type Bounded interface {
	Positive(i int) bool
}

// Known targets have exact moments: the mean and the row-major covariance.
type Known interface {
	Mean() []float64
	Cov() []float64
}

// Run describes one run of a kernel on a target.
type Run struct {
	Kernel samplers.Kernel
	Target Target
	// Steps counts all steps; the first Burnin adapt (Input.Adapt) and are not recorded.
	Steps, Burnin int
	// Eps is the step after burn-in; burn-in decays to it from StartRatio·Eps (0: constant).
	Eps, StartRatio float64
	// Ranges is the number of ranges the coordinates are cut into (at least one per run of
	// coordinates that share a Bounded status); Parallel updates them from separate goroutines.
	Ranges   int
	Parallel bool
	// Noisy uses the target's stochastic gradient.
	Noisy bool
	Seed  uint64
	// Record, when set, is called with θ after every recorded step.
	Record func(theta []float64)
}

// Result holds the moments of the recorded samples.
type Result struct {
	N         int
	Mean, Cov []float64
	// SEMean and SEVar are batch-means standard errors of the mean and variance of each coordinate.
	SEMean, SEVar []float64
	// Final is the last θ, State the kernel's state at the end.
	Final []float64
	State samplers.State
}

// Sd returns the standard deviation of coordinate i.
func (r Result) Sd(i int) float64 { return math.Sqrt(r.Cov[i*len(r.Mean)+i]) }

func (r Run) ranges() [][2]int {
	d := r.Target.Dim()
	nr := max(r.Ranges, 1)
	var out [][2]int
	pos := func(i int) bool {
		b, ok := r.Target.(Bounded)
		return ok && b.Positive(i)
	}
	for c := range nr {
		lo, hi := c*d/nr, (c+1)*d/nr
		start := lo
		for i := lo + 1; i <= hi; i++ {
			if i == hi || pos(i) != pos(start) {
				if i > start {
					out = append(out, [2]int{start, i})
				}
				start = i
			}
		}
	}
	return out
}

// Do runs the kernel.
func (r Run) Do() Result {
	t := r.Target
	d := t.Dim()
	k := r.Kernel
	st := k.NewState(d)
	theta := make([]float64, d)
	t.Init(rng.New(r.Seed, 1), theta)
	grad := make([]float64, d)
	// Every kernel gets a metric (ones unless the target has one); those without
	// Capabilities.UsesMetric ignore it.
	metric, gamma := make([]float64, d), make([]float64, d)
	for i := range metric {
		metric[i] = 1
	}
	sched := samplers.StepSchedule{A: r.Eps, B: 1, Burnin: 1}
	if r.StartRatio > 1 && r.Burnin > 0 {
		sched, _ = samplers.DecayTo(r.Eps, r.StartRatio, 0.51, r.Burnin)
	}
	eps := func(k int) float64 {
		if r.StartRatio > 1 && r.Burnin > 0 {
			return sched.At(k)
		}
		return r.Eps
	}
	rs := r.ranges()
	streams := make([]*rng.Stream, len(rs))
	for i := range streams {
		streams[i] = rng.NewStream(0)
	}
	end := rng.NewStream(0)
	noise := rng.NewStream(0)
	var acc accum
	acc.init(d, r.Steps-r.Burnin)
	bounded, _ := t.(Bounded)
	for step := 1; step <= r.Steps; step++ {
		clear(grad)
		if nz, ok := t.(Noisy); ok && r.Noisy {
			noise.Reset(r.Seed, 2, uint64(step))
			nz.NoisyGrad(theta, grad, noise.Rand)
		} else {
			t.LogDensity(theta, grad)
		}
		adapt := step <= r.Burnin
		if m, ok := t.(Metricer); ok {
			m.Metric(theta, metric)
		}
		work := func(i int) {
			s := streams[i]
			s.Reset(r.Seed, 3, uint64(step), uint64(i))
			in := samplers.Input{
				Theta: theta, Grad: grad, Metric: metric, Gamma: gamma,
				Lo: rs[i][0], Hi: rs[i][1], Eps: eps(step), N: 1, Adapt: adapt, Rand: s.Rand,
				Mirror: bounded != nil && bounded.Positive(rs[i][0]),
			}
			k.Update(st, in)
		}
		if r.Parallel && len(rs) > 1 {
			var wg sync.WaitGroup
			for i := range rs {
				wg.Add(1)
				go func() { defer wg.Done(); work(i) }()
			}
			wg.Wait()
		} else {
			for i := range rs {
				work(i)
			}
		}
		end.Reset(r.Seed, 4, uint64(step))
		k.EndStep(st, adapt, end.Rand)
		if !adapt {
			acc.add(theta)
			if r.Record != nil {
				r.Record(theta)
			}
		}
	}
	res := acc.result()
	res.Final = theta
	res.State = st
	return res
}

// accum collects moments and batch means (50 batches).
type accum struct {
	d, n, per  int
	sum, outer []float64
	bsum, bsq  [][]float64 // per batch: Σθ and Σθ² per coordinate
	bcount     []int
}

const batches = 50

func (a *accum) init(d, total int) {
	a.d = d
	a.sum, a.outer = make([]float64, d), make([]float64, d*d)
	a.per = max(total/batches, 1)
	a.bsum, a.bsq, a.bcount = make([][]float64, batches), make([][]float64, batches), make([]int, batches)
	for b := range batches {
		a.bsum[b], a.bsq[b] = make([]float64, d), make([]float64, d)
	}
}

func (a *accum) add(theta []float64) {
	b := min(a.n/a.per, batches-1)
	for i, v := range theta {
		a.sum[i] += v
		a.bsum[b][i] += v
		a.bsq[b][i] += v * v
		for j, w := range theta {
			a.outer[i*a.d+j] += v * w
		}
	}
	a.bcount[b]++
	a.n++
}

func (a *accum) result() Result {
	d, n := a.d, float64(a.n)
	r := Result{N: a.n, Mean: make([]float64, d), Cov: make([]float64, d*d), SEMean: make([]float64, d), SEVar: make([]float64, d)}
	for i := range d {
		r.Mean[i] = a.sum[i] / n
	}
	for i := range d {
		for j := range d {
			r.Cov[i*d+j] = a.outer[i*d+j]/n - r.Mean[i]*r.Mean[j]
		}
	}
	for i := range d {
		var ms, ms2, vs, vs2 float64
		nb := 0.0
		for b := range batches {
			c := float64(a.bcount[b])
			if c < 2 {
				continue
			}
			m := a.bsum[b][i] / c
			v := a.bsq[b][i]/c - m*m
			ms += m
			ms2 += m * m
			vs += v
			vs2 += v * v
			nb++
		}
		if nb > 1 {
			vm := (ms2/nb - (ms/nb)*(ms/nb)) * nb / (nb - 1)
			vv := (vs2/nb - (vs/nb)*(vs/nb)) * nb / (nb - 1)
			r.SEMean[i] = math.Sqrt(vm / nb)
			r.SEVar[i] = math.Sqrt(vv / nb)
		}
	}
	return r
}

// GradNoise estimates the variance of the metric-scaled gradient noise √metric·(∇L̃ − ∇L) of a
// Noisy target at θ, per coordinate, from n draws: the B̂ of SGHMC and the ForceNoise of MassEM.
func GradNoise(t Target, theta []float64, n int, seed uint64) []float64 {
	d := t.Dim()
	exact, g, m := make([]float64, d), make([]float64, d), make([]float64, d)
	t.LogDensity(theta, exact)
	for i := range m {
		m[i] = 1
	}
	if mt, ok := t.(Metricer); ok {
		mt.Metric(theta, m)
	}
	r := rng.New(seed, 5)
	v := make([]float64, d)
	for range n {
		clear(g)
		t.(Noisy).NoisyGrad(theta, g, r)
		for i := range v {
			e := g[i] - exact[i]
			v[i] += e * e * m[i] / float64(n)
		}
	}
	return v
}
