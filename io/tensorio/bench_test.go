package tensorio_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// million returns a 200×200×200 count tensor with about 10⁶ stored cells in row-major order.
func million(b *testing.B) *tensor.Sparse {
	const n = 200
	r := rng.New(1)
	t, err := tensor.New([]int{n, n, n}, 1<<20)
	if err != nil {
		b.Fatal(err)
	}
	for l := range n * n * n {
		if r.IntN(8) == 0 {
			t.Append([]int{l / (n * n), l / n % n, l % n}, float64(1+r.IntN(20)))
		}
	}
	return t
}

// peakHeap runs f and returns the largest heap in use while it ran, above the heap before it.
func peakHeap(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := read()
	peak := base
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	return max(peak, read()) - base
}

// BenchmarkWriteRead1e6 writes and reads a 10⁶-cell 3-way tensor (20 bytes per cell in memory).
// The read reports its peak heap per cell, which must stay a small multiple of those 20 bytes.
func BenchmarkWriteRead1e6(b *testing.B) {
	ctx := context.Background()
	t := million(b)
	cells := float64(t.NNZ())
	root := b.TempDir()
	dir := filepath.Join(root, "written")
	if _, err := tensorio.Write(ctx, dir, t, tensorio.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Run("write", func(b *testing.B) {
		out := filepath.Join(root, "out")
		for b.Loop() {
			if _, err := tensorio.Write(ctx, out, t, tensorio.WriteOptions{}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			os.RemoveAll(out)
			b.StartTimer()
		}
		b.ReportMetric(cells*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("read", func(b *testing.B) {
		var peak uint64
		for b.Loop() {
			peak = max(peak, peakHeap(func() {
				if _, err := tensorio.Read(ctx, dir, tensorio.ReadOptions{}); err != nil {
					b.Fatal(err)
				}
			}))
		}
		b.ReportMetric(cells*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(peak)/cells, "peak-heap-B/cell")
	})
}
