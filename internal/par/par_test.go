package par

import (
	"runtime"
	"sync/atomic"
	"testing"
)

func TestChunksCoverTheRangeOnce(t *testing.T) {
	for _, n := range []int{0, 1, MinChunk, MinChunk + 1, 3*MinChunk + 7, 1000 * MinChunk} {
		seen := make([]int32, n)
		For(n, func(c, lo, hi int) {
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		for i, s := range seen {
			if s != 1 {
				t.Fatalf("n=%d: index %d visited %d times", n, i, s)
			}
		}
		if count, _ := Chunks(n); count > MaxChunks {
			t.Fatalf("n=%d: %d chunks", n, count)
		}
	}
}

// A sum must come out bit-identical whatever the number of cores.
func TestSumDoesNotDependOnCores(t *testing.T) {
	n := 37*MinChunk + 11
	x := make([]float64, n)
	for i := range x {
		x[i] = 1 / float64(i+1)
	}
	sum := func() float64 {
		return Sum(n, func(_, lo, hi int) float64 {
			s := 0.0
			for _, v := range x[lo:hi] {
				s += v
			}
			return s
		})
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(1)
	one := sum()
	runtime.GOMAXPROCS(4)
	if four := sum(); four != one {
		t.Fatalf("1 core %v, 4 cores %v", one, four)
	}
}

// TasksOn runs every task once, on workers below the bound, and never two tasks on one worker at
// once (each worker's flag is raised by one task at a time).
func TestTasksOnKeepsWorkersApart(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(4)
	for _, workers := range []int{1, 3, 8} {
		const count = 200
		var seen [count]atomic.Int32
		var busy [8]atomic.Bool
		var bad atomic.Int32
		TasksOn(count, workers, func(w, c int) {
			if w >= workers || !busy[w].CompareAndSwap(false, true) {
				bad.Add(1)
				return
			}
			seen[c].Add(1)
			runtime.Gosched()
			busy[w].Store(false)
		})
		if bad.Load() != 0 {
			t.Fatalf("%d workers: %d tasks ran on a worker out of range or already busy", workers, bad.Load())
		}
		for c := range seen {
			if n := seen[c].Load(); n != 1 {
				t.Fatalf("%d workers: task %d ran %d times", workers, c, n)
			}
		}
	}
}
