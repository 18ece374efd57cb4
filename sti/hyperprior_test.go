package sti

import (
	"math"
	"reflect"
	"runtime"
	"testing"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
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

// A saved state resumes under --rate auto with its rates: on data grown by a row, restore copies
// the factors' entries it knows and the log rates past them.
func TestRestoreCarriesTheRates(t *testing.T) {
	d, _ := poissonData(t, []int{6, 5}, 2, 0.5, 7)
	grown, err := tensor.New([]int{7, 5}, d.NNZ()+1)
	if err != nil {
		t.Fatal(err)
	}
	for n, x := range d.Values {
		grown.Append([]int{int(d.Coords[0][n]), int(d.Coords[1][n])}, x)
	}
	grown.Append([]int{6, 0}, 3)
	spec := models.PoissonAutoSpec("nmf", models.LogScale)
	old, err := spec.Build(d, 2)
	if err != nil {
		t.Fatal(err)
	}
	m, err := spec.Build(grown, 2)
	if err != nil {
		t.Fatal(err)
	}
	saved := make([]float64, old.Dim())
	old.SamplePrior(rng.New(1), saved)
	theta := make([]float64, m.Dim())
	if _, err := restore(m, &models.State{Model: "nmf", Rank: 2, Factors: old.Factors(), Theta: saved}, theta); err != nil {
		t.Fatal(err)
	}
	if got, want := theta[m.Dim()-2:], saved[old.Dim()-2:]; !reflect.DeepEqual(got, want) {
		t.Errorf("restored log rates %v, saved %v", got, want)
	}
}
