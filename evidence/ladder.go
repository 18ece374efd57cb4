// Package evidence turns per-temperature averages of log-likelihood records into log marginal
// likelihoods: temperature ladders, the trapezoidal rule and the Hermite rule in log t, chain
// summaries (mean, variance, effective sample size), Monte Carlo standard errors and posterior
// rank probabilities. It knows nothing of models or samplers.
package evidence

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// Ladder is a temperature ladder 0 = t_0 < t_1 < … < t_T = 1.
type Ladder []float64

// Uniform is the papers' ladder t_i = i/T.
func Uniform(T int) Ladder {
	l := make(Ladder, T+1)
	for i := range l {
		l[i] = float64(i) / float64(T)
	}
	return l
}

// Power is the ladder t_i = (i/T)^c of Friel & Pettitt (2008), which puts most rungs near t = 0
// where f(t) = E_t[log p(X | θ)] is steepest.
func Power(T int, c float64) Ladder {
	l := make(Ladder, T+1)
	for i := range l {
		l[i] = math.Pow(float64(i)/float64(T), c)
	}
	l[T] = 1
	return l
}

// Sigmoid is the ladder of Grosse, Maddison & Salakhutdinov (2013): t_i a logistic of −scale to
// scale in T equal steps, rescaled to run from 0 to 1. Its rungs are dense at both ends, as a path
// from a reference to the posterior needs (Ladder.PathRule): it leaves the reference fastest at
// t = 0 and sharpens on the posterior near t = 1.
func Sigmoid(T int, scale float64) Ladder {
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	lo, hi := sig(-scale), sig(scale)
	l := make(Ladder, T+1)
	for i := 1; i < T; i++ {
		l[i] = (sig(-scale+2*scale*float64(i)/float64(T)) - lo) / (hi - lo)
	}
	l[T] = 1
	return l
}

// Path is the ladder of a path from a reference (Ladder.PathRule): Sigmoid(T, scale), then the
// rungs 1 − 10^(−k/2), k = 6 … 12, above its last rung below 1. Where the posterior spreads beyond
// the reference along directions the likelihood leaves flat (a matrix's components mixing, with
// counts in the tens of thousands), q^(1−t) holds the chains near q until 1 − t is tiny, and f(t)
// climbs by thousands of nats between the sigmoid's last rung below 1 and t = 1: at rank 2 of the
// 12×10 matrix of README at fb09484 (counts up to 1.4·10⁵) from −642 at 1 − t = 2·10⁻³ to −257, 1 493,
// 4 663, 11 922, 16 078, 16 430 and 17 375 at 1 − t = 10⁻³ … 10⁻⁶, and 18 432 at t = 1. One
// trapezoid over that last interval put the integral 7 nats high, and its end correction 18 low;
// with the rungs between, 0.10 from AIS. Where the reference covers the posterior, f is flat
// there, and the rungs cost their sweeps only.
func Path(T int, scale float64) Ladder {
	l := Sigmoid(T, scale)
	top := l[:T]
	for k := 6; k <= 12; k++ {
		if t := 1 - math.Pow(10, -float64(k)/2); t > top[len(top)-1] {
			top = append(top, t)
		}
	}
	return append(top, 1)
}

// Validate checks that the ladder starts at 0, ends at 1 and increases strictly.
func (l Ladder) Validate() error {
	if len(l) < 2 {
		return fmt.Errorf("ladder needs at least two temperatures, has %d", len(l))
	}
	if l[0] != 0 || l[len(l)-1] != 1 {
		return fmt.Errorf("ladder must run from 0 to 1, runs from %v to %v", l[0], l[len(l)-1])
	}
	for i := 1; i < len(l); i++ {
		if !(l[i] > l[i-1]) {
			return fmt.Errorf("ladder must increase strictly: t[%d]=%v after t[%d]=%v", i, l[i], i-1, l[i-1])
		}
	}
	return nil
}

// Nearest returns the index of the rung above t = 0 closest to t > 0 on a log scale (ratios of
// temperatures, not differences, say how alike two power posteriors are).
func (l Ladder) Nearest(t float64) int {
	best := 1
	for i := 2; i < len(l); i++ {
		if math.Abs(math.Log(l[i]/t)) < math.Abs(math.Log(l[best]/t)) {
			best = i
		}
	}
	return best
}

