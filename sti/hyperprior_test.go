package sti

import (
	"math"
	"reflect"
	"runtime"
	"testing"

	"github.com/stirank/stirank/models"
)

// Under --rate auto the default engine's rank-1 estimate is within 3 standard errors + 0.5 nat
// of the hyperprior's exact rank-1 evidence (quadrature over the rates), on small matrices and
// tensors drawn at rates the hyperprior is not told, a tenth to ten times its centre's scale.
func TestPoissonRank1MatchesExactUnderAuto(t *testing.T) {
	for _, c := range []struct {
		model string
		shape []int
		rate  float64
		seed  uint64
	}{{"nmf", []int{30, 20}, 0.3, 1}, {"nmf", []int{12, 9}, 2, 3}, {"nmf", []int{50, 8}, 0.05, 4}, {"cp", []int{10, 8, 6}, 0.5, 5}} {
		d, _ := poissonData(t, c.shape, 3, c.rate, c.seed)
		spec := models.PoissonAutoSpec(c.model, models.LogScale)
		exact, err := spec.Exact(d, 1)
		if err != nil {
			t.Fatal(err)
		}
		r := sweep(t, d, spec, Default(c.model), []int{1})[0]
		t.Logf("%s %v rate %v: exact %.3f estimate %.3f ± %.3f", c.model, c.shape, c.rate, exact, r.LogEvidence, r.StdErr)
		if e := math.Abs(r.LogEvidence - exact); e > 3*r.StdErr+0.5 {
			t.Errorf("%s %v rate %v: rank-1 estimate %.3f ± %.3f, exact %.3f", c.model, c.shape, c.rate, r.LogEvidence, r.StdErr, exact)
		}
	}
}

// The rates' draws come from the chains' own streams: under --rate auto a run is bit-identical
// whatever the number of cores, and another seed changes it.
func TestDeterminismUnderAuto(t *testing.T) {
	d, _ := poissonData(t, []int{10, 8}, 2, 0.5, 6)
	cfg := Default("nmf")
	cfg.Steps, cfg.Burnin = 60, 20
	spec := models.PoissonAutoSpec("nmf", models.LogScale)
	run := func(procs int) []float64 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var out []float64
		for _, r := range sweep(t, d, spec, cfg, []int{1, 2}) {
			out = append(out, r.LogEvidence, r.StdErr)
		}
		return out
	}
	a, b := run(1), run(3)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("results differ with cores: %v, %v", a, b)
	}
	cfg.Seed = 2
	c := sweep(t, d, spec, cfg, []int{1, 2})
	if c[1].LogEvidence == a[2] {
		t.Errorf("a different seed gave the same evidence")
	}
}
