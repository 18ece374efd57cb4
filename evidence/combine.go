package evidence

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// ChainSummary is what one chain reports for its (rank, temperature, replica): the summary of its
// log-likelihood records after burn-in. All fields are exported so it can cross Beam stages.
type ChainSummary struct {
	Rank   int
	TIndex int
	T      float64
	Chain  int
	// Count is the number of records; Mean their mean, the chain's estimate of f(t);
	// M2 the sum of their squared deviations from Mean; ESS their effective sample size.
	Count int
	Mean  float64
	M2    float64
	ESS   float64
	// Steps is the number of sampler steps spent, burn-in included; CellEvals the number of
	// per-cell likelihood evaluations they made (subsamples, control-variate passes).
	Steps     int
	CellEvals int64
	// SteinMean, SteinM2 and SteinCo summarise p control variates z of mean zero recorded with
	// each record (sti's Stein variates): their means (p), the sums of the products of their
	// deviations (p × p, row-major) and the sums of the products of their deviations and the
	// records' (p). SteinESS is the effective sample size of the records less the chain's own
	// least-squares combination of z. SteinMean empty: no variates.
	SteinMean, SteinM2, SteinCo []float64
	SteinESS                    float64
	// CondVar, when not empty, says that the last len(CondVar) control variates are the
	// differences E_t[ℓ | all factors but k] − ℓ of conditional means from the records ℓ
	// (sti's conditional expectations, models.RaoBlackwell), and holds the mean over the records
	// of each conditional variance Var_t[ℓ | all factors but k]; CondVarM2 the sums of their
	// squared deviations. Combine then estimates Var_t[ℓ] by the law of total variance
	// (totalVariance).
	CondVar, CondVarM2 []float64
	// Divergence describes where the chain produced a non-finite value; empty when it did not.
	Divergence string
	// HalfMean is the mean of the first HalfCount of the records Mean averages, about half of
	// them: a chain whose records still drift shows it in Mean − HalfMean (RankEvidence.Drift).
	HalfMean  float64
	HalfCount int
	// Warm says the chain resumed from a saved state instead of the configured start.
	Warm bool
	// RateMean and RateM2 are, for a chain at t = 1 under a hyperprior (--rate auto), the mean
	// and the sum of squared deviations over the Count records' draws of every factor's prior
	// rate, by mode, and last of their product; empty at fixed rates and at other rungs.
	RateMean, RateM2 []float64
}

// Rung is the combined estimate at one temperature.
type Rung struct {
	T float64
	// MeanLogLik estimates f(t) = E_t[log p(X | θ)]; StdErr is its Monte Carlo standard error.
	MeanLogLik, StdErr float64
	// VarLogLik estimates v(t) = Var_t[log p(X | θ)] = f'(t): the records' sample variance, or
	// where the chains carry conditional moments the law of total variance (totalVariance). It
	// includes any subsampling noise of the records, so it is an upper bound when the records are
	// not exact.
	VarLogLik float64
	ESS       float64
	Chains    int
	// varSE2 is the squared standard error of VarLogLik where it is not a sample variance's
	// (totalVariance); zero otherwise. Combine reads it before the rung leaves it.
	varSE2 float64
	// plainSE is StdErr of the chains' plain means, where any of them carried control
	// variates; zero otherwise. Combine reads it before the rung leaves it.
	plainSE float64
	// transient says a chain's first half of records averages more than RaceZ of its mean's
	// standard errors from the whole: its records hold a transient, and its variance the
	// transient's spread. Combine reads it before the rung leaves it.
	transient bool
}

// steady reports whether the rung's variance can stand for f′(t): its records rest on MinESS
// effective samples or more and hold no transient.
func (r Rung) steady() bool { return r.ESS >= MinESS && !r.transient }

