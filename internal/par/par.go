// Package par runs loops over an index range on all cores with results that do not depend on how
// many cores there are: the range is cut into chunks by its length alone, and partial sums are
// added in chunk order. Short ranges run inline, so small models pay nothing for it.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// MinChunk is the shortest chunk worth a goroutine: below it a loop over parameters costs less
// than the hand-off.
const MinChunk = 1 << 13

// MaxChunks bounds the number of chunks, and so the partial sums a reduction keeps.
const MaxChunks = 64

// Chunks returns the number of chunks [0, n) is cut into and their length (the last may be shorter).
func Chunks(n int) (count, size int) {
	if Inline(n) {
		return 1, n
	}
	count = min(MaxChunks, (n+MinChunk-1)/MinChunk)
	size = (n + count - 1) / count
	return (n + size - 1) / size, size
}

// Inline reports whether [0, n) is one chunk. Callers run its body directly: a function literal
// handed to For escapes to the heap, and a model calls these loops several times a step.
func Inline(n int) bool { return n <= MinChunk }

// For calls body(c, lo, hi) once for every chunk c = [lo, hi) of [0, n), concurrently on up to
// GOMAXPROCS goroutines, and returns when all have returned.
func For(n int, body func(c, lo, hi int)) {
	count, size := Chunks(n)
	Tasks(count, func(c int) { body(c, c*size, min(n, (c+1)*size)) })
}

// Tasks calls body(c) once for every c in [0, count), concurrently on up to GOMAXPROCS
// goroutines, and returns when all have returned; a single task runs inline.
func Tasks(count int, body func(c int)) {
	TasksOn(count, Workers(count), func(_, c int) { body(c) })
}

// Workers is the number of goroutines Tasks runs count tasks on.
func Workers(count int) int { return max(1, min(runtime.GOMAXPROCS(0), count)) }

// TasksOn is Tasks on at most workers goroutines, telling body which of them runs each task: a
// worker in [0, workers) runs one task at a time, so scratch of its own needs no lock.
func TasksOn(count, workers int, body func(worker, c int)) {
	workers = min(workers, Workers(count))
	if workers <= 1 {
		for c := range count {
			body(0, c)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(workers)
	for w := range workers {
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1)) - 1
				if c >= count {
					return
				}
				body(w, c)
			}
		}()
	}
	wg.Wait()
}

// Sum returns Σ_c body(c, lo, hi) over the chunks of [0, n), added in chunk order.
func Sum(n int, body func(c, lo, hi int) float64) float64 {
	var partial [MaxChunks]float64
	For(n, func(c, lo, hi int) { partial[c] = body(c, lo, hi) })
	s := 0.0
	for _, v := range partial {
		s += v
	}
	return s
}
