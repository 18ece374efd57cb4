// Command baselines is the STI-versus-Chib benchmark of issue 5, on the synthetic NMF workload of
// ICASSP 2016 §4.1.2: X ~ Poisson(WH) with W (I×R*) and H (R*×J) drawn from Exp(λ) priors, I = 100,
// J = 75, λ = 5, one dataset per true rank R* (3 and 6 by default), and every candidate rank
// R = 1 … 10. For every dataset and rank it runs
//
//   - STI: sti.Default("nmf") (sti.DefaultSGMCMC with -sgmcmc) through estimators.RunRank, one
//     rank at a time on -workers cores;
//   - Chib: -replicas replicas of baselines.DefaultChib (or the paper's recipe with -chib paper),
//     run concurrently on the same cores;
//   - optionally AIS (-ais N: N runs of baselines.DefaultAIS with -ais-temps temperatures), as a
//     reference for the accuracy of the other two,
//
// and prints, per rank, each estimate of log p(X | R) with its standard error and wall time, then
// the totals: the STI/Chib time ratio, and the ratio at comparable accuracy, which scales each
// method's time by its mean squared standard error (a Monte Carlo method's error falls like
// 1/√time, so time × variance is the time it would need for a unit variance). With -ais, the RMS
// deviation of STI and Chib from AIS over the ranks is printed too.
//
// Usage (from the repository root; bench/baselines.sh wraps it):
//
//	go run ./bench/baselines                      # both datasets, STI and Chib, R = 1..10
//	go run ./bench/baselines -ais 4               # plus AIS as a reference (slower)
//	go run ./bench/baselines -truth 6 -ranks 4-8  # one dataset, a few ranks
//	go run ./bench/baselines -chib paper          # Chib with the paper's two-block recipe
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/internal/cputime"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/tensor"
)

type estimate struct {
	logZ, se  float64
	wall, cpu time.Duration
}

