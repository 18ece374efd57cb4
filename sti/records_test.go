package sti

import (
	"math"
	"testing"

	"github.com/stirank/stirank/models"
)

// Allocated records stay within their bounds, add up to no more than a uniform ladder records,
// and leave the rungs near t = 0, where the prior dominates, for those where the likelihood takes
// over.
func TestAllocatedRecords(t *testing.T) {
	d, rates := poissonData(t, []int{30, 20}, 3, 0.3, 1)
	p, err := NewProblem(d, models.PoissonSpec("nmf", rates, models.LogScale), Default("nmf"))
	if err != nil {
		t.Fatal(err)
	}
	n := p.Config.Steps - p.Config.Burnin
	K := len(p.Config.Ladder) - 1
	if p.Records(3, 0) != n {
		t.Errorf("the prior draws at t = 0 are %d, want %d", p.Records(3, 0), n)
	}
	total, most := 0, 1
	for i := 1; i <= K; i++ {
		r := p.Records(3, i)
		if r < int(recordFloor*float64(n)) || r > recordCap*n {
			t.Errorf("rung %d (t = %.3g) records %d, outside [%d, %d]", i, p.Config.Ladder[i], r, int(recordFloor*float64(n)), recordCap*n)
		}
		if r > p.Records(3, most) {
			most = i
		}
		total += r
	}
	if total > K*n+K || total < K*n/2 {
		t.Errorf("the rungs record %d in all, a uniform ladder %d", total, K*n)
	}
	if p.Records(3, 1) >= n || p.Records(3, most) <= n {
		t.Errorf("rung 1 (t = %.3g) records %d and rung %d (t = %.3g) the most, %d: the records did not move towards the likelihood", p.Config.Ladder[1], p.Records(3, 1), most, p.Config.Ladder[most], p.Records(3, most))
	}
	uniform := Default("nmf")
	uniform.Allocate = false
	q, err := NewProblem(d, models.PoissonSpec("nmf", rates, models.LogScale), uniform)
	if err != nil {
		t.Fatal(err)
	}
	if q.Records(3, most) != n {
		t.Errorf("without Allocate rung %d records %d, want %d", most, q.Records(3, most), n)
	}
}

// With the records where the integral's variance is, the chains' standard error of a rank above 1
// falls for no more steps, and the estimate keeps its expectation.
func TestAllocationLowersTheStandardError(t *testing.T) {
	if testing.Short() {
		t.Skip("runs six sweeps")
	}
	d, rates := poissonData(t, []int{100, 75}, 3, 5, 2)
	spec := models.PoissonSpec("nmf", rates, models.LogScale)
	var v, mean, steps [2]float64
	const seeds = 3
	for k, allocate := range []bool{false, true} {
		for s := uint64(1); s <= seeds; s++ {
			cfg := Default("nmf")
			cfg.Allocate, cfg.Seed = allocate, s
			res := sweep(t, d, spec, cfg, []int{3})[0]
			v[k] += res.StdErrWithin * res.StdErrWithin / seeds
			mean[k] += res.LogEvidence / seeds
			steps[k] += float64(res.Steps) / seeds
		}
	}
	t.Logf("rank 3: within-chain variance %.3f uniform, %.3f allocated; means %.2f and %.2f; steps %.0f and %.0f", v[0], v[1], mean[0], mean[1], steps[0], steps[1])
	if v[0] < 1.5*v[1] {
		t.Errorf("allocated records leave %.2f of the uniform ladder's variance", v[1]/v[0])
	}
	if steps[1] > 1.01*steps[0] {
		t.Errorf("allocated chains spend %.0f steps, uniform ones %.0f", steps[1], steps[0])
	}
	if diff := math.Abs(mean[1] - mean[0]); diff > 3*math.Sqrt((v[0]+v[1])/seeds) {
		t.Errorf("the means differ by %.2f, over 3 standard errors", diff)
	}
}

// The Gaussian model allocates its records from its own exact curve: at ranks far below the data's
// (500 values drawn at rank 8), where the integral's variance sits at a few rungs, the chains'
// standard error falls for no more steps, and both estimates stay within their errors of the
// exact evidence.
func TestGaussAllocationLowersTheStandardError(t *testing.T) {
	d := gaussDataN(t, 500, 8, 22)
	spec := models.GaussSpec(models.ICASSPGauss)
	for _, R := range []int{1, 2} {
		m, err := models.NewGauss(d.Values, R, models.ICASSPGauss)
		if err != nil {
			t.Fatal(err)
		}
		exact := m.LogEvidence()
		var v, mean, steps [2]float64
		const seeds = 3
		for k, allocate := range []bool{false, true} {
			for s := uint64(1); s <= seeds; s++ {
				cfg := Default("gauss")
				cfg.Allocate, cfg.Seed = allocate, s
				res := sweep(t, d, spec, cfg, []int{R})[0]
				v[k] += res.StdErrWithin * res.StdErrWithin / seeds
				mean[k] += res.LogEvidence / seeds
				steps[k] += float64(res.Steps) / seeds
			}
		}
		t.Logf("rank %d: within-chain variance %.3f uniform, %.3f allocated; offsets from exact %+.2f and %+.2f; steps %.0f and %.0f", R, v[0], v[1], mean[0]-exact, mean[1]-exact, steps[0], steps[1])
		if v[0] < 1.4*v[1] {
			t.Errorf("rank %d: allocated records leave %.2f of the uniform ladder's variance", R, v[1]/v[0])
		}
		if steps[1] > 1.01*steps[0] {
			t.Errorf("rank %d: allocated chains spend %.0f steps, uniform ones %.0f", R, steps[1], steps[0])
		}
		for k := range mean {
			if off := math.Abs(mean[k] - exact); off > 3*math.Sqrt(v[k]/seeds) {
				t.Errorf("rank %d, allocate %v: the mean is %.2f from exact, over 3 standard errors (%.2f)", R, k == 1, off, math.Sqrt(v[k]/seeds))
			}
		}
	}
}

// An annealed replica's chains run on its own ladder: every rung of it records what a uniform
// ladder does, wherever the model has a curve to allocate by (the Gaussian model's, here).
func TestAnnealedRecords(t *testing.T) {
	cfg := DefaultAnnealed("gauss")
	p, err := NewProblem(gaussDataN(t, 200, 3, 1), models.GaussSpec(models.ICASSPGauss), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := cfg.Steps - cfg.Burnin; p.Records(3, 1) != n || p.Records(3, cfg.Annealing.Rungs) != n {
		t.Errorf("an annealed replica's rungs 1 and %d record %d and %d, want %d", cfg.Annealing.Rungs, p.Records(3, 1), p.Records(3, cfg.Annealing.Rungs), n)
	}
}
