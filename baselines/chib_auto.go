package baselines

import (
	"context"
	"math"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// streamChibRates tags the random stream of the run that gives Chib's method under the
// hyperprior its rates' ordinate.
const streamChibRates = 0xc41c

// chibAuto is Chib's method under the hyperprior of --rate auto, the rates λ one more block of
// the parameters, the first:
//
//	log p(X) = log p(X | λ*) + log p(λ*) − log p(λ* | X),
//
// where log p(X | λ*) is Chib's method at the fixed rates λ* (every ordinate of θ given λ*, as
// at any fixed rate), and the rates' ordinate p(λ* | X) = E[Π_m Gamma(λ*_m; a + n_m, b_m + s_m(θ))]
// is the Rao–Blackwell average over a run under the hyperprior of the rates' exact conditional
// given the factors (n_m the free entries of factor m, s_m their sum). λ* is the geometric mean
// of the rates over the second half of that run's burn-in, where their posterior is dense. The
// run starts where a tournament at the hyperprior's mean rates ends (as Chib's own start), since
// a start drawn from the heavy-tailed hyperprior may lie decades off.
func (p *Problem) chibAuto(ctx context.Context, R, replica int, cfg ChibConfig, from *Factors) (ChibResult, error) {
	if p.fixed > 0 {
		return ChibResult{}, errAuto("Chib's method beside a fixed dictionary")
	}
	if err := cfg.Validate(); err != nil {
		return ChibResult{}, err
	}
	if err := p.checkRank("chib", R); err != nil {
		return ChibResult{}, err
	}
	hyper, err := models.AutoPrior(p.Data, R)
	if err != nil {
		return ChibResult{}, err
	}
	a, b := hyper.Shape, hyper.Rates
	r := rng.New(cfg.Seed, streamChibRates, uint64(R), uint64(replica))
	check := func(done int) error {
		if done%64 == 0 {
			return ctx.Err()
		}
		return nil
	}
	sweeps := 0
	mean := make([]float64, p.order)
	for m := range mean {
		mean[m] = a / b[m]
	}
	start, n, err := p.at(mean).bestStart(ctx, r, R, cfg.Starts, cfg.StartSweeps)
	if err != nil {
		return ChibResult{}, err
	}
	sweeps += n
	g, err := p.newGibbs(R)
	if err != nil {
		return ChibResult{}, err
	}
	g.m.SamplePrior(r, g.theta)
	g.SetState(start.State)

	logStar := make([]float64, p.order)
	var rates []float64
	for k := range cfg.Burnin {
		g.Sweep(r)
		if k >= cfg.Burnin/2 {
			rates = g.m.AppendRates(rates[:0], g.theta)
			for m, l := range rates {
				logStar[m] += math.Log(l)
			}
		}
		if err := check(k); err != nil {
			return ChibResult{}, err
		}
	}
	sweeps += cfg.Burnin
	star := make([]float64, p.order)
	logPrior := 0.0
	for m := range star {
		logStar[m] /= float64(cfg.Burnin - cfg.Burnin/2)
		star[m] = math.Exp(logStar[m])
		logPrior += logGamma(star[m], a, b[m])
	}

	// The rates' ordinate, extended as Chib's blocks are while its standard error is above
	// TargetSE.
	var terms []float64
	var ord, se float64
	for done := 0; ; {
		for s := range cfg.Samples {
			g.Sweep(r)
			t := 0.0
			for m, f := range g.State.F {
				entries, sum := p.freeEntries(m, f, g.State.R)
				t += logGamma(star[m], a+float64(entries), b[m]+sum)
			}
			terms = append(terms, t)
			if err := check(s); err != nil {
				return ChibResult{}, err
			}
		}
		sweeps += cfg.Samples
		done += cfg.Samples
		ord, se = batchLogMeanExp(terms, cfg.Batches)
		if !(se > cfg.TargetSE) || done >= cfg.MaxExtend*cfg.Samples {
			break
		}
	}
	ord += se * se / 2

	if from == nil {
		// A draw of the posterior under the hyperprior: the fixed-rate run's burn-in starts in its
		// basin instead of a tournament of its own.
		s := g.State.Clone()
		from = &s
	}
	res, err := p.at(star).chib(ctx, R, replica, cfg, from)
	if err != nil {
		return res, err
	}
	res.LogPrior += logPrior
	res.LogOrdinate += ord
	res.Blocks++
	res.BlockOrdinates = append([]float64{ord}, res.BlockOrdinates...)
	res.BlockSE = append([]float64{se}, res.BlockSE...)
	res.Sweeps += sweeps
	res.CellEvals += start.cellEvals + g.cellEvals
	res.LogEvidence += logPrior - ord
	res.StdErr = math.Hypot(res.StdErr, se)
	if res.Divergence == "" && (math.IsNaN(res.LogEvidence) || math.IsInf(res.LogEvidence, 0)) {
		res.Divergence = "non-finite rates' ordinate under the hyperprior"
		res.LogEvidence = math.NaN()
	}
	return res, nil
}

// at is the problem at the fixed rates given, sharing its prepared data.
func (p *Problem) at(rates []float64) *Problem {
	q := *p
	q.Rates, q.Auto = append([]float64(nil), rates...), false
	return &q
}

// freeEntries is the number of factor m's entries that are parameters (a dictionary's are not)
// in f, of K columns, and their sum.
func (p *Problem) freeEntries(m int, f []float64, K int) (int, float64) {
	lead, n, s := p.lead(m), 0, 0.0
	for e, v := range f {
		if e%K >= lead {
			n++
			s += v
		}
	}
	return n, s
}

// logGamma is the log density of Gamma(shape a, rate b) at x.
func logGamma(x, a, b float64) float64 {
	lg, _ := math.Lgamma(a)
	return a*math.Log(b) - lg + (a-1)*math.Log(x) - b*x
}