// RankEvidence is the log evidence of one rank.
type RankEvidence struct {
	Rank int
	// LogEvidence is the integral over the ladder by Ladder.Rule (Ladder.PathRule for
	// CombineReferencePath).
	LogEvidence float64
	// StdErr is the Monte Carlo standard error: with two or more replicas per rung the larger
	// of the integral's between-replica variance (the rungs' summed, see replicaVariance) and
	// its within-chain one; with a single replica it is StdErrWithin.
	StdErr float64
	// StdErrWithin is √(Σ_i wf_i² s_i²/ESS_i + wv_i² 2v_i²/ESS_i) from the within-chain effective
	// sample sizes (Rung.withinVariance); it misses between-replica variation (modes a chain does
	// not leave), so it is a diagnostic.
	StdErrWithin float64
	// StdErrPlain is StdErrWithin from the rungs' plain means, without their control variates,
	// where any chain's records carried them; 0 otherwise (ControlsPay).
	StdErrPlain float64
	// Trapezoid is the uncorrected rule; |LogEvidence − Trapezoid| indicates how much the
	// ladder's discretisation matters.
	Trapezoid float64
	// Round is the last round a racing rank's chains ran (package estimators, Racer), and
	// Rounds its estimate after each round; nil for a rank that runs once.
	Round  int
	Rounds []RoundEstimate
	// Drift is, where the chains report the means of the first halves of their records
	// (ChainSummary.HalfMean), how far the integral of those means lies from LogEvidence beyond
	// what their noise explains: a transient the chains are still leaving. If a chain's bias
	// falls like one over its length, the whole's is what the difference shows, so StdErr
	// includes it (Drift² is added to StdErr²). A racing rank's also holds RoundDrift.
	Drift     float64
	Rungs     []Rung
	Steps     int
	CellEvals int64
	// ModeParams is the number of the model's parameters where a chain started at a mode
	// (StartAllowance), 0 where none did or it is not known.
	ModeParams int
	// FullRound is the round in which a racing rank's chains reach their configured records
	// (0 where no start stage says).
	FullRound int
	// LetGo says the race stopped refining the rank, its leader, while its chains still moved
	// (Standing.Continues): beyond its standard error it carries StartAllowance.
	LetGo bool
	// WarmChains counts the chains that resumed from a saved state.
	WarmChains int
	// Diverged lists the chains that produced non-finite values; when it is not empty the
	// estimate is not computed (LogEvidence is NaN).
	Diverged []string
	// Replicas is the number of annealed replicas (see CombineAnnealed); zero for a fixed ladder.
	// An annealed rank has two estimates from the same work: LogEvidence, the thermodynamic
	// integral, with TIStdErr its standard error over replicas, and SMC, the annealing's
	// normalising-constant estimate, with SMCStdErr. StdErr adds to TIStdErr what of their
	// difference their standard errors do not explain; Disagree flags a difference of more than
	// three combined standard errors.
	Replicas                 int
	TIStdErr, SMC, SMCStdErr float64
	Disagree                 bool
	// Hysteresis is the area between the rungs' means and a walk back up the ladder where the
	// rank ran the phase check (PhaseWalk), and Phase says the two part beyond
	// their noise: f(t) changes phase and the chains keep the phase of t = 1 below where it
	// gives way, or they sit in a basin the walk did not reach. StdErr then includes
	// PhaseVariance(Hysteresis). See PhaseCheck.
	// PhaseUnchecked says the walk parted from the chains at its first rungs, where it starts
	// in their state: it cannot keep up with the data, and Phase says nothing.
	Hysteresis     float64
	Phase          bool
	PhaseUnchecked bool
	// Ascent and AscentFrom are the walk's means the phase check compared (PhaseWalk), at rungs
	// AscentFrom, …; nil where the rank ran none.
	Ascent     []float64
	AscentFrom int
	// Apart holds, for a rank whose replicas each ran on the path from their own reference
	// (CombineReferencePath), the estimates of the replicas left out of LogEvidence: more than
	// three standard errors below the best, their references were fitted in basins of less mass.
	Apart []float64
	// RateMean and RateSD are the posterior mean and standard deviation at t = 1 under a
	// hyperprior of every factor's prior rate and last of their product (PoolRates, in
	// ChainSummary.RateMean's order); nil at fixed rates.
	RateMean, RateSD []float64
	// Uncovered says, for such a rank, that the posterior spreads where the references have
	// almost no mass: f(1) − log p(X | R), which estimates KL(π₁ ‖ q) ≥ 0, lies far above
	// log p(X | R) − f(0), which estimates KL(q ‖ π₁) (CombineReferencePath), and the chains near
	// t = 1 cannot integrate the path's last stretch.
	Uncovered bool
}

// RoundEstimate is a racing rank's estimate after one round.
type RoundEstimate struct {
	Round       int
	LogEvidence float64
	// StdErr includes Drift, the part of it that measures a transient rather than noise.
	StdErr, Drift float64
	Steps         int
}

