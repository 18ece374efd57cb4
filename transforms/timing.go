package transforms

import (
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/internal/cputime"
)

func init() {
	register.Function2x1(addRankTimes)
	register.Function2x2(rankTimeOf)
}

// RankTime is what the tasks of one rank cost: their number, the wall-clock time they ran (the
// sum over tasks, so tasks that ran side by side count each) and the CPU time they used.
type RankTime struct {
	Rank       int     `json:"rank"`
	Tasks      int     `json:"tasks"`
	Seconds    float64 `json:"wall_seconds"`
	CPUSeconds float64 `json:"cpu_seconds"`
}

// TimePerRank sums the task times of a PCollection<KV<int, estimators.Result>> keyed by rank
// into a PCollection<KV<int, RankTime>>, one element per rank.
func TimePerRank(s beam.Scope, results beam.PCollection) beam.PCollection {
	s = s.Scope("TimePerRank")
	return beam.CombinePerKey(s, addRankTimes, beam.ParDo(s, rankTimeOf, results))
}

func rankTimeOf(rank int, r estimators.Result) (int, RankTime) {
	return rank, RankTime{Rank: rank, Tasks: 1, Seconds: r.Seconds, CPUSeconds: r.CPUSeconds}
}

func addRankTimes(a, b RankTime) RankTime {
	return RankTime{Rank: a.Rank, Tasks: a.Tasks + b.Tasks, Seconds: a.Seconds + b.Seconds, CPUSeconds: a.CPUSeconds + b.CPUSeconds}
}

// cpuShares apportions the CPU time of the process among the tasks running in it. Go cannot
// tell which goroutine used a CPU second, and a task's kernel may spread over several
// goroutines (internal/par), so the process's CPU time between two task starts or ends is split
// evenly among the tasks running then. The shares add up to the process's CPU time while tasks
// ran; a task's share is exact when it ran alone and fair when its neighbours cost the same.
var cpuShares = struct {
	sync.Mutex
	last    time.Duration
	running map[*cpuShare]struct{}
}{running: map[*cpuShare]struct{}{}}

type cpuShare struct{ used time.Duration }

// advanceShares gives the process CPU time since the last start or end to the running tasks;
// call it with cpuShares held.
func advanceShares() {
	now := cputime.Now()
	if n := len(cpuShares.running); n > 0 {
		d := (now - cpuShares.last) / time.Duration(n)
		for s := range cpuShares.running {
			s.used += d
		}
	}
	cpuShares.last = now
}

// startClock starts timing a task; the function it returns gives the wall-clock seconds since
// and the task's share of the process's CPU seconds.
func startClock() (stop func() (seconds, cpuSeconds float64)) {
	share := &cpuShare{}
	cpuShares.Lock()
	advanceShares()
	cpuShares.running[share] = struct{}{}
	cpuShares.Unlock()
	start := time.Now()
	return func() (float64, float64) {
		wall := time.Since(start)
		cpuShares.Lock()
		advanceShares()
		delete(cpuShares.running, share)
		cpuShares.Unlock()
		return wall.Seconds(), share.used.Seconds()
	}
}
