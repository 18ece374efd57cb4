package quad

import (
	"math"
	"testing"
)

// Closed forms: a normal kernel far from the origin and very narrow, and the Gamma function as
// ∫ exp(a·u − e^u) du = Γ(a) (the shape of the rank-1 evidence integrands).
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
	}
}

func lgamma(x float64) float64 { v, _ := math.Lgamma(x); return v }