// Combine reduces the chain summaries of one rank into its log evidence by Ladder.Rule, each rung's
// slope taken from the means (slopesFromMeans) where it is not steady: its records rest on fewer
// than MinESS effective samples or hold a transient, and then merges the checks' verdicts
// (Check.Merge) into a rank none of whose chains diverged. Every rung of the ladder needs at
// least one chain; replicas are indexed by Chain.
func Combine(l Ladder, chains []ChainSummary, checks ...Check) (RankEvidence, error) {
	re, err := combine(l, func(rungs []Rung) ([]float64, []float64) {
		wf, wv := l.Rule()
		return l.slopesFromMeans(wf, wv, func(i int) bool { return rungs[i].steady() })
	}, chains)
	if err != nil || len(re.Diverged) > 0 {
		// A diverged rank has no estimate to check.
		return re, err
	}
	for _, c := range checks {
		re = c.Merge(re, l)
	}
	return re, nil
}

// combine is Combine by the rule whose weights, wf on the rungs' means and wv on their variances,
// weights gives from the rungs.
func combine(l Ladder, weights func([]Rung) (wf, wv []float64), chains []ChainSummary) (RankEvidence, error) {
	if len(chains) == 0 {
		return RankEvidence{}, fmt.Errorf("no chain summaries")
	}
	re := RankEvidence{Rank: chains[0].Rank}
	byRung := make([][]ChainSummary, len(l))
	for _, c := range chains {
		if c.Rank != re.Rank {
			return re, fmt.Errorf("summaries of ranks %d and %d mixed", re.Rank, c.Rank)
		}
		if c.TIndex < 0 || c.TIndex >= len(l) || l[c.TIndex] != c.T {
			return re, fmt.Errorf("rank %d: chain %d has temperature index %d (t=%v), not on the ladder", c.Rank, c.Chain, c.TIndex, c.T)
		}
		re.Steps += c.Steps
		re.CellEvals += c.CellEvals
		if c.Warm {
			re.WarmChains++
		}
		switch {
		case c.Divergence != "":
			re.Diverged = append(re.Diverged, c.Divergence)
		case c.Count == 0:
			re.Diverged = append(re.Diverged, fmt.Sprintf("rank %d, t=%.6g (temperature %d), chain %d: no records", c.Rank, c.T, c.TIndex, c.Chain))
		case math.IsNaN(c.Mean) || math.IsInf(c.Mean, 0) || math.IsNaN(c.M2) || math.IsInf(c.M2, 0):
			re.Diverged = append(re.Diverged, fmt.Sprintf("rank %d, t=%.6g (temperature %d), chain %d: records average %v with squared deviations %v", c.Rank, c.T, c.TIndex, c.Chain, c.Mean, c.M2))
		}
		byRung[c.TIndex] = append(byRung[c.TIndex], c)
	}
	sort.Strings(re.Diverged)
	re.RateMean, re.RateSD = PoolRates(chains)
	f := make([]float64, len(l))
	v := make([]float64, len(l))
	for i, cs := range byRung {
		if len(cs) == 0 {
			return re, fmt.Errorf("rank %d: no chain at temperature index %d (t=%v)", re.Rank, i, l[i])
		}
		sort.Slice(cs, func(a, b int) bool { return cs[a].Chain < cs[b].Chain })
		r := combineRung(l[i], cs)
		re.Rungs = append(re.Rungs, r)
		f[i], v[i] = r.MeanLogLik, r.VarLogLik
	}
	if len(re.Diverged) > 0 {
		re.LogEvidence, re.StdErr, re.Trapezoid = math.NaN(), math.NaN(), math.NaN()
		return re, nil
	}
	wf, wv := weights(re.Rungs)
	re.Trapezoid = Trapezoid(l, f)
	for i := range l {
		re.LogEvidence += wf[i]*f[i] + wv[i]*v[i]
	}
	if math.IsNaN(re.LogEvidence) || math.IsInf(re.LogEvidence, 0) {
		// Finite records can still overflow the sums (records near 1e308).
		re.Diverged = append(re.Diverged, fmt.Sprintf("rank %d: the estimate overflows (%v)", re.Rank, re.LogEvidence))
		re.LogEvidence, re.StdErr, re.Trapezoid = math.NaN(), math.NaN(), math.NaN()
		return re, nil
	}
	plain, controlled := 0.0, false
	for i, r := range re.Rungs {
		w := r.withinVariance(wf[i], wv[i])
		re.StdErrWithin += w
		plain += w // a rung without controls counts as it is
		if r.plainSE > 0 {
			plain += wf[i] * wf[i] * (r.plainSE*r.plainSE - r.StdErr*r.StdErr)
			controlled = true
		}
	}
	re.StdErrWithin = math.Sqrt(re.StdErrWithin)
	if controlled {
		re.StdErrPlain = math.Sqrt(max(plain, 0))
	}
	re.StdErr = re.StdErrWithin
	if between, whole, ok := replicaVariance(wf, wv, byRung); ok {
		// The replicas' spread sees modes a chain never leaves, which the within-chain estimate
		// misses; with two replicas each rung's spread rests on one degree of freedom, so the
		// rungs' are summed before the estimates of the integral's variance are compared: the
		// larger of sums, not the sum of per-rung larger ones, which is biased up by the chance
		// highs of single degrees of freedom. The whole integrals' spread is the one estimate
		// that sees what a replica's rungs share.
		total := 0.0
		for _, b := range between {
			total += b
		}
		re.StdErr = math.Max(re.StdErr, math.Sqrt(max(total, whole)))
	}
	if d, ok := drift(wf, byRung); ok {
		re.Drift = d
		re.StdErr = math.Hypot(re.StdErr, d)
	}
	return re, nil
}

