package evidence

import (
	"fmt"
	"math"
	"sort"
)

// AnnealSummary is what the annealing stage of one replica of a rank reports: its adaptive ladder
// with the population's estimates of f(t) and v(t) = f'(t) at every temperature, and its SMC
// estimate of the log evidence. All fields are exported so it can cross Beam stages.
type AnnealSummary struct {
	Rank, Replica int
	// T, Mean, Var and ESS are per stage: the temperature, the population's weighted mean and
	// variance of log p(X | θ), and its effective sample size.
	T, Mean, Var, ESS []float64
	// LogZ is the sum over stages of the log mean incremental weight; FirstLogZ is the first
	// stage's, from the prior's population at t = 0 to T[1]: an estimate of ∫₀^T[1] f(t) dt.
	LogZ, FirstLogZ float64
	Steps           int
	CellEvals       int64
	// Divergence describes a non-finite value the annealing met; empty when it did not.
	Divergence string
}

// disagreement is the number of combined standard errors by which the two estimates of an
// annealed rank may differ before the rank is flagged.
const disagreement = 3

// CombineAnnealed reduces the annealing summaries of a rank's replicas and the chains run from
// their populations into its evidence. A chain's TIndex is the index of its stage in its
// replica's ladder and its Chain the replica. At each stage the population's mean and the
// chain's records are pooled, weighted by their effective sample sizes, into f(t) and v(t); each
// replica's first stage's increment (FirstLogZ) plus its integral by Ladder.Rule over the rest of
// its own ladder is one estimate of the thermodynamic integral, and the replicas' mean and spread
// give LogEvidence and TIStdErr. The rule is not used on [0, t₁]: it reads f and v at t = 0, the
// prior's mean and variance of log p(X | θ), which a heavy-tailed prior does not have (under
// --rate auto, 1/λ of a Gamma(1, b) rate has no mean), where the first increment's weights
// exp(t₁·log p(X | θ)) are bounded by the likelihood's maximum whatever the prior. The SMC estimates of the
// replicas give SMC and SMCStdErr. The two estimates come from the same populations but fail
// differently — a population that lags behind its temperature biases the SMC estimate low, and
// chains that have not relaxed bias the integral — so their difference beyond what their
// standard errors explain is added to StdErr as variance, and a difference of more than three
// combined standard errors sets Disagree.
func CombineAnnealed(anneals []AnnealSummary, chains []ChainSummary) (RankEvidence, error) {
	if len(anneals) == 0 {
		return RankEvidence{}, fmt.Errorf("no annealing summaries")
	}
	re := RankEvidence{Rank: anneals[0].Rank, Replicas: len(anneals)}
	byReplica := map[int]int{}
	for i, a := range anneals {
		if a.Rank != re.Rank {
			return re, fmt.Errorf("summaries of ranks %d and %d mixed", re.Rank, a.Rank)
		}
		if _, dup := byReplica[a.Replica]; dup {
			return re, fmt.Errorf("rank %d: replica %d annealed twice", re.Rank, a.Replica)
		}
		n := len(a.T)
		if a.Divergence == "" && (n < 2 || len(a.Mean) != n || len(a.Var) != n || len(a.ESS) != n || a.T[0] != 0 || a.T[n-1] != 1) {
			return re, fmt.Errorf("rank %d: replica %d has a malformed ladder of %d temperatures", re.Rank, a.Replica, n)
		}
		byReplica[a.Replica] = i
		re.Steps += a.Steps
		re.CellEvals += a.CellEvals
		if a.Divergence != "" {
			re.Diverged = append(re.Diverged, a.Divergence)
		}
	}
	pooled := make([][]Rung, len(anneals))
	for i, a := range anneals {
		for k, t := range a.T {
			pooled[i] = append(pooled[i], Rung{T: t, MeanLogLik: a.Mean[k], VarLogLik: a.Var[k], ESS: a.ESS[k]})
		}
	}
	for _, c := range chains {
		i, ok := byReplica[c.Chain]
		if c.Rank != re.Rank || !ok {
			return re, fmt.Errorf("rank %d: chain of rank %d, replica %d has no annealing run", re.Rank, c.Rank, c.Chain)
		}
		if c.TIndex < 0 || c.TIndex >= len(pooled[i]) || pooled[i][c.TIndex].T != c.T {
			return re, fmt.Errorf("rank %d: chain of replica %d has stage %d (t=%v), not on its ladder", re.Rank, c.Chain, c.TIndex, c.T)
		}
		re.Steps += c.Steps
		re.CellEvals += c.CellEvals
		switch {
		case c.Divergence != "":
			re.Diverged = append(re.Diverged, c.Divergence)
			continue
		case c.Count == 0 || math.IsNaN(c.Mean) || math.IsInf(c.Mean, 0) || math.IsNaN(c.M2) || math.IsInf(c.M2, 0):
			re.Diverged = append(re.Diverged, fmt.Sprintf("rank %d, t=%.6g (stage %d), replica %d: %d records average %v with squared deviations %v", c.Rank, c.T, c.TIndex, c.Chain, c.Count, c.Mean, c.M2))
			continue
		}
		r := &pooled[i][c.TIndex]
		ess := math.Max(c.ESS, 1)
		v := 0.0
		if c.Count > 1 {
			v = c.M2 / float64(c.Count-1)
		}
		w := ess / (ess + r.ESS)
		r.MeanLogLik += w * (c.Mean - r.MeanLogLik)
		r.VarLogLik += w * (v - r.VarLogLik)
		r.ESS += ess
		r.Chains++
	}
	sort.Strings(re.Diverged)
	re.RateMean, re.RateSD = PoolRates(chains)
	if len(re.Diverged) > 0 {
		re.LogEvidence, re.StdErr, re.Trapezoid, re.SMC = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		return re, nil
	}
	ti := make([]float64, len(anneals))
	trap := make([]float64, len(anneals))
	smc := make([]float64, len(anneals))
	for i, a := range anneals {
		f := make([]float64, len(pooled[i]))
		v := make([]float64, len(pooled[i]))
		for k, r := range pooled[i] {
			f[k], v[k] = r.MeanLogLik, r.VarLogLik
			pooled[i][k].StdErr = math.Sqrt(r.VarLogLik / math.Max(r.ESS, 1))
		}
		l := Ladder(a.T)
		trap[i] = Trapezoid(l, f)
		ti[i] = a.FirstLogZ + Integrate(l[1:], f[1:], v[1:])
		smc[i] = a.LogZ
		wf, wv := l[1:].Rule()
		for k, r := range pooled[i][1:] {
			re.StdErrWithin += r.withinVariance(wf[k], wv[k])
		}
		re.Rungs = append(re.Rungs, pooled[i]...)
	}
	re.StdErrWithin = math.Sqrt(re.StdErrWithin) / float64(len(anneals))
	sort.SliceStable(re.Rungs, func(a, b int) bool { return re.Rungs[a].T < re.Rungs[b].T })
	re.LogEvidence, re.TIStdErr = MeanStdErr(ti)
	re.Trapezoid, _ = MeanStdErr(trap)
	re.SMC, re.SMCStdErr = MeanStdErr(smc)
	if math.IsNaN(re.LogEvidence) || math.IsInf(re.LogEvidence, 0) || math.IsNaN(re.SMC) || math.IsInf(re.SMC, 0) {
		re.Diverged = append(re.Diverged, fmt.Sprintf("rank %d: the estimates overflow (integral %v, SMC %v)", re.Rank, re.LogEvidence, re.SMC))
		re.LogEvidence, re.StdErr, re.Trapezoid, re.SMC = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		return re, nil
	}
	re.StdErr, re.Disagree = widened(re.LogEvidence, re.TIStdErr, re.SMC, re.SMCStdErr)
	return re, nil
}

// widened is the standard error of an estimate a ± sa set against a second one, b ± sb, of the
// same quantity: sa with what of their difference √(sa² + sb²) does not explain added as
// variance, and whether they differ by more than disagreement combined standard errors.
func widened(a, sa, b, sb float64) (float64, bool) {
	d := a - b
	both := sa*sa + sb*sb
	return math.Sqrt(sa*sa + math.Max(0, d*d-both)), math.Abs(d) > disagreement*math.Sqrt(both)
}

// MeanStdErr returns the mean of x and its standard error √(s²/n); NaN as the error of one value.
func MeanStdErr(x []float64) (float64, float64) {
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	if len(x) < 2 {
		return m, math.NaN()
	}
	s := 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return m, math.Sqrt(s / float64(len(x)-1) / float64(len(x)))
}
