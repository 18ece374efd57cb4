package pipelines

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
)

// Thresholds of the diagnostics: loose enough that a healthy default run raises none, tight
// enough that each flag points at an estimate worth rerunning.
const (
	// maxSpread bounds stderr / stderr_within: more means the replicas disagree beyond their noise.
	maxSpread = 3
	// maxDrop is how many combined standard errors f(t) may fall between neighbouring rungs, and
	// maxDropNats what the fall may weigh in the integral (Δt times the fall): near t = 0 the
	// rungs' means scatter beyond their standard errors (the prior's log-likelihood is heavy
	// tailed) but weigh nothing.
	maxDrop     = 3
	maxDropNats = 0.5
)

// Issue is one reason to doubt the estimate of a rank.
type Issue struct {
	// Kind is a short tag: diverged, disagree, check-diverged, apart, uncovered, phase,
	// low-ess, spread or decreasing.
	Kind string
	// Detail explains it in one sentence with the numbers that raised it.
	Detail string
}

// Diagnostics summarises what a rank's estimate rests on, as the report and the terminal table
// show it.
type Diagnostics struct {
	Rank  int
	Steps int64
	// Rungs counts the ladder's rungs; ESSMin and ESSMedian are their effective sample sizes
	// (NaN without a ladder, as for chib and ais).
	Rungs             int
	ESSMin, ESSMedian float64
	Divergences       int
	// Gap is |TI − SMC|, or |path − check|, in combined standard errors; NaN without a second
	// estimate.
	Gap    float64
	Issues []Issue
}

// Diagnose returns the diagnostics of the rank.
func (rr RankResult) Diagnose() Diagnostics {
	d := Diagnostics{Rank: rr.Rank, Steps: rr.Steps, Rungs: len(rr.Ladder), Divergences: len(rr.Diverged),
		ESSMin: math.NaN(), ESSMedian: math.NaN(), Gap: math.NaN()}
	if d.Divergences > 0 {
		d.Issues = append(d.Issues, Issue{"diverged", fmt.Sprintf("%d chains produced NaN/Inf (first: %s), so the rank has no estimate.", d.Divergences, rr.Diverged[0])})
	}
	if rr.Replicas > 0 && !math.IsNaN(float64(rr.SMC)) && !math.IsNaN(float64(rr.LogEvidence)) {
		se := math.Hypot(float64(rr.TIStdErr), float64(rr.SMCStdErr))
		d.Gap = math.Abs(float64(rr.LogEvidence-rr.SMC)) / se
		if rr.Disagree {
			d.Issues = append(d.Issues, Issue{"disagree", fmt.Sprintf("the integral and the SMC estimate differ by %.1f standard errors (the stderr includes the difference): a mode the replicas did not share, or populations that lag.", d.Gap)})
		}
	}
	if len(rr.Apart) > 0 {
		of := "the estimate, which the others make"
		d.Issues = append(d.Issues, Issue{"apart", fmt.Sprintf("%d replicas' integrals (highest %.2f) lie more than 3 standard errors below %s: their references were fitted in basins of less mass, or their chains lag. Run more --chains to see which.", len(rr.Apart), float64(slices.Max(rr.Apart)), of)})
	}
	if rr.Uncovered {
		n := len(rr.Ladder) - 1
		d.Issues = append(d.Issues, Issue{"uncovered", fmt.Sprintf("the posterior spreads where the references have almost no mass (f(1) − log Z = %.1f against log Z − f(0) = %.1f, alike where they fit it): the estimate may be far off; set it against the default's (a run without --reference).", float64(rr.Ladder[n].MeanLogLik-rr.LogEvidence), float64(rr.LogEvidence-rr.Ladder[0].MeanLogLik))})
	}
	// A rank the race left behind stopped early on purpose: its chains' few records are what
	// its error bar says, and the race had what it needed of it.
	crude := rr.Left != ""
	if rr.Drift > 0 && !crude {
		d.Issues = append(d.Issues, Issue{"drift", fmt.Sprintf("the chains' records still drift by %.2f nats beyond their noise (their first halves' integral against the whole's, and the last round's move), which the stderr includes; a larger --budget lets them settle.", float64(rr.Drift))})
	}
	if ess := rungESS(rr.Ladder); len(ess) > 0 {
		slices.Sort(ess)
		d.ESSMin = ess[0]
		if n := len(ess); n%2 == 1 {
			d.ESSMedian = ess[n/2]
		} else {
			d.ESSMedian = (ess[n/2-1] + ess[n/2]) / 2
		}
		if d.ESSMin < evidence.MinESS && !crude {
			d.Issues = append(d.Issues, Issue{"low-ess", fmt.Sprintf("a rung's mean rests on %.1f effective samples (fewer than %d): its chains barely moved; run more steps.", d.ESSMin, evidence.MinESS)})
		}
	}
	se := float64(rr.StdErr)
	if rr.TIStdErr > 0 {
		// What a second estimate's disagreement adds to the error bar is its own issue.
		se = float64(rr.TIStdErr)
	}
	if rr.Phase {
		d.Issues = append(d.Issues, Issue{"phase", fmt.Sprintf("a walk back up the ladder from t = 0.01 parts from the chains by %.1f nats of the integral, which the stderr includes: f(t) changes phase, or the chains hold a basin the walk did not reach, and the estimate may be high. On %s, select --reference integrates along paths from fitted references, which pass no phase change (docs/method.md); stirank chib, which reads only t = 1, and stirank ais check it.", float64(rr.Hysteresis), baselineModels())})
		se = math.Sqrt(math.Max(0, se*se-evidence.PhaseVariance(float64(rr.Hysteresis))))
	}
	se = math.Sqrt(math.Max(0, se*se-float64(rr.Drift*rr.Drift)))
	if within := float64(rr.StdErrWithin); within > 0 && se > maxSpread*within && !crude {
		d.Issues = append(d.Issues, Issue{"spread", fmt.Sprintf("the replicas spread %.1f times more than their within-chain noise explains: one may sit in another mode.", se/within)})
	}
	// f is non-decreasing in t (its derivative is a variance); an annealed run's rungs belong
	// to several replicas' ladders, whose means are not comparable rung by rung.
	if rr.Replicas == 0 && !crude {
		if lo, hi, nats, ok := decreasing(rr.Ladder); ok {
			d.Issues = append(d.Issues, Issue{"decreasing", fmt.Sprintf("f(t) falls by more than %d standard errors from t = %.3g to t = %.3g (%.1f nats of the integral) although it cannot decrease: the chains there had not mixed.", maxDrop, lo, hi, nats)})
		}
	}
	return d
}

