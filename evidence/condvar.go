package evidence

// The variance of the records ℓ at a rung, v(t) = Var_t[ℓ], enters the integral through the
// rule's derivative terms, and a sample variance of n records is noisy by about v·√(2/n). Where
// the chains record, for each factor k, the conditional mean E_t[ℓ | all factors but k] (as a
// control variate, ChainSummary.CondVar) and the conditional variance, the law of total variance
// gives v(t) = E_t[Var_t[ℓ | all but k]] + Var_t[E_t[ℓ | all but k]]: a mean of conditional
// variances, which vary far less than squared deviations do, and the sample variance of the
// conditional means, which lack factor k's fluctuation. At rank 1 of the Facebook-size tensor the
// derivative terms of plain sample variances carried nearly all the integral's standard error
// once the conditional means had controlled the rungs' means (README at fb09484, Known limits).

// condFactor returns the factor k whose conditional variance the rung's chains average highest,
// the one whose fluctuation leaves the conditional means, and whether every chain with records
// carries conditional moments of as many factors and enough variates for them.
func condFactor(cs []ChainSummary) (int, bool) {
	var sums []float64
	for _, c := range cs {
		if c.Count == 0 {
			continue
		}
		K := len(c.CondVar)
		if K == 0 || len(c.CondVarM2) != K || len(c.SteinMean) < K || len(c.SteinCo) != len(c.SteinMean) ||
			len(c.SteinM2) != len(c.SteinMean)*len(c.SteinMean) || (sums != nil && len(sums) != K) {
			return 0, false
		}
		if sums == nil {
			sums = make([]float64, K)
		}
		for k, v := range c.CondVar {
			sums[k] += float64(c.Count) * v
		}
	}
	if sums == nil {
		return 0, false
	}
	best := 0
	for k, s := range sums {
		if s > sums[best] {
			best = k
		}
	}
	return best, true
}

// condMean returns the mean of the chain's conditional means of factor k, E_t[ℓ | all but k], whose
// differences from the records are the last len(CondVar) control variates.
func (c ChainSummary) condMean(k int) float64 {
	j := len(c.SteinMean) - len(c.CondVar) + k
	return c.Mean + c.SteinMean[j]
}

// condMeanM2 returns the sum of the squared deviations of the chain's conditional means of
// factor k from their mean: those of ℓ + z_j for the variate z_j that carries them.
func (c ChainSummary) condMeanM2(k int) float64 {
	p := len(c.SteinMean)
	j := p - len(c.CondVar) + k
	return max(c.M2+2*c.SteinCo[j]+c.SteinM2[j*p+j], 0)
}

// totalVariance returns the rung's estimate of Var_t[ℓ] by the law of total variance for the
// factor condFactor chooses, and its squared standard error from ess effective records: that of a
// sample variance of Gaussian values, 2s⁴/ess, for the conditional means' part, and s_c²/ess for
// the mean of the conditional variances, s_c² their variance, the two taken as independent. ok
// is false where the chains carry no conditional moments.
func totalVariance(cs []ChainSummary, ess float64) (v, se2 float64, ok bool) {
	k, ok := condFactor(cs)
	if !ok {
		return 0, 0, false
	}
	n := 0
	var mean, cond float64
	for _, c := range cs {
		n += c.Count
		mean += float64(c.Count) * c.condMean(k)
		cond += float64(c.Count) * c.CondVar[k]
	}
	if n < 2 || !(ess > 0) {
		return 0, 0, false
	}
	mean /= float64(n)
	cond /= float64(n)
	var ssMean, ssCond float64
	for _, c := range cs {
		if c.Count == 0 {
			continue
		}
		d, e := c.condMean(k)-mean, c.CondVar[k]-cond
		ssMean += c.condMeanM2(k) + float64(c.Count)*d*d
		ssCond += c.CondVarM2[k] + float64(c.Count)*e*e
	}
	varMean, varCond := ssMean/float64(n-1), ssCond/float64(n-1)
	return cond + varMean, (2*varMean*varMean + varCond) / ess, true
}
