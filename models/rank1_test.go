package models

import (
	"math"
	"testing"
	"time"

	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// The matrix evidence is the one Rank1LogEvidence gave before it took 3-way tensors (values
// printed with %.17g by the former rateW, rateH version). The rows now enter the integrand as one
// Σ_i (S_i + 1) instead of row by row, which moves the result by rounding only (about 1e-12 here).
func TestRank1LogEvidenceMatrixUnchanged(t *testing.T) {
	for _, c := range []struct {
		seed   uint64
		shape  []int
		rw, rh float64
		before float64
	}{
		{1, []int{4, 3}, 1, 1, -34.376505754102155},
		{2, []int{12, 9}, 0.5, 2, -250.15536901350487},
		{3, []int{30, 20}, 0.3, 0.3, -1251.5824370802443},
	} {
		d, _, err := GeneratePoisson(rng.New(c.seed), c.shape, 2, []float64{0.7, 0.7})
		if err != nil {
			t.Fatal(err)
		}
		got, err := Rank1LogEvidence(d, []float64{c.rw, c.rh})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-c.before) > 1e-9 {
			t.Errorf("%v: %.17g, before %.17g", c.shape, got, c.before)
		}
	}
}

// On a 2×2×2 tensor the order-3 evidence agrees with brute-force integration that shares none of
// Rank1LogEvidenceMargins' reductions (no totals, no Dirichlet normalisers, no nested quadrature):
// the mode-0 entries integrate out row by row in closed form, and the four entries of the other
// two factors by the trapezoidal rule on a uniform grid in their logs. The integrand is smooth
// and analytic in a strip about the real axis, so the rule's error falls geometrically in 1/h:
// the two agree to 4e-10 at h = 0.4 (1.5 s) and to 8e-13 at h = 0.3 (3 s, too slow to keep);
// the ends of the grid cut off less than e^{−40} of the mass.
func TestRank1LogEvidenceTensorMatchesBruteForce(t *testing.T) {
	d, _ := tensor.New([]int{2, 2, 2}, 5)
	d.Append([]int{0, 0, 0}, 2)
	d.Append([]int{0, 0, 1}, 1)
	d.Append([]int{0, 1, 1}, 1)
	d.Append([]int{1, 0, 1}, 3)
	d.Append([]int{1, 1, 0}, 1)
	rates := []float64{0.7, 1.3, 2}
	got, err := Rank1LogEvidence(d, rates)
	if err != nil {
		t.Fatal(err)
	}

	rows := []float64{4, 4}          // S_i
	middle := []float64{6, 2}        // T_j
	tubes := []float64{3, 5}         // U_k
	logFact := lgamma(3) + lgamma(4) // Σ log x!: the cells 2 and 3 (log 1! = 0)
	const lo, hi, h = -20.0, 7.0, 0.4
	n := int(math.Round((hi-lo)/h)) + 1
	// pairs returns, for every grid point (u_0, u_1) of a two-entry factor with counts T and prior
	// rate λ, the log of Π_j λ F_j^{T_j} e^{−λ F_j} · F_j (the last factor the Jacobian of F = e^u)
	// and the total F_0 + F_1.
	pairs := func(T []float64, lambda float64) (logw, total []float64) {
		for a := range n {
			for b := range n {
				u0, u1 := lo+float64(a)*h, lo+float64(b)*h
				f0, f1 := math.Exp(u0), math.Exp(u1)
				logw = append(logw, 2*math.Log(lambda)+(T[0]+1)*u0-lambda*f0+(T[1]+1)*u1-lambda*f1)
				total = append(total, f0+f1)
			}
		}
		return logw, total
	}
	wb, bs := pairs(middle, rates[1])
	wc, cs := pairs(tubes, rates[2])
	rowConst, rowPowers := 0.0, 0.0
	for _, s := range rows {
		rowConst += math.Log(rates[0]) + lgamma(s+1)
		rowPowers += s + 1
	}
	// Online log-sum-exp over the 4-D grid.
	peak, sum := math.Inf(-1), 0.0
	for p, b := range bs {
		for q, c := range cs {
			v := wb[p] + wc[q]
			// Every row's a_i integrates to λ_0 Γ(S_i + 1) / (λ_0 + BC)^{S_i+1}.
			v -= rowPowers * math.Log(rates[0]+b*c)
			if v > peak {
				sum = sum*math.Exp(peak-v) + 1
				peak = v
			} else {
				sum += math.Exp(v - peak)
			}
		}
	}
	want := rowConst - logFact + peak + math.Log(sum*h*h*h*h)
	if math.Abs(got-want) > 2e-9 {
		t.Errorf("Rank1LogEvidence %.12f, brute force %.12f", got, want)
	}
}

