package transforms

import (
	"context"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/internal/progress"
)

// Progress follows a job from the launching process. Beam metrics reach the launcher only when
// the job ends (and not at all on some runners), so tasks that run in the launching process —
// prism, direct and loopback workers — also report here, through a tracker registered under the
// job's run ID. Tasks on remote workers report through Beam metrics only.
type Progress struct {
	mu    sync.Mutex
	start time.Time
	plan  Plan
	ranks map[int]*rankProgress
	// kept and turned count the ranks planned warm that said they resume warm and those that
	// turned cold (progress.Resumes).
	kept, turned int
}

// Plan is what the tasks of a job are expected to spend, for the tracker's estimates: Steps is the
// number of steps task t reports and Work what they cost in all, each at the cost it is reported
// with (progress.AddAt), for a task that resumes from a saved state (warm) or not; Work nil counts
// every step at cost 1. Warm names the ranks whose tasks may resume warm; a task that learns
// whether they do (progress.Resumes) has the rank's tasks not yet started planned so, and until
// then a rank is planned as the ranks that said so went: warm and cold in proportion to how many
// of them turned cold (warm while none did).
type Plan struct {
	Steps func(t estimators.Task, warm bool) int
	Work  func(t estimators.Task, warm bool) float64
	Warm  map[int]bool
}

type rankProgress struct {
	tasks, tasksDone int
	steps, stepsDone int64
	// work and workDone weigh the steps by what each costs (progress.AddAt), the ETA's units.
	work, workDone float64
	// waiting counts the tasks planned at Track and not yet started, by their stage and plan,
	// with the plan they start with: a running task that revises its plan revises that of the
	// tasks like it still waiting (the other replicas of an annealing). pending holds those tasks,
	// to plan again (replan), and gen counts the times they were. warm says whether the rank may
	// resume warm, decided whether one of its tasks said if it does.
	waiting map[waitKey]*waitClass
	pending map[taskKey]estimators.Task
	gen     int
	warm    bool
	decided bool
	// busy is the time its finished tasks ran; running tasks add now − their start, and
	// started is the sum of their starts, in seconds since the job began.
	busy    float64
	running int
	started float64
}

// waitKey is a class of tasks alike in stage and plan.
type waitKey struct {
	stage, steps int
	work         float64
}

// taskKey is a task of a rank.
type taskKey struct{ stage, index, replica int }

func keyOf(t estimators.Task) taskKey { return taskKey{t.Stage, t.Index, t.Replica} }