func main() {
	truths := flag.String("truth", "3,6", "true ranks, one dataset each")
	ranksFlag := flag.String("ranks", "1-10", "candidate ranks lo-hi")
	I := flag.Int("I", 100, "rows")
	J := flag.Int("J", 75, "columns")
	rate := flag.Float64("rate", 5, "rate λ of the exponential priors (data and models)")
	seed := flag.Uint64("seed", 1, "seed of the data and of every method")
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "cores for every method")
	replicas := flag.Int("replicas", 2, "Chib replicas per rank")
	chibPreset := flag.String("chib", "default", "Chib configuration: default or paper")
	aisRuns := flag.Int("ais", 0, "AIS runs per rank (0: no AIS)")
	aisTemps := flag.Int("ais-temps", 2000, "AIS temperatures")
	sgmcmc := flag.Bool("sgmcmc", false, "STI with its chains on the SG-MCMC kernel (sti.DefaultSGMCMC) instead of the default Gibbs kernel")
	flag.Parse()

	lo, hi, err := parseRange(*ranksFlag)
	if err != nil {
		fail(err)
	}
	var ranks []int
	for r := lo; r <= hi; r++ {
		ranks = append(ranks, r)
	}
	chib := baselines.DefaultChib()
	switch *chibPreset {
	case "default":
	case "paper":
		chib = baselines.PaperChib()
	default:
		fail(fmt.Errorf("-chib %q: default or paper", *chibPreset))
	}
	chib.Seed = *seed
	ais := baselines.DefaultAIS()
	ais.Temperatures, ais.Seed = *aisTemps, *seed
	stiCfg, stiName := sti.Default("nmf"), "sti.Default"
	if *sgmcmc {
		stiCfg, stiName = sti.DefaultSGMCMC("nmf"), "sti.DefaultSGMCMC"
	}
	stiCfg.Seed = *seed
	rates := []float64{*rate, *rate}

	fmt.Printf("STI vs Chib on the ICASSP 2016 synthetic NMF workload: I=%d, J=%d, λ=%g, ranks %d-%d, %d cores (GOMAXPROCS %d)\n",
		*I, *J, *rate, lo, hi, *workers, runtime.GOMAXPROCS(0))
	kernel := stiCfg.Sampler
	if stiCfg.Gibbs {
		kernel = "gibbs (steps are sweeps)"
	}
	fmt.Printf("STI: %s(\"nmf\") — %d temperatures × %d chains × %d steps (burn-in %d), sampler %s\n",
		stiName, len(stiCfg.Ladder)-1, stiCfg.Chains, stiCfg.Steps, stiCfg.Burnin, kernel)
	fmt.Printf("Chib: %s — %d replicas × (%d burn-in + %d full-run sweeps + per block %d+%d reduced sweeps, blocks of %s)\n",
		*chibPreset, *replicas, chib.Burnin, chib.Samples, chib.ReducedBurnin, chib.ReducedSamples, blockDesc(chib))
	if *aisRuns > 0 {
		fmt.Printf("AIS: %d runs × %d temperatures (power %g), slice sampling\n", *aisRuns, ais.Temperatures, ais.Power)
	}

	var totSTI, totChib, cpuSTI, cpuChib time.Duration
	var varSTI, varChib float64
	var nVar int
	for _, f := range strings.Split(*truths, ",") {
		truth, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || truth < 1 {
			fail(fmt.Errorf("-truth %q", *truths))
		}
		data, _, err := models.GeneratePoisson(rng.New(*seed, 0xda7a, uint64(truth)), []int{*I, *J}, truth, rates)
		if err != nil {
			fail(err)
		}
		fmt.Printf("\ndataset: true rank %d, %d non-zero cells, total count %.0f (mean %.3f per cell)\n",
			truth, data.NNZ(), data.Sum(), data.Sum()/data.Cells())
		sp := estimators.STI{Model: models.PoissonSpec("nmf", rates, models.LogScale), Config: stiCfg}
		bp, err := baselines.NewProblem(data, rates)
		if err != nil {
			fail(err)
		}
		header := fmt.Sprintf("%4s %10s %5s %6s %6s %10s %5s %6s %6s %8s", "rank", "STI", "± se", "wall", "cpu", "Chib", "± se", "wall", "cpu", "Chib−STI")
		if *aisRuns > 0 {
			header += fmt.Sprintf(" %10s %5s %6s %6s", "AIS", "± se", "wall", "cpu")
		}
		fmt.Println(header)
		var bestS, bestC, bestA int
		maxS, maxC, maxA := math.Inf(-1), math.Inf(-1), math.Inf(-1)
		var devS, devC float64
		for _, R := range ranks {
			s := runSTI(sp, data, R)
			c := runBaseline(bp, baselines.MethodChib, R, *replicas, *workers, chib, ais)
			totSTI += s.wall
			totChib += c.wall
			cpuSTI += s.cpu
			cpuChib += c.cpu
			varSTI += s.se * s.se
			varChib += c.se * c.se
			nVar++
			line := fmt.Sprintf("%4d %10.2f %5.2f %5.1fs %5.1fs %10.2f %5.2f %5.1fs %5.1fs %+8.2f", R, s.logZ, s.se, s.wall.Seconds(), s.cpu.Seconds(),
				c.logZ, c.se, c.wall.Seconds(), c.cpu.Seconds(), c.logZ-s.logZ)
			if s.logZ > maxS {
				maxS, bestS = s.logZ, R
			}
			if c.logZ > maxC {
				maxC, bestC = c.logZ, R
			}
			if *aisRuns > 0 {
				a := runBaseline(bp, baselines.MethodAIS, R, *aisRuns, *workers, chib, ais)
				line += fmt.Sprintf(" %10.2f %5.2f %5.1fs %5.1fs", a.logZ, a.se, a.wall.Seconds(), a.cpu.Seconds())
				if a.logZ > maxA {
					maxA, bestA = a.logZ, R
				}
				devS += (s.logZ - a.logZ) * (s.logZ - a.logZ)
				devC += (c.logZ - a.logZ) * (c.logZ - a.logZ)
			}
			fmt.Println(line)
		}
		fmt.Printf("best rank: STI %d, Chib %d", bestS, bestC)
		if *aisRuns > 0 {
			n := float64(len(ranks))
			fmt.Printf(", AIS %d; RMS deviation from AIS: STI %.2f, Chib %.2f nats", bestA, math.Sqrt(devS/n), math.Sqrt(devC/n))
		}
		fmt.Println()
	}
	n := float64(nVar)
	fmt.Printf("\ntotal wall time: STI %.1fs, Chib %.1fs; Chib/STI ratio %.2f\n", totSTI.Seconds(), totChib.Seconds(), totChib.Seconds()/totSTI.Seconds())
	fmt.Printf("total CPU time:  STI %.1fs, Chib %.1fs; Chib/STI ratio %.2f\n", cpuSTI.Seconds(), cpuChib.Seconds(), cpuChib.Seconds()/cpuSTI.Seconds())
	fmt.Printf("RMS standard error: STI %.2f, Chib %.2f nats; Chib/STI CPU-time ratio at equal standard error (time × variance): %.2f\n",
		math.Sqrt(varSTI/n), math.Sqrt(varChib/n), cpuChib.Seconds()*varChib/(cpuSTI.Seconds()*varSTI))
}

func runSTI(e estimators.STI, data *tensor.Sparse, R int) estimate {
	t0, c0 := time.Now(), cputime.Now()
	re, err := estimators.RunRank(context.Background(), e, data, R)
	if err != nil {
		fail(err)
	}
	return estimate{re.LogEvidence, re.StdErr, time.Since(t0), cputime.Now() - c0}
}

func runBaseline(p *baselines.Problem, method string, R, n, workers int, chib baselines.ChibConfig, ais baselines.AISConfig) estimate {
	t0, c0 := time.Now(), cputime.Now()
	sums := make([]baselines.Summary, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			s, err := p.Run(context.Background(), method, R, k, chib, ais)
			if err != nil {
				fail(err)
			}
			sums[k] = s
		}()
	}
	wg.Wait()
	re, err := baselines.CombineRank(method, sums)
	if err != nil {
		fail(err)
	}
	return estimate{re.LogEvidence, re.StdErr, time.Since(t0), cputime.Now() - c0}
}

func blockDesc(c baselines.ChibConfig) string {
	if c.RowsPerBlock > 0 {
		if c.RowsPerBlock >= math.MaxInt32 {
			return "whole factors"
		}
		return fmt.Sprintf("%d rows", c.RowsPerBlock)
	}
	return fmt.Sprintf("~%d entries", c.BlockSize)
}

func parseRange(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "-")
	lo, err1 := strconv.Atoi(a)
	hi := lo
	var err2 error
	if ok {
		hi, err2 = strconv.Atoi(b)
	}
	if err1 != nil || err2 != nil || lo < 1 || hi < lo {
		return 0, 0, fmt.Errorf("-ranks %q: want lo-hi", s)
	}
	return lo, hi, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/baselines:", err)
	os.Exit(1)
}