// A Check is the result of an estimator that tests a rank's estimate instead of entering it
// (PhaseWalk): Combine merges it into the rank's evidence.
type Check interface {
	// Merge returns re, the estimate on ladder l, with the check's verdict.
	Merge(re RankEvidence, l Ladder) RankEvidence
}

// PhaseWalk is the phase check's result: the mean log-likelihood of a walk back up the ladder at
// each rung from From to t = 1 (sti's phase check), which Merge compares with the rungs' means
// (PhaseCheck).
type PhaseWalk struct {
	From  int
	Means []float64
}

// Merge is re with the phase check of the walk: where the walk and the rungs part beyond their
// noise, the area between them widens the standard error.
func (w PhaseWalk) Merge(re RankEvidence, l Ladder) RankEvidence {
	re.Ascent, re.AscentFrom = w.Means, w.From
	re.Hysteresis, re.Phase, re.PhaseUnchecked = PhaseCheck(l, re.Rungs, w.From, w.Means)
	if re.Phase {
		re.StdErr = math.Sqrt(re.StdErr*re.StdErr + PhaseVariance(re.Hysteresis))
	}
	return re
}

// drift is RankEvidence.Drift by the rule's weights wf: the difference d between the integrals
// of the rungs' plain means and of their first halves' means, less its noise, √(d² − σ²) where
// |d| stands out by more than RaceZ·σ, and 0 where it does not (so that chains without a
// transient add no noise to their error bar). With independent halves d is half the difference
// of the halves' integrals, whose variance σ² is that of the whole's plain mean,
// Σ_i wf_i² s_i²/ESS_i. It needs every chain's HalfMean.
func drift(wf []float64, byRung [][]ChainSummary) (float64, bool) {
	d, noise := 0.0, 0.0
	for i, cs := range byRung {
		full, half, n := 0.0, 0.0, 0
		for _, c := range cs {
			if c.HalfCount == 0 || c.Count < 2 {
				return 0, false
			}
			full += c.Mean
			half += c.HalfMean
			if c.ESS > 0 {
				noise += wf[i] * wf[i] * c.M2 / float64(c.Count-1) / c.ESS / float64(len(cs)*len(cs))
			}
			n++
		}
		d += wf[i] * (full - half) / float64(n)
	}
	if d*d <= RaceZ*RaceZ*noise {
		return 0, true
	}
	return math.Sqrt(d*d - noise), true
}

// withinVariance is the rung's share of the integral's variance from within its chains, with
// weights wf on its mean and wv on its variance in the rule: the mean's s²/ESS, and the variance's
// 2v²/ESS (that of a sample variance of Gaussian records), or its own where the law of total
// variance gave it (totalVariance). On large data v ≈ d/(2t²) is large and the second term
// matters: on the Facebook-size tensor at rank 1, with the means controlled, the plain sample
// variances carried nearly all of the integral's standard error.
func (r Rung) withinVariance(wf, wv float64) float64 {
	v := wf * wf * r.StdErr * r.StdErr
	switch {
	case r.varSE2 > 0:
		v += wv * wv * r.varSE2
	case wv != 0 && r.ESS > 0:
		v += wv * wv * 2 * r.VarLogLik * r.VarLogLik / r.ESS
	}
	return v
}

