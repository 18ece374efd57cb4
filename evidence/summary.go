package evidence

import "math"

// Summarize returns the mean, the sum of squared deviations and the effective sample size of a
// series of correlated records. ESS uses Geyer's initial monotone sequence estimator of the
// integrated autocorrelation time, which handles the negative lag correlations that stratified
// passes over the data produce.
func Summarize(y []float64) (mean, m2, ess float64) {
	n := len(y)
	if n == 0 {
		return 0, 0, 0
	}
	for _, v := range y {
		mean += v
	}
	mean /= float64(n)
	for _, v := range y {
		m2 += (v - mean) * (v - mean)
	}
	if n < 4 || m2 == 0 {
		return mean, m2, float64(n)
	}
	c0 := m2 / float64(n)
	autocov := func(lag int) float64 {
		s := 0.0
		for i := 0; i+lag < n; i++ {
			s += (y[i] - mean) * (y[i+lag] - mean)
		}
		return s / float64(n)
	}
	// Sum of consecutive autocorrelation pairs Γ_k = ρ_{2k} + ρ_{2k+1}, truncated at the first
	// non-positive pair and forced monotone (Geyer 1992).
	tau := -1.0
	prev := math.Inf(1)
	for k := 0; 2*k+1 < n; k++ {
		g := (autocov(2*k) + autocov(2*k+1)) / c0
		if g <= 0 {
			break
		}
		if g > prev {
			g = prev
		}
		prev = g
		tau += 2 * g
	}
	if tau < 1/float64(n) {
		tau = 1 / float64(n)
	}
	ess = float64(n) / tau
	if ess > float64(n)*math.Log10(float64(n)) {
		// Antithetic records can give ESS above n; cap it so one lucky chain cannot dominate.
		ess = float64(n) * math.Log10(float64(n))
	}
	return mean, m2, ess
}
