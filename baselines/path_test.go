package baselines

import (
	"context"
	"math"
	"testing"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/rng"
)

// pathIntegral is thermodynamic integration on the paths from the references of replicas, each
// fitted to 200 + 400 Gibbs sweeps, with one chain of 40 + 120 sweeps at each rung of the
// sigmoid:6 ladder of 20 temperatures, combined by evidence.CombineReferencePath.
func pathIntegral(t *testing.T, p *Problem, R, replicas int) evidence.RankEvidence {
	t.Helper()
	ctx := context.Background()
	l := evidence.Sigmoid(20, 6)
	var cs []evidence.ChainSummary
	for c := range replicas {
		fit, err := p.FitReference(ctx, rng.New(3, uint64(R), uint64(c)), R, 200, 400)
		if err != nil {
			t.Fatal(err)
		}
		for i, temp := range l {
			run, err := p.RunPath(ctx, rng.New(4, uint64(R), uint64(i), uint64(c)), fit, temp, 1, 40, 120)
			if err != nil || run.Divergence != "" {
				t.Fatalf("rank %d, rung %d, replica %d: %v %s", R, i, c, err, run.Divergence)
			}
			s := evidence.ChainSummary{Rank: R, TIndex: i, T: temp, Chain: c, Count: len(run.Records), Steps: run.Sweeps}
			s.Mean, s.M2, s.ESS = evidence.Summarize(run.Records)
			cs = append(cs, s)
		}
	}
	re, err := evidence.CombineReferencePath(l, cs)
	if err != nil {
		t.Fatal(err)
	}
	return re
}

// The integral along the paths from references is exact on tiny data, where the components switch
// labels all the time, and on the rank-1 oracle's matrices.
func TestPathIntegralExact(t *testing.T) {
	forTinyExact(t, func(name string, p *Problem, R int, exact float64) {
		re := pathIntegral(t, p, R, 3)
		t.Logf("%s R=%d exact %.4f | path integral %.4f ± %.4f, apart %v", name, R, exact, re.LogEvidence, re.StdErr, re.Apart)
		if math.Abs(re.LogEvidence-exact) > 3.5*re.StdErr+0.02 {
			t.Errorf("%s R=%d: path integral %.4f ± %.4f, exact %.4f", name, R, re.LogEvidence, re.StdErr, exact)
		}
	})
}
