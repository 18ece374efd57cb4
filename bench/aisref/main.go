// Command aisref prints long-run AIS references (package baselines) for generated Poisson NMF data.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"sync"

	"github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

func main() {
	I := flag.Int("i", 30, "rows")
	J := flag.Int("j", 20, "cols")
	TR := flag.Int("tr", 3, "true rank")
	R := flag.Int("r", 2, "rank")
	rate := flag.Float64("rate", 0.3, "rate")
	seed := flag.Uint64("seed", 3, "seed")
	runs := flag.Int("runs", 4, "runs")
	K := flag.Int("k", 5000, "temperatures")
	flag.Parse()
	rates := []float64{*rate, *rate}
	d, _, err := models.GeneratePoisson(rng.New(*seed, 0xda7a), []int{*I, *J}, *TR, rates)
	if err != nil {
		panic(err)
	}
	p, err := baselines.NewProblem(d, rates)
	if err != nil {
		panic(err)
	}
	cfg := baselines.DefaultAIS()
	cfg.Temperatures = *K
	lw := make([]float64, *runs)
	var wg sync.WaitGroup
	for i := range *runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := p.AIS(context.Background(), *R, i, cfg)
			if err != nil {
				panic(err)
			}
			lw[i] = r.LogWeight
		}()
	}
	wg.Wait()
	mx := math.Inf(-1)
	for _, v := range lw {
		mx = math.Max(mx, v)
	}
	s := 0.0
	for _, v := range lw {
		s += math.Exp(v - mx)
	}
	fmt.Printf("R=%d logmeanexp %.3f runs %.3f\n", *R, mx+math.Log(s/float64(*runs)), lw)
}
