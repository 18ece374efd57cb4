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
	pooled, _ := combine(l, wf, wv, cs)
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
	if all, _ := combine(l, wf, wv, far); math.Abs(all.LogEvidence+56.5) > 1e-9 {
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

// A check that agrees leaves the path's estimate and error bar as they are; one 20 nats off with
// error bars of 1 and 2 widens the error bar to the difference and is flagged; where the path is
// also uncovered and below the check, the check's estimate stands, widened alike, and the path's
// is kept, but not where it lies above the check; a check whose chains diverged leaves the
// estimate unchecked and lists them. Steps add up in every case.
func TestWithCheck(t *testing.T) {
	for _, tc := range []struct {
		name         string
		uncovered    bool
		check        RankEvidence
		estimate     float64
		stderr       float64
		disagree     bool
		checkIsValue bool
	}{
		{"agrees", false, RankEvidence{LogEvidence: -101, StdErr: 2, Steps: 5, CellEvals: 3}, -100, 1, false, true},
		{"agrees, uncovered", true, RankEvidence{LogEvidence: -101, StdErr: 2, Steps: 5, CellEvals: 3}, -100, 1, false, true},
		{"20 above", false, RankEvidence{LogEvidence: -80, StdErr: 2, Steps: 5, CellEvals: 3}, -100, math.Sqrt(1 + 400 - 5), true, true},
		{"20 above, uncovered", true, RankEvidence{LogEvidence: -80, StdErr: 2, Steps: 5, CellEvals: 3}, -80, math.Sqrt(4 + 400 - 5), true, true},
		{"20 below, uncovered", true, RankEvidence{LogEvidence: -120, StdErr: 2, Steps: 5, CellEvals: 3}, -100, math.Sqrt(1 + 400 - 5), true, true},
		{"diverged", true, RankEvidence{LogEvidence: math.NaN(), StdErr: math.NaN(), Steps: 5, CellEvals: 3, Diverged: []string{"rank 3, t=0.5: NaN"}}, -100, 1, false, false},
	} {
		path := RankEvidence{Rank: 3, LogEvidence: -100, StdErr: 1, Steps: 10, CellEvals: 7, Uncovered: tc.uncovered}
		re := WithCheck(path, tc.check)
		if math.Abs(re.StdErr-tc.stderr) > 1e-12 || re.Disagree != tc.disagree || re.LogEvidence != tc.estimate {
			t.Errorf("%s: %.3f ± %.3f, disagree %v; want %.3f ± %.3f, disagree %v", tc.name, re.LogEvidence, re.StdErr, re.Disagree, tc.estimate, tc.stderr, tc.disagree)
		}
		if stands := re.LogEvidence != path.LogEvidence; stands != (re.Path == path.LogEvidence) || !stands && re.Path != 0 {
			t.Errorf("%s: the path's estimate kept as %v", tc.name, re.Path)
		}
		if re.Steps != 15 || re.CellEvals != 10 {
			t.Errorf("%s: %d steps and %d cell evaluations, want 15 and 10", tc.name, re.Steps, re.CellEvals)
		}
		switch {
		case tc.checkIsValue && (re.Check != tc.check.LogEvidence || re.CheckStdErr != tc.check.StdErr || re.TIStdErr != path.StdErr):
			t.Errorf("%s: check %v ± %v, path's own ± %v", tc.name, re.Check, re.CheckStdErr, re.TIStdErr)
		case !tc.checkIsValue && (!math.IsNaN(re.Check) || len(re.CheckDiverged) != 1 || len(re.Diverged) != 0):
			t.Errorf("%s: check %v, check diverged %v, diverged %v", tc.name, re.Check, re.CheckDiverged, re.Diverged)
		}
	}
}
