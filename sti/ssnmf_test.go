package sti

import (
	"math"
	"testing"

	"github.com/stirank/stirank/internal/par"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// ssnmfData draws counts of the given shape from Poisson NMF at rank kd + R with Exp(rate)
// factors and returns them with the first kd columns of W as the ssnmf spec's dictionary: the
// data are then D H_D + W H, with a free block of rank R.
func ssnmfData(t testing.TB, shape []int, kd, R int, rate float64, seed uint64) (*tensor.Sparse, models.Spec) {
	t.Helper()
	K := kd + R
	d, factors, err := models.GeneratePoisson(rng.New(seed, 0x55), shape, K, []float64{rate, rate})
	if err != nil {
		t.Fatal(err)
	}
	dict := &models.Dictionary{Source: "test", Rows: shape[0], Cols: kd}
	for i := range shape[0] {
		dict.Values = append(dict.Values, factors[0][i*K:i*K+kd]...)
	}
	spec := models.PoissonSpec("ssnmf", []float64{rate, rate}, models.LogScale)
	spec.Dictionary = dict
	return d, spec
}

// The evidence of ssnmf at rank 0 — the dictionary alone, ∫ p(X | D H_D) p(H_D) dH_D — by STI
// with the default Gibbs chains, against its closed form with a one-column dictionary
// (models.Info.Exact), on data with a free block the model at rank 0 lacks and on data without.
func TestSSNMFZeroRankMatchesExact(t *testing.T) {
	info, err := models.Lookup("ssnmf")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		shape []int
		R     int
		rate  float64
		seed  uint64
	}{{[]int{20, 15}, 0, 0.5, 1}, {[]int{20, 15}, 2, 0.5, 2}} {
		d, spec := ssnmfData(t, c.shape, 1, c.R, c.rate, c.seed)
		exact, err := info.Exact(d, 0, spec)
		if err != nil {
			t.Fatal(err)
		}
		r := sweep(t, d, spec, Default("ssnmf"), []int{0})[0]
		t.Logf("%v with a free block of rank %d: exact %.3f, STI %.3f ± %.3f", c.shape, c.R, exact, r.LogEvidence, r.StdErr)
		if e := math.Abs(r.LogEvidence - exact); e > 3*r.StdErr+0.5 || len(r.Diverged) > 0 {
			t.Errorf("%v with a free block of rank %d: STI %.3f ± %.3f (diverged %v), exact %.3f", c.shape, c.R, r.LogEvidence, r.StdErr, r.Diverged, exact)
		}
	}
}

// An ssnmf chain, whose rows move in chunks with streams of their own, gives the same bits on
// one core and on four.
func TestSSNMFDoesNotDependOnCores(t *testing.T) {
	d, spec := ssnmfData(t, []int{par.MinChunk + 500, 4}, 2, 1, 2, 3)
	chainsDoNotDependOnCores(t, d, spec)
}
