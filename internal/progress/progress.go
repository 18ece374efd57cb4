// Package progress carries a running task's progress out of the numerical core: whoever runs a
// task puts a reporter in its context, and the loops that spend the task's steps report them as
// they go, in the units the task's result counts (sampler steps, or passes over the data for a
// Gibbs sweep). A long task then moves a progress display and its ETA while it runs, not only
// when it ends. Without a reporter, reporting does nothing.
package progress

import "context"

type key struct{}

type planKey struct{}

// With returns ctx carrying report, which receives the steps spent as they are spent. A task may
// spend steps on several goroutines at once (the mode search's starts run in parallel), so
// report must be safe for concurrent use.
func With(ctx context.Context, report func(steps int)) context.Context {
	return context.WithValue(ctx, key{}, report)
}

// Add reports steps spent by the task that ctx belongs to.
func Add(ctx context.Context, steps int) {
	if report, ok := ctx.Value(key{}).(func(int)); ok && steps > 0 {
		report(steps)
	}
}

// WithPlan returns ctx carrying plan, which receives a task's revised plan: the steps it now
// expects to spend in all. Like report, plan must be safe for concurrent use.
func WithPlan(ctx context.Context, plan func(steps int)) context.Context {
	return context.WithValue(ctx, planKey{}, plan)
}

// Expect revises the steps the task that ctx belongs to expects to spend in all, counting those
// spent: a task whose length is learnt as it runs (an adaptive annealing) keeps the ETA right.
func Expect(ctx context.Context, steps int) {
	if plan, ok := ctx.Value(planKey{}).(func(int)); ok {
		plan(steps)
	}
}

// Part returns ctx for one of n parts of a task that run at once: a part's plan (Expect)
// becomes the task's on the guess that every part spends what it expects to, so a task of
// several adaptive parts keeps its ETA.
func Part(ctx context.Context, n int) context.Context {
	plan, ok := ctx.Value(planKey{}).(func(int))
	if !ok {
		return ctx
	}
	return WithPlan(ctx, func(steps int) { plan(steps * n) })
}
