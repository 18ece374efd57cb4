package models

import (
	"fmt"
	"math"

	"github.com/stirank/stirank/internal/quad"
	"github.com/stirank/stirank/tensor"
)

// exactAtRank1 is Info.Exact of the Poisson models: the rank-1 evidence, none at higher ranks.
func exactAtRank1(data *tensor.Sparse, R int, s Spec) (float64, error) {
	if R != 1 {
		return 0, ErrNoExact
	}
	prior, err := PoissonPrior(data, 1, s.Params)
	if err != nil {
		return 0, err
	}
	logZ, err := Rank1LogPowerPrior(data, prior)
	if err != nil {
		return 0, err
	}
	return logZ(1)
}

// Rank1LogEvidence returns the exact log p(X | R = 1) of Poisson NMF (order 2) or CP (order 3)
// with F_m[i] ~ Exp(rates[m]), every constant included. It depends on the data only through
// Σ log x! and the margins (row, column and tube sums; see Rank1LogEvidenceMargins), so it costs
// one pass over the stored cells and a few hundred thousand cheap function evaluations whatever
// the size. It is the oracle for the rank-1 estimates (the rank whose chains the papers' recipe
// loses).
func Rank1LogEvidence(data *tensor.Sparse, rates []float64) (float64, error) {
	return Rank1LogPowerEvidence(data, rates, 1)
}

// Rank1LogPowerEvidence returns log Z(t) = log ∫ p(θ) p(X | θ)^t dθ at R = 1, the normaliser of the
// power posterior at t > 0 (Rank1LogEvidence at t = 1; beyond 1 too, where central differences at
// t = 1 need it). Its derivative in t is the curve f(t) =
// E_t[log p(X | θ)] that thermodynamic integration integrates and its second derivative Var_t,
// so it checks an estimate rung by rung (go run ./bench/rungs). With F_0 = F'_0 / t the tempered
// integrand is the rank-1 evidence integrand of the margins t·M with mode 0's prior rate λ_0 / t,
// times t^{−t·N} and (Π x!)^{−t}.
func Rank1LogPowerEvidence(data *tensor.Sparse, rates []float64, t float64) (float64, error) {
	logZ, err := Rank1LogPower(data, rates)
	if err != nil {
		return 0, err
	}
	return logZ(t)
}

// Rank1LogPower returns t ↦ Rank1LogPowerEvidence(data, rates, t), with the pass over the data
// made once: a curve's central differences (evidence.Ladder.RuleError) call it hundreds of times.
func Rank1LogPower(data *tensor.Sparse, rates []float64) (func(t float64) (float64, error), error) {
	return Rank1LogPowerPrior(data, RatePrior{Rates: rates})
}

// Rank1LogPowerPrior is Rank1LogPower under the rates' prior: under a hyperprior the evidence
// integrates over the rates too. With F_0 = F'_0 / t, mode 0's rate λ_0 becomes λ_0 / t, whose
// hyperprior is Gamma(a, b_0·t).
func Rank1LogPowerPrior(data *tensor.Sparse, prior RatePrior) (func(t float64) (float64, error), error) {
	rates := prior.Rates
	order := data.Order()
	if order < 2 || order > 3 {
		return nil, fmt.Errorf("rank-1 evidence needs a matrix or a 3-way tensor, got order %d", order)
	}
	if len(data.Coords) != order {
		return nil, fmt.Errorf("rank-1 evidence: %d coordinate columns for order %d", len(data.Coords), order)
	}
	if len(rates) != order {
		return nil, fmt.Errorf("rank-1 evidence: %d modes and %d prior rates", order, len(rates))
	}
	margins := Margins(data)
	var logFact sum
	N := 0.0
	for _, x := range data.Values {
		N += x
		logFact.add(lgamma(x + 1))
	}
	return func(t float64) (float64, error) {
		if !(t > 0) || math.IsInf(t, 0) {
			return 0, fmt.Errorf("rank-1 evidence: temperature %v must be positive and finite", t)
		}
		scaledMargins := make([][]float64, order)
		for m, mm := range margins {
			scaledMargins[m] = make([]float64, len(mm))
			for i, x := range mm {
				scaledMargins[m][i] = t * x
			}
		}
		scaled := append([]float64(nil), rates...)
		if prior.Auto() {
			scaled[0] *= t
		} else {
			scaled[0] /= t
		}
		v, err := rank1LogEvidencePrior(scaledMargins, RatePrior{Rates: scaled, Shape: prior.Shape})
		return v - t*N*math.Log(t) - t*logFact.value(), err
	}, nil
}

