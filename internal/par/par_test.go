package par

import (
	"runtime"
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
