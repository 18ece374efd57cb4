package isnmf

import (
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/mathext"
)

// The references of SMC1 and SMC2. While a column of the masked dictionary is zero its excitation
// does not touch the likelihood, so its factor in the targets is free as long as it is a
// normalised density; the paper leaves it at the prior, IG(1, 1) in its experiments, whose tail
// puts many particles where the posterior has none, and the first steps of the column's move then
// spend the population's weight finding the few that are not. SMC1 and SMC2 instead hold each such
// excitation at a reference fitted to its posterior at the end of its column's move, and bridge
// reference to prior geometrically over the move (mixFactors), so the weights carry both densities
// exactly and the end of every move is the paper's target.

// referenceTemper widens a reference beyond the posterior it is fitted to: the variance of log h
// it matches is the posterior's divided by this, so that it covers a posterior wider or more
// skewed than the fit says.
const referenceTemper = 0.5

// withReferences returns the schedule mask with each moving column's factor bridged from its
// reference to its prior: moves[i] is the column segment i moves out (−1 for a segment that
// moves none). The reference of a column is fitted to the posterior at the end of its move, where
// the mask schedules it (posteriorModes.reference).
func withReferences(m *Model, x []float64, mask schedule, moves []int) schedule {
	refs := make([]igFactor, m.K)
	scratch := newTarget(m)
	for i, k := range moves {
		if k >= 0 {
			mask(position{i, 1}, &scratch)
			refs[k] = findModes(m, x, &scratch).reference(m, k)
		}
	}
	return func(at position, t *target) {
		mask(at, t)
		for i, k := range moves {
			if k >= 0 {
				t.factor[k] = mixFactors(refs[k], invGammaFactor(m.A[k], m.B[k]), at.share(i))
			}
		}
	}
}

// reference is the inverse gamma fitted to the posterior's one mode: log h_k with the mode's
// value as its mean and the Laplace variance divided by referenceTemper (log h under IG(α, β) has mean log β − ψ(α) and
// variance ψ'(α)), with a shape of at most the prior's plus u per feature of the column, so that
// its tail is no lighter than the posterior's. Where the posterior has several modes it is the
// prior: a fit to one mode shuts the others out until the end of the move, and so does a
// posterior with no mode of definite curvature.
func (q *posteriorModes) reference(m *Model, k int) igFactor {
	if len(q.mean) != 1 {
		return invGammaFactor(m.A[k], m.B[k])
	}
	shape := math.Min(invTrigamma(q.cov[0].At(k, k)/referenceTemper), m.A[k]+m.U*q.features[k])
	return invGammaFactor(shape, math.Exp(q.mean[0][k]+mathext.Digamma(shape)))
}

// trigamma is ψ'(x) for x > 0: the recurrence ψ'(x) = ψ'(x + 1) + 1/x² up to x ≥ 6, then the
// asymptotic series, accurate there to 1e-10.
func trigamma(x float64) float64 {
	var acc float64
	for ; x < 6; x++ {
		acc += 1 / (x * x)
	}
	x2 := 1 / (x * x)
	return acc + 1/x + x2/2 + (1.0/6-x2*(1.0/30-x2*(1.0/42-x2/30)))*x2/x
}

