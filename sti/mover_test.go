package sti

import (
	"math"
	"slices"
	"testing"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// A Gibbs mover keeps the values its last sweep left for its next one, equal to what θ gives to
// the last digits only; after forget its sweep is bit for bit that of a fresh mover, as a mover
// shared by particles (the annealing's) needs, and without forget it must still agree to rounding.
func TestMoverForgetsItsLastState(t *testing.T) {
	d, rates := poissonData(t, []int{30, 20}, 2, 0.5, 5)
	m, err := models.PoissonSpec("nmf", rates, models.LogScale).Build(d, 3)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, m.Dim())
	m.SamplePrior(rng.New(4, 1), theta)
	used := newMover(m)
	acc := make([]float64, used.blocks())
	used.move(rng.New(4, 2), 0.3, 5, nil, theta, acc)
	from := slices.Clone(theta)
	sweep := func(mv mover) []float64 {
		th := slices.Clone(from)
		mv.move(rng.New(4, 3), 0.3, 1, nil, th, acc)
		return th
	}
	fresh := sweep(newMover(m))
	kept := sweep(used)
	differ := 0
	for i := range kept {
		if math.Abs(kept[i]-fresh[i]) > 1e-9*(1+math.Abs(fresh[i])) {
			t.Fatalf("parameter %d: %v after a kept state, %v from θ alone", i, kept[i], fresh[i])
		}
		if kept[i] != fresh[i] {
			differ++
		}
	}
	t.Logf("%d of %d parameters differ in their last digits with the kept state", differ, len(kept))
	used.move(rng.New(4, 2), 0.3, 5, nil, theta, acc)
	copy(from, theta)
	fresh = sweep(newMover(m))
	used.forget()
	if forgot := sweep(used); !slices.Equal(forgot, fresh) {
		t.Errorf("after forget the sweep differs from a fresh mover's")
	}
}
