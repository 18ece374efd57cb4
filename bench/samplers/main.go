// Command samplers benchmarks the SG-MCMC kernels inside STI against exact evidences: evidence
// error versus cost (sampler steps — one stochastic gradient each — and per-cell likelihood
// evaluations, which include the control variates' full passes) for the Gaussian additive model of
// ICASSP 2016 (exact evidence for every R) and rank-1 Poisson NMF (exact via
// models.Rank1LogEvidence) on the engine tests' four rank-1 datasets, the embedded default
// dataset's recipe (30×20, true rank 3, Exp(0.3), seed 1) first.
//
// Each row is one sampler at one budget: sti.Default's chain length scaled by -scale (burn-in and
// sampling scaled together), on -reps datasets × -seeds chain seeds. err is estimate − exact; the
// columns give its mean, root mean square and largest absolute value over all estimates, the mean
// of |err|/stderr, and how many estimates lie within 3 reported standard errors and 1 nat.
//
// The tables of the issue-6 note:
//
//	go run ./bench/samplers -model gauss -reps 4 -seeds 3 -scale 0.25,0.5,1,2 \
//		-samplers sgld,psgld,lmsgld,sghmc,sghmc-em,sgnht,sgnht-em -step sgld=1e-4,psgld=1e-2
//	go run ./bench/samplers -model nmf -reps 4 -seeds 5 -scale 0.25,0.5,1,2 \
//		-samplers sgld,lmsgld,sghmc,sghmc-em,sgnht,sgnht-em -step sgld=1e-3
//	go run ./bench/samplers -model nmf -reps 4 -seeds 5 -scale 0.5,1,2 \
//		-samplers lmsgld,sghmc,sghmc-em,sgnht,sgnht-em \
//		-step lmsgld=0.5,sghmc=0.5,sghmc-em=0.5,sgnht=0.5,sgnht-em=0.5
//
// (SGLD and pSGLD take raw, not metric-scaled, steps; the values are the best of a scan. pSGLD
// diverged on log-space NMF at every step tried, 1e-4 to 1e-1.)
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/tensor"
)

type problem struct {
	name  string
	data  *tensor.Sparse
	spec  models.Spec
	ranks []int
	exact map[int]float64
}

func gaussProblems(reps int, trueR int, lo, hi int) []problem {
	var ps []problem
	for s := range reps {
		seed := uint64(trueR + 100*s)
		x, _ := models.GenerateGauss(rng.New(seed, 77), 5000, trueR, models.ICASSPGauss)
		d, _ := tensor.New([]int{len(x)}, len(x))
		for i, v := range x {
			d.Append([]int{i}, v)
		}
		p := problem{name: fmt.Sprintf("gauss seed %d", seed), data: d, spec: models.GaussSpec(models.ICASSPGauss), exact: map[int]float64{}}
		for r := lo; r <= hi; r++ {
			m, _ := models.NewGauss(x, r, models.ICASSPGauss)
			p.ranks = append(p.ranks, r)
			p.exact[r] = m.LogEvidence()
		}
		ps = append(ps, p)
	}
	return ps
}

// nmfProblems are the rank-1 cases of the engine's tests: the embedded default dataset's recipe
// (30×20, true rank 3, rate 0.3, seed 1) first.
func nmfProblems(reps int) []problem {
	cases := []struct {
		shape []int
		rate  float64
		seed  uint64
	}{{[]int{30, 20}, 0.3, 1}, {[]int{30, 20}, 0.7, 2}, {[]int{12, 9}, 2, 3}, {[]int{50, 8}, 0.1, 4}}
	var ps []problem
	for i := range reps {
		c := cases[i%len(cases)]
		rates := []float64{c.rate, c.rate}
		d, _, err := models.GeneratePoisson(rng.New(c.seed, 0xda7a), c.shape, 3, rates)
		if err != nil {
			panic(err)
		}
		ex, err := models.Rank1LogEvidence(d, rates)
		if err != nil {
			panic(err)
		}
		ps = append(ps, problem{name: fmt.Sprintf("nmf %v rate %v", c.shape, c.rate), data: d,
			spec: models.PoissonSpec("nmf", rates, models.LogScale), ranks: []int{1}, exact: map[int]float64{1: ex}})
	}
	return ps
}

