package klnmf

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// product returns W·H for random F × R and R × N factors with entries in (0.1, 1.1), every
// cell stored unless sparse, which leaves out a random 30% of the cells, zeros of a count matrix.
func product(F, N, R int, seed uint64, sparse bool) (*tensor.Sparse, []float64) {
	g := rng.New(seed)
	w, h := make([]float64, F*R), make([]float64, R*N)
	for i := range w {
		w[i] = 0.1 + g.Float64()
	}
	for i := range h {
		h[i] = 0.1 + g.Float64()
	}
	x, _ := tensor.New([]int{F, N}, F*N)
	for f := range F {
		for j := range N {
			v := 0.0
			for r := range R {
				v += w[f*R+r] * h[r*N+j]
			}
			if sparse && g.Float64() < 0.3 {
				continue
			}
			x.Append([]int{f, j}, 10*v)
		}
	}
	return x, w
}

func TestDivergenceNeverIncreases(t *testing.T) {
	x, _ := product(20, 30, 4, 1, true)
	for i := range x.Values {
		x.Values[i] = math.Round(x.Values[i])
	}
	var trace []float64
	r, err := Fit(x, Options{Rank: 3, Iters: 300, Seed: 7, Progress: func(_ int, kl float64) { trace = append(trace, kl) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(trace) != r.Sweeps+1 || trace[len(trace)-1] != r.KL {
		t.Fatalf("%d progress calls for %d sweeps, last %v, KL %v", len(trace), r.Sweeps, trace[len(trace)-1], r.KL)
	}
	for i := 1; i < len(trace); i++ {
		if trace[i] > trace[i-1]*(1+1e-12) {
			t.Errorf("sweep %d raised the divergence from %v to %v", i, trace[i-1], trace[i])
		}
	}
	if !(trace[0] > 1.5*r.KL) {
		t.Errorf("divergence went from %v to %v only", trace[0], r.KL)
	}
}

// TestRecoversExactRank fits a matrix that is exactly of rank 3 at rank 3: the divergence falls
// to nearly zero, and W·H reproduces every cell.
func TestRecoversExactRank(t *testing.T) {
	x, _ := product(15, 25, 3, 2, false)
	r, err := Fit(x, Options{Rank: 3, Iters: 5000, Tol: 1e-12, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r.KL > 1e-4*x.Sum() {
		t.Errorf("KL %v after %d sweeps on data summing to %v", r.KL, r.Sweeps, x.Sum())
	}
	worst := 0.0
	for c, v := range x.Values {
		f, j := int(x.Coords[0][c]), int(x.Coords[1][c])
		m := 0.0
		for k := range r.K {
			m += r.W[f*r.K+k] * r.H[k*r.N+j]
		}
		worst = max(worst, math.Abs(m-v)/v)
	}
	if worst > 0.01 {
		t.Errorf("worst relative error of a cell %v", worst)
	}
}

func TestDeterministic(t *testing.T) {
	x, _ := product(10, 12, 2, 4, true)
	fit := func(seed uint64) *Result {
		r, err := Fit(x, Options{Rank: 2, Iters: 50, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b, c := fit(5), fit(5), fit(6)
	if !slices.Equal(a.W, b.W) || !slices.Equal(a.H, b.H) || a.KL != b.KL {
		t.Error("the same seed gave different fits")
	}
	if slices.Equal(a.W, c.W) {
		t.Error("different seeds gave the same fit")
	}
}

// TestFixedColumns holds the true W fixed: its columns come back unchanged, and fitting H alone
// reaches the exact fit that a free W only approaches.
func TestFixedColumns(t *testing.T) {
	x, w := product(12, 20, 3, 8, false)
	r, err := Fit(x, Options{Fixed: w, FixedCols: 3, Iters: 2000, Tol: 1e-14, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.W, w) {
		t.Error("fixed columns changed")
	}
	if r.KL > 1e-6*x.Sum() {
		t.Errorf("KL %v with the true dictionary", r.KL)
	}
	// One free column beside them: the fixed ones still do not move.
	r, err = Fit(x, Options{Fixed: w, FixedCols: 3, Rank: 1, Iters: 20, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for f := range 12 {
		if !slices.Equal(r.W[f*4:f*4+3], w[f*3:f*3+3]) {
			t.Fatalf("row %d of the fixed block changed", f)
		}
	}
}

func TestBadInput(t *testing.T) {
	x, _ := product(4, 5, 1, 1, false)
	cube, _ := tensor.New([]int{2, 2, 2}, 1)
	cube.Append([]int{0, 0, 0}, 1)
	neg, _ := tensor.New([]int{2, 2}, 1)
	neg.Append([]int{1, 0}, -1)
	zero, _ := tensor.New([]int{2, 2}, 1)
	zero.Append([]int{1, 0}, 0)
	for _, tt := range []struct {
		x    *tensor.Sparse
		o    Options
		want string
	}{
		{cube, Options{Rank: 1}, "not a 3-way array"},
		{neg, Options{Rank: 1}, "cell (1, 0) is -1"},
		{zero, Options{Rank: 1}, "every cell is zero"},
		{x, Options{}, "need at least one column"},
		{x, Options{Rank: 1, Iters: -1}, "must not be negative"},
		{x, Options{FixedCols: 1, Fixed: []float64{1}}, "fixed block has 1 entries, want 4 × 1"},
		{x, Options{FixedCols: 1, Fixed: []float64{1, 1, math.NaN(), 1}}, "fixed entry (2, 0) is NaN"},
		{x, Options{Rank: 1, Start: []float64{1, 1}}, "start block has 2 entries, want 4 × 1"},
		{x, Options{Rank: 1, Start: []float64{1, 0, 1, 1}}, "start entry (1, 0) is 0"},
		{x, Options{FixedCols: 1, Fixed: []float64{1, 0, 1, 1}}, "cell (1, 0) is " + fmt.Sprint(x.Values[5]) + " but row 1 of the fixed columns is zero"},
	} {
		if _, err := Fit(tt.x, tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Fit(%v, %+v): %v, want %q", tt.x.Shape, tt.o, err, tt.want)
		}
	}
}

// TestHold fits data whose free part is exactly a column with activations constant over runs of
// 4 columns (the last run has 2): with Hold 4 the free activations come back tied, the
// divergence never rises, and the tied EM reaches the exact fit.
func TestHold(t *testing.T) {
	const F, N, hold = 12, 30, 4
	x, w := product(F, N, 2, 9, false)
	free := make([]float64, F)
	for f := range free {
		free[f] = 1 + float64(f%3)
	}
	for c := range x.Values {
		f, j := x.Coords[0][c], x.Coords[1][c]
		x.Values[c] += 10 * free[f] * float64(1+int(j)/hold%3)
	}
	var trace []float64
	r, err := Fit(x, Options{Fixed: w, FixedCols: 2, Rank: 1, Hold: hold, Iters: 3000, Tol: 1e-14, Seed: 2,
		Progress: func(_ int, kl float64) { trace = append(trace, kl) }})
	if err != nil {
		t.Fatal(err)
	}
	for j := range N {
		if h, first := r.H[2*N+j], r.H[2*N+j/hold*hold]; h != first {
			t.Fatalf("free activation of column %d is %v, of its run's first %v", j, h, first)
		}
	}
	for i := 1; i < len(trace); i++ {
		if trace[i] > trace[i-1]+1e-12*x.Sum() {
			t.Fatalf("sweep %d raised the divergence from %v to %v", i, trace[i-1], trace[i])
		}
	}
	if r.KL > 1e-6*x.Sum() {
		t.Errorf("KL %v of data summing to %v: the tied model holds it exactly", r.KL, x.Sum())
	}
}

// TestStart checks that the free columns start in the proportions of Options.Start (to within
// the ±10% that keeps them apart), where the random start spreads them by up to a factor of 3.
func TestStart(t *testing.T) {
	x, _ := product(6, 8, 2, 1, false)
	start := []float64{1, 5, 2, 4, 3, 3, 4, 2, 5, 1, 6, 7}
	for _, withStart := range []bool{true, false} {
		o := Options{Rank: 2, Seed: 3}
		if withStart {
			o.Start = start
		}
		r, err := Fit(x, o)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := math.Inf(1), 0.0
		for i, v := range start {
			lo, hi = min(lo, r.W[i]/v), max(hi, r.W[i]/v)
		}
		if withStart != (hi/lo <= 1.1/0.9) {
			t.Errorf("start given %v: W / start spans %.3g to %.3g", withStart, lo, hi)
		}
	}
}
