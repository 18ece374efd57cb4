// Package sti is the Stochastic Thermodynamic Integration engine: it runs one SG-MCMC chain for a
// (rank, temperature, replica) and summarises its log-likelihood records, and it runs whole sweeps
// over ranks × ladder × replicas in-process on all cores. The Beam layer calls Resume (through
// package estimators); tests and benchmarks call Sweep. Nothing here imports Beam.
package sti

import (
	"fmt"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/tensor"
)

// ModelSpec names a model and its hyper-parameters; Build binds it to data and a rank.
type ModelSpec struct {
	// Name is gauss, nmf or cp.
	Name string
	// Gauss holds the Gaussian additive model's hyper-parameters.
	Gauss models.GaussPrior
	// Rates holds the exponential prior rates of the Poisson models, one per mode.
	Rates []float64
	// Param is the space Poisson factors are sampled in.
	Param models.Param
}

// Order is the tensor order the model expects.
func (s ModelSpec) Order() (int, error) {
	switch s.Name {
	case "gauss":
		return 1, nil
	case "nmf":
		return 2, nil
	case "cp":
		return 3, nil
	}
	return 0, fmt.Errorf("unknown model %q (gauss, nmf or cp)", s.Name)
}

// Counts reports whether the model needs non-negative integer data.
func (s ModelSpec) Counts() bool { return s.Name != "gauss" }

// Validate checks the name and hyper-parameters.
func (s ModelSpec) Validate() error {
	order, err := s.Order()
	if err != nil {
		return err
	}
	if s.Name == "gauss" {
		return s.Gauss.Validate()
	}
	if len(s.Rates) != order {
		return fmt.Errorf("%s needs %d prior rates, got %d", s.Name, order, len(s.Rates))
	}
	return nil
}

// Build binds the model to data (cells in the order the sampler will address them) at rank R.
func (s ModelSpec) Build(data *tensor.Sparse, R int) (models.Model, error) {
	order, err := s.Order()
	if err != nil {
		return nil, err
	}
	if data.Order() != order {
		return nil, fmt.Errorf("model %s needs a %d-way tensor, the data are %d-way", s.Name, order, data.Order())
	}
	if s.Name == "gauss" {
		return models.NewGauss(data.Values, R, s.Gauss)
	}
	return models.NewPoisson(data, R, s.Rates, s.Param)
}
