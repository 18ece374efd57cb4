package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	core "github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/runners"
	"github.com/stirank/stirank/tensor"
	"github.com/stirank/stirank/transforms"
)

// quickChib and quickAIS are short configurations for pipeline tests.
func quickChib() estimators.ChibConfig {
	c := core.DefaultChib()
	c.Starts, c.Burnin, c.Samples, c.ReducedBurnin, c.ReducedSamples = 1, 100, 200, 10, 100
	return estimators.ChibConfig{Replicas: 2, ChibConfig: c}
}

func quickAIS() estimators.AISConfig {
	a := core.DefaultAIS()
	a.Temperatures = 100
	return estimators.AISConfig{Replicas: 2, AISConfig: a}
}

func baselineOptions(t testing.TB, data *tensor.Sparse, rates []float64, method string, config any) Options {
	src := transforms.Source{Inline: data, Checksum: transforms.InlineChecksum(data)}
	model := map[int]string{2: "nmf", 3: "cp"}[data.Order()]
	es, err := estimators.NewSpec(method, config)
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Work:  transforms.Work{Source: src, Model: models.Spec{Name: model, Params: models.Params{"rates": models.Nums(rates...)}}, Estimator: es},
		Ranks: []int{1, 2, 3},
		Meta:  Meta{Data: DataInfo{Source: src.String(), Checksum: src.Checksum, Shape: data.Shape, Cells: data.NNZ()}},
	}
}

// inProcess computes what the pipeline should write, without Beam.
func inProcess(t *testing.T, o Options, data *tensor.Sparse) Result {
	t.Helper()
	p, err := core.NewProblem(data, o.Work.Model.Params.Nums("rates"))
	if err != nil {
		t.Fatal(err)
	}
	var chib estimators.ChibConfig
	var ais estimators.AISConfig
	json.Unmarshal(o.Work.Estimator.Config, &chib)
	json.Unmarshal(o.Work.Estimator.Config, &ais)
	method := o.Work.Estimator.Name
	var res []evidence.RankEvidence
	for _, R := range o.Ranks {
		var sums []core.Summary
		for k := chib.Replicas - 1; k >= 0; k-- { // any order
			s, err := p.Run(context.Background(), method, R, k, chib.ChibConfig, ais.AISConfig)
			if err != nil {
				t.Fatal(err)
			}
			sums = append(sums, s)
		}
		re, err := core.CombineRank(method, sums)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, re)
	}
	r, err := NewResult(o.meta(), res)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseResult(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBaselinePipelinesMatchInProcess runs Chib and AIS through the Beam fan-out on the default
// runner and checks that evidence.json holds exactly the numbers of the in-process computation,
// in the shape stirank select writes (ParseResult reads it).
func TestBaselinePipelinesMatchInProcess(t *testing.T) {
	rates := []float64{1, 1}
	data, _, err := models.GeneratePoisson(rng.New(7), []int{6, 5}, 2, rates)
	if err != nil {
		t.Fatal(err)
	}
	for method, config := range map[string]any{core.MethodChib: quickChib(), core.MethodAIS: quickAIS()} {
		t.Run(method, func(t *testing.T) {
			o := baselineOptions(t, data, rates, method, config)
			o.OutDir = filepath.Join(t.TempDir(), "out")
			p, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := runners.Run(context.Background(), p, runners.Logging{}); err != nil {
				t.Fatal(err)
			}
			got, err := ReadResult(context.Background(), o.OutDir)
			if err != nil {
				t.Fatal(err)
			}
			want := inProcess(t, o, data)
			// Through JSON: NaN (no trapezoid) is null on both sides.
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			if !bytes.Equal(gj, wj) {
				t.Fatalf("pipeline result differs from in-process:\n got %s\nwant %s", gj, wj)
			}
			// The configuration recorded is the one the tasks ran with.
			var recorded map[string]any
			if err := got.DecodeConfig(&recorded); err != nil || len(got.Ranks) != 3 || got.Method != method || recorded["replicas"] != float64(2) {
				t.Fatalf("method %q, %d ranks, configuration %v (%v)", got.Method, len(got.Ranks), recorded, err)
			}
			for _, rr := range got.Ranks {
				if !(float64(rr.StdErr) > 0) || rr.Steps == 0 {
					t.Errorf("rank %d: stderr %v, steps %d", rr.Rank, rr.StdErr, rr.Steps)
				}
			}
			t.Logf("%s\n%s", method, got.Table())
		})
	}
}

func TestBaselineOptionsValidate(t *testing.T) {
	rates := []float64{1, 1}
	data, _, _ := models.GeneratePoisson(rng.New(7), []int{6, 5}, 2, rates)
	noReplicas, fewSamples := quickChib(), quickChib()
	noReplicas.Replicas, fewSamples.Samples = 0, 1
	bad := []func(*Options){
		func(o *Options) { o.Ranks = nil },
		func(o *Options) { o.Ranks = []int{0} },
		func(o *Options) { o.Ranks = []int{2, 2} },
		func(o *Options) { o.Work.Model.Name = "gauss" },
		func(o *Options) { o.Work.Model.Params = models.Params{"rates": models.Nums(1)} },
		func(o *Options) { o.Work.Estimator.Name = "nope" },
		func(o *Options) {
			o.Work.Estimator = baselineOptions(t, data, rates, core.MethodChib, noReplicas).Work.Estimator
		},
		func(o *Options) {
			o.Work.Estimator = baselineOptions(t, data, rates, core.MethodChib, fewSamples).Work.Estimator
		},
	}
	for i, f := range bad {
		o := baselineOptions(t, data, rates, core.MethodChib, quickChib())
		f(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
	if err := baselineOptions(t, data, rates, core.MethodAIS, quickAIS()).Validate(); err != nil {
		t.Fatal(err)
	}
}