// rungESS returns the effective sample sizes of the rungs that ran chains (an annealed run also
// lists its populations' rungs, whose ESS counts particles), or of all rungs when none did.
func rungESS(ladder []Rung) []float64 {
	var withChains, all []float64
	for _, g := range ladder {
		if math.IsNaN(float64(g.ESS)) {
			continue
		}
		all = append(all, float64(g.ESS))
		if g.Chains > 0 {
			withChains = append(withChains, float64(g.ESS))
		}
	}
	if len(withChains) > 0 {
		return withChains
	}
	return all
}

// decreasing finds the first pair of neighbouring rungs (in t) whose means fall by more than
// maxDrop combined standard errors and maxDropNats of the integral, and returns their
// temperatures and the fall's weight in the integral.
func decreasing(ladder []Rung) (lo, hi, nats float64, ok bool) {
	rungs := slices.Clone(ladder)
	slices.SortStableFunc(rungs, func(a, b Rung) int {
		switch {
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	})
	for i := 1; i < len(rungs); i++ {
		a, b := rungs[i-1], rungs[i]
		se := math.Hypot(float64(a.StdErr), float64(b.StdErr))
		drop := float64(a.MeanLogLik - b.MeanLogLik)
		if drop > maxDrop*se && (b.T-a.T)*drop > maxDropNats {
			return a.T, b.T, (b.T - a.T) * drop, true
		}
	}
	return 0, 0, 0, false
}

// baselineModels names the models stirank chib and ais estimate, "nmf or cp".
func baselineModels() string {
	var names []string
	for _, info := range estimators.BaselineModels() {
		names = append(names, info.Name)
	}
	return strings.Join(names, " or ")
}