// ParseLadder reads a ladder specification: "uniform", "power:C" (or "power" for C=DefaultPower),
// "sigmoid:S" (or "sigmoid" for S = 6), each with T rungs above zero, "path:S" (Path: sigmoid:S
// and up to 7 rungs toward 1), or "list:t0,t1,…,1".
func ParseLadder(spec string, T int) (Ladder, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	var l Ladder
	switch kind {
	case "uniform":
		if T < 1 {
			return nil, fmt.Errorf("ladder %q needs at least 1 temperature above zero, got %d", spec, T)
		}
		l = Uniform(T)
	case "power":
		c := float64(DefaultPower)
		if arg != "" {
			v, err := strconv.ParseFloat(arg, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("ladder %q: exponent must be a positive number", spec)
			}
			c = v
		}
		if T < 1 {
			return nil, fmt.Errorf("ladder %q needs at least 1 temperature above zero, got %d", spec, T)
		}
		l = Power(T, c)
	case "sigmoid", "path":
		c := 6.0
		if arg != "" {
			v, err := strconv.ParseFloat(arg, 64)
			if err != nil || !(v > 0) || v > 30 {
				return nil, fmt.Errorf("ladder %q: scale must be a number in (0, 30]", spec)
			}
			c = v
		}
		if T < 1 {
			return nil, fmt.Errorf("ladder %q needs at least 1 temperature above zero, got %d", spec, T)
		}
		if kind == "path" {
			l = Path(T, c)
		} else {
			l = Sigmoid(T, c)
		}
	case "list":
		for _, f := range strings.Split(arg, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return nil, fmt.Errorf("ladder %q: %q is not a number", spec, f)
			}
			l = append(l, v)
		}
	default:
		return nil, fmt.Errorf("unknown ladder %q (uniform, power:C, sigmoid:S, path:S or list:t0,…,1)", spec)
	}
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("ladder %q: %w", spec, err)
	}
	return l, nil
}

// DefaultPower is the exponent of the default power ladder: of "power" without one, of
// sti.Default (which says why) and of stirank select's --ladder.
const DefaultPower = 6

// Weights returns the trapezoidal weights w_i with Σ w_i f_i the trapezoidal rule.
func (l Ladder) Weights() []float64 {
	w := make([]float64, len(l))
	for i := 0; i+1 < len(l); i++ {
		dt := l[i+1] - l[i]
		w[i] += dt / 2
		w[i+1] += dt / 2
	}
	return w
}

// Trapezoid is the trapezoidal rule Σ Δt_i (f_i + f_{i+1})/2 of the power-posterior papers.
func Trapezoid(l Ladder, f []float64) float64 {
	s := 0.0
	for i, w := range l.Weights() {
		s += w * f[i]
	}
	return s
}

// Rule returns the weights of the rule the log evidence is integrated with:
// ∫₀¹ f(t) dt ≈ Σ_i wf_i f_i + wv_i v_i, with v = Var_t[log p(X | θ)] = f'(t). On a ladder whose
// first rung t₀ is above 0 (the tail of one) the rule integrates over [t₀, 1].
//
// Above t = 0 it is the cubic Hermite rule in u = log t applied to g(u) = t·f(t), whose derivative
// is g'(u) = t·f + t²·v: where the likelihood dominates the prior, f(t) ≈ c − d/(2t) for d
// well-determined parameters, so g is nearly linear in u and the rule nearly exact, while in t the
// same curve needs rungs dense far beyond the ladder's near 0 (the corrected trapezoid of Friel,
// Hurn & Wyse 2014 was 9.5 nats off where this rule is 4.2 on the 200×150 rank-1 case of
// go run ./bench/engine -workload rank1). The rule is exact for f = a + b/t. On [0, t₁], where u
// has no end, it is that corrected trapezoid, the Hermite rule in t, exact for cubic f.
//
// The rule's derivative terms telescope: inside the ladder a rung's v enters with the weight
// t²(h_i² − h_{i−1}²)/12, small where the log-spacing h changes slowly, but the last rung's with
// −h²/12 whole, and v(1) ≈ d/2 is a variance estimated from a few hundred records, noisy by
// √(2/ESS) of itself: on a 42 390×39 986×1 506 tensor at rank 1 that one term carried ±26 nats of
// the integral's noise (go run ./bench/rungs). So at the top the slope f′(1) is taken from the
// means instead (slopeAt), whose noise is that of the means.
func (l Ladder) Rule() (wf, wv []float64) {
	wf = make([]float64, len(l))
	wv = make([]float64, len(l))
	for i := 0; i+1 < len(l); i++ {
		a, b := l[i], l[i+1]
		if a == 0 {
			dt := b - a
			wf[i] += dt / 2
			wf[i+1] += dt / 2
			wv[i] += dt * dt / 12
			wv[i+1] -= dt * dt / 12
			continue
		}
		h := math.Log(b / a)
		wf[i] += a * (h/2 + h*h/12)
		wf[i+1] += b * (h/2 - h*h/12)
		wv[i] += h * h / 12 * a * a
		wv[i+1] -= h * h / 12 * b * b
	}
	wf, wv = l.slopesFromMeans(wf, wv, func(i int) bool { return i < len(l)-1 })
	// The rule is applied to f − f(1) and f(1) added back: a constant has g = c·e^u, which the
	// rule in u misses by a relative 10⁻⁵, and the constant of a large data set (log p(X | θ̂),
	// −10⁷ nats) would cost 100 nats; f − f(1) is small where e^u is large.
	sum := 0.0
	for _, w := range wf {
		sum += w
	}
	wf[len(l)-1] += 1 - l[0] - sum
	return wf, wv
}