func main() {
	model := flag.String("model", "gauss", "gauss or nmf")
	kernels := flag.String("samplers", "sgld,psgld,lmsgld,sghmc,sghmc-em,sgnht,sgnht-em", "comma-separated sampler names")
	scales := flag.String("scale", "0.5,1,2", "chain-length multipliers of the default")
	reps := flag.Int("reps", 4, "datasets (gauss: seeds; nmf: the engine test's rank-1 cases, cycled)")
	chainSeeds := flag.Int("seeds", 1, "chain seeds per dataset")
	steps := flag.String("step", "", "per-sampler step sizes, e.g. sgld=0.5,sghmc=1 (default: sti.Default's)")
	params := flag.String("param", "", "nmf: per-sampler parameterisation, e.g. sgld=direct (default: log)")
	trueR := flag.Int("true", 10, "gauss: true rank")
	lo := flag.Int("lo", 8, "gauss: lowest rank")
	hi := flag.Int("hi", 12, "gauss: highest rank")
	verbose := flag.Bool("v", false, "print every estimate")
	flag.Parse()
	stepOf := map[string]float64{}
	if *steps != "" {
		for _, kv := range strings.Split(*steps, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				fmt.Fprintln(os.Stderr, "bad -step", kv)
				os.Exit(2)
			}
			stepOf[k] = f
		}
	}
	paramOf := map[string]models.Param{}
	if *params != "" {
		for _, kv := range strings.Split(*params, ",") {
			k, v, _ := strings.Cut(kv, "=")
			pm, err := models.ParseParam(v)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			paramOf[k] = pm
		}
	}
	var ps []problem
	if *model == "gauss" {
		ps = gaussProblems(*reps, *trueR, *lo, *hi)
	} else {
		ps = nmfProblems(*reps)
	}
	fmt.Printf("model %s, %d datasets × %d chain seeds\n", *model, len(ps), *chainSeeds)
	fmt.Printf("| sampler | step | scale | steps/rank | cell evals/rank | mean err | rmse | max abs | mean abs z | within 3se & 1 nat | diverged | time |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range strings.Split(*kernels, ",") {
		for _, sc := range strings.Split(*scales, ",") {
			scale, _ := strconv.ParseFloat(sc, 64)
			var n, cover, div int
			var sum, sum2, maxe, sumz float64
			var stepsPer, evalsPer float64
			cfg := sti.DefaultSGMCMC(ps[0].spec.Name)
			start := time.Now()
			for _, p := range ps {
				for cs := range *chainSeeds {
					cfg = sti.DefaultSGMCMC(p.spec.Name)
					cfg.Sampler = k
					if v, ok := stepOf[k]; ok {
						cfg.Step = v
					}
					cfg.Steps = int(math.Round(float64(cfg.Steps) * scale))
					cfg.Burnin = int(math.Round(float64(cfg.Burnin) * scale))
					cfg.Seed = uint64(1 + cs)
					spec := p.spec
					if pm, ok := paramOf[k]; ok {
						spec = spec.With("param", models.Word(pm.String()))
					}
					res, err := estimators.RunRanks(context.Background(), estimators.STI{Model: spec, Config: cfg}, p.data, p.ranks)
					if err != nil {
						panic(err)
					}
					for _, r := range res {
						if len(r.Diverged) > 0 {
							div++
							if *verbose {
								fmt.Println("  diverged:", r.Diverged[0])
							}
							continue
						}
						e := r.LogEvidence - p.exact[r.Rank]
						z := math.Abs(e) / r.StdErr
						n++
						sum += e
						sum2 += e * e
						maxe = math.Max(maxe, math.Abs(e))
						sumz += z
						if math.Abs(e) <= 1 && z <= 3 {
							cover++
						}
						stepsPer += float64(r.Steps)
						evalsPer += float64(r.CellEvals)
						if *verbose {
							fmt.Printf("  %s R=%d exact %.3f est %.3f err %+.3f se %.3f\n", p.name, r.Rank, p.exact[r.Rank], r.LogEvidence, e, r.StdErr)
						}
					}
				}
			}
			nf := float64(max(n, 1))
			fmt.Printf("| %s | %.3g | %.3g | %.0f | %.3g | %+.3f | %.3f | %.3f | %.2f | %d/%d | %d | %.1fs |\n",
				k, cfg.Step, scale, stepsPer/nf, evalsPer/nf, sum/nf, math.Sqrt(sum2/nf), maxe, sumz/nf, cover, n, div, time.Since(start).Seconds())
		}
	}
}