// Margins returns the data's sums over all modes but one: margins[m][i] is the total count of the
// cells whose mode-m index is i. At rank 1 they are all that the likelihood's data term depends on.
func Margins(data *tensor.Sparse) [][]float64 {
	margins := make([][]float64, data.Order())
	for m, n := range data.Shape {
		margins[m] = make([]float64, n)
	}
	for n, x := range data.Values {
		for m := range margins {
			margins[m][data.Coords[m][n]] += x
		}
	}
	return margins
}

// Rank1LogEvidenceMargins returns
//
//	log ∫ Π_m Π_i F_m[i]^{M_m[i]} e^{−Π_m Σ_i F_m[i]} Π_m Π_i Exp(F_m[i]; λ_m) dF,
//
// the rank-1 evidence of counts with margins M (M[m][i]: the sum of the counts in slice i of
// mode m; two or three modes with the same total N) without their Π 1/x! factor, which the
// margins do not determine. The baselines' enumeration over allocations calls it for every
// component.
//
// With T_m = Σ_i F_m[i] for m ≥ 1, the mode-0 entries integrate out in closed form,
// Π_i λ_0 Γ(M_0[i] + 1) / (λ_0 + P)^{M_0[i]+1} with P = Π_{m≥1} T_m, which depends on the rows only
// through Σ_i (M_0[i] + 1) = N + I_0; writing F_m = T_m·p_m with p_m on the simplex, each p_m
// integral is a Dirichlet normaliser Π_i Γ(M_m[i] + 1) / Γ(N + I_m), and what is left is the
// integral over the totals, in u_m = log T_m:
//
//	∫ exp(Σ_{m≥1} [(N + I_m) u_m − λ_m e^{u_m}] − (N + I_0) log(λ_0 + e^{Σ u_m})) du,
//
// whose log-integrand is concave (log(λ_0 + e^s) is convex in s). For a matrix that is one
// 1-D integral; for a 3-way tensor it is an integral over s = u_1 + u_2 of an inner integral over
// u_1, both log-concave (Prékopa), each done by quad.LogIntegral.
func Rank1LogEvidenceMargins(margins [][]float64, rates []float64) (float64, error) {
	return rank1LogEvidencePrior(margins, RatePrior{Rates: rates})
}

