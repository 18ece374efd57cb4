package transforms

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/progress"
)

// Progress follows a job from the launching process, round by round. Beam metrics reach the
// launcher only when the job ends (and not at all on some runners), so tasks that run in the
// launching process — prism, direct and loopback workers — also report here, through a tracker
// registered under the job's run ID: the tasks each stage starts join it with their planned steps
// (planned), a running task's steps count as it spends them, and a race's standing after each
// round says which ranks still run (publish). Tasks on remote workers report through Beam metrics
// only.
type Progress struct {
	mu    sync.Mutex
	start time.Time
	plan  func(estimators.Task) int
	ranks []int
	tasks map[taskKey]*taskProgress
	// round is the latest round a task has joined, −1 for the first stage; roundStart when its
	// first task started.
	round      int
	roundStart time.Duration
	standing   *evidence.Standing
}

// taskProgress is a task's planned and spent steps, and whether it is done.
type taskProgress struct {
	rank, round int
	plan, spent int64
	done        bool
}

// ProgressSnapshot is the state of a job at one moment.
type ProgressSnapshot struct {
	Elapsed time.Duration
	// Round is the round under way, −1 while the first stage (the start stages, or a job that
	// does not race) runs; Tasks and TasksDone count its tasks.
	Round            int
	Tasks, TasksDone int
	// StepsDone counts the steps of every task so far, burn-in and start stages included.
	StepsDone int64
	// Live lists the ranks the race still runs, Ranks all of them.
	Live  []int
	Ranks int
	// ETA is the time the round's tasks left take at the rate the round has run at: zero before
	// any step of the round is done and once its tasks have finished.
	ETA time.Duration
}

// StepsPerSecond is the rate of steps so far.
func (s ProgressSnapshot) StepsPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.StepsDone) / s.Elapsed.Seconds()
}

var trackers = struct {
	sync.Mutex
	m map[string]*Progress
}{m: map[string]*Progress{}}

// Track registers a progress tracker for the estimator's tasks of ranks under runID, each
// planned at plan(t) steps (0 where unknown); tasks that run in this process with that run ID
// report to it. Call Untrack when the job ends.
func Track(runID string, e estimators.Estimator, ranks []int, plan func(estimators.Task) int) *Progress {
	p := &Progress{start: time.Now(), plan: plan, ranks: slices.Clone(ranks), tasks: map[taskKey]*taskProgress{}, round: -1}
	for _, r := range ranks {
		p.join(e.Tasks(r))
	}
	trackers.Lock()
	trackers.m[runID] = p
	trackers.Unlock()
	return p
}

// Untrack removes the tracker of runID.
func Untrack(runID string) {
	trackers.Lock()
	delete(trackers.m, runID)
	trackers.Unlock()
}

// tracker returns the tracker of runID in this process, or nil.
func tracker(runID string) *Progress {
	if runID == "" {
		return nil
	}
	trackers.Lock()
	defer trackers.Unlock()
	return trackers.m[runID]
}

// taskKey is a task without its payload, by which the tracker knows it.
type taskKey struct {
	rank, stage, index, replica, chain, round int
	kind                                      string
}

func key(t estimators.Task) taskKey {
	return taskKey{t.Rank, t.Stage, t.Index, t.Replica, t.Chain, t.Round, t.Kind}
}

// join adds tasks to the plan; call it with p.mu held or before p is shared.
func (p *Progress) join(tasks []estimators.Task) {
	for _, t := range tasks {
		k := key(t)
		if _, ok := p.tasks[k]; ok {
			continue
		}
		p.tasks[k] = &taskProgress{rank: t.Rank, round: round(t), plan: int64(p.plan(t))}
		if r := round(t); r > p.round {
			p.round, p.roundStart = r, -1
		}
	}
}

// round is the round task t belongs to: −1 for a first-stage task.
func round(t estimators.Task) int {
	if t.Stage == 0 {
		return -1
	}
	return t.Round
}

// planned adds tasks a stage started to the plan of the tracker of runID, if there is one in this
// process.
func planned(runID string, tasks []estimators.Task) {
	if p := tracker(runID); p != nil && len(tasks) > 0 {
		p.mu.Lock()
		p.join(tasks)
		p.mu.Unlock()
	}
}

// publish tells the tracker of runID the race's standing after a round.
func publish(runID string, s evidence.Standing) {
	if p := tracker(runID); p != nil {
		p.mu.Lock()
		p.standing = &s
		p.mu.Unlock()
	}
}

// running marks the start of task t and returns the context it runs in, whose steps (see
// internal/progress) count towards the tracker of runID as they are spent, and whose revised plan
// (progress.Expect) replaces the task's. Call finish when the task ends, with its result and the
// follow-on tasks it started, or with the error it failed with: a failed task's steps no longer
// count (the runner retries it), and it is not done.
func running(ctx context.Context, runID string, t estimators.Task) (_ context.Context, finish func(estimators.Result, []estimators.Task, error)) {
	p := tracker(runID)
	if p == nil {
		return ctx, func(estimators.Result, []estimators.Task, error) {}
	}
	k := key(t)
	p.mu.Lock()
	tp := p.tasks[k]
	if tp == nil {
		tp = &taskProgress{rank: t.Rank, round: round(t), plan: int64(p.plan(t))}
		p.tasks[k] = tp
	}
	if tp.round == p.round && p.roundStart < 0 {
		p.roundStart = time.Since(p.start)
	}
	p.mu.Unlock()
	ctx = progress.With(ctx, func(steps int) {
		p.mu.Lock()
		tp.spent += int64(steps)
		p.mu.Unlock()
	})
	ctx = progress.WithPlan(ctx, func(steps int) {
		p.mu.Lock()
		tp.plan = int64(steps)
		p.mu.Unlock()
	})
	return ctx, func(r estimators.Result, next []estimators.Task, err error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			tp.spent = 0
			return
		}
		if tp.spent == 0 {
			tp.spent = int64(r.Steps)
		}
		tp.done = true
		p.join(next)
	}
}

// Snapshot returns the current state. The ETA weighs a step of rank R by R, what a pass over the
// data costs per stored cell, and takes the round's remaining planned steps at the rate its tasks
// have spent them since its first started.
func (p *Progress) Snapshot() ProgressSnapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Since(p.start)
	s := ProgressSnapshot{Elapsed: now, Round: p.round, Ranks: len(p.ranks)}
	for _, r := range p.ranks {
		if p.standing == nil || p.standing.Live(r) {
			s.Live = append(s.Live, r)
		}
	}
	var spent, left float64
	for _, tp := range p.tasks {
		s.StepsDone += tp.spent
		if tp.round != p.round {
			continue
		}
		s.Tasks++
		w := float64(max(tp.rank, 1))
		spent += float64(tp.spent) * w
		if tp.done {
			s.TasksDone++
			continue
		}
		left += float64(max(0, tp.plan-tp.spent)) * w
	}
	if ran := now - p.roundStart; p.roundStart >= 0 && spent > 0 && ran > 0 && s.TasksDone < s.Tasks {
		s.ETA = time.Duration(float64(ran) * left / spent)
	}
	return s
}
