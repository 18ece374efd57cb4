package models

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/stirank/stirank/rng"
)

// Data far denser than one count per cell (about 10^8 per cell here) are drawn cell by cell: fast,
// the same from the same seed, and each cell near its mean (relative sd 10^-4).
func TestGeneratePoissonDense(t *testing.T) {
	start := time.Now()
	shape := []int{3, 3}
	x, f, err := GeneratePoisson(rng.New(1, 2), shape, 1, []float64{1e-4, 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	y, _, _ := GeneratePoisson(rng.New(1, 2), shape, 1, []float64{1e-4, 1e-4})
	if !reflect.DeepEqual(x, y) {
		t.Error("two draws from one seed differ")
	}
	if x.NNZ() != 9 {
		t.Fatalf("%d stored cells, want 9", x.NNZ())
	}
	idx := make([]int, 2)
	for n, v := range x.Values {
		x.Index(n, idx)
		mean := f[0][idx[0]] * f[1][idx[1]]
		if math.Abs(v-mean) > 6*math.Sqrt(mean) {
			t.Errorf("cell %v: %g, mean %g", idx, v, mean)
		}
	}
	if _, _, err := GeneratePoisson(rng.New(1, 2), []int{1 << 22, 1 << 22, 1 << 22}, 1, []float64{1, 1, 1}); err == nil {
		t.Error("a shape of 2^66 cells was drawn")
	}
}
