// Command hysteresis looks for a phase change of f(t) = E_t[log p(X | θ)] along the power
// posteriors of a Poisson NMF or CP rank, where stirank select's estimate is biased high (README,
// Known limits). It walks one state up the ladder from a prior draw and, after -relax sweeps of
// the Gibbs kernel at t = 1, back down, -walk sweeps per rung each way, and at every rung runs a
// chain of -steps sweeps (the first -burnin dropped) from each walk's state, as the default's
// chains start from its walk down. Where the chains of the two walks settle in the same basin
// their means agree within their noise at every rung; where f(t) changes phase, the walk up keeps
// the phase of small t and the walk down that of t = 1 over a range of rungs, and the chains
// differ there by tens to hundreds of nats. It prints the rungs and the loop's area, the sum over
// the rungs' intervals of Δt times the mean of the differences at their ends, and its largest
// term. The trapezoid integrals of the two walks' chain means differ by the area; where each
// walk's chains hold one phase, the evidence lies between them, nearer the walk down's the lower
// the temperature at which the phase of t = 1 takes over.
//
// On large data the chains relax over more sweeps than either walk gives them, and the two also
// differ where no phase changes (the walk up low, the walk down high): the area is a sign of a
// phase change on data whose chains relax within their burn-in, not on all data.
//
// stirank select runs a cheaper form of this on every NMF and CP rank above 1
// (evidence.PhaseCheck): one walk back up from its own walk down's state at t = 0.01, against the
// rungs' chains. This command, with its walk up from a prior draw and a chain from each walk at
// every rung, shows the whole loop.
//
//	stirank generate --model nmf --shape 40x30 --rank 4 --rate 1 --row-shape 0.3 --seed 7 --out C
//	go run ./bench/hysteresis -data C -rank 2 -rate 1
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math"

	"github.com/stirank/stirank/bench/internal/countdata"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/rng"
)

func main() {
	dir := flag.String("data", "", "dataset directory (stirank generate or import)")
	R := flag.Int("rank", 2, "rank")
	rate := flag.Float64("rate", 1, "rate of the exponential prior of every factor")
	seed := flag.Uint64("seed", 1, "seed of the walks and chains")
	rungs := flag.Int("rungs", 30, fmt.Sprintf("rungs of the power ladder t_i = (i/rungs)^%g", float64(evidence.DefaultPower)))
	walk := flag.Int("walk", 20, "sweeps per rung of each walk")
	steps := flag.Int("steps", 200, "sweeps of each rung's chain")
	burnin := flag.Int("burnin", 40, "burn-in sweeps of each chain")
	relax := flag.Int("relax", 1000, "sweeps at t = 1 between the walks")
	flag.Parse()
	if *dir == "" || *R < 1 || *rungs < 1 || *burnin >= *steps {
		log.Fatal("usage: go run ./bench/hysteresis -data DIR -rank R -rate RATE (and -rungs at least 1, -burnin below -steps)")
	}
	set, err := countdata.Read(context.Background(), *dir, *rate)
	if err != nil {
		log.Fatal(err)
	}
	m, err := set.Poisson(*R)
	if err != nil {
		log.Fatal(err)
	}
	ts := evidence.Power(*rungs, evidence.DefaultPower)
	a := m.NewAugmented()
	acc := make([]float64, set.Data.Order())
	r := rng.New(*seed, uint64(*R))
	// chain returns the mean log-likelihood of a chain at t from a copy of theta.
	chain := func(theta []float64, t float64) float64 {
		th := append([]float64(nil), theta...)
		a.Forget()
		sum := 0.0
		for s := range *steps {
			ll := a.Sweep(r, t, th, acc)
			if s >= *burnin {
				sum += ll
			}
		}
		return sum / float64(*steps-*burnin)
	}
	step := func(theta []float64, t float64, sweeps int) {
		a.Forget()
		for range sweeps {
			a.Move(r, t, theta, acc)
		}
	}
	theta := make([]float64, m.Dim())
	m.SamplePrior(r, theta)
	up := make([]float64, len(ts))
	for i, t := range ts {
		step(theta, t, *walk)
		up[i] = chain(theta, t)
	}
	step(theta, 1, *relax)
	down := make([]float64, len(ts))
	for i := len(ts) - 1; i >= 0; i-- {
		step(theta, ts[i], *walk)
		down[i] = chain(theta, ts[i])
	}
	fmt.Printf("%s rank %d, rate %g: chain means from the walk up and the walk down\n", *dir, *R, *rate)
	fmt.Printf("%4s %12s %14s %14s %10s\n", "rung", "t", "up", "down", "down − up")
	area, most, at := 0.0, math.Inf(-1), 0
	for i, t := range ts {
		gap := down[i] - up[i]
		fmt.Printf("%4d %12.6g %14.2f %14.2f %10.2f\n", i, t, up[i], down[i], gap)
		if i == 0 {
			continue
		}
		part := (t - ts[i-1]) * (gap + down[i-1] - up[i-1]) / 2
		area += part
		if part > most {
			most, at = part, i
		}
	}
	fmt.Printf("loop area %.2f nats, of which %.2f between t = %.4g and %.4g\n", area, most, ts[at-1], ts[at])
}