// slopeAt returns weights w on the four rungs idx, above t = 0 and around rung i, such that
// Σ_j w_j f(t_idx[j]) is f′(t_i) for every f = a + b/t + c/t² + d·t, the shape of the power
// posteriors' f(t) where the likelihood dominates the prior (and a linear term towards t = 1); ok
// is false where the ladder has fewer than four such rungs.
func (l Ladder) slopeAt(i int) (idx [4]int, w [4]float64, ok bool) {
	first := 0
	for first < len(l) && !(l[first] > 0) {
		first++
	}
	N := len(l) - 1
	if N-first < 3 || i < first {
		return idx, w, false
	}
	start := min(max(i-1, first), N-3)
	// The basis in r = t/t_i keeps the system's scale near 1 at the bottom of a ladder.
	ti := l[i]
	basis := func(t float64) []float64 { r := t / ti; return []float64{1, 1 / r, 1 / (r * r), r} }
	slope := mat.NewVecDense(4, []float64{0, -1 / ti, -2 / ti, 1 / ti})
	a := mat.NewDense(4, 4, nil) // a[k][j] = basis k at rung start + 3 − j
	for j := range 4 {
		idx[j] = start + 3 - j
		a.SetCol(j, basis(l[idx[j]]))
	}
	var x mat.VecDense
	if err := x.SolveVec(a, slope); err != nil {
		return idx, w, false
	}
	for j := range w {
		w[j] = x.AtVec(j)
	}
	return idx, w, true
}

// slopesFromMeans is the rule wf, wv with the variance terms of the rungs where steady is false
// taken from the means instead (slopeAt): a rung's v is a sample variance, and the records of a
// chain still leaving its start hold the transient's spread, not the posterior's, which the rule's
// derivative weights amplify where the means are far less off. It returns new slices.
func (l Ladder) slopesFromMeans(wf, wv []float64, steady func(i int) bool) ([]float64, []float64) {
	wf, wv = slices.Clone(wf), slices.Clone(wv)
	for i := range l {
		if wv[i] == 0 || steady(i) {
			continue
		}
		if idx, w, ok := l.slopeAt(i); ok {
			for j, k := range idx {
				wf[k] += wv[i] * w[j]
			}
			wv[i] = 0
		}
	}
	return wf, wv
}

// PathRule returns the weights of the corrected trapezoid in t (Friel, Hurn & Wyse 2014), the
// cubic Hermite rule ∫ f ≈ Σ Δt (f_i + f_{i+1})/2 + Δt²/12 (v_i − v_{i+1}) with v = f′, exact for
// cubic f. It is the rule for a path from a reference q to the posterior, π_t ∝ q^(1−t) (p p(X | θ))^t,
// whose f(t) = E_t[log p(X | θ) + log p(θ) − log q(θ)] is smooth at both ends; Rule's expansion in
// 1/t, which fits the power posteriors' f, does not apply to it.
func (l Ladder) PathRule() (wf, wv []float64) {
	wf, wv = make([]float64, len(l)), make([]float64, len(l))
	for i := 0; i+1 < len(l); i++ {
		dt := l[i+1] - l[i]
		wf[i] += dt / 2
		wf[i+1] += dt / 2
		wv[i] += dt * dt / 12
		wv[i+1] -= dt * dt / 12
	}
	return wf, wv
}

