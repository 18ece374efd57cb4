package pipelines

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/cputime"
	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/runners"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/tensor"
	"github.com/stirank/stirank/testdata"
	"github.com/stirank/stirank/transforms"
)

// embedded returns the options for an embedded dataset, with the checksum filled in.
func embedded(t testing.TB, name string, spec models.Spec, cfg sti.Config) (Options, *tensor.Sparse) {
	t.Helper()
	ds, err := tensorio.ReadFS(testdata.FS, name, tensorio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := transforms.Source{Embedded: name, Checksum: ds.Manifest.Checksum()}
	return Options{
		Work: transforms.Work{Source: src, Model: spec, Estimator: stiSpec(t, cfg)},
		Meta: Meta{Data: DataInfo{Source: src.String(), Checksum: src.Checksum, Shape: ds.Tensor.Shape, Cells: ds.Tensor.NNZ()}},
	}, ds.Tensor
}

// stiSpec is the sti estimator with configuration cfg.
func stiSpec(t testing.TB, cfg sti.Config) estimators.Spec {
	s, err := estimators.NewSpec(estimators.STIName, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// inline returns the options for in-memory data.
func inline(t testing.TB, data *tensor.Sparse, spec models.Spec, cfg sti.Config) Options {
	return inlineOf(data, spec, stiSpec(t, cfg))
}

// inlineOf returns the options of estimator es for in-memory data.
func inlineOf(data *tensor.Sparse, spec models.Spec, es estimators.Spec) Options {
	src := transforms.Source{Inline: data, Checksum: transforms.InlineChecksum(data)}
	return Options{
		Work: transforms.Work{Source: src, Model: spec, Estimator: es},
		Meta: Meta{Data: DataInfo{Source: src.String(), Checksum: src.Checksum, Shape: data.Shape, Cells: data.NNZ()}},
	}
}

// runPipeline runs the rank selection on the default runner and returns the result it wrote.
func runPipeline(t testing.TB, o Options) (Result, runners.Result) {
	t.Helper()
	if o.OutDir == "" {
		o.OutDir = filepath.Join(t.TempDir(), "out")
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := runners.Run(context.Background(), p, runners.Logging{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReadResult(context.Background(), o.OutDir)
	if err != nil {
		t.Fatal(err)
	}
	return r, rr
}

// sweep runs the same estimation in-process (estimators.RunRace, estimators.RunRanks) and returns
// its result as the pipeline would write it.
func sweep(t testing.TB, o Options, data *tensor.Sparse) Result {
	t.Helper()
	e, err := o.Work.New()
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if estimators.IsRacer(e) {
		res, standing, err := estimators.RunRace(context.Background(), e, data, o.Ranks, o.Extra, estimators.TimeBudget{})
		if err != nil {
			t.Fatal(err)
		}
		r, err = NewRaceResult(o.meta(), res, &standing)
	} else {
		res, err := estimators.RunRanks(context.Background(), e, data, o.Ranks)
		if err != nil {
			t.Fatal(err)
		}
		r, err = NewResult(o.meta(), res)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Through JSON, as evidence.json is.
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	r, err = ParseResult(js)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGaussMatchesSweep(t *testing.T) {
	spec := models.GaussSpec(models.ICASSPGauss)
	o, data := embedded(t, "gauss5000r5", spec, sti.Default("gauss"))
	o.Ranks = []int{1, 2, 3, 4, 5, 6, 7}
	got, run := runPipeline(t, o)
	want := sweep(t, o, data)
	if !reflect.DeepEqual(got, want) {
		for i := range want.Ranks {
			g, w := got.Ranks[i], want.Ranks[i]
			t.Logf("rank %d: pipeline %v ± %v, sweep %v ± %v", w.Rank, g.LogEvidence, g.StdErr, w.LogEvidence, w.StdErr)
		}
		t.Fatal("pipeline and in-process sweep differ")
	}
	// The estimates are close to the exact evidence (a sanity check of the plumbing: the accuracy
	// itself is sti's business and tested there).
	for _, r := range got.Ranks {
		m, err := models.NewGauss(data.Values, r.Rank, models.ICASSPGauss)
		if err != nil {
			t.Fatal(err)
		}
		exact := m.LogEvidence()
		t.Logf("rank %d: %.2f ± %.2f (exact %.2f) p=%.3f", r.Rank, r.LogEvidence, r.StdErr, exact, r.PosteriorProb)
		if math.Abs(float64(r.LogEvidence)-exact) > 1+5*float64(r.StdErr) {
			t.Errorf("rank %d: estimate %.2f ± %.2f, exact %.2f", r.Rank, r.LogEvidence, r.StdErr, exact)
		}
	}
	// Beam metrics count every step and chain.
	miscounted := func(run runners.Result) []string {
		var bad []string
		for _, r := range got.Ranks {
			if n, ok := run.Counter(transforms.MetricsNamespace, transforms.StepsMetric(r.Rank)); !ok || n != r.Steps {
				bad = append(bad, fmt.Sprintf("rank %d: Beam counter %d (reported %v), result says %d steps", r.Rank, n, ok, r.Steps))
			}
		}
		cfg := sti.Default("gauss")
		if n, ok := run.Counter(transforms.MetricsNamespace, transforms.TasksMetric); !ok || n != int64(len(o.Ranks)*len(cfg.Ladder)*cfg.Chains) {
			bad = append(bad, fmt.Sprintf("chains counter %d (%v)", n, ok))
		}
		return bad
	}
	if bad := miscounted(run); bad != nil {
		t.Logf("%v; running again (see runners.Result.Counter on prism)", bad)
		_, run = runPipeline(t, o)
		for _, b := range miscounted(run) {
			t.Error("run again: " + b)
		}
	}
}

// tiny is a cheap configuration for tests of the plumbing, not of the estimates.
func tiny(model string) sti.Config {
	c := sti.Default(model)
	c.Ladder = evidence.Power(4, 4)
	c.Steps, c.Burnin = 40, 10
	c.Starts, c.StartSteps = 1, 0
	if c.Rank1 != nil {
		c.Rank1 = &sti.RankBudget{Rungs: 6, Steps: 20, Burnin: 5, Descent: c.Descent / 2}
	}
	return c
}

func TestInlinePoissonMatchesSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	data, _, err := models.GeneratePoisson(r, []int{12, 9}, 2, []float64{0.5, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	spec := models.PoissonSpec("nmf", []float64{0.5, 0.5}, models.LogScale)
	o := inline(t, data, spec, tiny("nmf"))
	o.Ranks = []int{3, 1, 2}
	o.OutDir = filepath.Join(t.TempDir(), "out")
	cpu0 := cputime.Now()
	got, _ := runPipeline(t, o)
	cpu := (cputime.Now() - cpu0).Seconds()
	want := sweep(t, o, data)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pipeline and in-process sweep differ:\n%+v\n%+v", got.Ranks, want.Ranks)
	}
	// timing.json has every rank, all of its tasks (its start stage, each of its chains in every
	// round it ran, and above rank 1 its phase check), and CPU shares that add up to no more than
	// the process used.
	timing, err := ReadTiming(o.OutDir)
	if err != nil {
		t.Fatal(err)
	}
	c := tiny("nmf")
	var sum float64
	for i, rt := range timing.Ranks {
		// Rank 1 runs a ladder of its own (sti.Config.Rank1).
		tasks := 1 + (got.Ranks[i].Round+1)*len(c.AtRank(rt.Rank).Ladder)*c.Chains
		if rt.Rank > 1 {
			tasks++
		}
		if rt.Rank != i+1 || rt.Tasks != tasks || !(rt.Seconds > 0) || rt.CPUSeconds < 0 {
			t.Errorf("timing of rank %d: %+v, want %d tasks and a positive time", i+1, rt, tasks)
		}
		sum += rt.CPUSeconds
	}
	if len(timing.Ranks) != 3 || sum > cpu {
		t.Errorf("timing %+v: %.3f CPU seconds in all, the process used %.3f", timing.Ranks, sum, cpu)
	}
}
