package pipelines

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/transforms"
)

func testMeta() Meta {
	es, err := estimators.NewSpec(estimators.STIName, sti.Default("nmf"))
	if err != nil {
		panic(err)
	}
	return Meta{
		Model:     models.PoissonSpec("nmf", []float64{0.3, 0.3}, models.LogScale),
		Estimator: es,
		Data:      DataInfo{Source: "x", Checksum: "abc", Shape: []int{3, 4}, Cells: 5},
		Ranks:     []int{1, 2, 3},
	}
}

func TestResultDivergedRank(t *testing.T) {
	ranks := []evidence.RankEvidence{
		{Rank: 3, LogEvidence: -110, StdErr: 1, Steps: 10, Rungs: []evidence.Rung{{T: 0, MeanLogLik: -200}, {T: 1, MeanLogLik: -100}}},
		{Rank: 1, LogEvidence: -100, StdErr: 1, Steps: 10},
		{Rank: 2, LogEvidence: math.NaN(), StdErr: math.NaN(), Steps: 4, Diverged: []string{"rank 2, t=1 (temperature 1), chain 0, step 3: log-likelihood record is NaN"}},
	}
	r, err := NewResult(testMeta(), ranks)
	if err != nil {
		t.Fatal(err)
	}
	if r.BestRank != 1 || r.Steps != 24 || len(r.Divergences) != 1 || r.Ranks[1].Rank != 2 || len(r.Ranks[1].Diverged) != 1 {
		t.Errorf("result: %+v", r)
	}
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"log_evidence": null`) || !strings.Contains(string(js), `"posterior_prob": null`) {
		t.Errorf("diverged rank not null in JSON:\n%s", js)
	}
	back, err := ParseResult(js)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(back.Ranks[1].LogEvidence)) || back.Ranks[0].LogEvidence != -100 || back.Ranks[2].Ladder[1].MeanLogLik != -100 {
		t.Errorf("round trip: %+v", back.Ranks)
	}
	csv := string(r.CSV())
	if !strings.Contains(csv, "\n2,,,,") || !strings.HasSuffix(csv, ",10,0\n") {
		t.Errorf("csv:\n%s", csv)
	}
	if tab := r.Table(); !strings.Contains(tab, "diverged") || !strings.HasSuffix(tab, "best rank: 1\n") {
		t.Errorf("table:\n%s", tab)
	}
	// A rank missing or estimated twice is an error.
	if _, err := NewResult(testMeta(), ranks[:2]); err == nil {
		t.Error("missing rank accepted")
	}
	if _, err := NewResult(testMeta(), append(ranks, ranks[0])); err == nil {
		t.Error("duplicate rank accepted")
	}
}

func TestWriteResult(t *testing.T) {
	ctx := context.Background()
	r, err := NewResult(testMeta(), []evidence.RankEvidence{{Rank: 1, LogEvidence: -3}, {Rank: 2, LogEvidence: -1}, {Rank: 3, LogEvidence: -2}})
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "a", "out")
	if err := CheckOutDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	timing := Timing{Ranks: []transforms.RankTime{{Rank: 1, Tasks: 4, Seconds: 1.5, CPUSeconds: 1.25}}}
	if err := WriteResult(ctx, dir, r, timing); err != nil {
		t.Fatal(err)
	}
	// Writing the same result again (a retried bundle) succeeds, even with another timing, which
	// does not replace the first; a different result does not.
	if err := WriteResult(ctx, dir, r, Timing{}); err != nil {
		t.Errorf("rewrite: %v", err)
	}
	if got, err := ReadTiming(dir); err != nil || !reflect.DeepEqual(got, timing) {
		t.Errorf("timing read back: %+v, %v; want %+v", got, err, timing)
	}
	r2 := r
	r2.Seed++
	if err := WriteResult(ctx, dir, r2, timing); err == nil {
		t.Error("overwrote a different result")
	}
	if err := CheckOutDir(ctx, dir); err == nil {
		t.Error("CheckOutDir accepts a directory holding results")
	}
	got, err := ReadResult(ctx, dir)
	if err != nil || got.BestRank != 2 || got.Seed != r.Seed {
		t.Errorf("read back: %+v, %v", got, err)
	}
	ents, _ := os.ReadDir(filepath.Join(parent, "a"))
	if len(ents) != 1 {
		t.Errorf("temporary directories left behind: %v", ents)
	}
	// An empty directory is replaced.
	empty := filepath.Join(parent, "empty")
	os.Mkdir(empty, 0o755)
	if err := CheckOutDir(ctx, empty); err != nil {
		t.Fatal(err)
	}
	if err := WriteResult(ctx, empty, r, Timing{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(empty, EvidenceCSV)); err != nil {
		t.Error(err)
	}
	// A directory written before timings were recorded has none, which is no error.
	if got, err := ReadTiming(parent); err != nil || len(got.Ranks) != 0 {
		t.Errorf("timing of a directory without timing.json: %+v, %v", got, err)
	}
}
