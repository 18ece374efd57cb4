package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/sti"
)

// warm measures what resuming chains from the previous increment's final states saves on a
// growing CP tensor (the re-analysis of stirank reanalyze). A 12×16×24 tensor of rank 3 grows
// along its third mode in 4 increments of 6 slices. At each increment after the first it runs
//
//   - a reference: a cold sweep with 6 replicas and a long burn-in (2000 steps);
//   - the cold default, and a cold run with a long burn-in (1000 steps);
//   - warm sweeps resumed from the default run's final states of the previous increment, with
//     the default 50 steps that settle the new rows and warm burn-ins of 25 to 200 steps;
//
// and prints, for each, the RMS distance from the reference over the ranks and the steps spent.
// The figure the re-analysis needs is the smallest warm run as accurate as the cold long-burn-in
// run, as a fraction of its steps.
func warm(seed uint64) error {
	const trueR, increments = 3, 4
	shape := []int{12, 16, 24}
	rates := []float64{0.5, 0.5, 0.5}
	ranks := []int{2, 3, 4, 5}
	full, _, err := models.GeneratePoisson(rng.New(11, 0xda7a), shape, trueR, rates)
	if err != nil {
		return err
	}
	spec := models.PoissonSpec("cp", rates, models.LogScale)
	fmt.Printf("== Warm start on a growing CP tensor %v, true rank %d, %d increments along mode 2, R=%v\n", shape, trueR, increments, ranks)
	run := func(inc int, cfg sti.Config, from sti.States) ([]evidence.RankEvidence, sti.States, int, time.Duration, error) {
		d := full.Slab(2, 0, shape[2]*inc/increments)
		p, err := sti.NewProblem(d, spec, cfg)
		if err != nil {
			return nil, nil, 0, 0, err
		}
		start := time.Now()
		res, states, err := p.SweepFrom(context.Background(), ranks, 0, from)
		steps := 0
		for _, r := range res {
			steps += r.Steps
		}
		return res, states, steps, time.Since(start), err
	}
	def := sti.Default("cp")
	def.Seed = seed
	_, states, _, _, err := run(1, def, nil)
	if err != nil {
		return err
	}
	type variant struct {
		name string
		cfg  sti.Config
		warm bool
	}
	long := def
	long.Steps, long.Burnin = def.Steps-def.Burnin+1000, 1000
	variants := []variant{{"cold long burn-in", long, false}, {"cold default", def, false}}
	for _, wb := range []int{25, 50, 100, 200} {
		c := def
		c.WarmBurnin = wb
		variants = append(variants, variant{fmt.Sprintf("warm burn-in %d", wb), c, true})
	}
	ref := def
	ref.Chains, ref.Steps, ref.Burnin = 6, def.Steps-def.Burnin+2000, 2000
	for inc := 2; inc <= increments; inc++ {
		refRes, _, refSteps, refTime, err := run(inc, ref, nil)
		if err != nil {
			return err
		}
		d := full.Slab(2, 0, shape[2]*inc/increments)
		fmt.Printf("increment %d: shape %v, %d non-zeros; reference %d steps, %.1fs:", inc, d.Shape, d.NNZ(), refSteps, refTime.Seconds())
		for _, r := range refRes {
			fmt.Printf("  R=%d %.2f±%.2f", r.Rank, r.LogEvidence, r.StdErr)
		}
		fmt.Println()
		var next sti.States
		longSteps := 0
		for _, v := range variants {
			var from sti.States
			cfg := v.cfg
			if v.warm {
				// As stirank reanalyze does: fresh streams for every dataset version.
				from, cfg.Seed = states, rng.Key(seed, uint64(inc))
			}
			res, st, steps, el, err := run(inc, cfg, from)
			if err != nil {
				return err
			}
			switch v.name {
			case "cold default":
				next = st
			case "cold long burn-in":
				longSteps = steps
			}
			var se float64
			best := res[0]
			fmt.Printf("  %-20s steps %8d (%.2f of long) %5.1fs  error:", v.name, steps, float64(steps)/float64(longSteps), el.Seconds())
			for i, r := range res {
				e := r.LogEvidence - refRes[i].LogEvidence
				se += e * e
				fmt.Printf(" %+6.2f", e)
				if r.LogEvidence > best.LogEvidence {
					best = r
				}
			}
			fmt.Printf("  RMS %.2f  chosen R=%d\n", math.Sqrt(se/float64(len(res))), best.Rank)
		}
		states = next
	}
	fmt.Println()
	return nil
}
