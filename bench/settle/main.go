// Command settle runs, at chosen rungs of one rank of a Poisson NMF or CP dataset, long chains of
// the Gibbs kernel from the states stirank select's default chains start from
// (sti.Problem.DescentState: each replica's walk down the ladder from the rank's mode), and prints
// each chain's mean log-likelihood over blocks of sweeps. It shows how many sweeps a rung's chains
// need to forget the walk down, against the 40 of burn-in and about 160 records the default gives
// them: where the means keep drifting past the default's length, its rung means carry the walk's
// phase (README, Measured accuracy: rank 4 of the 257×275 spectrogram, rungs 14 and 15).
//
//	go run ./bench/settle -data D -rank 4 -rate 0.3 -rungs 14,15
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/stirank/stirank/bench/internal/countdata"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/sti"
)

func main() {
	dir := flag.String("data", "", "dataset directory (stirank generate or import)")
	R := flag.Int("rank", 2, "rank")
	rate := flag.Float64("rate", 1, "rate of the exponential prior of every factor")
	seed := flag.Uint64("seed", 1, "seed of select's walks and of the chains")
	rungList := flag.String("rungs", "", "ladder indices of the rungs, comma-separated (1 … the ladder's top; select's evidence.json lists the ladder)")
	sweeps := flag.Int("sweeps", 2000, "sweeps of each chain")
	block := flag.Int("block", 100, "sweeps per printed mean")
	flag.Parse()
	if *dir == "" || *R < 1 || *rungList == "" || *block < 1 || *sweeps < *block {
		log.Fatal("usage: go run ./bench/settle -data DIR -rank R -rate RATE -rungs I,J (and -sweeps at least -block)")
	}
	var rungs []int
	for _, f := range strings.Split(*rungList, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			log.Fatalf("-rungs: %v", err)
		}
		rungs = append(rungs, i)
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
	ladder := sp.RankConfig(*R).Ladder
	for _, i := range rungs {
		if i < 1 || i >= len(ladder) {
			log.Fatalf("-rungs: %d is not a rung of the walk (1–%d)", i, len(ladder)-1)
		}
	}
	type chain struct{ rung, replica int }
	var chains []chain
	for _, i := range rungs {
		for c := range sp.Config.Chains {
			chains = append(chains, chain{i, c})
		}
	}
	means := make([][]float64, len(chains))
	errs := make([]error, len(chains))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for k, ch := range chains {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			theta, err := sp.DescentState(ctx, sti.ChainID{Rank: *R, TIndex: ch.rung, Chain: ch.replica})
			if err != nil {
				errs[k] = err
				return
			}
			m, err := set.Poisson(*R)
			if err != nil {
				errs[k] = err
				return
			}
			a := m.NewAugmented()
			acc := make([]float64, set.Data.Order())
			r := rng.New(*seed, uint64(*R), uint64(ch.rung), uint64(ch.replica))
			sum := 0.0
			for s := 1; s <= *sweeps; s++ {
				sum += a.Sweep(r, ladder[ch.rung], theta, acc)
				if s%*block == 0 {
					means[k] = append(means[k], sum/float64(*block))
					sum = 0
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("%s rank %d, rate %g: mean log-likelihood of each %d sweeps of a chain from select's start\n", *dir, *R, *rate, *block)
	for k, ch := range chains {
		fmt.Printf("rung %2d t=%-9.4g replica %d:", ch.rung, ladder[ch.rung], ch.replica)
		for _, v := range means[k] {
			fmt.Printf(" %.0f", v)
		}
		fmt.Println()
	}
}
