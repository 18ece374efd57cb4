package transforms

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/tensor"
	"github.com/stirank/stirank/testdata"
)

func smallWork(t *testing.T) Work {
	t.Helper()
	data, _, err := models.GeneratePoisson(rand.New(rand.NewPCG(1, 2)), []int{8, 6}, 2, []float64{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sti.Default("nmf")
	cfg.Ladder = evidence.Power(3, 4)
	cfg.Steps, cfg.Burnin, cfg.Starts = 30, 10, 1
	return Work{Source: Source{Inline: data}, Model: models.PoissonSpec("nmf", []float64{1, 1}, models.LogScale), Config: cfg}
}

// TestRankEvidenceFnOrder: the combined evidence is bit-identical whatever order the summaries
// arrive in and however they are split between accumulators.
func TestRankEvidenceFnOrder(t *testing.T) {
	w := smallWork(t)
	p, err := LoadProblem(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	var sums []evidence.ChainSummary
	for ti := range w.Config.Ladder {
		for c := range w.Config.Chains {
			s, err := p.RunChain(context.Background(), sti.ChainID{Rank: 2, TIndex: ti, Chain: c})
			if err != nil {
				t.Fatal(err)
			}
			sums = append(sums, s)
		}
	}
	want, err := evidence.Combine(w.Config.Ladder, sums)
	if err != nil {
		t.Fatal(err)
	}
	fn := &RankEvidenceFn{Ladder: w.Config.Ladder}
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 20 {
		perm := r.Perm(len(sums))
		cut := r.IntN(len(sums) + 1)
		a, b := fn.CreateAccumulator(), fn.CreateAccumulator()
		for i, j := range perm {
			if i < cut {
				a = fn.AddInput(a, sums[j])
			} else {
				b = fn.AddInput(b, sums[j])
			}
		}
		got, err := fn.ExtractOutput(fn.MergeAccumulators(b, a))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d: combined evidence depends on order:\n%+v\n%+v", trial, got, want)
		}
	}
	// A summary seen twice (a bug upstream) is an error, not a silently biased estimate.
	dup := fn.AddInput(fn.AddInput(fn.CreateAccumulator(), sums[0]), sums[0])
	if _, err := fn.ExtractOutput(dup); err == nil {
		t.Error("duplicate summary accepted")
	}
}

func TestFanOut(t *testing.T) {
	f := &fanOutFn{Ranks: []int{2, 5, 1}, Temperatures: 4, Chains: 3}
	seen := map[sti.ChainID]bool{}
	var order []int
	f.ProcessElement(nil, func(id sti.ChainID) {
		if seen[id] {
			t.Errorf("%+v twice", id)
		}
		seen[id] = true
		order = append(order, id.Rank)
	})
	if len(seen) != 3*4*3 {
		t.Errorf("%d chains, want 36", len(seen))
	}
	if order[0] != 5 || order[len(order)-1] != 1 {
		t.Errorf("highest rank should come first: %v", order)
	}
}

func TestLoadProblemCachesAndChecks(t *testing.T) {
	w := smallWork(t)
	a, err := LoadProblem(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadProblem(context.Background(), w)
	if err != nil || a != b {
		t.Errorf("problem prepared twice (%p, %p) or %v", a, b, err)
	}
	w.Config.Seed++
	if c, _ := LoadProblem(context.Background(), w); c == a {
		t.Error("a different configuration shares the problem")
	}
	// Data whose checksum differs from the job's are refused.
	e := Work{Source: Source{Embedded: testdata.Default, Checksum: "0123"}, Model: w.Model, Config: w.Config}
	if _, err := LoadProblem(context.Background(), e); err == nil {
		t.Error("checksum mismatch accepted")
	}
	e.Source.Checksum = ""
	if _, err := LoadProblem(context.Background(), e); err != nil {
		t.Error(err)
	}
	if err := (Source{}).Validate(); err == nil {
		t.Error("empty source accepted")
	}
}

func TestProgress(t *testing.T) {
	cfg := sti.Default("nmf")
	p := Track("t1", []int{1, 2}, cfg, nil)
	defer Untrack("t1")
	s := p.Snapshot()
	if s.Chains != 2*len(cfg.Ladder)*cfg.Chains || s.ChainsDone != 0 || s.ETA != 0 {
		t.Errorf("fresh snapshot: %+v", s)
	}
	for ti := range cfg.Ladder {
		for c := range cfg.Chains {
			report("t1", evidence.ChainSummary{Rank: 1, TIndex: ti, Chain: c, Steps: cfg.ChainSteps(sti.ChainID{Rank: 1, TIndex: ti, Chain: c}, false)})
		}
	}
	report("other", evidence.ChainSummary{Rank: 2, Steps: 5})
	s = p.Snapshot()
	if !reflect.DeepEqual(s.RanksDone, []int{1}) || s.ChainsDone != s.Chains/2 || s.ETA <= 0 {
		t.Errorf("after rank 1: %+v", s)
	}
	if s.StepsDone*2 != s.Steps {
		t.Errorf("steps %d of %d", s.StepsDone, s.Steps)
	}
}

// A source that names a dataset version reads that version after an append; without the version
// the grown dataset is refused as changed.
func TestSourceReadsItsVersion(t *testing.T) {
	ctx := context.Background()
	w := smallWork(t)
	data := w.Source.Inline
	dir := filepath.Join(t.TempDir(), "ds")
	m, err := tensorio.Write(ctx, dir, data, tensorio.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	more, _ := tensor.New([]int{9, 6}, 1)
	more.Append([]int{8, 0}, 4)
	if _, err := tensorio.Append(ctx, dir, more, tensorio.AppendOptions{Source: "more"}); err != nil {
		t.Fatal(err)
	}
	src := Source{URL: dir, Checksum: m.Checksum(), Version: m.Version}
	got, _, err := src.Load(ctx, true)
	if err != nil || got.NNZ() != data.NNZ() || !reflect.DeepEqual(got.Shape, data.Shape) {
		t.Fatalf("version %d after an append: %v", m.Version, err)
	}
	src.Version = 0
	if _, _, err := src.Load(ctx, true); err == nil {
		t.Error("the current version, changed since, was accepted")
	}
}
