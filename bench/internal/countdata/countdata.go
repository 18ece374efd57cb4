// Package countdata reads the count datasets that the bench programs run a Poisson model on: a
// stirank dataset directory, the model of its order and one prior rate for every factor, as
// stirank select --data DIR --rate r reads them.
package countdata

import (
	"context"

	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/tensor"
)

// Set is a count dataset with its Poisson model and prior.
type Set struct {
	Data  *tensor.Sparse
	Model string    // the Poisson model of the data's order (nmf or cp)
	Rates []float64 // the exponential prior's rate of every factor
}

// Read reads the dataset at dir with every factor's prior rate set to rate.
func Read(ctx context.Context, dir string, rate float64) (Set, error) {
	ds, err := tensorio.Read(ctx, dir, tensorio.ReadOptions{Counts: true})
	if err != nil {
		return Set{}, err
	}
	info, err := models.ForOrder(ds.Tensor.Order())
	if err != nil {
		return Set{}, err
	}
	rates := make([]float64, ds.Tensor.Order())
	for m := range rates {
		rates[m] = rate
	}
	return Set{Data: ds.Tensor, Model: info.Name, Rates: rates}, nil
}

// Poisson returns the set's model at rank R in the sampling parameterisation select uses.
func (s Set) Poisson(R int) (*models.Poisson, error) {
	return models.NewPoisson(s.Model, s.Data, R, s.Rates, models.LogScale)
}

// Select returns the problem stirank select runs with its defaults and that seed.
func (s Set) Select(seed uint64) (*sti.Problem, error) {
	cfg := sti.Default(s.Model)
	cfg.Seed = seed
	return sti.NewProblem(s.Data, models.PoissonSpec(s.Model, s.Rates, models.LogScale), cfg)
}
