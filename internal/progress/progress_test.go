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
