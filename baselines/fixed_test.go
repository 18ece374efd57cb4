package baselines

import (
	"math"
	"testing"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// fixedProblem draws a tiny matrix of the given shape from D H_D + W H, every factor Exp(rate),
// D the first kd columns of a rank-(kd + R) draw, and returns the ssnmf problem with D as its
// fixed dictionary under rates.
func fixedProblem(t testing.TB, seed uint64, shape []int, kd, R int, rate float64, rates []float64) (*Problem, models.Spec) {
	t.Helper()
	K := kd + R
	x, factors, err := models.GeneratePoisson(rng.New(seed, 0xd1c7), shape, K, []float64{rate, rate})
	if err != nil {
		t.Fatal(err)
	}
	d := &models.Dictionary{Source: "test", Rows: shape[0], Cols: kd}
	for i := range shape[0] {
		d.Values = append(d.Values, factors[0][i*K:i*K+kd]...)
	}
	spec := models.Spec{Name: "ssnmf", Params: models.Params{"rates": models.Nums(rates...), "param": models.Word("log")}, Dictionary: d}
	p, err := ForModel(x, spec)
	if err != nil {
		t.Fatal(err)
	}
	return p, spec
}

// The enumeration's dictionary term at free rank 0 is the models' closed form (a Gamma integral
// per column, one dictionary column) and, with two columns, one set's value by two-dimensional
// quadrature per column of the data.
func TestExactFixedMatchesClosedForm(t *testing.T) {
	for _, tc := range []struct {
		seed  uint64
		shape []int
		rates []float64
	}{{3, []int{4, 3}, []float64{1, 1.5}}, {8, []int{3, 5}, []float64{0.7, 0.4}}} {
		p, spec := fixedProblem(t, tc.seed, tc.shape, 1, 1, 1, tc.rates)
		got, err := p.exactLogEvidence(0, 1e6)
		if err != nil {
			t.Fatal(err)
		}
		want, err := spec.Exact(p.Data, 0)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%v: enumeration %.12f, closed form %.12f", tc.shape, got, want)
		}
	}
	p, _ := fixedProblem(t, 5, []int{3, 4}, 2, 0, 1, []float64{1, 0.8})
	got, err := p.exactLogEvidence(0, 1e6)
	if err != nil {
		t.Fatal(err)
	}
	if want := fixedQuadrature(p); math.Abs(got-want) > 1e-6 {
		t.Errorf("two dictionary columns: enumeration %.9f, quadrature %.9f", got, want)
	}
}

// fixedQuadrature is log p(X) of a two-column dictionary at free rank 0 by the product over the
// data's columns j of ∫∫ λ² e^{−λ(a+b)} Π_i Poisson(x_ij; d_i1 a + d_i2 b) da db, each on a
// midpoint grid in u = a/(1+a), v = b/(1+b).
func fixedQuadrature(p *Problem) float64 {
	F, N := p.shape[0], p.shape[1]
	x := make([]float64, F*N)
	for n, v := range p.Data.Values {
		x[int(p.Data.Coords[0][n])*N+int(p.Data.Coords[1][n])] = v
	}
	l := p.Rates[1]
	total := -p.lgamma
	const grid = 1000
	for j := range N {
		sum := 0.0
		for gu := range grid {
			u := (float64(gu) + 0.5) / grid
			a, ja := u/(1-u), 1/((1-u)*(1-u))
			for gv := range grid {
				v := (float64(gv) + 0.5) / grid
				b, jb := v/(1-v), 1/((1-v)*(1-v))
				lg := 2*math.Log(l) - l*(a+b)
				for i := range F {
					lam := p.dict[i*2]*a + p.dict[i*2+1]*b
					lg += x[i*N+j]*math.Log(lam) - lam
				}
				sum += math.Exp(lg) * ja * jb
			}
		}
		total += math.Log(sum / (grid * grid))
	}
	return total
}

// Chib's method and AIS beside a fixed dictionary, against the exact evidence of tiny ssnmf
// sets (exactLogEvidence): a free rank of 0 (the dictionary's activations alone), 1 and 2, with
// the dictionary's mode (rows) the larger and the smaller, so that the reduced runs hold rows of
// the activations beside the dictionary's components and rows of the free block beside it.
func TestFixedTinyExact(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seed  uint64
		shape []int
		kd    int
		draw  float64
		rates []float64
		ranks []int
	}{
		{"4x3 kd2", 2, []int{4, 3}, 2, 1.2, []float64{1, 1.5}, []int{0, 1}},
		{"3x4 kd1", 4, []int{3, 4}, 1, 1.6, []float64{1.2, 1}, []int{0, 1, 2}},
	} {
		p, _ := fixedProblem(t, tc.seed, tc.shape, tc.kd, 1, tc.draw, tc.rates)
		for _, R := range tc.ranks {
			exact, err := p.exactLogEvidence(R, 1e6)
			if err != nil {
				t.Fatal(err)
			}
			chib, chibSE, _ := estimate(t, p, MethodChib, R, 4, DefaultChib(), DefaultAIS())
			ais, aisSE, _ := estimate(t, p, MethodAIS, R, 8, DefaultChib(), DefaultAIS())
			t.Logf("%s R=%d: exact %.4f | chib %.4f ± %.4f | ais %.4f ± %.4f", tc.name, R, exact, chib, chibSE, ais, aisSE)
			if math.Abs(chib-exact) > 3.5*chibSE+0.01 {
				t.Errorf("%s R=%d: chib %.4f ± %.4f, exact %.4f", tc.name, R, chib, chibSE, exact)
			}
			if math.Abs(ais-exact) > 3.5*aisSE+0.01 {
				t.Errorf("%s R=%d: ais %.4f ± %.4f, exact %.4f", tc.name, R, ais, aisSE, exact)
			}
		}
	}
}

// Beside a dictionary under --rate auto (models.AutoPriorFixed) AIS from the prior draws the
// activations' rate with them: at free rank 0 with one dictionary column its estimate is within
// 3.5 standard errors (and 0.01 nat) of the closed form integrated over that rate (the models'
// Exact).
func TestFixedAISUnderAutoMatchesExactAtRank0(t *testing.T) {
	p, spec := fixedProblem(t, 3, []int{4, 3}, 1, 1, 1, []float64{1, 1.5})
	spec = spec.With("rates", models.Word(models.AutoWord))
	exact, err := spec.Exact(p.Data, 0)
	if err != nil {
		t.Fatal(err)
	}
	auto, err := ForModel(p.Data, spec)
	if err != nil {
		t.Fatal(err)
	}
	ais, se, _ := estimate(t, auto, MethodAIS, 0, 8, DefaultChib(), DefaultAIS())
	t.Logf("ssnmf 4x3 under auto, R=0: exact %.4f | ais %.4f ± %.4f", exact, ais, se)
	if math.Abs(ais-exact) > 3.5*se+0.01 {
		t.Errorf("ais under auto %.4f ± %.4f, exact %.4f", ais, se, exact)
	}
}
