package progress

import (
	"context"
	"testing"
)

func TestAddReachesTheReporter(t *testing.T) {
	Add(context.Background(), 5) // no reporter: nothing happens
	if Reporting(context.Background()) {
		t.Fatal("a context without a reporter reports")
	}
	got, work := 0, 0.0
	ctx := With(context.Background(), func(n int, c float64) { got, work = got+n, work+float64(n)*c })
	if !Reporting(ctx) {
		t.Fatal("a context with a reporter does not report")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	Add(ctx, 3)
	Add(ctx, 0)
	AddAt(ctx, 4, 2.5)
	if got != 7 || work != 13 {
		t.Fatalf("reported %d steps of cost %v in all, want 7 and 13", got, work)
	}
}

func TestExpectReachesThePlan(t *testing.T) {
	Expect(context.Background(), 5, 5) // no plan: nothing happens
	got, work := 0, 0.0
	ctx := WithPlan(With(context.Background(), func(int, float64) {}), func(n int, w float64) { got, work = n, w })
	Expect(ctx, 40, 50)
	Expect(ctx, 90, 120)
	if got != 90 || work != 120 {
		t.Fatalf("plan %d steps of work %v, want the last one, 90 and 120", got, work)
	}
}

func TestResumesReachesItsListener(t *testing.T) {
	Resumes(context.Background(), false) // no listener: nothing happens
	var heard []bool
	ctx := WithResumes(context.Background(), func(warm bool) { heard = append(heard, warm) })
	Resumes(ctx, false)
	Resumes(ctx, true)
	if len(heard) != 2 || heard[0] || !heard[1] {
		t.Fatalf("heard %v, want [false true]", heard)
	}
}
