package transforms

import (
	"sort"
	"sync"
	"time"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/sti"
)

// Progress follows a sweep from the launching process. Beam metrics reach the launcher only when
// the job ends (and not at all on some runners), so chains that run in the launching process —
// prism, direct and loopback workers — also report here, through a tracker registered under the
// job's run ID. Chains on remote workers report through Beam metrics only.
type Progress struct {
	mu    sync.Mutex
	start time.Time
	ranks map[int]*rankProgress
}

type rankProgress struct {
	chains, chainsDone int
	steps, stepsDone   int64
	work, workDone     float64
}

// ProgressSnapshot is the state of a sweep at one moment.
type ProgressSnapshot struct {
	Elapsed time.Duration
	// Steps counts sampler steps, burn-in and start tournaments included.
	Steps, StepsDone   int64
	Chains, ChainsDone int
	// RanksDone lists the ranks whose chains have all finished, in increasing order.
	RanksDone []int
	// Ranks is the number of ranks of the sweep.
	Ranks int
	// ETA is the estimated time to the end, or zero before any chain has finished.
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

// chainWork weights a chain's steps by a rough cost per step (the number of factor columns) so the
// ETA does not assume that a rank-10 step costs what a rank-1 step does.
func chainWork(rank int, steps int64) float64 { return float64(steps) * float64(1+rank) }

// Track registers a progress tracker for the sweep of ranks under runID; chains that run in this
// process with that run ID report to it. warm names the ranks whose chains resume from saved
// states (they run fewer steps). Call Untrack when the job ends.
func Track(runID string, ranks []int, cfg sti.Config, warm map[int]bool) *Progress {
	p := &Progress{start: time.Now(), ranks: map[int]*rankProgress{}}
	for _, r := range ranks {
		rp := &rankProgress{}
		for ti := range cfg.Ladder {
			for c := range cfg.Chains {
				n := int64(cfg.ChainSteps(sti.ChainID{Rank: r, TIndex: ti, Chain: c}, warm[r]))
				rp.chains++
				rp.steps += n
				rp.work += chainWork(r, n)
			}
		}
		p.ranks[r] = rp
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

// report records a finished chain with the tracker of runID, if this process has one.
func report(runID string, s evidence.ChainSummary) {
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
	rp := p.ranks[s.Rank]
	if rp == nil {
		return
	}
	rp.chainsDone++
	rp.stepsDone += int64(s.Steps)
	rp.workDone += chainWork(s.Rank, int64(s.Steps))
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
		s.Chains += rp.chains
		s.ChainsDone += rp.chainsDone
		work += rp.work
		workDone += rp.workDone
		if rp.chainsDone >= rp.chains {
			s.RanksDone = append(s.RanksDone, r)
		}
	}
	sort.Ints(s.RanksDone)
	if workDone > 0 && work > workDone {
		s.ETA = time.Duration(float64(s.Elapsed) * (work - workDone) / workDone)
	}
	return s
}
