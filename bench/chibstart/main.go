// Command chibstart runs Chib's method (baselines.Chib) at one rank of a Poisson NMF or CP
// dataset from its own start, the best of short Gibbs runs from prior draws, and from the state
// each replica of stirank select's default chains starts from at t = 1 (sti.Problem.DescentState:
// the rank's mode search and the replica's relaxation). A Chib run estimates the evidence of the
// basin it stays in, so where select's chains hold a basin of more mass than Chib's own start
// finds, Chib from their state comes out higher; where all agree on θ* and the estimate, the
// chains at t = 1 hold no basin that Chib's run misses, and a gap between select and Chib lies
// below t = 1 (README, Measured accuracy: rank 4 of the 257×275 spectrogram).
//
// The default runs are the shorter ones README uses on that spectrogram; -burnin, -samples,
// -reduced-burnin, -reduced-samples and -max-extend set them (stirank chib's flags).
//
//	go run ./bench/chibstart -data D -rank 4 -rate 0.3
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"sync"

	"github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/bench/internal/countdata"
	"github.com/stirank/stirank/sti"
)

func main() {
	dir := flag.String("data", "", "dataset directory (stirank generate or import)")
	R := flag.Int("rank", 2, "rank")
	rate := flag.Float64("rate", 1, "rate of the exponential prior of every factor")
	seed := flag.Uint64("seed", 1, "seed of select's chains and of Chib's runs")
	cfg := baselines.DefaultChib()
	cfg.Burnin, cfg.Samples, cfg.ReducedBurnin, cfg.ReducedSamples, cfg.MaxExtend = 300, 500, 20, 200, 1
	flag.IntVar(&cfg.Burnin, "burnin", cfg.Burnin, "Chib's burn-in sweeps")
	flag.IntVar(&cfg.Samples, "samples", cfg.Samples, "sweeps of Chib's full run")
	flag.IntVar(&cfg.ReducedBurnin, "reduced-burnin", cfg.ReducedBurnin, "burn-in sweeps of each reduced run")
	flag.IntVar(&cfg.ReducedSamples, "reduced-samples", cfg.ReducedSamples, "sweeps of each reduced run")
	flag.IntVar(&cfg.MaxExtend, "max-extend", cfg.MaxExtend, "most times a block's sweeps are extended (1: never)")
	flag.Parse()
	cfg.Seed = *seed
	if *dir == "" || *R < 1 {
		log.Fatal("usage: go run ./bench/chibstart -data DIR -rank R -rate RATE")
	}
	if err := cfg.Validate(); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	set, err := countdata.Read(ctx, *dir, *rate)
	if err != nil {
		log.Fatal(err)
	}
	sp, err := set.Select(*seed)
	if err != nil {
		log.Fatal(err)
	}
	m, err := set.Poisson(*R)
	if err != nil {
		log.Fatal(err)
	}
	bp, err := baselines.NewProblem(set.Data, set.Rates)
	if err != nil {
		log.Fatal(err)
	}
	top := len(sp.RankConfig(*R).Ladder) - 1

	// Run 0 is Chib's own start; run 1 + c starts from select's replica c.
	runs := 1 + sp.Config.Chains
	names := make([]string, runs)
	results := make([]baselines.ChibResult, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 0 {
				names[i] = "Chib's own (prior draws)"
				results[i], errs[i] = bp.Chib(ctx, *R, 0, cfg)
				return
			}
			c := i - 1
			names[i] = fmt.Sprintf("select's replica %d", c)
			theta, err := sp.DescentState(ctx, sti.ChainID{Rank: *R, TIndex: top, Chain: c})
			if err != nil {
				errs[i] = err
				return
			}
			from := baselines.Factors{R: *R, F: m.FactorValues(theta)}
			results[i], errs[i] = bp.ChibFrom(ctx, *R, i, cfg, from)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("%s rank %d, rate %g: Chib's method (burn-in %d, samples %d, reduced %d/%d, max-extend %d) from each start\n",
		*dir, *R, *rate, cfg.Burnin, cfg.Samples, cfg.ReducedBurnin, cfg.ReducedSamples, cfg.MaxExtend)
	fmt.Printf("%-26s %14s %8s %16s\n", "start", "log p(X|R)", "stderr", "log p(X|θ*)")
	for i, r := range results {
		fmt.Printf("%-26s %14.2f %8.2f %16.2f\n", names[i], r.LogEvidence, r.StdErr, r.LogLik)
	}
}
