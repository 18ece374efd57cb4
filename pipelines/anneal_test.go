package pipelines

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/sti"
)

// An annealed selection runs in two stages on Beam (annealing per replica, then a chain per rung
// from the populations): both its estimates of rank-1 NMF land on the exact evidence within three
// standard errors, every rank gets an adaptive ladder and its SMC estimate, the steps count both
// stages, and the result does not depend on the number of workers.
func TestAnnealedSelection(t *testing.T) {
	cfg := sti.DefaultAnnealed("nmf")
	cfg.Chains, cfg.Annealing.Rungs = 4, 10
	one, exact := rank1OnWorkers(t, stiSpec(t, cfg))
	for _, rr := range one.Ranks {
		if rr.Replicas != 4 || len(rr.Ladder) < 4*3 || math.IsNaN(float64(rr.SMC)) || rr.Steps <= int64(4*10*cfg.Steps) {
			t.Errorf("rank %d: %d replicas, %d rungs, SMC %v, %d steps", rr.Rank, rr.Replicas, len(rr.Ladder), rr.SMC, rr.Steps)
		}
	}
	r1 := one.Ranks[0]
	t.Logf("exact %.3f: integral %+.3f ± %.3f, SMC %+.3f ± %.3f", exact, float64(r1.LogEvidence)-exact, r1.StdErr, float64(r1.SMC)-exact, r1.SMCStdErr)
	if math.Abs(float64(r1.LogEvidence)-exact) > 3*float64(r1.StdErr)+0.3 || math.Abs(float64(r1.SMC)-exact) > 3*float64(r1.SMCStdErr)+0.3 {
		t.Errorf("exact %.3f: integral %.3f ± %.3f, SMC %.3f ± %.3f", exact, r1.LogEvidence, r1.StdErr, r1.SMC, r1.SMCStdErr)
	}
}

// A selection on the paths from references runs in two stages on Beam (a fit per replica, then a
// chain per rung carrying it): rank-1 NMF lands on the exact evidence within three standard
// errors, the steps count both stages, and the result does not depend on the number of workers.
func TestReferenceSelection(t *testing.T) {
	cfg := pathConfig()
	es, err := estimators.NewSpec(estimators.PathName, cfg)
	if err != nil {
		t.Fatal(err)
	}
	one, exact := rank1OnWorkers(t, es)
	fit := 200 + cfg.ReferenceBurnin + cfg.ReferenceSweeps
	for _, rr := range one.Ranks {
		if len(rr.Ladder) != len(cfg.Ladder) || rr.Steps != int64(cfg.Chains*(fit+len(cfg.Ladder)*cfg.Steps)) {
			t.Errorf("rank %d: %d rungs, %d steps", rr.Rank, len(rr.Ladder), rr.Steps)
		}
	}
	r1 := one.Ranks[0]
	t.Logf("exact %.3f: path integral %+.3f ± %.3f", exact, float64(r1.LogEvidence)-exact, r1.StdErr)
	if math.Abs(float64(r1.LogEvidence)-exact) > 3*float64(r1.StdErr)+0.05 {
		t.Errorf("exact %.3f: path integral %.3f ± %.3f", exact, r1.LogEvidence, r1.StdErr)
	}
}

// pathConfig is the path from references cut to a unit test's budget.
func pathConfig() estimators.PathConfig {
	cfg := estimators.DefaultPath()
	cfg.Chains, cfg.Ladder, cfg.Steps, cfg.Burnin = 2, evidence.Sigmoid(10, 6), 60, 15
	cfg.ReferenceBurnin, cfg.ReferenceSweeps = 100, 100
	return cfg
}

// rank1OnWorkers runs ranks 1 and 2 of a 12×9 matrix drawn at rank 1 through the pipeline with
// the estimator es, on 1 and on 3 workers, checks the two results are the same, and returns one
// of them and the exact evidence of rank 1.
func rank1OnWorkers(t *testing.T, es estimators.Spec) (Result, float64) {
	t.Helper()
	rates := []float64{0.5, 0.5}
	data, _, err := models.GeneratePoisson(rand.New(rand.NewPCG(7, 7)), []int{12, 9}, 1, rates)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := models.Rank1LogEvidence(data, rates)
	if err != nil {
		t.Fatal(err)
	}
	o := inlineOf(data, models.PoissonSpec("nmf", rates, models.LogScale), es)
	o.Ranks = []int{1, 2}
	o.Workers = 1
	one, _ := runPipeline(t, o)
	o.Workers = 3
	three, _ := runPipeline(t, o)
	if !reflect.DeepEqual(one, three) {
		t.Fatalf("1 and 3 workers differ:\n%+v\n%+v", one.Ranks, three.Ranks)
	}
	return one, exact
}

// estimators.RunRank computes in one process what the pipeline computes for a rank of a staged
// estimator (the paths from references: fits, then chains), to the last digit.
func TestRunRankMatchesThePipeline(t *testing.T) {
	es, err := estimators.NewSpec(estimators.PathName, pathConfig())
	if err != nil {
		t.Fatal(err)
	}
	rates := []float64{0.5, 0.5}
	data, _, err := models.GeneratePoisson(rand.New(rand.NewPCG(7, 7)), []int{12, 9}, 2, rates)
	if err != nil {
		t.Fatal(err)
	}
	o := inlineOf(data, models.PoissonSpec("nmf", rates, models.LogScale), es)
	o.Ranks = []int{2}
	got, _ := runPipeline(t, o)
	e, err := o.Work.New()
	if err != nil {
		t.Fatal(err)
	}
	re, err := estimators.RunRank(context.Background(), e, data, 2)
	if err != nil {
		t.Fatal(err)
	}
	g := got.Ranks[0]
	if float64(g.LogEvidence) != re.LogEvidence || float64(g.StdErr) != re.StdErr || g.Steps != int64(re.Steps) {
		t.Errorf("pipeline %v ± %v in %d steps, RunRank %v ± %v in %d", g.LogEvidence, g.StdErr, g.Steps, re.LogEvidence, re.StdErr, re.Steps)
	}
}
