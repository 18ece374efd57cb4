package evidence

import (
	"math"
	"testing"
)

// The sigmoid ladder runs from 0 to 1, symmetric about t = 1/2 and densest at both ends; the
// path's rule is the corrected trapezoid in t, exact for cubic f.
func TestSigmoidLadderAndPathRule(t *testing.T) {
	l, err := ParseLadder("sigmoid:6", 30)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	for i := range l {
		if d := l[i] + l[len(l)-1-i] - 1; math.Abs(d) > 1e-12 {
			t.Errorf("rungs %d and %d are not symmetric about 1/2: %v and %v", i, len(l)-1-i, l[i], l[len(l)-1-i])
		}
	}
	if first, mid := l[1]-l[0], l[16]-l[15]; !(first < mid/20) {
		t.Errorf("first step %v is not much finer than the middle's %v", first, mid)
	}
	for _, bad := range []string{"sigmoid:0", "sigmoid:-2", "sigmoid:x", "sigmoid:31"} {
		if _, err := ParseLadder(bad, 10); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	f, v := make([]float64, len(l)), make([]float64, len(l))
	for i, x := range l {
		f[i] = -40 + 30*x + 12*x*x + 8*x*x*x
		v[i] = 30 + 24*x + 24*x*x
	}
	want := -40 + 15 + 4 + 2.0
	wf, wv := l.PathRule()
	got := 0.0
	for i := range l {
		got += wf[i]*f[i] + wv[i]*v[i]
	}
	if math.Abs(got-want) > 1e-10 {
		t.Errorf("path rule of a cubic = %.12f, want %.12f", got, want)
	}
	if plain := Trapezoid(l, f); math.Abs(plain-want) < 1e-4 {
		t.Errorf("the plain trapezoid should not be exact for a cubic (got %v)", plain)
	}
}

// Replicas on paths from their own references: those within their noise of each other are pooled
// as Combine pools them; one far below is set apart, the estimate is the others', and the rank's
// steps still count it.
func TestCombineReferencePath(t *testing.T) {
	l := Sigmoid(12, 6)
	wf, wv := l.PathRule()
	// f = a + 2t, v = 2 (M2 = 2·99): ∫ = a + 1.
	line := func(a float64) func(float64, int) (float64, float64) {
		return func(t float64, c int) (float64, float64) { return a + 2*t, 2 * 99 }
	}
	cs := summaries(l, 3, 3, line(-50))
	re, err := CombineReferencePath(l, cs)
	if err != nil {
		t.Fatal(err)
	}
	pooled, _ := combine(l, func([]Rung) ([]float64, []float64) { return wf, wv }, cs)
	if math.Abs(re.LogEvidence+49) > 1e-9 || re.LogEvidence != pooled.LogEvidence || len(re.Apart) != 0 || re.Steps != 120*3*len(l) {
		t.Errorf("agreeing replicas: %v ± %v, apart %v, %d steps", re.LogEvidence, re.StdErr, re.Apart, re.Steps)
	}
	far := summaries(l, 3, 4, func(t float64, c int) (float64, float64) {
		if c == 2 {
			return line(-80)(t, c)
		}
		return line(-50)(t, c)
	})
	re, err = CombineReferencePath(l, far)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(re.LogEvidence+49) > 1e-9 || len(re.Apart) != 1 || math.Abs(re.Apart[0]+79) > 1e-9 || re.Steps != 120*4*len(l) {
		t.Errorf("one replica 30 nats below: %v ± %v, apart %v, %d steps", re.LogEvidence, re.StdErr, re.Apart, re.Steps)
	}
	// Pooled with it, the estimate would have been 7.5 nats low.
	if all, _ := combine(l, func([]Rung) ([]float64, []float64) { return wf, wv }, far); math.Abs(all.LogEvidence+56.5) > 1e-9 {
		t.Errorf("all four pooled: %v", all.LogEvidence)
	}
	far[7].Divergence = "rank 3, t=0.5: record 4 is NaN"
	if re, err := CombineReferencePath(l, far); err != nil || !math.IsNaN(re.LogEvidence) || len(re.Diverged) != 1 {
		t.Errorf("diverged chain: %v, %v, %v", re.LogEvidence, re.Diverged, err)
	}
}

// A path whose f(1) − log Z dwarfs log Z − f(0) is flagged: the posterior spreads where the
// references have no mass. One whose two ends are alike is not.
func TestCombineReferencePathUncovered(t *testing.T) {
	l := Sigmoid(12, 6)
	for _, tc := range []struct {
		name string
		f    func(t float64) float64
		want bool
	}{
		{"alike", func(t float64) float64 { return -100 + 40*t }, false},
		{"blown up at t = 1", func(t float64) float64 { return -100 + 40*t + 1e4*math.Pow(t, 200) }, true},
	} {
		cs := summaries(l, 2, 2, func(x float64, c int) (float64, float64) { return tc.f(x), 99 })
		re, err := CombineReferencePath(l, cs)
		if err != nil {
			t.Fatal(err)
		}
		if re.Uncovered != tc.want {
			t.Errorf("%s: uncovered %v at f(0) − log Z = %.1f, f(1) − log Z = %.1f", tc.name, re.Uncovered, re.Rungs[0].MeanLogLik-re.LogEvidence, re.Rungs[len(l)-1].MeanLogLik-re.LogEvidence)
		}
	}
}
