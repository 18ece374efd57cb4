package main

import (
	"fmt"
	"runtime"

	"github.com/stirank/stirank/internal/memlimit"
)

// Memory pre-flight checks: a run whose data or flags ask for more memory than the machine has
// fails at once with one line naming them, instead of dying of out-of-memory with a stack trace
// part way through, or after hours of swapping. The estimates count what grows with the inputs
// and are meant to be right within a small factor, which is what separates a run that fits from
// one that asks for terabytes.
const (
	// factorCopies is how many arrays the size of a chain's parameters a running chain holds:
	// the parameters, their gradient, the sampler's preconditioner and momentum, the start and
	// final states.
	factorCopies = 6
	// taskBytes is the memory of one (rank, temperature, chain) task besides its parameters: its
	// Beam elements, result and progress record.
	taskBytes = 4 << 10
	// runCellBytes is the memory of one stored cell while chains run: the tensor and the model's
	// indexes of it (by row, by column, by block).
	runCellBytes = 64
)

// runNeeds is what a run of tasks over data of the given shape and stored cells needs, up to
// maxRank, with concurrent tasks running at once and population parameter sets per task (1, or
// the particles of an annealed start).
func runNeeds(shape []int, cells int64, maxRank, tasks, concurrent, population int) float64 {
	params := 0.0
	for _, n := range shape {
		params += float64(n)
	}
	params *= float64(maxRank)
	if concurrent <= 0 {
		concurrent = runtime.GOMAXPROCS(0)
	}
	concurrent = max(1, min(concurrent, tasks))
	return float64(cells)*runCellBytes + float64(tasks)*taskBytes +
		float64(concurrent)*params*8*factorCopies*float64(max(1, population))
}

// checkRunMemory refuses a run that needs more memory than the machine has, naming the data
// and the flags that set the amount.
func checkRunMemory(src string, shape []int, cells int64, ranks []int, tasks, concurrent, population int) error {
	maxRank := ranks[len(ranks)-1]
	need := runNeeds(shape, cells, maxRank, tasks, concurrent, population)
	subject := fmt.Sprintf("%s: shape %s at rank %d with %d chain tasks", src, formatShape(shape), maxRank, tasks)
	if population > 1 {
		subject += fmt.Sprintf(" of %d particles", population)
	}
	return memlimit.Check(subject, need)
}
