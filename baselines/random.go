package baselines

import "math"

// logMeanExp returns log((1/n) Σ exp(v)) and the delta-method standard error of that log from
// the sample variance of exp(v): se = sd(e^v) / (√n · mean(e^v)).
func logMeanExp(v []float64) (float64, float64) {
	n := float64(len(v))
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, x)
	}
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return m, math.NaN()
	}
	s, s2 := 0.0, 0.0
	for _, x := range v {
		e := math.Exp(x - m)
		s += e
		s2 += e * e
	}
	mean := s / n
	if len(v) < 2 {
		return m + math.Log(mean), math.NaN()
	}
	variance := (s2 - n*mean*mean) / (n - 1)
	return m + math.Log(mean), math.Sqrt(max(variance, 0)/n) / mean
}

// batchLogMeanExp returns log((1/n) Σ exp(v)) and a standard error of it from the means of
// `batches` contiguous batches of exp(v) (batch means, for the correlated terms of one chain),
// through the delta method.
func batchLogMeanExp(v []float64, batches int) (float64, float64) {
	n := len(v)
	if batches > n {
		batches = n
	}
	if batches < 2 {
		lm, _ := logMeanExp(v)
		return lm, math.NaN()
	}
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, x)
	}
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return m, math.NaN()
	}
	means := make([]float64, batches)
	total := 0.0
	for b := range batches {
		lo, hi := b*n/batches, (b+1)*n/batches
		s := 0.0
		for _, x := range v[lo:hi] {
			s += math.Exp(x - m)
		}
		total += s
		means[b] = s / float64(hi-lo)
	}
	mean := total / float64(n)
	ss := 0.0
	for _, bm := range means {
		ss += (bm - mean) * (bm - mean)
	}
	se := math.Sqrt(ss/float64(batches-1)/float64(batches)) / mean
	return m + math.Log(mean), se
}
