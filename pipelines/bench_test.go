package pipelines

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/runners"
	"github.com/stirank/stirank/sti"
)

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPipelineVsSweep runs the same sweep (the embedded default NMF data, ranks 1-6,
// sti.Default) through the Beam pipeline on in-process prism and through the in-process
// race (estimators.RunRace), and reports both wall times, their ratio (pipeline/sweep; 1 means the
// Beam layer costs nothing) and each one's CPU time over wall time (2 on two busy cores).
//
//	go test ./pipelines -run '^$' -bench PipelineVsSweep -benchtime 3x
func BenchmarkPipelineVsSweep(b *testing.B) {
	spec := models.PoissonSpec("nmf", []float64{1, 1}, models.LogScale)
	o, data := embedded(b, "default", spec, sti.Default("nmf"))
	o.Ranks = []int{1, 2, 3, 4, 5, 6}
	e, err := o.Work.New()
	if err != nil {
		b.Fatal(err)
	}
	o.Rounds = 8
	dir := b.TempDir()
	var pipeWall, pipeCPU, sweepWall, sweepCPU time.Duration
	for i := 0; b.Loop(); i++ {
		o.OutDir = filepath.Join(dir, fmt.Sprint(i))
		p, err := New(o)
		if err != nil {
			b.Fatal(err)
		}
		t0, c0 := time.Now(), cpuTime()
		if _, err := runners.Run(context.Background(), p, runners.Logging{}); err != nil {
			b.Fatal(err)
		}
		t1, c1 := time.Now(), cpuTime()
		if _, _, err := estimators.RunRace(context.Background(), e, data, o.Ranks, 0, estimators.TimeBudget{}); err != nil {
			b.Fatal(err)
		}
		t2, c2 := time.Now(), cpuTime()
		pipeWall += t1.Sub(t0)
		pipeCPU += c1 - c0
		sweepWall += t2.Sub(t1)
		sweepCPU += c2 - c1
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(pipeWall.Seconds()/float64(b.N), "pipeline-s/op")
	b.ReportMetric(sweepWall.Seconds()/float64(b.N), "sweep-s/op")
	b.ReportMetric(pipeWall.Seconds()/sweepWall.Seconds(), "pipeline/sweep")
	b.ReportMetric(pipeCPU.Seconds()/pipeWall.Seconds(), "pipeline-cpu/wall")
	b.ReportMetric(sweepCPU.Seconds()/sweepWall.Seconds(), "sweep-cpu/wall")
}
