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
// found basins of different mass the replicas part by far more than their noise: tens to
// hundreds of nats on a speech spectrogram at rank 5. Averaging them would report a basin that
// holds none of the mass, so the estimate is that of the replicas within three standard errors
// of the best one's (Combine over their chains, the between-replica spread included), and the
// others' are listed in Apart. Basins of less mass add to p(X | R) what this leaves out: at most
// log k nats for k basins of equal mass, less the more they differ.
func CombineReferencePath(l Ladder, chains []ChainSummary) (RankEvidence, error) {
	wf, wv := l.PathRule()
	all, err := combine(l, wf, wv, chains)
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
		est, err := combine(l, wf, wv, cs)
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
	if len(apart) == 0 {
		return all, nil
	}
	re, err := combine(l, wf, wv, kept)
	re.Steps, re.CellEvals, re.WarmChains, re.Apart = all.Steps, all.CellEvals, all.WarmChains, apart
	return re, err
}
