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

// BenchmarkPathSweep is a sweep on the path from a reference (every entry's slice update and the
// scale, shear and transfer moves) at t = 0.3 at ranks 4 and 8 of a 257×275 matrix shaped like
// the real spectrogram of the README (λ = 1: most cells hold a few counts), at rank 9 of a 30×20
// matrix like the embedded default, where the reference's sums over its grid weigh more than the
// cells, and at rank 3 of an 8×6×5 tensor of rank 2 with counts in the thousands, whose split
// component the transfers move.
func BenchmarkPathSweep(b *testing.B) {
	for _, bc := range []struct {
		name     string
		shape    []int
		rate     float64
		truth, R int
	}{
		{"257x275/R=4", []int{257, 275}, 1, 4, 4},
		{"257x275/R=8", []int{257, 275}, 1, 4, 8},
		{"30x20/R=9", []int{30, 20}, 0.5, 4, 9},
		{"8x6x5/R=3", []int{8, 6, 5}, 0.1, 2, 3},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := tinyProblem(b, 3, bc.shape, bc.truth, bc.rate)
			ctx := context.Background()
			fit, err := p.SketchReference(ctx, rng.New(1), bc.R, 40)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			c, err := p.RunPath(ctx, rng.New(2), fit, 0.3, 1, 0, b.N)
			if err != nil || c.Divergence != "" {
				b.Fatal(err, c.Divergence)
			}
			b.ReportMetric(float64(c.CellEvals)/float64(c.Sweeps*p.NumCells()), "evals/cell")
		})
	}
}
