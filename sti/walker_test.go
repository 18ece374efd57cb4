package sti

import (
	"math"
	"testing"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// A walker is a chain an estimator can drive: moved to a point, its exact log-likelihood is the
// model's; set to a temperature, its steps sample that power posterior — at t = 0 the prior,
// whose factor entries have mean 1/λ.
func TestWalkerSamplesItsTemperature(t *testing.T) {
	d, rates := poissonData(t, []int{12, 9}, 2, 2, 5)
	cfg := DefaultSGMCMC("nmf")
	cfg.Start = PriorStart
	p, err := NewProblem(d, models.PoissonSpec("nmf", rates, models.LogScale), cfg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.NewWalker(ChainID{Rank: 2, TIndex: len(cfg.Ladder) - 1})
	if err != nil {
		t.Fatal(err)
	}
	if w.Temperature() != 1 {
		t.Fatalf("walker at the last rung has t = %v", w.Temperature())
	}
	w.SamplePrior(rng.New(3))
	m := w.Model()
	e := m.NewEval()
	e.Prepare(w.Theta())
	if got, want := w.LogLik(), models.LogLik(e, m); got != want {
		t.Errorf("LogLik %v, model's %v", got, want)
	}
	w.SetTemperature(0)
	const steps = 40000
	sum, n := 0.0, 0
	for k := 1; k <= steps; k++ {
		if _, err := w.Step(k); err != nil {
			t.Fatal(err)
		}
		if k > cfg.Burnin {
			for _, v := range w.Theta() {
				sum += math.Exp(v)
				n++
			}
		}
	}
	mean := sum / float64(n)
	t.Logf("t = 0: mean factor entry %.4f, prior mean %.4f", mean, 1/rates[0])
	if math.Abs(mean*rates[0]-1) > 0.05 {
		t.Errorf("at t = 0 the mean factor entry is %.4f, the prior's %.4f", mean, 1/rates[0])
	}
}
