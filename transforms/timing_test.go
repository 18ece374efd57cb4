package transforms

import (
	"testing"
	"time"

	"github.com/stirank/stirank/internal/cputime"
)

// burn uses about d of CPU time on the calling goroutine.
func burn(d time.Duration) {
	for start := cputime.Now(); cputime.Now()-start < d; {
	}
}

// TestClockSharesCPU: two overlapping tasks split the CPU time used while both ran, each keeps
// what was used while it ran alone, and the shares add up to the process's CPU time between the
// first start and the last stop, no more.
func TestClockSharesCPU(t *testing.T) {
	before := cputime.Now()
	stopA := startClock()
	inner0 := cputime.Now()
	burn(60 * time.Millisecond) // A alone
	stopB := startClock()
	burn(60 * time.Millisecond) // A and B
	wallA, cpuA := stopA()
	burn(60 * time.Millisecond) // B alone
	inner1 := cputime.Now()
	wallB, cpuB := stopB()
	after := cputime.Now()

	sum := cpuA + cpuB
	if lo, hi := (inner1 - inner0).Seconds(), (after - before).Seconds(); sum < lo || sum > hi {
		t.Errorf("shares %.4f + %.4f = %.4f s; the process used between %.4f and %.4f s", cpuA, cpuB, sum, lo, hi)
	}
	// Each gets 60 ms alone and half of the shared 60 ms: 90 ms, give or take what the test
	// binary's other goroutines used meanwhile.
	for _, c := range []float64{cpuA, cpuB} {
		if c < 0.085 || c > 0.115 {
			t.Errorf("shares %.4f and %.4f s, want about 0.090 each", cpuA, cpuB)
			break
		}
	}
	// The burns count the process's CPU time, other threads' included, so their wall time can
	// be shorter than their CPU time, but not by more than the cores allow.
	if wallA < 0.06 || wallB < 0.06 {
		t.Errorf("wall times %.3f and %.3f s for 120 ms of CPU each", wallA, wallB)
	}
}