// replicaVariance estimates Var(log evidence) from the spread of independent replicas, two ways.
// The integral is a sum over rungs of g_i = wf_i f̄_i + wv_i v̄_i (the weights of the rule), and
// at each rung the replicas are independent draws of (f, v). Each rung's s_i²/C_i, with s_i² the
// sample variance of wf_i f_ic + wv_i v_ic over replicas c, summed over the rungs, is unbiased
// where the rungs are independent, whatever the chains' autocorrelation, and sees what a
// within-chain estimate cannot: replicas stuck in different modes or not yet burnt in. But a
// replica's rungs are not independent: its walk down the ladder starts each rung where the rung
// above left it, from the replica's own mode, and a replica whose search ended lower sits lower at
// every rung. The spread of the replicas' whole integrals Σ_i g_ic, over C, sees that too, on C − 1
// degrees of freedom. It returns the rungs' shares and the whole integrals' estimate (0 where the
// rungs do not all hold the same replicas); it needs two replicas with records at every rung.
func replicaVariance(wf, wv []float64, byRung [][]ChainSummary) ([]float64, float64, bool) {
	out := make([]float64, len(wf))
	whole := map[int]float64{}
	same := true
	for i, cs := range byRung {
		var g []float64
		slopes := steinSlopes(cs)
		factor, total := condFactor(cs)
		seen := 0
		for k, c := range cs {
			if c.Count < 2 {
				continue
			}
			mean, _, _ := c.controlled(slopes[k])
			var gi float64
			if total {
				gi = wf[i]*mean + wv[i]*(c.CondVar[factor]+c.condMeanM2(factor)/float64(c.Count-1))
			} else {
				gi = wf[i]*mean + wv[i]*c.M2/float64(c.Count-1)
			}
			g = append(g, gi)
			if _, ok := whole[c.Chain]; ok || i == 0 {
				whole[c.Chain] += gi
				seen++
			}
		}
		if len(g) < 2 {
			return nil, 0, false
		}
		same = same && seen == len(g) && len(g) == len(whole)
		out[i] = sampleVariance(g) / float64(len(g))
	}
	if !same {
		return out, 0, true
	}
	g := make([]float64, 0, len(whole))
	for _, x := range whole {
		g = append(g, x)
	}
	sort.Float64s(g) // a map's order is random; the sums must not be
	return out, sampleVariance(g) / float64(len(g)), true
}

// sampleVariance is the unbiased sample variance of g, of at least two values.
func sampleVariance(g []float64) float64 {
	mean := 0.0
	for _, x := range g {
		mean += x
	}
	mean /= float64(len(g))
	ss := 0.0
	for _, x := range g {
		ss += (x - mean) * (x - mean)
	}
	return ss / float64(len(g)-1)
}

// combineRung pools the chains of one temperature: the mean weights the chains' controlled means
// by their record counts, its variance adds their s²/ESS, and the log-likelihood variance pools
// the records within and between chains.
func combineRung(t float64, cs []ChainSummary) Rung {
	r := Rung{T: t, Chains: len(cs)}
	n := 0
	raw := 0.0
	controlled := false
	slopes := steinSlopes(cs)
	for k, c := range cs {
		mean, _, ess := c.controlled(slopes[k])
		n += c.Count
		r.MeanLogLik += float64(c.Count) * mean
		raw += float64(c.Count) * c.Mean
		r.ESS += ess
		if d := c.Mean - c.HalfMean; c.HalfCount > 0 && c.Count > 1 && c.ESS > 0 && d*d > RaceZ*RaceZ*c.M2/float64(c.Count-1)/c.ESS {
			r.transient = true
		}
	}
	if n == 0 {
		r.MeanLogLik, r.StdErr, r.VarLogLik = math.NaN(), math.NaN(), math.NaN()
		return r
	}
	r.MeanLogLik /= float64(n)
	raw /= float64(n)
	ss := 0.0
	for k, c := range cs {
		d := c.Mean - raw
		ss += c.M2 + float64(c.Count)*d*d
		_, m2, ess := c.controlled(slopes[k])
		if c.Count > 1 && ess > 0 {
			wc := float64(c.Count) / float64(n)
			r.StdErr += wc * wc * (m2 / float64(c.Count-1)) / ess
			r.plainSE += wc * wc * (c.M2 / float64(c.Count-1)) / c.ESS
		}
		if slopes[k] != nil {
			controlled = true
		}
	}
	if controlled {
		r.plainSE = math.Sqrt(r.plainSE)
	} else {
		r.plainSE = 0
	}
	if n > 1 {
		r.VarLogLik = ss / float64(n-1)
	}
	if v, se2, ok := totalVariance(cs, r.ESS); ok {
		r.VarLogLik, r.varSE2 = v, se2
	}
	r.StdErr = math.Sqrt(r.StdErr)
	return r
}

