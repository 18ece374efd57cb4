package evidence

import (
	"math"
	"testing"
)

// PhaseCheck integrates the gap between the rungs' means and the walk up by the trapezoid in t
// from the walk's first rung, and calls a phase change only where two adjacent rungs part by
// PhaseZ standard deviations in the same direction and the walk agrees with the chains at its
// first two rungs; Combine then widens the standard error by PhaseVariance of the area, and only
// then.
func TestPhaseCheck(t *testing.T) {
	l := Power(10, 2) // t = (i/10)²: rungs 1…10 lie at or above 0.01
	const from = 1
	// f(t) = −10 + 4t, v = 4 (sd 2) at every rung: M2 = 4·99 over 100 records.
	cs := summaries(l, 2, 2, func(t float64, c int) (float64, float64) { return -10 + 4*t, 4 * 99 })
	base, err := Combine(l, cs)
	if err != nil {
		t.Fatal(err)
	}
	// walk returns the walk's means with the gaps (in standard deviations of 2) at rungs from….
	walk := func(z map[int]float64) []float64 {
		var a []float64
		for i := from; i < len(l); i++ {
			a = append(a, -10+4*l[i]-2*z[i])
		}
		return a
	}
	cases := []struct {
		name             string
		z                map[int]float64
		phase, unchecked bool
	}{
		{"the walk follows the chains", map[int]float64{}, false, false},
		{"noise below PhaseZ", map[int]float64{1: 2.9, 2: 2.9, 7: -2.9}, false, false},
		{"one rung alone", map[int]float64{5: 8}, false, false},
		{"adjacent rungs of opposite signs", map[int]float64{5: 8, 6: -8}, false, false},
		{"the chains hold the phase of t = 1 over three rungs", map[int]float64{4: 5, 5: 9, 6: 4}, true, false},
		{"the walk above the chains", map[int]float64{8: -3, 9: -3}, true, false},
		{"the walk parts at its first rung", map[int]float64{1: 3, 4: 5, 5: 9}, false, true},
		{"the walk parts at its second rung", map[int]float64{2: -4, 4: 5, 5: 9}, false, true},
	}
	for _, c := range cases {
		ascent := walk(c.z)
		area, phase, unchecked := PhaseCheck(l, base.Rungs, from, ascent)
		want := 0.0
		for i := from + 1; i < len(l); i++ {
			want += (l[i] - l[i-1]) * 2 * (c.z[i-1] + c.z[i]) / 2
		}
		if phase != c.phase || unchecked != c.unchecked || math.Abs(area-want) > 1e-9 {
			t.Errorf("%s: area %v, phase %v, unchecked %v; want %v, %v, %v", c.name, area, phase, unchecked, want, c.phase, c.unchecked)
		}
		re, err := Combine(l, cs, PhaseWalk{From: from, Means: ascent})
		if err != nil {
			t.Fatal(err)
		}
		se := base.StdErr
		if c.phase {
			se = math.Sqrt(se*se + PhaseVariance(want))
		}
		if re.Phase != c.phase || re.PhaseUnchecked != c.unchecked || re.Hysteresis != area || math.Abs(re.StdErr-se) > 1e-12 || re.LogEvidence != base.LogEvidence {
			t.Errorf("%s: Combine gave %v ± %v (hysteresis %v, phase %v); want %v ± %v", c.name, re.LogEvidence, re.StdErr, re.Hysteresis, re.Phase, base.LogEvidence, se)
		}
	}
	// A walk that does not end at t = 1 is not compared.
	if _, phase, unchecked := PhaseCheck(l, base.Rungs, from, walk(nil)[1:]); phase || !unchecked {
		t.Errorf("a walk short of the ladder's top was compared")
	}
	// A rank with a diverged chain has no estimate to check.
	diverged := append([]ChainSummary(nil), cs...)
	diverged[0].Divergence = "a test's"
	if re, err := Combine(l, diverged, PhaseWalk{From: from, Means: walk(map[int]float64{4: 5, 5: 9, 6: 4})}); err != nil || re.Phase || re.Ascent != nil {
		t.Errorf("the check was merged into a diverged rank: phase %v, walk %v (%v)", re.Phase, re.Ascent, err)
	}
}
