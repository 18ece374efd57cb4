package baselines

import (
	"math"
	"testing"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// tiny returns a small dataset drawn from the model with the prior rate on every factor.
func tiny(t testing.TB, seed uint64, shape []int, R int, rate float64) *tensor.Sparse {
	t.Helper()
	d, _, err := models.GeneratePoisson(rng.New(seed), shape, R, sameRates(shape, rate))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// tinyProblem is the problem of tiny's dataset under the prior it was drawn from.
func tinyProblem(t testing.TB, seed uint64, shape []int, R int, rate float64) *Problem {
	t.Helper()
	p, err := NewProblem(tiny(t, seed, shape, R, rate), sameRates(shape, rate))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sameRates is rate for every mode of shape.
func sameRates(shape []int, rate float64) []float64 {
	rates := make([]float64, len(shape))
	for m := range rates {
		rates[m] = rate
	}
	return rates
}

// forTinyExact calls check with every rank 1–3 of three tiny NMF and CP sets, the set's problem and
// its exact log evidence (ExactLogEvidence). With so few counts the posterior is close to the prior
// and the components switch labels all the time.
func forTinyExact(t *testing.T, check func(name string, p *Problem, R int, exact float64)) {
	t.Helper()
	for _, tc := range []struct {
		name  string
		data  *tensor.Sparse
		rates []float64
	}{
		{"nmf3x3", tiny(t, 5, []int{3, 3}, 2, 1.5), []float64{1, 1}},
		{"nmf4x3", tiny(t, 11, []int{4, 3}, 2, 1), []float64{1, 2}},
		{"cp2x2x2", tiny(t, 7, []int{2, 2, 2}, 2, 1), []float64{1, 1, 1}},
	} {
		p, err := NewProblem(tc.data, tc.rates)
		if err != nil {
			t.Fatal(err)
		}
		for R := 1; R <= 3; R++ {
			exact, err := ExactLogEvidence(tc.data, R, tc.rates, 1e6)
			if err != nil {
				t.Fatal(err)
			}
			check(tc.name, p, R, exact)
		}
	}
}

// permuteModes returns the tensor with its modes reordered: mode m of the result is mode perm[m].
func permuteModes(d *tensor.Sparse, perm []int) *tensor.Sparse {
	out := &tensor.Sparse{Values: append([]float64(nil), d.Values...)}
	for _, m := range perm {
		out.Shape = append(out.Shape, d.Shape[m])
		out.Coords = append(out.Coords, append([]int32(nil), d.Coords[m]...))
	}
	return out
}

// The enumeration's rank-1 NMF term is the same integral as models.Rank1LogEvidence.
func TestExactRank1MatchesModels(t *testing.T) {
	for _, tc := range []struct {
		seed   uint64
		shape  []int
		rw, rh float64
	}{{1, []int{4, 3}, 1, 1}, {2, []int{12, 9}, 0.5, 2}, {3, []int{30, 20}, 0.3, 0.3}} {
		d := tiny(t, tc.seed, tc.shape, 2, 0.7)
		want, err := models.Rank1LogEvidence(d, []float64{tc.rw, tc.rh})
		if err != nil {
			t.Fatal(err)
		}
		got, err := ExactLogEvidence(d, 1, []float64{tc.rw, tc.rh}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-7 {
			t.Errorf("%v: enumeration %v, models.Rank1LogEvidence %v", tc.shape, got, want)
		}
	}
}

// The evidence does not depend on the order of the modes; the enumeration integrates the modes in
// a fixed order (the first in closed form, the others numerically), so this checks the 2-D
// quadrature of CP and the allocation sum.
func TestExactModeOrderInvariance(t *testing.T) {
	cp := tiny(t, 7, []int{2, 2, 2}, 2, 1)
	nmf := tiny(t, 5, []int{3, 3}, 2, 1.5)
	for _, tc := range []struct {
		d     *tensor.Sparse
		rates []float64
		perm  []int
		R     int
	}{
		{cp, []float64{1, 0.5, 2}, []int{2, 0, 1}, 1},
		{cp, []float64{1, 0.5, 2}, []int{1, 2, 0}, 2},
		{nmf, []float64{0.7, 1.3}, []int{1, 0}, 2},
		{nmf, []float64{0.7, 1.3}, []int{1, 0}, 3},
	} {
		a, err := ExactLogEvidence(tc.d, tc.R, tc.rates, 1e6)
		if err != nil {
			t.Fatal(err)
		}
		pr := make([]float64, len(tc.perm))
		for m, q := range tc.perm {
			pr[m] = tc.rates[q]
		}
		b, err := ExactLogEvidence(permuteModes(tc.d, tc.perm), tc.R, pr, 1e6)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(a-b) > 1e-6 {
			t.Errorf("shape %v rank %d: %v, with modes %v %v", tc.d.Shape, tc.R, a, tc.perm, b)
		}
	}
}

// The 1×2 matrix X = [0 1] at rank 1 under Exp(1) priors, with the h integrals done by hand:
//
//	p(X) = ∫ e^{−w} ∫∫ e^{−w h0} e^{−h0} · w h1 e^{−w h1} e^{−h1} dh0 dh1 dw = ∫ e^{−w} w/(1+w)³ dw,
//
// by the trapezoidal rule here.
func TestExactClosedForm(t *testing.T) {
	d, _ := tensor.New([]int{1, 2}, 1)
	d.Append([]int{0, 1}, 1)
	want := func() float64 {
		s, h := 0.0, 1e-3
		for k := 0; k <= 60000; k++ {
			w := float64(k) * h
			f := math.Exp(-w) / (1 + w) * w / ((1 + w) * (1 + w))
			if k == 0 || k == 60000 {
				f /= 2
			}
			s += f * h
		}
		return math.Log(s)
	}()
	got, err := ExactLogEvidence(d, 1, []float64{1, 1}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-want) > 1e-6 {
		t.Fatalf("exact %v, direct integral %v", got, want)
	}
}

func TestExactRefusesLargeSums(t *testing.T) {
	d := tiny(t, 3, []int{30, 20}, 3, 0.3)
	if _, err := ExactLogEvidence(d, 3, []float64{0.3, 0.3}, 1e6); err == nil {
		t.Fatal("no error for an enumeration far beyond the limit")
	}
}
