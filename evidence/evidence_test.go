package evidence

import (
	"math"
	"strings"
	"testing"

	"github.com/stirank/stirank/rng"
)

func TestParseLadder(t *testing.T) {
	for _, c := range []struct {
		spec string
		T    int
		want Ladder
	}{
		{"uniform", 4, Ladder{0, 0.25, 0.5, 0.75, 1}},
		{"power:2", 2, Ladder{0, 0.25, 1}},
		{"list:0,0.1,1", 0, Ladder{0, 0.1, 1}},
	} {
		got, err := ParseLadder(c.spec, c.T)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		for i := range c.want {
			if math.Abs(got[i]-c.want[i]) > 1e-15 {
				t.Errorf("%s: got %v, want %v", c.spec, got, c.want)
				break
			}
		}
	}
	for _, bad := range []string{"list:0,0.5,0.4,1", "list:0.1,1", "list:0,0.5", "power:-1", "power:x", "cubic", "uniform"} {
		T := 3
		if bad == "uniform" {
			T = 0
		}
		if _, err := ParseLadder(bad, T); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The trapezoid is exact for linear f; Ladder.Rule (with v = f') for f = a + b/t above t₁ and for
// cubic f on [0, t₁], and close for smooth f.
func TestQuadratureExactness(t *testing.T) {
	l := Power(7, 3)
	f := make([]float64, len(l))
	v := make([]float64, len(l))
	for i, x := range l {
		f[i] = 3 - 2*x
	}
	if got := Trapezoid(l, f); math.Abs(got-2) > 1e-12 {
		t.Errorf("trapezoid of 3−2t = %v, want 2", got)
	}
	for i, x := range l {
		f[i] = 1 + x - 4*x*x + 5*x*x*x
		v[i] = 1 - 8*x + 15*x*x
	}
	want := 1 + 0.5 - 4.0/3 + 5.0/4
	if got := Trapezoid(l, f); math.Abs(got-want) < 1e-3 {
		t.Errorf("plain trapezoid should not be exact for a cubic on this ladder (got %v)", got)
	}
	l = Power(30, 6)
	f, v = make([]float64, len(l)), make([]float64, len(l))
	for i, x := range l {
		f[i] = 1 + x - 4*x*x + 5*x*x*x
		v[i] = 1 - 8*x + 15*x*x
	}
	// Not exact (t·f is not a cubic in log t, and the slope at t = 1 comes from a fit in 1/t and
	// t that a cubic in t is not) but close on the default ladder: 1.1·10⁻³ off, 5.5·10⁻⁴ with
	// the exact v(1).
	if got := Integrate(l, f, v); math.Abs(got-want) > 2e-3 {
		t.Errorf("Hermite rule of a cubic = %.15f, want %.15f", got, want)
	}
	// f = C − c/(t+s), the shape of a likelihood that dominates the prior above t ≈ s for
	// 2c parameters with log p(X | θ̂) ≈ C, large as in a large data set: the rule in log t is
	// within a few nats where the Hermite rule in t is hundreds off.
	const c, C, s = 5000.0, -1e7, 1e-5
	for i, x := range l {
		f[i], v[i] = C-c/(x+s), c/((x+s)*(x+s))
	}
	want = C - c*math.Log((1+s)/s)
	got := Integrate(l, f, v)
	inT := Trapezoid(l, f)
	for i := 0; i+1 < len(l); i++ {
		dt := l[i+1] - l[i]
		inT -= dt * dt / 12 * (v[i+1] - v[i])
	}
	t.Logf("C − c/(t+s): rule in log t off by %.2f, in t by %.2f", got-want, inT-want)
	if math.Abs(got-want) > 20 || math.Abs(inT-want) < 200 {
		t.Errorf("C − c/(t+s) = %.2f: rule in log t %.2f, in t %.2f", want, got, inT)
	}
}

// ESS of an AR(1) series with coefficient ρ is n(1−ρ)/(1+ρ).
func TestSummarizeESS(t *testing.T) {
	r := rng.New(7)
	for _, rho := range []float64{0, 0.5, 0.9} {
		const n = 200000
		y := make([]float64, n)
		x := 0.0
		for i := range y {
			x = rho*x + math.Sqrt(1-rho*rho)*r.NormFloat64()
			y[i] = 3 + x
		}
		mean, m2, ess := Summarize(y)
		want := n * (1 - rho) / (1 + rho)
		if math.Abs(ess/want-1) > 0.1 {
			t.Errorf("ρ=%v: ESS %.0f, want %.0f", rho, ess, want)
		}
		if math.Abs(mean-3) > 5*math.Sqrt(1/want) || math.Abs(m2/n-1) > 0.05 {
			t.Errorf("ρ=%v: mean %v, variance %v", rho, mean, m2/n)
		}
	}
}

func summaries(l Ladder, rank, chains int, f func(t float64, chain int) (mean, m2 float64)) []ChainSummary {
	var out []ChainSummary
	for i, t := range l {
		for c := range chains {
			mean, m2 := f(t, c)
			out = append(out, ChainSummary{Rank: rank, TIndex: i, T: t, Chain: c, Count: 100, Mean: mean, M2: m2, ESS: 50, Steps: 120})
		}
	}
	return out
}

func TestCombine(t *testing.T) {
	l := Power(10, 4)
	// f(t) = −10 + 4t (so v = f' = 4: M2 = 4·99 over 100 records) with no spread between
	// replicas: the evidence is −8 (within the rule's error for a linear f) and the standard
	// error is the within-chain one.
	cs := summaries(l, 2, 3, func(t float64, c int) (float64, float64) { return -10 + 4*t, 4 * 99 })
	re, err := Combine(l, cs)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(re.LogEvidence+8) > 2e-3 || re.StdErr != re.StdErrWithin || re.Steps != 120*3*len(l) {
		t.Errorf("got evidence %v ± %v over %d steps", re.LogEvidence, re.StdErr, re.Steps)
	}
	// Replicas that disagree by ±1 at every rung, which of them is higher alternating from rung
	// to rung, give Var = Σ_i wf_i² · 1/C (their sample variance is 1 at every rung, the v terms
	// agree); the whole integrals differ by less.
	rungOf := map[float64]int{}
	for i, t := range l {
		rungOf[t] = i
	}
	cs = summaries(l, 2, 2, func(t float64, c int) (float64, float64) {
		return -10 + 4*t + float64((2*c-1)*(1-2*(rungOf[t]%2)))*math.Sqrt(0.5), 0
	})
	re, _ = Combine(l, cs)
	want := 0.0
	wf, _ := l.Rule()
	for _, w := range wf {
		want += w * w / 2
	}
	if math.Abs(re.StdErr-math.Sqrt(want)) > 1e-12 {
		t.Errorf("replica standard error %v, want %v", re.StdErr, math.Sqrt(want))
	}
	// The same replicas, one higher at every rung: their whole integrals differ by 2·√0.5·Σ_i wf_i
	// = √2, Var = 1/C.
	cs = summaries(l, 2, 2, func(t float64, c int) (float64, float64) {
		return -10 + 4*t + float64(2*c-1)*math.Sqrt(0.5), 0
	})
	re, _ = Combine(l, cs)
	if math.Abs(re.StdErr-math.Sqrt(0.5)) > 1e-9 {
		t.Errorf("replicas apart at every rung: standard error %v, want %v", re.StdErr, math.Sqrt(0.5))
	}
	// A missing rung is an error; a diverged chain makes the evidence NaN and is listed.
	if _, err := Combine(l, cs[2:]); err == nil || !strings.Contains(err.Error(), "no chain at temperature index 0") {
		t.Errorf("missing rung: %v", err)
	}
	cs[5].Divergence = "rank 2, t=0.1, chain 1, step 7: log-likelihood record is NaN"
	re, err = Combine(l, cs)
	if err != nil || !math.IsNaN(re.LogEvidence) || len(re.Diverged) != 1 {
		t.Errorf("diverged chain: evidence %v, diverged %v, err %v", re.LogEvidence, re.Diverged, err)
	}
}

func TestPosteriorProbs(t *testing.T) {
	p := PosteriorProbs([]float64{-1000, -1000 + math.Log(3), math.NaN()})
	if math.Abs(p[0]-0.25) > 1e-12 || math.Abs(p[1]-0.75) > 1e-12 || !math.IsNaN(p[2]) {
		t.Errorf("got %v", p)
	}
}

func TestLadderNearest(t *testing.T) {
	l := Ladder{0, 0.01, 0.1, 0.5, 1}
	for _, c := range []struct {
		t    float64
		want int
	}{{0.001, 1}, {0.02, 1}, {0.04, 2}, {0.2, 2}, {0.3, 3}, {0.8, 4}, {1, 4}} {
		if got := l.Nearest(c.t); got != c.want {
			t.Errorf("Nearest(%v) = %d, want %d", c.t, got, c.want)
		}
	}
}

// A chain of 160 records that starts 20 standard deviations below its stationary mean and relaxes
// with a time constant of 15 records (as Gibbs chains from the t = 1 mode do at small t on large
// data): the kept records' mean is right, where the mean of all is biased by many standard errors.
// On stationary chains the rule discards few records and leaves the mean unbiased, also where
// the records have a long lower tail, as log-likelihoods do (−x², mean −1 shifted to 0 here): the
// MSER-5 rule alone kept a mean 0.067 too high there, a third of its standard error.
func TestTruncation(t *testing.T) {
	r := rng.New(11)
	chain := func(n int, rho, offset float64, skew bool) []float64 {
		y := make([]float64, n)
		x := r.NormFloat64()
		for i := range y {
			x = rho*x + math.Sqrt(1-rho*rho)*r.NormFloat64()
			y[i] = x - offset*math.Exp(-float64(i)/15)
			if skew {
				y[i] = 1 - x*x
			}
		}
		return y
	}
	const reps, n = 2000, 160
	for _, c := range []struct {
		rho, offset            float64
		skew                   bool
		maxAllBias, maxBias    float64
		minDiscard, maxDiscard float64
	}{
		{rho: 0.5, offset: 20, maxAllBias: -1.5, maxBias: 0.1, minDiscard: 40, maxDiscard: 80},
		{rho: 0.5, offset: 0, maxAllBias: 0.05, maxBias: 0.05, minDiscard: 0, maxDiscard: 15},
		{rho: 0.9, offset: 0, maxAllBias: 0.1, maxBias: 0.1, minDiscard: 0, maxDiscard: 30},
		{rho: 0.7, skew: true, maxAllBias: 0.02, maxBias: 0.025, minDiscard: 0, maxDiscard: 5},
	} {
		var all, kept, discarded float64
		for range reps {
			y := chain(n, c.rho, c.offset, c.skew)
			d := Truncation(y)
			if d < 0 || d > n/2 || d%truncationBatch != 0 {
				t.Fatalf("truncation %d of %d records", d, n)
			}
			m, _, _ := Summarize(y)
			mk, _, _ := Summarize(y[d:])
			all += m / reps
			kept += mk / reps
			discarded += float64(d) / reps
		}
		t.Logf("ρ=%v offset %v skew %v: mean of all %.3f, of kept %.3f, %.1f records discarded", c.rho, c.offset, c.skew, all, kept, discarded)
		if c.offset > 0 && all > c.maxAllBias {
			t.Errorf("ρ=%v offset %v: the transient biases the mean of all records by only %.3f", c.rho, c.offset, all)
		}
		if math.Abs(kept) > c.maxBias {
			t.Errorf("ρ=%v offset %v: mean of kept records %.3f, want 0 within %v", c.rho, c.offset, kept, c.maxBias)
		}
		if discarded < c.minDiscard || discarded > c.maxDiscard {
			t.Errorf("ρ=%v offset %v: %.1f records discarded on average, want %v–%v", c.rho, c.offset, discarded, c.minDiscard, c.maxDiscard)
		}
	}
}

// A rung's controlled mean takes each chain's slope on its Stein variate from the other chains:
// with records y = 3z + z² − 1 of a skewed z of mean zero (so that the chain's own slope is
// correlated with its mean of z), the controlled means average to the true mean 0 within their
// standard error, where the chain's own slope leaves a bias of many standard errors.
func TestSteinSlopesLeaveOneOut(t *testing.T) {
	r := rng.New(1, 2)
	const rungs, n = 20000, 8
	chain := func() (ChainSummary, float64) {
		y, z := make([]float64, n), make([]float64, n)
		for k := range z {
			z[k] = r.ExpFloat64() - 1
			y[k] = 3*z[k] + z[k]*z[k] - 1
		}
		c := steinSummary(y, [][]float64{z})
		return c, c.Mean - c.SteinCo[0]/c.SteinM2[0]*c.SteinMean[0]
	}
	var loo, own, plain []float64
	for range rungs {
		a, ownA := chain()
		b, ownB := chain()
		rung := combineRung(0.5, []ChainSummary{a, b})
		loo = append(loo, rung.MeanLogLik)
		own = append(own, (ownA+ownB)/2)
		plain = append(plain, (a.Mean+b.Mean)/2)
	}
	for _, c := range []struct {
		name   string
		x      []float64
		biased bool
	}{{"leave-one-out slope", loo, false}, {"own slope", own, true}, {"no variate", plain, false}} {
		m, v, _ := Summarize(c.x)
		se := math.Sqrt(v / float64(len(c.x)-1) / float64(len(c.x)))
		t.Logf("%s: mean %.4f ± %.4f, sd %.3f", c.name, m, se, math.Sqrt(v/float64(len(c.x)-1)))
		if biased := math.Abs(m) > 4*se; biased != c.biased {
			t.Errorf("%s: mean %.4f ± %.4f", c.name, m, se)
		}
	}
}

// steinSummary summarises records y with control variates z (z[k] the k-th variate's values).
func steinSummary(y []float64, z [][]float64) ChainSummary {
	n, p := len(y), len(z)
	c := ChainSummary{Count: n, SteinMean: make([]float64, p), SteinM2: make([]float64, p*p), SteinCo: make([]float64, p), SteinESS: float64(n)}
	c.Mean, c.M2, c.ESS = Summarize(y)
	for k := range z {
		c.SteinMean[k], _, _ = Summarize(z[k])
	}
	for i := range y {
		for k := range z {
			dk := z[k][i] - c.SteinMean[k]
			c.SteinCo[k] += (y[i] - c.Mean) * dk
			for l := range z {
				c.SteinM2[k*p+l] += dk * (z[l][i] - c.SteinMean[l])
			}
		}
	}
	return c
}

// With several variates the slopes are the multiple regression's: records y = 2 z₁ − 3 z₂ + e
// (z₁, z₂ correlated, e small) keep only e's variance, a variate without variance is left out,
// and collinear variates fall back on the plain mean.
func TestSteinSlopesSeveralVariates(t *testing.T) {
	r := rng.New(1, 3)
	const n = 400
	chain := func(collinear bool) ChainSummary {
		y, z1, z2, z3 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range y {
			z1[i] = r.NormFloat64()
			z2[i] = 0.6*z1[i] + 0.8*r.NormFloat64()
			if collinear {
				z2[i] = 2 * z1[i]
			}
			y[i] = 2*z1[i] - 3*z2[i] + 0.01*r.NormFloat64()
		}
		return steinSummary(y, [][]float64{z1, z2, z3})
	}
	a, b := chain(false), chain(false)
	slopes := steinSlopes([]ChainSummary{a, b})
	for i, s := range slopes {
		if len(s) != 3 || math.Abs(s[0]-2) > 0.01 || math.Abs(s[1]+3) > 0.01 || s[2] != 0 {
			t.Errorf("chain %d: slopes %v, want 2, −3, 0", i, s)
		}
	}
	if _, m2, _ := a.controlled(slopes[0]); m2/(n-1) > 2e-4 {
		t.Errorf("controlled variance %.3g, want about 10⁻⁴ (the records' %.3g)", m2/(n-1), a.M2/(n-1))
	}
	collinear := []ChainSummary{chain(true), chain(true)}
	for i, s := range steinSlopes(collinear) {
		if s != nil {
			t.Errorf("collinear variates, chain %d: slopes %v, want none (the plain mean)", i, s)
		}
	}
}

// The rule is nearly exact for f = a + b/t (its cubic in log t misses −b·t by a relative 10⁻⁵), so
// its error on log Z = a·t + b·log t is small; on the curve of d parameters with a Gaussian prior of precision 1/τ against
// a likelihood of precision t, f = a − d/(2(t + τ)), it grows as the bend at t ≈ τ moves below
// the default ladder's sparse first rungs, and FitPower steepens the ladder until it is small.
func TestRuleErrorAndFitPower(t *testing.T) {
	exact := func(a, b float64) func(float64) (float64, error) {
		return func(t float64) (float64, error) { return a*t + b*math.Log(t), nil }
	}
	if d, err := Power(30, 6).RuleError(exact(-1e6, -300)); err != nil || math.Abs(d) > 0.01 {
		t.Errorf("f = a + b/t: rule error %v (%v), want 0", d, err)
	}
	bend := func(d, tau float64) func(float64) (float64, error) {
		return func(t float64) (float64, error) { return -1e5*t - d/2*math.Log1p(t/tau), nil }
	}
	const tol = 0.1
	for _, c := range []struct {
		tau        float64
		wantPower  float64
		wantAbove  float64 // power 6's error exceeds this
		wantBelow6 bool    // power 6 already within tol
	}{
		{tau: 1e-2, wantPower: 6, wantBelow6: true},
		{tau: 1e-5, wantPower: 8, wantAbove: 0.3},
	} {
		logZ := bend(500, c.tau)
		d6, err := Power(30, 6).RuleError(logZ)
		if err != nil {
			t.Fatal(err)
		}
		l, p, err := FitPower(30, logZ, tol)
		if err != nil {
			t.Fatal(err)
		}
		dp, _ := l.RuleError(logZ)
		t.Logf("τ = %g: power 6 off by %.3f; fitted power %g off by %.3f", c.tau, d6, p, dp)
		if c.wantBelow6 != (math.Abs(d6) <= tol) || (!c.wantBelow6 && math.Abs(d6) < c.wantAbove) {
			t.Errorf("τ = %g: power 6 off by %.3f", c.tau, d6)
		}
		if p < c.wantPower || math.Abs(dp) > tol || len(l) != 31 || l[0] != 0 || l[30] != 1 {
			t.Errorf("τ = %g: fitted power %g (want ≥ %g) off by %.3f, %d rungs", c.tau, p, c.wantPower, dp, len(l))
		}
	}
}

// The rule takes the slope at t = 1 from the top rungs' means (Ladder.slopeAt), not from the
// recorded variance there: exact for a + b/t + c/t² + e·t at every rung above the first, and a
// v(1) far off moves nothing, while the v of any other rung still counts.
func TestRuleTakesTheTopSlopeFromTheMeans(t *testing.T) {
	l := Power(30, 7)
	f, v := make([]float64, len(l)), make([]float64, len(l))
	for i, x := range l {
		if x > 0 {
			f[i], v[i] = -5-3/x+0.5/(x*x)+0.7*x, 3/(x*x)-1/(x*x*x)+0.7
		}
	}
	N := len(l) - 1
	for _, i := range []int{1, 2, 15, N - 1, N} {
		idx, w, ok := l.slopeAt(i)
		if !ok {
			t.Fatalf("no slope at rung %d of a 30-rung ladder", i)
		}
		slope := 0.0
		for j, k := range idx {
			slope += w[j] * f[k]
		}
		if want := v[i]; math.Abs(slope-want) > 1e-7*math.Abs(want) {
			t.Errorf("slope at rung %d from the means %v, want %v", i, slope, want)
		}
	}
	base := Integrate(l, f, v)
	v[N] *= 10
	if got := Integrate(l, f, v); got != base {
		t.Errorf("v(1) ×10 moved the integral from %v to %v", base, got)
	}
	v[N-1] *= 10
	if got := Integrate(l, f, v); got == base {
		t.Errorf("v at the rung below t = 1 ×10 left the integral at %v", got)
	}
	if _, _, ok := Power(3, 6).slopeAt(3); ok {
		t.Error("a slope from fewer than four rungs above 0")
	}
}

// The within-chain standard error predicts the spread of independent runs when the records are
// independent Gaussian draws of known f and v: on f = C − c/(t+s), the curve of a large data set,
// the rungs' variances are large and their noise reaches the integral through the rule's
// derivative weights, so the error counts it (Rung.withinVariance); the means' part alone would
// fall well short of the spread.
func TestStdErrWithinPredictsTheSpread(t *testing.T) {
	// c = d/2 for d = 10⁵ parameters, as at rank 1 of the Facebook-size tensor.
	const c, C, s, records, runs = 5e4, -1e7, 1e-3, 100, 400
	l := Power(30, 6)
	r := rng.New(12)
	var estimates []float64
	predicted, meansOnly := 0.0, 0.0
	y := make([]float64, records)
	for range runs {
		var cs []ChainSummary
		for i, x := range l {
			f, sd := C-c/(x+s), math.Sqrt(c)/(x+s)
			for chain := range 2 {
				for k := range y {
					y[k] = f + sd*r.NormFloat64()
				}
				// Independent records: their ESS is their number (Summarize's estimate would
				// add its own noise to the comparison).
				mean, m2, _ := Summarize(y)
				cs = append(cs, ChainSummary{Rank: 1, TIndex: i, T: x, Chain: chain, Count: records, Mean: mean, M2: m2, ESS: records, Steps: records})
			}
		}
		re, err := Combine(l, cs)
		if err != nil {
			t.Fatal(err)
		}
		estimates = append(estimates, re.LogEvidence)
		predicted += re.StdErrWithin / runs
		wf, _ := l.Rule()
		m := 0.0
		for i, rung := range re.Rungs {
			m += wf[i] * wf[i] * rung.StdErr * rung.StdErr
		}
		meansOnly += math.Sqrt(m) / runs
	}
	_, se := MeanStdErr(estimates)
	spread := se * math.Sqrt(runs)
	t.Logf("spread of %d runs %.3f; mean within-chain standard error %.3f, of the means alone %.3f", runs, spread, predicted, meansOnly)
	if math.Abs(predicted/spread-1) > 0.1 {
		t.Errorf("within-chain standard error %.3f against a spread of %.3f over %d runs", predicted, spread, runs)
	}
	if meansOnly > 0.8*spread {
		t.Errorf("the means alone predict %.3f of a spread of %.3f: this curve does not test the variances' part", meansOnly, spread)
	}
}

// TestPoolRates checks that the rates pooled from chains' moments (Moments, PoolRates) are the
// mean and standard deviation of all their draws taken as one sample, and that chains without
// rates, or diverged, add nothing.
func TestPoolRates(t *testing.T) {
	draws := [][]float64{{1, 10, 2, 12, 4, 11}, {3, 9, 5, 14}}
	var chains []ChainSummary
	var all [2][]float64
	for c, d := range draws {
		s := ChainSummary{Chain: c, Count: len(d) / 2}
		s.RateMean, s.RateM2 = Moments(d, 2)
		chains = append(chains, s)
		for i, v := range d {
			all[i%2] = append(all[i%2], v)
		}
	}
	chains = append(chains, ChainSummary{Chain: 2, Count: 5}, ChainSummary{Chain: 3, Count: 3, RateMean: []float64{100, 100}, RateM2: []float64{1, 1}, Divergence: "x"})
	mean, sd := PoolRates(chains)
	for k, ys := range all {
		m, m2, _ := Summarize(ys)
		if want := math.Sqrt(m2 / float64(len(ys)-1)); math.Abs(mean[k]-m) > 1e-12 || math.Abs(sd[k]-want) > 1e-12 {
			t.Errorf("rate %d: pooled %v ± %v, the draws' %v ± %v", k, mean[k], sd[k], m, want)
		}
	}
	if mean, sd := PoolRates(chains[2:3]); mean != nil || sd != nil {
		t.Errorf("chains without rates pool to %v ± %v", mean, sd)
	}
}

// Where a rung's records rest on fewer than MinESS effective samples its variance is not read:
// chains still leaving their start record the transient's spread, here a thousand times the
// posterior's, and the rule takes those rungs' slopes from the means instead, landing where the
// true variances do; steady rungs still read theirs.
func TestUnsteadyRungsTakeTheirSlopesFromTheMeans(t *testing.T) {
	l := Power(30, 4)
	curve := func(t float64, c int) (float64, float64) {
		return -1000 - 200/(t+0.01), 200 / ((t + 0.01) * (t + 0.01)) * 99
	}
	combineWith := func(ess, inflate float64) float64 {
		cs := summaries(l, 2, 2, func(x float64, c int) (float64, float64) {
			f, m2 := curve(x, c)
			if x > 0 {
				m2 *= inflate
			}
			return f, m2
		})
		for i := range cs {
			if cs[i].T > 0 {
				cs[i].ESS = ess
			}
		}
		re, err := Combine(l, cs)
		if err != nil {
			t.Fatal(err)
		}
		return re.LogEvidence
	}
	truth := combineWith(50, 1)
	steadyOff := combineWith(50, 1000) - truth
	unsteadyOff := combineWith(2, 1000) - truth
	t.Logf("variances ×1000: %.3f off where read, %.3f where the rungs are unsteady", steadyOff, unsteadyOff)
	if math.Abs(steadyOff) < 100 || math.Abs(unsteadyOff) > 0.01*math.Abs(steadyOff) {
		t.Errorf("variances ×1000: %.3f off where read, %.3f where unsteady: want the second under 1%% of the first", steadyOff, unsteadyOff)
	}
}

// A rung whose chains' first halves average apart from their whole records holds a transient
// even with many effective samples: its variance is not read either.
func TestTransientRungsTakeTheirSlopesFromTheMeans(t *testing.T) {
	l := Power(30, 4)
	cs := summaries(l, 2, 2, func(x float64, c int) (float64, float64) {
		return -1000 - 200/(x+0.01), 1000 * 200 / ((x + 0.01) * (x + 0.01)) * 99
	})
	steady, err := Combine(l, cs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cs {
		cs[i].HalfCount, cs[i].HalfMean = cs[i].Count/2, cs[i].Mean
		if cs[i].T > 0 {
			cs[i].HalfMean -= 10 * math.Sqrt(cs[i].M2/float64(cs[i].Count-1)/cs[i].ESS)
		}
	}
	drifting, err := Combine(l, cs)
	if err != nil {
		t.Fatal(err)
	}
	truth := combineAt(t, l, func(x float64) (float64, float64) { return -1000 - 200/(x+0.01), 200 / ((x + 0.01) * (x + 0.01)) })
	t.Logf("variances ×1000: %.3f off read as they are, %.3f where the chains drift", steady.LogEvidence-truth, drifting.LogEvidence-truth)
	if math.Abs(drifting.LogEvidence-truth) > 0.01*math.Abs(steady.LogEvidence-truth) {
		t.Errorf("variances ×1000: %.3f off read, %.3f where the chains drift: want the second under 1%% of the first", steady.LogEvidence-truth, drifting.LogEvidence-truth)
	}
}

// combineAt is Combine of two steady chains a rung on the curve f, v.
func combineAt(t *testing.T, l Ladder, curve func(float64) (float64, float64)) float64 {
	re, err := Combine(l, summaries(l, 2, 2, func(x float64, c int) (float64, float64) {
		f, v := curve(x)
		return f, v * 99
	}))
	if err != nil {
		t.Fatal(err)
	}
	return re.LogEvidence
}