// waitClass is the number of tasks of a class waiting to start and the steps each is planned for,
// with their work.
type waitClass struct {
	count int
	plan  int64
	work  float64
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
	// ETA is the estimated time to the end, zero before any step is done and once every task has
	// finished.
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

// Track registers a progress tracker for the estimator's tasks of ranks under runID, planned by
// plan; tasks that run in this process with that run ID report to it. A staged estimator's
// follow-on tasks (see estimators.Staged) are unknown until their first-stage tasks run: each
// joins the counts, with steps of its own, when its first-stage task reports, so the ETA leaves
// out the follow-on tasks not yet started. Call Untrack when the job ends.
func Track(runID string, e estimators.Estimator, ranks []int, plan Plan) *Progress {
	if plan.Work == nil {
		steps := plan.Steps
		plan.Work = func(t estimators.Task, warm bool) float64 { return float64(steps(t, warm)) }
	}
	p := &Progress{start: time.Now(), plan: plan, ranks: map[int]*rankProgress{}}
	for _, r := range ranks {
		rp := &rankProgress{waiting: map[waitKey]*waitClass{}, pending: map[taskKey]estimators.Task{}, warm: plan.Warm[r]}
		for _, t := range e.Tasks(r) {
			rp.tasks++
			p.wait(rp, t)
		}
		p.ranks[r] = rp
	}
	trackers.Lock()
	trackers.m[runID] = p
	trackers.Unlock()
	return p
}

// planOf is the steps task t of rank rp is planned for now and their work: a rank that may
// resume warm and has not said whether it does is planned warm and cold in the proportion of the
// ranks that said so and turned cold, since their saved states met the same growth of the data.
func (p *Progress) planOf(rp *rankProgress, t estimators.Task) (int, float64) {
	n, w := p.plan.Steps(t, rp.warm), p.plan.Work(t, rp.warm)
	if !rp.warm || rp.decided || p.turned == 0 {
		return n, w
	}
	q := float64(p.turned) / float64(p.kept+p.turned)
	nc, wc := p.plan.Steps(t, false), p.plan.Work(t, false)
	return int(math.Round((1-q)*float64(n) + q*float64(nc))), (1-q)*w + q*wc
}

// wait counts task t among rp's tasks waiting to start, at the plan of the tasks like it, and
// adds that plan to the rank's.
func (p *Progress) wait(rp *rankProgress, t estimators.Task) {
	n, w := p.planOf(rp, t)
	k := waitKey{t.Stage, n, w}
	c := rp.waiting[k]
	if c == nil {
		c = &waitClass{plan: int64(n), work: w}
		rp.waiting[k] = c
	}
	c.count++
	rp.grow(c.plan, c.work)
	rp.pending[keyOf(t)] = t
}

// replan plans rp's tasks not yet started again.
func (p *Progress) replan(rp *rankProgress) {
	for _, c := range rp.waiting {
		rp.grow(-int64(c.count)*c.plan, -float64(c.count)*c.work)
	}
	pending := rp.pending
	rp.waiting, rp.pending = map[waitKey]*waitClass{}, map[taskKey]estimators.Task{}
	rp.gen++
	for _, t := range pending {
		p.wait(rp, t)
	}
}

// resumes records whether rp resumes warm, once, and plans its tasks not yet started so, and
// those of the ranks that have not said by the new share of cold ones.
func (p *Progress) resumes(rp *rankProgress, warm bool) {
	if rp.decided || !rp.warm {
		return
	}
	rp.decided = true
	if warm {
		p.kept++
	} else {
		rp.warm = false
		p.turned++
	}
	for _, o := range p.ranks {
		if o == rp || (o.warm && !o.decided) {
			p.replan(o)
		}
	}
}

// busyAt is the time the rank's tasks have run by now (since the job began), in seconds.
func (rp *rankProgress) busyAt(now time.Duration) float64 {
	return rp.busy + float64(rp.running)*now.Seconds() - rp.started
}

// grow adds steps and their work to the plan.
func (rp *rankProgress) grow(steps int64, work float64) {
	rp.steps += steps
	rp.work += work
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

// running marks the start of task t and returns the context it runs in: the steps its loops
// report (see internal/progress) count towards the tracker of runID as they are spent, and a plan
// it revises (progress.Expect) replaces its steps in the tracker's plan, and those of the tasks
// like it not yet started. A rank's shared work (its mode search, a replica's walk down the
// ladder) reports through the task that computes it, whichever task accounts for it in its
// result, so while tasks run the tracker counts the work this process has done, each step once.
// Call finish when the task ends, with its result and the follow-on tasks it started, or with the
// error it failed with: a failed task's time counts, its steps do not (the runner retries it) and
// it is not done: it waits again, with the plan of the tasks like it. A task that says whether
// its rank resumes warm (progress.Resumes) has the rank's tasks not yet started planned so.
func running(ctx context.Context, runID string, t estimators.Task) (_ context.Context, finish func(estimators.Result, []estimators.Task, error)) {
	rank := t.Rank
	p := tracker(runID)
	if p == nil {
		return ctx, func(estimators.Result, []estimators.Task, error) {}
	}
	p.mu.Lock()
	rp := p.ranks[rank]
	if rp == nil {
		p.mu.Unlock()
		return ctx, func(estimators.Result, []estimators.Task, error) {}
	}
	start := time.Since(p.start).Seconds()
	n, w := p.planOf(rp, t)
	key := waitKey{t.Stage, n, w}
	plan, planWork := int64(n), w // the task's plan, guarded by p.mu
	gen := rp.gen                 // the rank's plan the task started with
	rp.running++
	rp.started += start
	if c := rp.waiting[key]; c != nil && c.count > 0 {
		c.count--
		plan, planWork = c.plan, c.work
		delete(rp.pending, keyOf(t))
	}
	p.mu.Unlock()
	var spent atomic.Int64
	spentWork := 0.0 // guarded by p.mu
	revised := false // whether the task revised its plan (progress.Expect), guarded by p.mu
	ctx = progress.With(ctx, func(steps int, c float64) {
		spent.Add(int64(steps))
		p.mu.Lock()
		rp.stepsDone += int64(steps)
		rp.workDone += float64(steps) * c
		spentWork += float64(steps) * c
		p.mu.Unlock()
	})
	ctx = progress.WithPlan(ctx, func(steps int, work float64) {
		p.mu.Lock()
		n := int64(steps)
		rp.grow(n-plan, work-planWork)
		plan, planWork, revised = n, work, true
		if c := rp.waiting[key]; c != nil && rp.gen == gen {
			rp.grow(int64(c.count)*(n-c.plan), float64(c.count)*(work-c.work))
			c.plan, c.work = n, work
		}
		p.mu.Unlock()
	})
	ctx = progress.WithResumes(ctx, func(warm bool) {
		p.mu.Lock()
		p.resumes(rp, warm)
		p.mu.Unlock()
	})
	return ctx, func(r estimators.Result, next []estimators.Task, err error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		rp.running--
		rp.started -= start
		rp.busy += time.Since(p.start).Seconds() - start
		if err != nil {
			rp.stepsDone -= spent.Load()
			rp.workDone -= spentWork
			rp.grow(-plan, -planWork)
			p.wait(rp, t)
			return
		}
		for _, t := range next {
			n, w := p.planOf(rp, t)
			rp.tasks++
			rp.grow(int64(n), w)
		}
		rp.tasksDone++
		// A task that spent more than planned (a Gibbs chain replacing the records of its
		// start's transient) adds the excess to the plan; one that reported nothing while it ran
		// counts its steps now. Either is priced at what a step of its plan costs on average.
		// A task that revised its plan to hold the tasks it would start (an annealing, whose
		// plan held its chains) leaves the plan with what it spent, up or down, when it starts
		// them (they joined it above) or diverged (it starts none). Any other plan, revised or
		// not, stands: a chain's revised plan is what its result accounts for, while what it
		// spent may hold its rank's shared work, which the chain that accounts for it plans.
		cost := 1.0
		if plan > 0 {
			cost = planWork / float64(plan)
		}
		if spent.Load() == 0 {
			spentWork = float64(r.Steps) * cost
			rp.stepsDone += int64(r.Steps)
			rp.workDone += spentWork
		}
		if revised && (len(next) > 0 || r.Divergence != "") {
			rp.grow(int64(r.Steps)-plan, spentWork-planWork)
		} else if extra := int64(r.Steps) - plan; extra > 0 {
			rp.grow(extra, float64(extra)*cost)
		}
	}
}

// Snapshot returns the current state.
//
// The ETA is the time the remaining steps take at each rank's cost per step so far: the time
// its tasks have run over the steps they have spent, each weighed by the cost it was reported
// with (progress.AddAt) and the steps left by what Track's work plans for them, which counts
// whatever a step costs at that rank on this data and these cores (a Gibbs sweep's cost grows with the rank far more slowly
// than an SG-MCMC step's). A rank not yet started costs what a straight line through the ranks
// seen so far gives (cost per step against rank, weighted by their steps), or with one rank seen
// that rank's cost scaled by (1 + rank). The remaining task time is spread over the tasks that
// have been running at once on average.
func (p *Progress) Snapshot() ProgressSnapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Since(p.start)
	s := ProgressSnapshot{Elapsed: now, Ranks: len(p.ranks)}
	var seen []rankCost
	costs := map[int]float64{}
	busy := 0.0
	for r, rp := range p.ranks {
		s.Steps += rp.steps
		s.StepsDone += rp.stepsDone
		s.Tasks += rp.tasks
		s.TasksDone += rp.tasksDone
		if rp.tasksDone >= rp.tasks {
			s.RanksDone = append(s.RanksDone, r)
		}
		b := rp.busyAt(now)
		busy += b
		if rp.workDone > 0 && b > 0 {
			costs[r] = b / rp.workDone
			seen = append(seen, rankCost{r, costs[r], rp.workDone})
		}
	}
	sort.Ints(s.RanksDone)
	if len(seen) == 0 || busy <= 0 || s.TasksDone >= s.Tasks {
		return s
	}
	cost := costLine(seen)
	remaining := 0.0
	for r, rp := range p.ranks {
		if left := rp.work - rp.workDone; left > 0 && rp.steps > rp.stepsDone {
			c, ok := costs[r]
			if !ok {
				c = cost(r)
			}
			remaining += left * c
		}
	}
	s.ETA = time.Duration(float64(now) * remaining / busy)
	return s
}

// rankCost is a rank's task time per step so far, the steps weighed by their cost, and the
// weighed steps it rests on.
type rankCost struct {
	rank         int
	cost, weight float64
}

// costLine returns the cost per step of a rank from the ranks seen: the weighted least-squares line
// through them when it rises with the rank, else the nearest seen rank's cost scaled by (1 + rank).
// Rank 1 is left out once a higher rank is seen: its chains may run a kernel of their own (nmf and
// cp draw rank 1 from the data's margins, in one reanalysis 25 times cheaper per unit of its plan
// than rank 2), which would pull the line far below the ranks above it.
func costLine(seen []rankCost) func(rank int) float64 {
	sort.Slice(seen, func(i, j int) bool { return seen[i].rank < seen[j].rank })
	if len(seen) > 1 && seen[0].rank == 1 {
		seen = seen[1:]
	}
	var w, wx, wy, wxx, wxy float64
	for _, c := range seen {
		x := float64(c.rank)
		w += c.weight
		wx += c.weight * x
		wy += c.weight * c.cost
		wxx += c.weight * x * x
		wxy += c.weight * x * c.cost
	}
	if d := w*wxx - wx*wx; len(seen) > 1 && d > 0 {
		b := (w*wxy - wx*wy) / d
		a := (wy - b*wx) / w
		if b >= 0 {
			return func(rank int) float64 { return max(a+b*float64(rank), seen[0].cost) }
		}
	}
	return func(rank int) float64 {
		near := seen[0]
		for _, c := range seen {
			if abs(c.rank-rank) < abs(near.rank-rank) {
				near = c
			}
		}
		return near.cost * float64(1+rank) / float64(1+near.rank)
	}
}

func abs(x int) int { return max(x, -x) }
