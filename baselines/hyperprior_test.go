package baselines

import (
	"math"
	"testing"

	"github.com/stirank/stirank/models"
)

// AIS from the prior under --rate auto draws the rates with the factors: at rank 1 its estimate is
// within 3 standard errors (and 0.5 nat) of the hyperprior's exact rank-1 evidence (quadrature
// over the rates, models.Rank1LogPowerPrior), on a matrix and a tensor drawn at a rate the
// hyperprior is not told. It takes 4 000 temperatures, because the rates add a slow direction the
// default schedule leaves about half a nat short (docs/measurements.md). Chib's method, the rates
// one more block (chibAuto), is held to the same bound.
func TestAISAndChibUnderAutoMatchExactAtRank1(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape []int
		rate  float64
	}{{"nmf", []int{10, 8}, 0.2}, {"cp", []int{6, 5, 4}, 0.5}} {
		spec := models.PoissonAutoSpec(tc.name, models.LogScale)
		d := tiny(t, 2, tc.shape, 2, tc.rate)
		exact, err := spec.Exact(d, 1)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ForModel(d, spec)
		if err != nil {
			t.Fatal(err)
		}
		ais := DefaultAIS()
		ais.Temperatures = 4000
		a, se, _ := estimate(t, p, MethodAIS, 1, 8, DefaultChib(), ais)
		t.Logf("%s %v: AIS %.3f ± %.3f, exact %.3f", tc.name, tc.shape, a, se, exact)
		if math.Abs(a-exact) > 3*se+0.5 {
			t.Errorf("%s %v: AIS under auto %.3f ± %.3f, exact %.3f", tc.name, tc.shape, a, se, exact)
		}
		c, cse, _ := estimate(t, p, MethodChib, 1, 4, DefaultChib(), ais)
		t.Logf("%s %v: Chib %.3f ± %.3f (%+.3f)", tc.name, tc.shape, c, cse, c-exact)
		if math.Abs(c-exact) > 3*cse+0.5 {
			t.Errorf("%s %v: Chib under auto %.3f ± %.3f, exact %.3f", tc.name, tc.shape, c, cse, exact)
		}
	}
}
