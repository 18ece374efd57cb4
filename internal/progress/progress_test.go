package progress

import (
	"context"
	"testing"
)

func TestAddReachesTheReporter(t *testing.T) {
	Add(context.Background(), 5) // no reporter: nothing happens
	got := 0
	ctx := With(context.Background(), func(n int) { got += n })
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	Add(ctx, 3)
	Add(ctx, 0)
	Add(ctx, 4)
	if got != 7 {
		t.Fatalf("reported %d steps in all, want 7", got)
	}
}

func TestExpectReachesThePlan(t *testing.T) {
	Expect(context.Background(), 5) // no plan: nothing happens
	got := 0
	ctx := WithPlan(With(context.Background(), func(int) {}), func(n int) { got = n })
	Expect(ctx, 40)
	Expect(ctx, 90)
	if got != 90 {
		t.Fatalf("plan %d steps, want the last one, 90", got)
	}
}

// A part's plan is the task's after the parts before it and with as much again for each after.
func TestPartPlansTheWholeTask(t *testing.T) {
	if ctx := context.Background(); Part(ctx, 3) != ctx {
		t.Error("Part made a plan where the task has none")
	}
	got := 0
	ctx := WithPlan(context.Background(), func(n int) { got = n })
	Expect(Part(ctx, 3), 30)
	if got != 90 {
		t.Fatalf("plan %d steps, want 3 × 30", got)
	}
}
