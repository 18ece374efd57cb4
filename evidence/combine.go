package evidence

import (
	"fmt"
	"math"
	"sort"
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
	// Divergence describes where the chain produced a non-finite value; empty when it did not.
	Divergence string
}

// Rung is the combined estimate at one temperature.
type Rung struct {
	T float64
	// MeanLogLik estimates f(t) = E_t[log p(X | θ)]; StdErr is its Monte Carlo standard error.
	MeanLogLik, StdErr float64
	// VarLogLik estimates v(t) = Var_t[log p(X | θ)] = f'(t) (it includes any subsampling noise
	// of the records, so it is an upper bound when the records are not exact).
	VarLogLik float64
	ESS       float64
	Chains    int
}

// RankEvidence is the log evidence of one rank.
type RankEvidence struct {
	Rank int
	// LogEvidence is the corrected trapezoid over the ladder.
	LogEvidence float64
	// StdErr is the Monte Carlo standard error: Σ_i w_i² Var(f̂_i), with each rung's variance from
	// the effective sample sizes of its independent chains.
	StdErr float64
	// StdErrReplicas is the standard error from the spread of the per-replica estimates
	// (zero with fewer than two replicas); a check on StdErr.
	StdErrReplicas float64
	// Trapezoid is the uncorrected rule; |LogEvidence − Trapezoid| indicates how much the
	// ladder's discretisation matters.
	Trapezoid float64
	Rungs     []Rung
	Steps     int
	CellEvals int64
	// Diverged lists the chains that produced non-finite values; when it is not empty the
	// estimate is not computed (LogEvidence is NaN).
	Diverged []string
}

// Combine reduces the chain summaries of one rank into its log evidence. Every rung of the ladder
// needs at least one chain; replicas are indexed by Chain.
func Combine(l Ladder, chains []ChainSummary) (RankEvidence, error) {
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
		if c.Divergence != "" {
			re.Diverged = append(re.Diverged, c.Divergence)
		}
		byRung[c.TIndex] = append(byRung[c.TIndex], c)
	}
	sort.Strings(re.Diverged)
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
	re.Trapezoid = Trapezoid(l, f)
	re.LogEvidence = re.Trapezoid - Correction(l, v)
	w := l.Weights()
	for i, r := range re.Rungs {
		re.StdErr += w[i] * w[i] * r.StdErr * r.StdErr
	}
	re.StdErr = math.Sqrt(re.StdErr)
	re.StdErrReplicas = replicaStdErr(l, byRung)
	return re, nil
}

// combineRung pools the chains of one temperature: the mean weights chains by their record counts,
// its variance adds the chains' s²/ESS, and the log-likelihood variance pools within and between chains.
func combineRung(t float64, cs []ChainSummary) Rung {
	r := Rung{T: t, Chains: len(cs)}
	n := 0
	for _, c := range cs {
		n += c.Count
		r.MeanLogLik += float64(c.Count) * c.Mean
		r.ESS += c.ESS
	}
	if n == 0 {
		r.MeanLogLik, r.StdErr, r.VarLogLik = math.NaN(), math.NaN(), math.NaN()
		return r
	}
	r.MeanLogLik /= float64(n)
	ss := 0.0
	for _, c := range cs {
		d := c.Mean - r.MeanLogLik
		ss += c.M2 + float64(c.Count)*d*d
		if c.Count > 1 && c.ESS > 0 {
			wc := float64(c.Count) / float64(n)
			r.StdErr += wc * wc * (c.M2 / float64(c.Count-1)) / c.ESS
		}
	}
	if n > 1 {
		r.VarLogLik = ss / float64(n-1)
	}
	r.StdErr = math.Sqrt(r.StdErr)
	return r
}

// replicaStdErr estimates the log evidence separately from each replica present at every rung and
// returns the standard error of their mean; zero when fewer than two complete replicas exist.
func replicaStdErr(l Ladder, byRung [][]ChainSummary) float64 {
	ids := map[int]int{}
	for _, cs := range byRung {
		for _, c := range cs {
			ids[c.Chain]++
		}
	}
	var est []float64
	for id, k := range ids {
		if k != len(l) {
			continue
		}
		f := make([]float64, len(l))
		v := make([]float64, len(l))
		for i, cs := range byRung {
			for _, c := range cs {
				if c.Chain == id {
					f[i] = c.Mean
					if c.Count > 1 {
						v[i] = c.M2 / float64(c.Count-1)
					}
				}
			}
		}
		est = append(est, CorrectedTrapezoid(l, f, v))
	}
	if len(est) < 2 {
		return 0
	}
	sort.Float64s(est) // a fixed summation order keeps the result bit-identical
	mean := 0.0
	for _, e := range est {
		mean += e
	}
	mean /= float64(len(est))
	ss := 0.0
	for _, e := range est {
		ss += (e - mean) * (e - mean)
	}
	return math.Sqrt(ss / float64(len(est)-1) / float64(len(est)))
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
