package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	core "github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/runners"
	"github.com/stirank/stirank/tensor"
	"github.com/stirank/stirank/transforms"
	tb "github.com/stirank/stirank/transforms/baselines"
)

// quickChib and quickAIS are short configurations for pipeline tests.
func quickChib() core.ChibConfig {
	c := core.DefaultChib()
	c.Starts, c.Burnin, c.Samples, c.ReducedBurnin, c.ReducedSamples = 1, 100, 200, 10, 100
	return c
}

func quickAIS() core.AISConfig {
	a := core.DefaultAIS()
	a.Temperatures = 100
	return a
}

func baselineOptions(data *tensor.Sparse, rates []float64, method string) BaselineOptions {
	src := transforms.Source{Inline: data, Checksum: transforms.InlineChecksum(data)}
	model := map[int]string{2: "nmf", 3: "cp"}[data.Order()]
	return BaselineOptions{
		Work:  tb.Work{Source: src, Rates: rates, Method: method, Chib: quickChib(), AIS: quickAIS()},
		Model: model, Prior: models.Params{"rates": models.Nums(rates...)}, Ranks: []int{1, 2, 3}, Replicas: 2,
		Data: DataInfo{Source: src.String(), Checksum: src.Checksum, Shape: data.Shape, Cells: data.NNZ()},
	}
}

// inProcess computes what the pipeline should write, without Beam.
func inProcess(t *testing.T, o BaselineOptions, data *tensor.Sparse) BaselineResult {
	t.Helper()
	p, err := core.NewProblem(data, o.Work.Rates)
	if err != nil {
		t.Fatal(err)
	}
	var res []evidence.RankEvidence
	for _, R := range o.Ranks {
		var sums []core.Summary
		for k := o.Replicas - 1; k >= 0; k-- { // any order
			s, err := p.Run(context.Background(), o.Work.Method, R, k, o.Work.Chib, o.Work.AIS)
			if err != nil {
				t.Fatal(err)
			}
			sums = append(sums, s)
		}
		re, err := core.CombineRank(o.Work.Method, sums)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, re)
	}
	r, err := NewBaselineResult(o.meta(), res)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseBaselineResult(b)
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
	for _, method := range []string{core.MethodChib, core.MethodAIS} {
		t.Run(method, func(t *testing.T) {
			o := baselineOptions(data, rates, method)
			o.OutDir = filepath.Join(t.TempDir(), "out")
			p, err := NewBaseline(o)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := runners.Run(context.Background(), p, runners.Logging{}); err != nil {
				t.Fatal(err)
			}
			got, err := ReadBaselineResult(context.Background(), o.OutDir)
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
			plain, err := ReadResult(context.Background(), o.OutDir)
			if err != nil {
				t.Fatalf("evidence.json not readable as a selection result: %v", err)
			}
			if plain.BestRank != got.BestRank || len(plain.Ranks) != 3 || got.Method != method {
				t.Fatalf("plain read: best %d, %d ranks, method %q", plain.BestRank, len(plain.Ranks), got.Method)
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
	bad := []func(*BaselineOptions){
		func(o *BaselineOptions) { o.Ranks = nil },
		func(o *BaselineOptions) { o.Ranks = []int{0} },
		func(o *BaselineOptions) { o.Ranks = []int{2, 2} },
		func(o *BaselineOptions) { o.Replicas = 0 },
		func(o *BaselineOptions) { o.Model = "gauss" },
		func(o *BaselineOptions) { o.Work.Rates = []float64{1} },
		func(o *BaselineOptions) { o.Work.Method = "sti" },
		func(o *BaselineOptions) { o.Work.Chib.Samples = 1 },
	}
	for i, f := range bad {
		o := baselineOptions(data, rates, core.MethodChib)
		f(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
	if err := baselineOptions(data, rates, core.MethodAIS).Validate(); err != nil {
		t.Fatal(err)
	}
}