// rank1LogEvidencePrior is Rank1LogEvidenceMargins under the rates' prior. Under a hyperprior
// λ_m ~ Gamma(a, b_m) the rate of a mode m ≥ 1 integrates out of its entries' prior in closed
// form, b_m^a Γ(a + I_m) / Γ(a) (b_m + T_m)^{−(a+I_m)}, a function of their total T_m alone, so
// the integral over the totals keeps its shape with −(a + I_m) log(b_m + e^{u_m}) in place of
// I_m log λ_m − λ_m e^{u_m}; mode 0's closed form holds at every λ_0, which is integrated over
// its hyperprior in v = log λ_0 at every value of log P (one more, log-concave, dimension).
func rank1LogEvidencePrior(margins [][]float64, prior RatePrior) (float64, error) {
	rates, a := prior.Rates, prior.Shape
	order := len(margins)
	if order < 2 || order > 3 || len(rates) != order {
		return 0, fmt.Errorf("rank-1 evidence: %d modes and %d prior rates; want 2 or 3 of each", order, len(rates))
	}
	for m, l := range rates {
		if !(l > 0) || math.IsInf(l, 0) {
			return 0, fmt.Errorf("rank-1 evidence: prior rate %v of mode %d must be positive and finite", l, m)
		}
	}
	N := 0.0
	for _, x := range margins[0] {
		N += x
	}
	var c sum
	for m, mm := range margins {
		total := 0.0
		switch {
		case !prior.Auto():
			c.add(float64(len(mm)) * math.Log(rates[m]))
		case m == 0:
			c.add(a*math.Log(rates[m]) - lgamma(a))
		default:
			c.add(a*math.Log(rates[m]) - lgamma(a) + lgamma(a+float64(len(mm))))
		}
		for _, x := range mm {
			c.add(lgamma(x + 1))
			total += x
		}
		// Integer counts sum exactly below 2^53, and t·x to within rounding, so totals that
		// differ by more are margins of no tensor.
		if math.Abs(total-N) > 1e-12*N {
			return 0, fmt.Errorf("rank-1 evidence: mode %d's margins sum to %v, mode 0's to %v", m, total, N)
		}
		if m > 0 {
			c.add(-lgamma(N + float64(len(mm))))
		}
	}
	rowsExp := N + float64(len(margins[0])) // Σ_i (M_0[i] + 1)
	logL0 := math.Log(rates[0])
	// tail is the log of the mode-0 integral, without its constants, at log P = s.
	tail := func(s float64) float64 { return -rowsExp * quad.LogAddExp(logL0, s) }
	// total is the log-integrand of mode m ≥ 1's total at u = log T_m, without its constants.
	total := func(m int) func(u float64) float64 {
		am, lm := N+float64(len(margins[m])), rates[m]
		if !prior.Auto() {
			return func(u float64) float64 { return am*u - lm*math.Exp(u) }
		}
		e, logB := a+float64(len(margins[m])), math.Log(lm)
		return func(u float64) float64 { return am*u - e*quad.LogAddExp(logB, u) }
	}
	if prior.Auto() {
		e0, b0 := a+float64(len(margins[0])), rates[0]
		tail = func(s float64) float64 {
			// Strictly concave in v; its peak lies near the smaller of the peaks of its two
			// regimes, λ_0 ≫ P (the rate's Gamma) and λ_0 ≪ P.
			return quad.LogIntegralConcave(func(v float64) (float64, float64, float64) {
				l, sig := math.Exp(v), 1/(1+math.Exp(s-v))
				return e0*v - b0*l - rowsExp*quad.LogAddExp(v, s), e0 - b0*l - rowsExp*sig, -b0*l - rowsExp*sig*(1-sig)
			}, min(math.Log(e0/b0), s+math.Log(e0/rowsExp)))
		}
	}
	// Under the hyperprior every point of the outer integral is an integral itself, and the
	// outer one's trapezoid takes the coarser step that suffices (quad.LogIntegralSteps).
	outerSteps := 12.0
	if prior.Auto() {
		outerSteps = 3
	}
	h1 := total(1)
	if order == 2 {
		return c.value() + quad.LogIntegralSteps(func(u float64) float64 { return h1(u) + tail(u) }, outerSteps), nil
	}
	if prior.Auto() {
		// Each total's log-integrand am·u − e·log(b + e^u) and its two derivatives, concave in u.
		hd := func(m int) func(u float64) (float64, float64, float64) {
			am, e, logB := N+float64(len(margins[m])), a+float64(len(margins[m])), math.Log(rates[m])
			return func(u float64) (float64, float64, float64) {
				sig := 1 / (1 + math.Exp(logB-u))
				return am*u - e*quad.LogAddExp(logB, u), am - e*sig, -e * sig * (1 - sig)
			}
		}
		h1d, h2d := hd(1), hd(2)
		outer := func(s float64) float64 {
			return tail(s) + quad.LogIntegralConcave(func(u float64) (float64, float64, float64) {
				v1, g1, c1 := h1d(u)
				v2, g2, c2 := h2d(s - u)
				return v1 + v2, g1 - g2, c1 + c2
			}, s/2)
		}
		return c.value() + quad.LogIntegralSteps(outer, outerSteps), nil
	}
	a1, l1 := N+float64(len(margins[1])), rates[1]
	// With s = u_1 + u_2 the integrand is exp(a1·u_1 + a2·(s − u_1) − λ1 e^{u_1} − λ2 e^{s−u_1} + tail(s)).
	a2, l2 := N+float64(len(margins[2])), rates[2]
	outer := func(s float64) float64 {
		inner := quad.LogIntegral(func(u float64) float64 {
			return (a1-a2)*u - l1*math.Exp(u) - l2*math.Exp(s-u)
		})
		return a2*s + tail(s) + inner
	}
	return c.value() + quad.LogIntegral(outer), nil
}

func lgamma(x float64) float64 { v, _ := math.Lgamma(x); return v }

// sum is a compensated (Neumaier) sum. The constants of a large dataset's evidence are sums of
// millions of log-factorials of about 1e7 in all; plain summation would leave about 1e-6 of
// rounding in them, which shows as a dependence on the order of the modes.
type sum struct{ s, comp float64 }

func (a *sum) add(x float64) {
	t := a.s + x
	if math.Abs(a.s) >= math.Abs(x) {
		a.comp += (a.s - t) + x
	} else {
		a.comp += (x - t) + a.s
	}
	a.s = t
}

func (a *sum) value() float64 { return a.s + a.comp }