// The evidence does not depend on the order of the modes, though the computation treats mode 0
// (closed form) and the others (quadrature over their totals) differently: on data of the size
// of the SPL 2018 tensor's counts (≈10^5 here) it agrees with itself under every permutation to
// rounding, and it is fast.
func TestRank1LogEvidenceTensorModeOrder(t *testing.T) {
	for _, c := range []struct {
		shape []int
		rate  float64
	}{{[]int{7, 5, 4}, 1}, {[]int{3000, 2000, 300}, 33}} {
		d, _, err := GeneratePoisson(rng.New(9), c.shape, 2, []float64{c.rate, c.rate, c.rate})
		if err != nil {
			t.Fatal(err)
		}
		rates := []float64{0.5, 1, 3}
		var first float64
		for k, perm := range [][]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}, {1, 0, 2}} {
			pd := &tensor.Sparse{Values: d.Values}
			pr := make([]float64, 3)
			for m, q := range perm {
				pd.Shape = append(pd.Shape, d.Shape[q])
				pd.Coords = append(pd.Coords, d.Coords[q])
				pr[m] = rates[q]
			}
			start := time.Now()
			v, err := Rank1LogEvidence(pd, pr)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%v perm %v: %v, %v", c.shape, perm, v, err)
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("%v: %v for %d stored cells", c.shape, el, d.NNZ())
			}
			if k == 0 {
				first = v
				t.Logf("%v, total %v: %.12f", c.shape, d.Sum(), v)
			} else if math.Abs(v-first) > 1e-12*math.Max(1, math.Abs(first)) {
				t.Errorf("%v perm %v: %.12f, identity order %.12f", c.shape, perm, v, first)
			}
		}
	}
}

// Bad input is an error, not a NaN.
func TestRank1LogEvidenceRejects(t *testing.T) {
	m2, _ := tensor.New([]int{2, 2}, 1)
	m2.Append([]int{0, 1}, 3)
	for _, c := range []struct {
		data  *tensor.Sparse
		rates []float64
	}{
		{m2, []float64{1}},
		{m2, []float64{1, 0}},
		{m2, []float64{1, math.NaN()}},
		{m2, []float64{1, math.Inf(1)}},
		{&tensor.Sparse{Shape: []int{4}, Coords: [][]int32{{}}}, []float64{1}},
	} {
		if v, err := Rank1LogEvidence(c.data, c.rates); err == nil {
			t.Errorf("shape %v rates %v: %v, want an error", c.data.Shape, c.rates, v)
		}
	}
	if _, err := Rank1LogEvidenceMargins([][]float64{{1, 2}, {4}}, []float64{1, 1}); err == nil {
		t.Error("margins with unequal totals accepted")
	}
}

// At t = 2 the power posterior's normaliser is, by the substitution F_0 = F'_0 / 2, the evidence of
// the doubled counts 2X with mode 0's prior rate halved, times 2^{−2N} Π (2x)! / (x!)²: a route
// through integer margins and Rank1LogEvidence alone, for matrices and 3-way tensors.
func TestRank1LogPowerEvidenceAtTwoIsTheDoubledData(t *testing.T) {
	for _, shape := range [][]int{{12, 9}, {4, 3, 5}} {
		d, _, err := GeneratePoisson(rng.New(7, uint64(len(shape))), shape, 2, []float64{0.7, 0.7, 0.7}[:len(shape)])
		if err != nil {
			t.Fatal(err)
		}
		rates := []float64{0.5, 2, 1}[:len(shape)]
		got, err := Rank1LogPowerEvidence(d, rates, 2)
		if err != nil {
			t.Fatal(err)
		}
		doubled := &tensor.Sparse{Shape: d.Shape, Coords: d.Coords, Values: make([]float64, len(d.Values))}
		fix := 0.0
		for n, x := range d.Values {
			doubled.Values[n] = 2 * x
			fix += lgamma(2*x+1) - 2*lgamma(x+1) - 2*x*math.Ln2
		}
		halved := append([]float64(nil), rates...)
		halved[0] /= 2
		want, err := Rank1LogEvidence(doubled, halved)
		if err != nil {
			t.Fatal(err)
		}
		if want += fix; math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Errorf("%v: log Z(2) = %.12g, through the doubled data %.12g", shape, got, want)
		}
	}
}
