// Command engine runs the paper-sized workloads of the STI engine in-process and prints figures:
// the ICASSP 2016 Gaussian experiment against the exact evidence (and what the papers' uniform
// 10-rung ladder costs even with exact expectations), the ICASSP 100×75 Poisson NMF sweep over
// R = 1…10 against the paper's 137 s, and rank-1 estimates against the exact rank-1 evidence.
//
//	go run ./bench/engine [-workload gauss,nmf,rank1]
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/tensor"
)

func main() {
	workloads := flag.String("workload", "gauss,nmf,rank1", "comma-separated workloads to run")
	seed := flag.Uint64("seed", 1, "seed of the chains")
	flag.Parse()
	fmt.Printf("stirank engine benchmark: %d cores, %s\n\n", runtime.NumCPU(), runtime.Version())
	for _, w := range strings.Split(*workloads, ",") {
		var err error
		switch w {
		case "gauss":
			err = gauss(*seed)
		case "nmf":
			err = nmf(*seed)
		case "rank1":
			err = rank1(*seed)
		default:
			err = fmt.Errorf("unknown workload %q", w)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "engine:", err)
			os.Exit(1)
		}
	}
}

func rankList(lo, hi int) []int {
	var r []int
	for i := lo; i <= hi; i++ {
		r = append(r, i)
	}
	return r
}

func gauss(seed uint64) error {
	fmt.Println("== ICASSP 2016 Gaussian additive model: μ=5, σθ²=3, σx²=5, N=5000, |S|=250, R=1…20")
	cfg := sti.Default("gauss")
	cfg.Seed = seed
	for _, trueR := range []int{5, 10, 15, 20} {
		x, _ := models.GenerateGauss(rng.New(uint64(trueR), 77), 5000, trueR, models.ICASSPGauss)
		d, _ := tensor.New([]int{len(x)}, len(x))
		for i, v := range x {
			d.Append([]int{i}, v)
		}
		start := time.Now()
		res, err := estimators.RunRanks(context.Background(), estimators.STI{Model: models.GaussSpec(models.ICASSPGauss), Config: cfg}, d, rankList(1, 20))
		if err != nil {
			return err
		}
		el := time.Since(start)
		fmt.Printf("true R=%d (sweep %.2fs, %d steps per rank)\n", trueR, el.Seconds(), res[0].Steps)
		fmt.Println("   R        exact     estimate    error  stderr   uniform-10 (exact f)")
		maxNear, best, mode := 0.0, 0, 0
		exact := make([]float64, len(res))
		for i, r := range res {
			m, _ := models.NewGauss(x, r.Rank, models.ICASSPGauss)
			exact[i] = m.LogEvidence()
			if exact[i] > exact[mode] {
				mode = i
			}
			if r.LogEvidence > res[best].LogEvidence {
				best = i
			}
		}
		for i, r := range res {
			m, _ := models.NewGauss(x, r.Rank, models.ICASSPGauss)
			u := evidence.Uniform(10)
			f := make([]float64, len(u))
			for j, t := range u {
				f[j], _ = m.PowerPosterior(t)
			}
			e := r.LogEvidence - exact[i]
			if abs(i-mode) <= 2 {
				maxNear = math.Max(maxNear, math.Abs(e))
			}
			fmt.Printf("  %2d %12.2f %12.2f %+8.3f %7.3f %+12.1f\n", r.Rank, exact[i], r.LogEvidence, e, r.StdErr, evidence.Trapezoid(u, f)-exact[i])
		}
		fmt.Printf("  chosen R=%d, exact mode R=%d, largest error within 2 of the mode %.3f nats\n\n", res[best].Rank, res[mode].Rank, maxNear)
	}
	return nil
}

func abs(a int) int {
	if a < 0 {
		return -a
	}
	return a
}

func nmf(seed uint64) error {
	fmt.Println("== ICASSP 2016 Poisson NMF: I=100, J=75, λw=λh=5, R=1…10 (paper: 137 s on 4 cores, T=5, 10000 samples)")
	for _, trueR := range []int{3, 6} {
		d, _, err := models.GeneratePoisson(rng.New(uint64(trueR), 0xda7a), []int{100, 75}, trueR, []float64{5, 5})
		if err != nil {
			return err
		}
		cfg := sti.Default("nmf")
		cfg.Seed = seed
		start := time.Now()
		res, err := estimators.RunRanks(context.Background(), estimators.STI{Model: models.PoissonSpec("nmf", []float64{5, 5}, models.LogScale), Config: cfg}, d, rankList(1, 10))
		if err != nil {
			return err
		}
		el := time.Since(start)
		exact1, _ := models.Rank1LogEvidence(d, []float64{5, 5})
		fmt.Printf("true R=%d: %d non-zeros, total count %.0f; sweep %.1fs (%.1f× faster than the paper's 137 s)\n", trueR, d.NNZ(), d.Sum(), el.Seconds(), 137/el.Seconds())
		best := res[0]
		for _, r := range res {
			extra := ""
			if r.Rank == 1 {
				extra = fmt.Sprintf("   exact %.2f", exact1)
			}
			fmt.Printf("  R=%2d %10.2f ± %.2f  steps %d%s\n", r.Rank, r.LogEvidence, r.StdErr, r.Steps, extra)
			if r.LogEvidence > best.LogEvidence {
				best = r
			}
		}
		fmt.Printf("  chosen R=%d\n\n", best.Rank)
	}
	return nil
}

func rank1(seed uint64) error {
	fmt.Println("== Rank-1 Poisson NMF against its exact evidence (the rank the papers' recipe loses)")
	for _, c := range []struct {
		shape []int
		rate  float64
	}{{[]int{30, 20}, 0.3}, {[]int{30, 20}, 0.7}, {[]int{100, 75}, 5}, {[]int{200, 150}, 0.5}} {
		d, _, err := models.GeneratePoisson(rng.New(7, 0xda7a), c.shape, 3, []float64{c.rate, c.rate})
		if err != nil {
			return err
		}
		exact, _ := models.Rank1LogEvidence(d, []float64{c.rate, c.rate})
		cfg := sti.Default("nmf")
		cfg.Seed = seed
		res, err := estimators.RunRanks(context.Background(), estimators.STI{Model: models.PoissonSpec("nmf", []float64{c.rate, c.rate}, models.LogScale), Config: cfg}, d, []int{1})
		if err != nil {
			return err
		}
		r := res[0]
		fmt.Printf("  %dx%d rate %.1f: exact %.2f estimate %.2f ± %.2f (error %+.2f)\n", c.shape[0], c.shape[1], c.rate, exact, r.LogEvidence, r.StdErr, r.LogEvidence-exact)
	}
	fmt.Println()
	return nil
}