// steinSlopes returns the slopes β of each chain of a rung whose records carry control variates
// z (ChainSummary.SteinMean): the least-squares coefficients of the records on z pooled over the
// rung's other chains. Slopes from the chain's own records would correlate with its means of z
// and bias the controlled mean by O(1/n); slopes from independent chains leave it unbiased. A
// chain alone at its rung, or whose variates differ in number from the others', keeps β = nil,
// its plain mean.
func steinSlopes(cs []ChainSummary) [][]float64 {
	slopes := make([][]float64, len(cs))
	for i, c := range cs {
		p := len(c.SteinMean)
		if p == 0 {
			continue
		}
		m2, co := make([]float64, p*p), make([]float64, p)
		others := 0
		for j, o := range cs {
			if j == i || len(o.SteinMean) != p || len(o.SteinM2) != p*p || len(o.SteinCo) != p {
				continue
			}
			others++
			for k, v := range o.SteinM2 {
				m2[k] += v
			}
			for k, v := range o.SteinCo {
				co[k] += v
			}
		}
		if others > 0 {
			slopes[i] = LeastSquares(m2, co)
		}
	}
	return slopes
}

// LeastSquares solves m2 β = co for the slopes of a regression on p variates, given the sums of
// products of their deviations (m2, p × p) and of their deviations with the records' (co).
// Variates without variance get slope zero; where none has variance, or the others are collinear
// to rounding (their correlation matrix's condition number above maxCond), it returns nil: the
// plain mean, which is unbiased whatever the variates.
func LeastSquares(m2, co []float64) []float64 {
	p := len(co)
	var keep []int
	for k := range p {
		if m2[k*p+k] > 0 {
			keep = append(keep, k)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	// In units of each variate's standard deviation, so that the condition number measures
	// collinearity, not the variates' scales.
	sd := make([]float64, len(keep))
	for x, k := range keep {
		sd[x] = math.Sqrt(m2[k*p+k])
	}
	a := mat.NewSymDense(len(keep), nil)
	b := mat.NewVecDense(len(keep), nil)
	for x, k := range keep {
		b.SetVec(x, co[k]/sd[x])
		for y := x; y < len(keep); y++ {
			a.SetSym(x, y, m2[k*p+keep[y]]/(sd[x]*sd[y]))
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) || ch.Cond() > maxCond {
		return nil
	}
	var sol mat.VecDense
	if err := ch.SolveVecTo(&sol, b); err != nil {
		return nil
	}
	beta := make([]float64, p)
	for x, k := range keep {
		beta[k] = sol.AtVec(x) / sd[x]
	}
	return beta
}

// maxCond is the largest condition number of the variates' correlation matrix that LeastSquares
// solves: beyond it rounding decides the slopes.
const maxCond = 1e10

// controlled returns the mean, the sum of squared deviations and the effective sample size of the
// chain's records less b·z (steinSlopes); the plain ones for b nil.
func (c ChainSummary) controlled(b []float64) (mean, m2, ess float64) {
	if b == nil {
		return c.Mean, c.M2, c.ESS
	}
	ess = c.SteinESS
	if ess <= 0 {
		ess = c.ESS
	}
	p := len(b)
	mean, m2 = c.Mean, c.M2
	for k, bk := range b {
		mean -= bk * c.SteinMean[k]
		m2 -= 2 * bk * c.SteinCo[k]
		for l, bl := range b {
			m2 += bk * bl * c.SteinM2[k*p+l]
		}
	}
	return mean, max(m2, 0), ess
}

// PosteriorProbs returns p(R | X) ∝ p(X | R) under a uniform prior over the given ranks. NaN
// evidences (diverged ranks) get probability NaN and are left out of the normalisation.
func PosteriorProbs(logEvidence []float64) []float64 {
	p := make([]float64, len(logEvidence))
	max := math.Inf(-1)
	for _, e := range logEvidence {
		if !math.IsNaN(e) && e > max {
			max = e
		}
	}
	s := 0.0
	for i, e := range logEvidence {
		if math.IsNaN(e) {
			p[i] = math.NaN()
			continue
		}
		p[i] = math.Exp(e - max)
		s += p[i]
	}
	for i := range p {
		if !math.IsNaN(p[i]) {
			p[i] /= s
		}
	}
	return p
}
