package estimators

import (
	"context"
	"fmt"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/sti"
)

// stiCheck is a kind of follow-on task of the STI estimator that checks a rank's estimate
// instead of entering it (Task.Kind), as phase.go's phase check does: how one runs, about what it
// costs for a progress plan, and how its summary reads as the evidence.Check that the rank's
// combiner merges with the estimate (evidence.Combine).
type stiCheck struct {
	run   func(ctx context.Context, p *sti.Problem, t Task) (Result, error)
	steps func(c sti.Config, t Task, fixed, order, nnz int) int
	read  func(summary []byte) (evidence.Check, error)
}

// stiChecks are the registered checks by kind.
var stiChecks = map[string]stiCheck{}

// registerCheck makes c the check of kind, in init; it panics on a kind taken.
func registerCheck(kind string, c stiCheck) {
	if _, dup := stiChecks[kind]; dup {
		panic("estimators: check " + kind + " registered twice")
	}
	stiChecks[kind] = c
}

// checkOf is the registered check of kind.
func checkOf(kind string) (stiCheck, error) {
	c, ok := stiChecks[kind]
	if !ok {
		return c, fmt.Errorf("no check %q", kind)
	}
	return c, nil
}
