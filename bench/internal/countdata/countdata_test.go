package countdata

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// A matrix reads as nmf and a 3-way tensor as cp, every factor at the rate given, and the model
// and select's problem built from the set agree on its parameters.
func TestReadGivesTheModelOfTheOrder(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		shape []int
		model string
	}{{[]int{6, 5}, "nmf"}, {[]int{4, 3, 5}, "cp"}} {
		rates := slices.Repeat([]float64{0.7}, len(tc.shape))
		x, _, err := models.GeneratePoisson(rng.New(3), tc.shape, 2, rates)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "d")
		if _, err := tensorio.Write(ctx, dir, x, tensorio.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		set, err := Read(ctx, dir, 0.4)
		if err != nil {
			t.Fatal(err)
		}
		if set.Model != tc.model || !slices.Equal(set.Rates, slices.Repeat([]float64{0.4}, len(tc.shape))) || set.Data.NNZ() != x.NNZ() {
			t.Errorf("%v: model %q, rates %v, %d non-zeros; want %q, 0.4 each, %d", tc.shape, set.Model, set.Rates, set.Data.NNZ(), tc.model, x.NNZ())
		}
		m, err := set.Poisson(3)
		if err != nil {
			t.Fatal(err)
		}
		p, err := set.Select(1)
		if err != nil {
			t.Fatal(err)
		}
		top := len(p.RankConfig(3).Ladder) - 1
		st, err := p.StartRank(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		theta := st.States[0][top].Theta
		if len(theta) != m.Dim() {
			t.Errorf("%v: select's state has %d parameters, the model %d", tc.shape, len(theta), m.Dim())
		}
	}
}