// invTrigamma is the α > 0 with ψ'(α) = v, by bisection on log α over [1e−6, 1e8] (ψ' falls from
// 10¹² to 10⁻⁸ there).
func invTrigamma(v float64) float64 {
	lo, hi := math.Log(1e-6), math.Log(1e8)
	for range 200 {
		mid := (lo + hi) / 2
		if trigamma(math.Exp(mid)) > v {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Exp((lo + hi) / 2)
}

// equalShares is η at which every excitation is the collapsed dictionary's maximum-likelihood
// scale: h_k = H with H Σ_k d_fk fitting the powers on average.
func equalShares(m *Model, x []float64, t *target) []float64 {
	K := m.K
	var sumRatio, n float64
	for f, p := range x {
		var s float64
		for _, d := range t.d[f*K : (f+1)*K] {
			s += d
		}
		if t.power[f] > 0 && s > 0 {
			sumRatio += t.power[f] * p / s
			n += t.power[f]
		}
	}
	eta := make([]float64, K)
	for k := range eta {
		eta[k] = math.Log(math.Max(sumRatio/math.Max(n, 1), 1e-300))
	}
	return eta
}

// climb maximises the log posterior of η = log h under target t by damped
// Newton steps (Levenberg–Marquardt) from eta, and returns the mode and the negative Hessian there.
func climb(m *Model, x []float64, t *target, eta []float64) ([]float64, *mat.SymDense) {
	K := m.K
	next := make([]float64, K)
	damping := 1e-3
	val, grad, hess := logPosterior(m, x, t, eta)
	for range 200 {
		step := mat.NewVecDense(K, nil)
		var chol mat.Cholesky
		damped := mat.NewSymDense(K, nil)
		for i := range K {
			for j := i; j < K; j++ {
				damped.SetSym(i, j, hess.At(i, j))
			}
			damped.SetSym(i, i, hess.At(i, i)+damping*(1+math.Abs(hess.At(i, i))))
		}
		if !chol.Factorize(damped) || chol.SolveVecTo(step, mat.NewVecDense(K, grad)) != nil {
			damping *= 10
			continue
		}
		for i := range K {
			next[i] = eta[i] + step.AtVec(i)
		}
		v, g, h := logPosterior(m, x, t, next)
		if !(v > val) {
			if damping *= 10; damping > 1e12 {
				break
			}
			continue
		}
		converged := v-val < 1e-10
		copy(eta, next)
		val, grad, hess = v, g, h
		damping = math.Max(damping/10, 1e-9)
		if converged {
			break
		}
	}
	return eta, hess
}

// logPosterior is the log posterior of η = log h under target t, with its factors (up to a
// constant), its gradient and its negative Hessian.
func logPosterior(m *Model, x []float64, t *target, eta []float64) (float64, []float64, *mat.SymDense) {
	K, u := m.K, m.U
	h := make([]float64, K)
	grad := make([]float64, K)
	neg := mat.NewSymDense(K, nil)
	var val float64
	for k, e := range eta {
		a, b := t.factor[k].shape, t.factor[k].scale
		h[k] = math.Exp(e)
		val -= a*e + b/h[k]
		grad[k] = -a + b/h[k]
		neg.SetSym(k, k, b/h[k])
	}
	lam := make([]float64, K)
	for f, p := range x {
		beta := t.power[f]
		if beta == 0 {
			continue
		}
		var v float64
		for k, d := range t.d[f*K : (f+1)*K] {
			lam[k] = d * h[k]
			v += lam[k]
		}
		val -= beta * u * (math.Log(v) + p/v)
		// d/dη_k of −u(log v + p/v) is −u(1/v − p/v²)λ_k; the second derivatives follow.
		first := -beta * u * (1/v - p/(v*v))
		second := -beta * u * (2*p/(v*v*v) - 1/(v*v))
		for k := range K {
			if lam[k] == 0 {
				continue
			}
			grad[k] += first * lam[k]
			neg.SetSym(k, k, neg.At(k, k)-first*lam[k])
			for j := k; j < K; j++ {
				neg.SetSym(k, j, neg.At(k, j)-second*lam[k]*lam[j])
			}
		}
	}
	return val, grad, neg
}

// posteriorModes are the distinct modes of the posterior of η = log h under a target, each with
// its Laplace approximation: what SMC1 and SMC2 choose their kept column by, fit their references
// to and jump between (modeJump).
type posteriorModes struct {
	mean     [][]float64
	cov      []*mat.SymDense // Laplace covariances
	logMass  []float64       // Laplace masses, normalised
	features []float64       // Σ_f β_f over the features column k has weight in
}

// findModes climbs the posterior of x under target t from equal shares, from each column alone
// explaining the data (h_k at the collapsed dictionary's scale times Σ_fj d_fj / Σ_f d_fk, the
// others at their factor's mode) and from the given starts (the modes of a nearby target), and
// keeps each mode once. A column's posterior often has one mode per column that could explain
// most of the data.
func findModes(m *Model, x []float64, t *target, from ...[]float64) *posteriorModes {
	K := m.K
	shares := equalShares(m, x, t)
	q := &posteriorModes{features: make([]float64, K)}
	sums := make([]float64, K)
	var total float64
	for f := range m.F {
		for k, d := range t.d[f*K : (f+1)*K] {
			sums[k] += d
			total += d
			if d > 0 {
				q.features[k] += t.power[f]
			}
		}
	}
	starts := [][]float64{shares}
	for k := range K {
		if sums[k] == 0 {
			continue
		}
		s := make([]float64, K)
		for j := range K {
			s[j] = math.Log(t.factor[j].scale / t.factor[j].shape)
		}
		s[k] = shares[k] + math.Log(total/sums[k])
		starts = append(starts, s)
	}
	for _, s := range from {
		starts = append(starts, slices.Clone(s))
	}
	for _, s := range starts {
		eta, prec := climb(m, x, t, s)
		if slices.ContainsFunc(q.mean, func(o []float64) bool { return floats.Distance(o, eta, math.Inf(1)) < 1e-3 }) {
			continue
		}
		var chol mat.Cholesky
		cov := new(mat.SymDense)
		if !chol.Factorize(prec) || chol.InverseTo(cov) != nil {
			continue
		}
		val, _, _ := logPosterior(m, x, t, eta)
		q.mean = append(q.mean, eta)
		q.cov = append(q.cov, cov)
		q.logMass = append(q.logMass, val-0.5*chol.LogDet())
	}
	top := floats.LogSumExp(q.logMass)
	for c := range q.logMass {
		q.logMass[c] -= top
	}
	return q
}

// contributionOrder lists the columns by decreasing contribution ĥ_k Σ_f w_fk to the data at the
// heaviest mode ĥ, then all but the first by increasing contribution: the column that explains
// most is kept, and the others move out smallest first.
func (q *posteriorModes) contributionOrder(m *Model) []int {
	heaviest := q.mean[floats.MaxIdx(q.logMass)]
	share := make([]float64, m.K)
	for f := range m.F {
		for k, w := range m.W[f*m.K : (f+1)*m.K] {
			share[k] += w * math.Exp(heaviest[k])
		}
	}
	order := make([]int, m.K)
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(i, j int) bool { return share[order[i]] > share[order[j]] })
	slices.Reverse(order[1:])
	return order
}

// fullTarget is the model's own target: the dictionary W, every feature in, the priors.
func fullTarget(m *Model) *target {
	t := newTarget(m)
	copy(t.d, m.W)
	t.setPowers(1)
	return &t
}