// Integrate is ∫₀¹ f(t) dt by the ladder's Rule.
func Integrate(l Ladder, f, v []float64) float64 {
	wf, wv := l.Rule()
	s := 0.0
	for i := range l {
		s += wf[i]*f[i] + wv[i]*v[i]
	}
	return s
}

// Derivatives returns log Z(t) and its first two derivatives in t, f(t) = E_t[log p(X | θ)] and
// v(t) = Var_t[log p(X | θ)], by central differences with step h.
func Derivatives(logZ func(t float64) (float64, error), t, h float64) (z, f, v float64, err error) {
	var y [3]float64
	for k, s := range []float64{t - h, t, t + h} {
		if y[k], err = logZ(s); err != nil {
			return 0, 0, 0, err
		}
	}
	return y[1], (y[2] - y[0]) / (2 * h), (y[2] - 2*y[1] + y[0]) / (h * h), nil
}

// RuleError returns the error of Rule above the ladder's first rung on a curve whose log
// normaliser log Z(t) = log ∫ p(θ) p(X | θ)^t dθ is known: the rule applied to f = d log Z/dt and
// v = d²log Z/dt² (central differences with a step of t·10⁻⁴) on [t₁, 1] minus log Z(1) − log Z(t₁).
// Below t₁ f is flat on any ladder worth using (the prior dominates) and needs no log Z(0). logZ
// must accept t slightly above 1.
func (l Ladder) RuleError(logZ func(t float64) (float64, error)) (float64, error) {
	if err := l.Validate(); err != nil {
		return 0, err
	}
	f, v := make([]float64, len(l)), make([]float64, len(l))
	var z1, z0 float64
	for i := 1; i < len(l); i++ {
		var z float64
		var err error
		if z, f[i], v[i], err = Derivatives(logZ, l[i], l[i]*1e-4); err != nil {
			return 0, err
		}
		if i == 1 {
			z0 = z
		}
		z1 = z
	}
	// With f₀ = f₁ and v₀ = v₁ the rule on [0, t₁] is t₁·f₁ exactly.
	f[0], v[0] = f[1], v[1]
	return Integrate(l, f, v) - l[1]*f[1] - (z1 - z0), nil
}

// FitPower returns the power ladder of T rungs above 0 with the smallest exponent c of
// DefaultPower, DefaultPower + 1, …, MaxFitPower whose Rule reproduces a known curve's log Z(1) −
// log Z(t₁) within tol (RuleError), or the one that comes closest when none does. Data with more
// information put the curve's bend, where the prior gives way to the likelihood, at smaller t,
// where the default ladder's rungs are sparse in log t: on a 250×250 NMF matrix with counts in
// the hundreds the rule on the exact rank-1 curve is 0.69 nat high with exponent 6 and 0.08 with
// 8 (go run ./bench/rungs), on the small sets of go run ./bench/anneal within 0.01 with 6.
func FitPower(T int, logZ func(t float64) (float64, error), tol float64) (l Ladder, c float64, err error) {
	best := math.Inf(1)
	for e := DefaultPower; e <= MaxFitPower; e++ {
		cand := Power(T, float64(e))
		d, err := cand.RuleError(logZ)
		if err != nil {
			return nil, 0, err
		}
		if math.Abs(d) < best {
			best, l, c = math.Abs(d), cand, float64(e)
		}
		if math.Abs(d) <= tol {
			break
		}
	}
	return l, c, nil
}

// MaxFitPower is the steepest exponent FitPower tries: with 30 rungs its first is at 2.3·10⁻²⁴.
// Exponent 10 left the rule 1.6 nats off the exact rank-1 curve of the speech-size spectrogram at
// the ICASSP prior rate 0.0004 with 30 rungs (0.23 with 60), 16 0.05 (0.003).
const MaxFitPower = 16
