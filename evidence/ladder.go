// Package evidence turns per-temperature averages of log-likelihood records into log marginal
// likelihoods: temperature ladders, the trapezoidal and corrected trapezoidal rules, chain
// summaries (mean, variance, effective sample size), Monte Carlo standard errors and posterior
// rank probabilities. It knows nothing of models or samplers.
package evidence

import (
	"fmt"
	"math"
	"strconv"
	"strings"
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
// each with T rungs above zero, or "list:t0,t1,…,1".
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
	case "list":
		for _, f := range strings.Split(arg, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return nil, fmt.Errorf("ladder %q: %q is not a number", spec, f)
			}
			l = append(l, v)
		}
	default:
		return nil, fmt.Errorf("unknown ladder %q (uniform, power:C or list:t0,…,1)", spec)
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

// Correction is the term the corrected trapezoid (Friel, Hurn & Wyse 2014) subtracts:
// Σ Δt_i²/12 · (v_{i+1} − v_i), with v = Var_t[log p(X | θ)] = f'(t). Trapezoid minus Correction is
// the cubic Hermite rule, exact for cubic f.
func Correction(l Ladder, v []float64) float64 {
	s := 0.0
	for i := 0; i+1 < len(l); i++ {
		dt := l[i+1] - l[i]
		s += dt * dt / 12 * (v[i+1] - v[i])
	}
	return s
}

// CorrectedTrapezoid is Trapezoid(l, f) − Correction(l, v).
func CorrectedTrapezoid(l Ladder, f, v []float64) float64 {
	return Trapezoid(l, f) - Correction(l, v)
}
