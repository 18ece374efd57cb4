//go:build scratch

package baselines

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

func TestScratchR7(t *testing.T) {
	rates := []float64{5, 5}
	d, _, _ := models.GeneratePoisson(rng.New(1, 0xda7a, 6), []int{100, 75}, 6, rates)
	p, _ := NewProblem(d, rates)
	R := 7
	var wg sync.WaitGroup
	var mu sync.Mutex
	if os.Getenv("WHICH") == "ais" {
		cfg := DefaultAIS()
		cfg.Temperatures = 10000
		for run := 0; run < 2; run++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				a, _ := p.AIS(context.Background(), R, 100+run, cfg)
				mu.Lock()
				fmt.Printf("ais10k run %.2f (%v)\n", a.LogWeight, time.Since(t0))
				mu.Unlock()
			}()
		}
		wg.Wait()
		return
	}
	cfg := DefaultChib()
	if os.Getenv("LONG") != "" {
		cfg.ReducedSamples = 4000
		cfg.Samples = 8000
		cfg.Burnin = 4000
	}
	for rep := 0; rep < 4; rep++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			res, _ := p.Chib(context.Background(), R, rep, cfg)
			mu.Lock()
			fmt.Printf("chib rep %d %.2f±%.2f ll %.2f lp %.2f sw %.2f (%v)\n", rep, res.LogEvidence, res.StdErr, res.LogLik, res.LogPrior, res.LabelSwitching, time.Since(t0))
			for i := range res.BlockOrdinates {
				if res.BlockSE[i] > 0.4 {
					fmt.Printf("   block %d: %.2f±%.2f\n", i, res.BlockOrdinates[i], res.BlockSE[i])
				}
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
}
