package quad

import (
	"math"
	"testing"
)

// Closed forms: a normal kernel far from the origin and very narrow, and the Gamma function as
// ∫ exp(a·u − e^u) du = Γ(a) (the shape of the rank-1 evidence integrands), at LogIntegral's
// step and at the coarse step of LogIntegralSteps(f, 3).
func TestLogIntegralClosedForms(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(float64) float64
		want float64
	}{
		{"normal", func(u float64) float64 { return -(u - 30) * (u - 30) / 2 }, 0.5 * math.Log(2*math.Pi)},
		{"narrow normal", func(u float64) float64 { return -(u + 3) * (u + 3) / (2 * 1e-6) }, 0.5 * math.Log(2*math.Pi*1e-6)},
		{"gamma 7.5", func(u float64) float64 { return 7.5*u - math.Exp(u) }, lgamma(7.5)},
		{"gamma 4000", func(u float64) float64 { return 4000*u - math.Exp(u) }, lgamma(4000)},
	} {
		if got := LogIntegral(c.f); math.Abs(got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s: %.12f, want %.12f", c.name, got, c.want)
		}
		if got := LogIntegralSteps(c.f, 3); math.Abs(got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s, 3 steps a width: %.12f, want %.12f", c.name, got, c.want)
		}
	}
}

// LogIntegralConcave agrees with the closed forms and with LogIntegral on the inner integrand of
// the rank-1 evidence under a hyperprior, e·v − b·e^v − n·log(e^v + e^s), over the scales it
// meets, from starts away from the peak.
func TestLogIntegralConcave(t *testing.T) {
	gamma := func(a float64) func(float64) (float64, float64, float64) {
		return func(u float64) (float64, float64, float64) { e := math.Exp(u); return a*u - e, a - e, -e }
	}
	for _, a := range []float64{2, 7.5, 4000, 1e6} {
		for _, start := range []float64{0, math.Log(a) + 3, -5} {
			if got, want := LogIntegralConcave(gamma(a), start), lgamma(a); math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("gamma %v from %v: %.12f, want %.12f", a, start, got, want)
			}
		}
	}
	for _, c := range []struct{ e, b, n float64 }{{2, 1, 3}, {31, 0.3, 2000}, {251, 20, 3e5}, {258, 0.002, 6e4}} {
		for _, s := range []float64{-30, -3, 0, 4, 40} {
			f := func(v float64) (float64, float64, float64) {
				sig := 1 / (1 + math.Exp(s-v))
				return c.e*v - c.b*math.Exp(v) - c.n*LogAddExp(v, s), c.e - c.b*math.Exp(v) - c.n*sig, -c.b*math.Exp(v) - c.n*sig*(1-sig)
			}
			want := LogIntegral(func(v float64) float64 { x, _, _ := f(v); return x })
			if got := LogIntegralConcave(f, 0); math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("%+v at s = %v: %.12f, LogIntegral %.12f", c, s, got, want)
			}
		}
	}
}

func lgamma(x float64) float64 { v, _ := math.Lgamma(x); return v }
