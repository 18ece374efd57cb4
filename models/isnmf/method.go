package isnmf

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/stirank/stirank/samplers/smc"
)

// Method estimates log p(x | W) of one column in one run; independent runs (replicas, each on
// its own stream) give the standard error.
type Method interface {
	Name() string
	// Estimate runs once on column x (powers |x_f|²) with randomness from r.
	Estimate(m *Model, x []float64, r *rand.Rand) smc.Result
}

// Budget is what a run may spend: a population of Particles carried over Stages targets. Plain
// importance sampling spends Particles·Stages draws from the prior, so that every method costs
// about the same.
type Budget struct {
	Particles, Stages int
}

// Validate checks the budget.
func (b Budget) Validate() error {
	if b.Particles < 1 || b.Stages < 1 {
		return fmt.Errorf("isnmf: a run needs at least one particle and one stage (got %d, %d)", b.Particles, b.Stages)
	}
	return nil
}

var methods = map[string]func(Budget) Method{}

// register adds a method under its name; each method's file registers itself.
func register(name string, make func(Budget) Method) { methods[name] = make }

// NewMethod returns the method called name with budget b.
func NewMethod(name string, b Budget) (Method, error) {
	make, ok := methods[name]
	if !ok {
		return nil, fmt.Errorf("isnmf: unknown method %q (one of %v)", name, MethodNames())
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return make(b), nil
}

// MethodNames lists the registered methods.
func MethodNames() []string {
	var names []string
	for n := range methods {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
