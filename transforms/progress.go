package transforms

import (
	"sort"
	"sync"
	"time"

	"github.com/stirank/stirank/estimators"
)

// Progress follows a job from the launching process. Beam metrics reach the launcher only when
// the job ends (and not at all on some runners), so tasks that run in the launching process —
// prism, direct and loopback workers — also report here, through a tracker registered under the
// job's run ID. Tasks on remote workers report through Beam metrics only.
type Progress struct {
	mu    sync.Mutex
	start time.Time
	steps func(estimators.Task) int
	ranks map[int]*rankProgress
}

type rankProgress struct {
	tasks, tasksDone int
	steps, stepsDone int64
	work, workDone   float64
}

// ProgressSnapshot is the state of a job at one moment.
type ProgressSnapshot struct {
	Elapsed time.Duration
	// Steps counts sampler steps, burn-in and start tournaments included.
	Steps, StepsDone int64
	Tasks, TasksDone int
	// RanksDone lists the ranks whose tasks have all finished, in increasing order.
	RanksDone []int
	// Ranks is the number of ranks of the job.
	Ranks int
	// ETA is the estimated time to the end, or zero before any task has finished.
	ETA time.Duration
}

// StepsPerSecond is the rate of sampler steps so far.
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

// taskWork weights a task's steps by a rough cost per step (the number of factor columns) so the
// ETA does not assume that a rank-10 step costs what a rank-1 step does.
func taskWork(rank int, steps int64) float64 { return float64(steps) * float64(1+rank) }

// Track registers a progress tracker for the estimator's tasks of ranks under runID; tasks that
// run in this process with that run ID report to it. steps is the number of steps a task is
// expected to report. A staged estimator's follow-on tasks (see estimators.Staged) are unknown
// until their first-stage tasks run: each joins the counts, with steps of its own, when its
// first-stage task reports, so the ETA leaves out the follow-on tasks not yet started. Call
// Untrack when the job ends.
func Track(runID string, e estimators.Estimator, ranks []int, steps func(estimators.Task) int) *Progress {
	p := &Progress{start: time.Now(), steps: steps, ranks: map[int]*rankProgress{}}
	for _, r := range ranks {
		rp := &rankProgress{}
		for _, t := range e.Tasks(r) {
			rp.add(steps(t), r)
		}
		p.ranks[r] = rp
	}
	trackers.Lock()
	trackers.m[runID] = p
	trackers.Unlock()
	return p
}

// add counts a task of rank with steps steps.
func (rp *rankProgress) add(steps, rank int) {
	n := int64(steps)
	rp.tasks++
	rp.steps += n
	rp.work += taskWork(rank, n)
}

// Untrack removes the tracker of runID.
func Untrack(runID string) {
	trackers.Lock()
	delete(trackers.m, runID)
	trackers.Unlock()
}

// report records a finished task, and the follow-on tasks it started (of its rank), with the
// tracker of runID, if this process has one.
func report(runID string, r estimators.Result, next []estimators.Task) {
	if runID == "" {
		return
	}
	trackers.Lock()
	p := trackers.m[runID]
	trackers.Unlock()
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rp := p.ranks[r.Task.Rank]
	if rp == nil {
		return
	}
	for _, t := range next {
		rp.add(p.steps(t), t.Rank)
	}
	rp.tasksDone++
	rp.stepsDone += int64(r.Steps)
	rp.workDone += taskWork(r.Task.Rank, int64(r.Steps))
}

// Snapshot returns the current state.
func (p *Progress) Snapshot() ProgressSnapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := ProgressSnapshot{Elapsed: time.Since(p.start), Ranks: len(p.ranks)}
	var work, workDone float64
	for r, rp := range p.ranks {
		s.Steps += rp.steps
		s.StepsDone += rp.stepsDone
		s.Tasks += rp.tasks
		s.TasksDone += rp.tasksDone
		work += rp.work
		workDone += rp.workDone
		if rp.tasksDone >= rp.tasks {
			s.RanksDone = append(s.RanksDone, r)
		}
	}
	sort.Ints(s.RanksDone)
	if workDone > 0 && work > workDone {
		s.ETA = time.Duration(float64(s.Elapsed) * (work - workDone) / workDone)
	}
	return s
}
