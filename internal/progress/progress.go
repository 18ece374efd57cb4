// Package progress carries a running task's progress out of the numerical core: whoever runs a
// task puts a reporter in its context, and the loops that spend the task's steps report them as
// they go, in the units the task's result counts (sampler steps, or passes over the data for a
// Gibbs sweep). A long task then moves a progress display and its ETA while it runs, not only
// when it ends. Without a reporter, reporting does nothing.
package progress

import "context"

type key struct{}

type planKey struct{}

type resumesKey struct{}

// With returns ctx carrying report, which receives the steps spent as they are spent and what each
// costs relative to the task's other steps. A task may spend steps on several goroutines at once
// (the mode search's starts run in parallel), so report must be safe for concurrent use.
func With(ctx context.Context, report func(steps int, cost float64)) context.Context {
	return context.WithValue(ctx, key{}, report)
}

// Add reports steps spent by the task that ctx belongs to, of cost 1 each.
func Add(ctx context.Context, steps int) { AddAt(ctx, steps, 1) }

// AddAt reports steps spent by the task that ctx belongs to, each costing cost relative to a step
// of cost 1: a Gibbs sweep near t = 1 splits more of every count than one near 0, and an ETA that
// priced the steps left at the mean cost so far would err by as much as the costs differ.
func AddAt(ctx context.Context, steps int, cost float64) {
	if report, ok := ctx.Value(key{}).(func(int, float64)); ok && steps > 0 {
		report(steps, cost)
	}
}

// WithPlan returns ctx carrying plan, which receives a task's revised plan: the steps it now
// expects to spend in all and their work, each step at the cost it is reported with (AddAt). Like
// report, plan must be safe for concurrent use.
func WithPlan(ctx context.Context, plan func(steps int, work float64)) context.Context {
	return context.WithValue(ctx, planKey{}, plan)
}

// Expect revises the steps the task that ctx belongs to expects to spend in all, counting those
// spent, and their work: a task whose length is learnt as it runs (an adaptive annealing) keeps
// the ETA right, and one whose steps cost more as it goes (an annealing's, as t grows) says so.
func Expect(ctx context.Context, steps int, work float64) {
	if plan, ok := ctx.Value(planKey{}).(func(int, float64)); ok {
		plan(steps, work)
	}
}

// WithResumes returns ctx carrying resumes, which hears whether the tasks of the task's rank
// resume from saved states as they may have been planned to (warm), or start cold (a
// reanalysis whose saved states no longer fit the grown data): the rank's tasks not yet started
// are then planned accordingly. Like report, resumes must be safe for concurrent use.
func WithResumes(ctx context.Context, resumes func(warm bool)) context.Context {
	return context.WithValue(ctx, resumesKey{}, resumes)
}

// Resumes says whether the rank of the task ctx belongs to resumes from saved states (warm) or
// starts cold: the verdict is the rank's, not only this task's (whose own plan Expect gives).
func Resumes(ctx context.Context, warm bool) {
	if resumes, ok := ctx.Value(resumesKey{}).(func(bool)); ok {
		resumes(warm)
	}
}

// Reporting reports whether ctx carries a reporter (With): work that only prices the steps for
// the reports can be skipped without one.
func Reporting(ctx context.Context) bool {
	_, ok := ctx.Value(key{}).(func(int, float64))
	return ok
}
