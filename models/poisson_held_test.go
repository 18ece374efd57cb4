package models

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/stirank/stirank/rng"
)

// Blocked's sweeps with rows held and a hook keep the held rows bit for bit, hand the hook
// counts that add up, in every mode, to the data's total at t = 1, return the log-likelihood
// an evaluator finds at the θ they leave (at t = 1 and at a t that rounds counts), and are the
// same on any number of cores. (Geweke tests of the held sweeps, the relabelling and the partial
// scale moves run in package baselines, through Chib's method.)
func TestBlockedHoldsRowsAndShowsTheSplit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	shape := []int{60, 50, 40}
	rates := []float64{0.25, 0.25, 0.25}
	data, _, err := GeneratePoisson(rng.New(62, 5), shape, 3, rates)
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, x := range data.Values {
		total += x
	}
	m, err := NewPoisson("cp", data, 4, rates, LogScale)
	if err != nil {
		t.Fatal(err)
	}
	held := []int{7, 0, 0}
	run := func(cores int) []float64 {
		runtime.GOMAXPROCS(cores)
		r := rng.New(62, 7)
		theta := make([]float64, m.Dim())
		m.SamplePrior(r, theta)
		start := slices.Clone(theta)
		k := m.NewBlocked()
		k.Hold(held)
		temp := 1.0
		k.OnSplit(func(*rand.Rand) {
			if temp != 1 {
				return
			}
			for f := range shape {
				if s := floats.Sum(k.Counts(f)); s != total {
					t.Errorf("mode %d's counts add up to %v, the data's to %v", f, s, total)
				}
			}
		})
		e := m.NewEval()
		var out []float64
		for s := range 4 {
			temp = []float64{1, 0.37}[s%2]
			ll := k.Sweep(r, temp, theta, make([]float64, len(shape)))
			e.Prepare(theta)
			if want := LogLik(e, m); math.Abs(ll-want) > 1e-6*math.Abs(want) {
				t.Errorf("t = %v: the sweep's log-likelihood %v, the evaluator's %v", temp, ll, want)
			}
			out = append(out, ll)
		}
		f := m.factors[0]
		if !slices.Equal(theta[f.Offset:f.Offset+held[0]*f.Cols], start[f.Offset:f.Offset+held[0]*f.Cols]) {
			t.Errorf("the held rows moved")
		}
		if slices.Equal(theta[f.Offset+held[0]*f.Cols:], start[f.Offset+held[0]*f.Cols:]) {
			t.Errorf("the free rows stayed")
		}
		return append(out, theta...)
	}
	one := run(1)
	for _, cores := range []int{2, 8} {
		if !slices.Equal(run(cores), one) {
			t.Errorf("the held sweeps on %d cores differ from those on one", cores)
		}
	}
}
