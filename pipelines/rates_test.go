package pipelines

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stirank/stirank/models"
)

// TestRacePosteriorOfRates races ranks 1–3 on data drawn at known rates under --rate auto: every
// rank reports each factor's rate and their product at t = 1; at the generating rank each lies
// within 3 posterior standard deviations of the value the data were drawn at, and the product,
// which the data pin, to within a third of it; the table prints the chosen rank's. A fixed-rate
// run of the same data reports none.
func TestRacePosteriorOfRates(t *testing.T) {
	rates := []float64{2, 0.25}
	data, _, err := models.GeneratePoisson(rand.New(rand.NewPCG(7, 7)), []int{40, 30}, 2, rates)
	if err != nil {
		t.Fatal(err)
	}
	o := inline(t, data, models.PoissonAutoSpec("nmf", models.LogScale), raceConfig())
	o.Ranks = []int{1, 2, 3}
	got, _ := runPipeline(t, o)
	for _, rr := range got.Ranks {
		if len(rr.Rates) != len(rates) {
			t.Fatalf("rank %d: %d rates reported, want %d", rr.Rank, len(rr.Rates), len(rates))
		}
		t.Log(rr.RatesLine())
		if rr.Rank != 2 {
			continue
		}
		for k, p := range rr.Rates {
			if sd := float64(p.SD); !(sd > 0) || math.Abs(float64(p.Mean)-rates[k]) > 3*sd {
				t.Errorf("rank 2, mode %d: posterior %v ± %v, drawn at %v", k, p.Mean, p.SD, rates[k])
			}
		}
		p, want := rr.RateProduct, rates[0]*rates[1]
		if p == nil || !(p.SD > 0) || float64(p.SD) > want/3 || math.Abs(float64(p.Mean)-want) > 3*float64(p.SD) {
			t.Errorf("rank 2: product of the rates %v, drawn at %v", p, want)
		}
	}
	best, ok := got.Best()
	if !ok {
		t.Fatal("no rank chosen")
	}
	if table := got.Table(); !strings.Contains(table, best.RatesLine()+"\n") {
		t.Errorf("the table does not print rank %d's rates:\n%s", best.Rank, table)
	}

	o = inline(t, data, models.PoissonSpec("nmf", rates, models.LogScale), raceConfig())
	o.Ranks = []int{1, 2, 3}
	fixed, _ := runPipeline(t, o)
	for _, rr := range fixed.Ranks {
		if len(rr.Rates) > 0 || rr.RateProduct != nil {
			t.Errorf("rank %d at fixed rates reports rates %v", rr.Rank, rr.Rates)
		}
	}
	if table := fixed.Table(); strings.Contains(table, "prior rates") {
		t.Errorf("the table of a fixed-rate run prints rates:\n%s", table)
	}
}
