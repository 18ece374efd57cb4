package sti

import (
	"math"
	"testing"

	"github.com/stirank/stirank/models"
)

// A sweep's price follows the timed grid below t = 1, in straight lines between its points, and
// at t = 1 is the timed sweep's, with or without its read of the log-likelihood.
func TestSweepPrice(t *testing.T) {
	pr := prices{below: []float64{1, 2, 3, 4, 5}, at1: 7, read1: 8}
	for _, c := range []struct {
		t    float64
		read bool
		want float64
	}{
		{1e-5, false, 1}, {costT, true, 1}, {0.1, false, 2}, {0.2, true, 2.5}, {0.45, false, 3.5},
		{0.95, true, 5}, {1, false, 7}, {1, true, 8},
	} {
		if got := pr.sweep(c.t, c.read); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("sweep(%v, %v) = %v, want %v", c.t, c.read, got, c.want)
		}
	}
	if got := unitPrices.sweep(0.5, true); got != 1 {
		t.Errorf("unit price %v", got)
	}
}

// The fixed ladder's chains and an annealing, which has no ladder before it runs, both get their
// rank's sweeps timed; chains on an SG-MCMC kernel count every step at 1.
func TestPricesAreTimed(t *testing.T) {
	d, rates := poissonData(t, []int{20, 15}, 2, 0.5, 3)
	spec := models.PoissonSpec("nmf", rates, models.LogScale)
	for _, c := range []struct {
		name  string
		cfg   Config
		timed bool
	}{{"gibbs", Default("nmf"), true}, {"annealed", DefaultAnnealed("nmf"), true}, {"sgmcmc", DefaultSGMCMC("nmf"), false}} {
		p, err := NewProblem(d, spec, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		pr := p.prices(2)
		if timed := len(pr.below) == len(priceGrid) && pr.read1 != 1 && pr.em != 1; timed != c.timed {
			t.Errorf("%s: prices %+v, timed %v", c.name, pr, c.timed)
		}
	}
}
