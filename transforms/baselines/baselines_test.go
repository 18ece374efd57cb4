package baselines

import (
	"context"
	"math"
	"reflect"
	"testing"

	core "github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/transforms"
)

func TestFanOut(t *testing.T) {
	var got []Task
	(&fanOutFn{Ranks: []int{1, 3, 2}, Replicas: 2}).ProcessElement(nil, func(t Task) { got = append(got, t) })
	want := []Task{{3, 0}, {3, 1}, {2, 0}, {2, 1}, {1, 0}, {1, 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tasks %v, want %v", got, want)
	}
}

// The CombineFn gives the same evidence whatever the order and grouping of its inputs.
func TestRankFnOrder(t *testing.T) {
	sums := []core.Summary{
		{Method: core.MethodAIS, Rank: 2, Replica: 0, LogEvidence: -10.5},
		{Method: core.MethodAIS, Rank: 2, Replica: 1, LogEvidence: -9.25},
		{Method: core.MethodAIS, Rank: 2, Replica: 2, LogEvidence: -11},
	}
	f := &RankFn{Method: core.MethodAIS}
	a := f.AddInput(f.AddInput(f.CreateAccumulator(), sums[2]), sums[0])
	b := f.AddInput(f.CreateAccumulator(), sums[1])
	x, err := f.ExtractOutput(f.MergeAccumulators(a, b))
	if err != nil {
		t.Fatal(err)
	}
	y, _ := f.ExtractOutput(f.AddInput(f.AddInput(f.AddInput(f.CreateAccumulator(), sums[0]), sums[1]), sums[2]))
	if x.LogEvidence != y.LogEvidence || x.StdErr != y.StdErr || math.IsNaN(x.LogEvidence) {
		t.Fatalf("order changed the result: %+v vs %+v", x, y)
	}
	if _, err := f.ExtractOutput(f.AddInput(a, sums[0])); err == nil {
		t.Fatal("a replica counted twice was accepted")
	}
}

// LoadProblem reads inline data once per process and refuses data whose checksum changed.
func TestLoadProblem(t *testing.T) {
	d, _, err := models.GeneratePoisson(rng.New(4), []int{5, 4}, 2, []float64{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	w := Work{Source: transforms.Source{Inline: d, Checksum: transforms.InlineChecksum(d)}, Rates: []float64{1, 1},
		Method: core.MethodChib, Chib: core.DefaultChib()}
	p1, err := LoadProblem(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := LoadProblem(context.Background(), w)
	if p1 != p2 {
		t.Error("the problem was prepared twice")
	}
	bad := w
	bad.Source.Checksum = "0000"
	if _, err := LoadProblem(context.Background(), bad); err == nil {
		t.Error("data with another checksum were accepted")
	}
	if err := (Work{Source: w.Source, Method: "sti"}).Validate(); err == nil {
		t.Error("unknown method accepted")
	}
}
