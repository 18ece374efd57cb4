package evidence

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// CombineReferencePath reduces the chains of one rank whose replicas (Chain) each integrate the
// path π_t ∝ q_c^(1−t) (p(θ) p(X | θ))^t from their own reference q_c, fitted to a Gibbs run at
// t = 1, to the posterior, by Ladder.PathRule. Each replica's integral estimates the evidence of
// the basin its reference was fitted in (its chains do not leave it), and where the Gibbs runs
// found basins of different mass the replicas part by far more than their noise: by 30 to 820
// nats at ranks 3–6 of a 257×275 speech spectrogram. Averaging them would report a basin that
// holds none of the mass, so the estimate is that of the replicas within three standard errors
// of the best one's (Combine over their chains, the between-replica spread included), and the
// others' are listed in Apart. Basins of less mass add to p(X | R) what this leaves out: at most
// log k nats for k basins of equal mass, less the more they differ.
func CombineReferencePath(l Ladder, chains []ChainSummary) (RankEvidence, error) {
	rule := func([]Rung) ([]float64, []float64) { return l.PathRule() }
	all, err := combine(l, rule, chains)
	if err != nil || len(all.Diverged) > 0 {
		return all, err
	}
	byReplica := map[int][]ChainSummary{}
	for _, c := range chains {
		byReplica[c.Chain] = append(byReplica[c.Chain], c)
	}
	type replica struct {
		chain int
		est   RankEvidence
	}
	var reps []replica
	for c, cs := range byReplica {
		est, err := combine(l, rule, cs)
		if err != nil {
			return all, fmt.Errorf("replica %d: %w", c, err)
		}
		reps = append(reps, replica{c, est})
	}
	slices.SortFunc(reps, func(a, b replica) int {
		return cmp.Or(cmp.Compare(b.est.LogEvidence, a.est.LogEvidence), cmp.Compare(a.chain, b.chain))
	})
	best := reps[0].est
	var kept []ChainSummary
	var apart []float64
	for _, r := range reps {
		if best.LogEvidence-r.est.LogEvidence > 3*math.Hypot(best.StdErr, r.est.StdErr) {
			apart = append(apart, r.est.LogEvidence)
			continue
		}
		kept = append(kept, byReplica[r.chain]...)
	}
	re := all
	if len(apart) > 0 {
		if re, err = combine(l, rule, kept); err != nil {
			return re, err
		}
		re.Steps, re.CellEvals, re.WarmChains, re.Apart = all.Steps, all.CellEvals, all.WarmChains, apart
	}
	// Both ends of the path estimate a divergence between q and the posterior π₁, each ≥ 0:
	// KL(q ‖ π₁) = log Z − f(0) and KL(π₁ ‖ q) = f(1) − log Z. Where q fits π₁ as well as a product
	// of Gammas can, they are alike (within 2.5× of each other on Glass, a 10×8 matrix with counts
	// in the hundreds and a 257×275 spectrogram at ranks 1–6); where π₁ spreads along directions q
	// cannot follow (a matrix's components mixing under counts in the tens of thousands), the
	// second grows by orders of magnitude, 370 and 500 times the first at ranks 2 and 3 of a 12×10
	// matrix with counts up to 1.4·10⁵, whose estimates were 17 and 349 nats low.
	n := len(re.Rungs) - 1
	front, back := re.LogEvidence-re.Rungs[0].MeanLogLik, re.Rungs[n].MeanLogLik-re.LogEvidence
	re.Uncovered = back > max(uncoveredRatio*front, uncoveredNats)
	return re, nil
}

// A path's rank is Uncovered where f(1) − log Z exceeds both uncoveredRatio times log Z − f(0)
// and uncoveredNats.
const (
	uncoveredRatio = 5
	uncoveredNats  = 50
)
