// Command dictionary is the benchmark of IS-NMF dictionary scoring (issue 14), on the synthetic
// data of Dikmen & Cemgil §4.1: F = 10 features, a = b = 1, w_fk ~ Gamma(1, 1), columns drawn
// from the model. It prints three tables:
//
//   - accuracy: for each K of -atoms (1–4) and each F of -features, every method's estimate of log p(x | W) of -columns columns
//     against the exact value (closed form, quadrature), as the mean absolute error, the largest
//     error in reported standard errors, and the CPU time per column (all replicas);
//   - agreement at K = 15, where no exact value exists: each method against the mean of the
//     others (plain importance sampling left out of the reference), per column, in nats and in
//     standard errors;
//   - rank (beyond the paper): Itakura–Saito NMF with priors on both factors (stirank select
//     --model isnmf), data drawn at rank 2 on 10 × 8, every rank 1–4 by STI (sti.Default) against
//     annealed importance sampling over both factors (isnmf.FullAIS, -full-stages stages);
//   - classification (the paper's Table 1): two K = 15 dictionaries differing in one column, 10
//     columns drawn from each, every column assigned to the dictionary with the higher estimated
//     evidence; errors out of 20 per method, over -repeats datasets (the paper: AIS 8.8, SMC1
//     8.4, SMC2 7.6).
//
// Usage (from the repository root):
//
//	go run ./bench/dictionary                               # all three, 100 particles x 1000 stages
//	go run ./bench/dictionary -stages 5000 -tables accuracy # the paper's budget
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

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/internal/cputime"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/models/isnmf"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/samplers/smc"
	"github.com/stirank/stirank/sti"
)

var (
	particles  = flag.Int("particles", 100, "particles per run")
	stages     = flag.Int("stages", 1000, "stages per run (for smc1 and smc2 spread evenly over the path, and the fewest they take with -cess)")
	cess       = flag.Float64("cess", isnmf.DefaultCESS, "smc1 and smc2: add stages where a step would leave the conditional ESS fraction below this (0: none)")
	replicas   = flag.Int("replicas", 4, "runs per column")
	columns    = flag.Int("columns", 5, "columns per dictionary in the accuracy and agreement tables")
	repeats    = flag.Int("repeats", 5, "datasets in the classification table")
	methods    = flag.String("methods", "ais,smc1,smc2,is", "methods to compare")
	tables     = flag.String("tables", "accuracy,agreement,rank,classification", "tables to print")
	fullStages = flag.Int("full-stages", 2000, "stages of the full-model AIS of the rank table")
	seed       = flag.Uint64("seed", 1, "seed of the data and the runs")
	features   = flag.String("features", "10,200", "feature counts F of the accuracy table (the paper's 10, and an informative column)")
	atoms      = flag.String("atoms", "1,2,3,4", "dictionary sizes K of the accuracy table (the quadrature reaches K = 4)")
)

// dictionary draws an F×K dictionary with Gamma(1, 1) entries.
func dictionary(f, k int, stream uint64) *isnmf.Model {
	r := rng.New(*seed, 1, stream)
	w := make([]float64, f*k)
	for i := range w {
		w[i] = r.ExpFloat64()
	}
	m, err := isnmf.New(f, k, w, 1, 1, false)
	if err != nil {
		panic(err)
	}
	return m
}

// estimate is log p(x | W) from -replicas runs of method, run concurrently on every core, with
// the stages the runs took, added up.
func estimate(method isnmf.Method, m *isnmf.Model, x []float64, stream ...uint64) (logZ, se float64, stages int) {
	out := make([]float64, *replicas)
	runStages := make([]int, *replicas)
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for r := range out {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res := method.Estimate(m, x, rng.New(*seed, append(stream, uint64(r))...))
			out[r], runStages[r] = res.LogZ, res.Stages
		})
	}
	wg.Wait()
	logZ, se = smc.Combine(out)
	for _, s := range runStages {
		stages += s
	}
	return logZ, se, stages
}

func main() {
	flag.Parse()
	var ms []isnmf.Method
	for _, name := range strings.Split(*methods, ",") {
		m, err := isnmf.NewMethod(name, isnmf.Budget{Particles: *particles, Stages: *stages, CESS: *cess})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		ms = append(ms, m)
	}
	fmt.Printf("a = b = 1, %d particles x %d stages (smc1, smc2: conditional ESS %g), %d replicas per column, %d cores\n\n", *particles, *stages, *cess, *replicas, runtime.GOMAXPROCS(0))
	for _, t := range strings.Split(*tables, ",") {
		switch t {
		case "accuracy":
			accuracy(ms)
		case "agreement":
			agreement(ms)
		case "rank":
			rank()
		case "classification":
			classification(ms)
		default:
			fmt.Fprintf(os.Stderr, "unknown table %q\n", t)
			os.Exit(2)
		}
	}
}

func accuracy(ms []isnmf.Method) {
	fmt.Println("accuracy against exact values (mean and largest |error| per column in nats; largest |error| in reported standard errors; mean stages per run; CPU per column, and as a multiple of AIS's)")
	fmt.Printf("%4s %3s %6s %10s %9s %7s %11s %11s %7s\n", "F", "K", "method", "mean|err|", "max|err|", "max z", "stages/run", "CPU/column", "xAIS")
	for _, F := range counts("-features", *features) {
		accuracyAt(ms, F)
	}
	fmt.Println()
}

// quadPanels is the quadrature's panels per coordinate by K: converged to 1e-5 nat
// (isnmf.TestQuadrature) at a cost of (10·panels)^{K−1} integrand values.
var quadPanels = map[int]int{1: 1, 2: 20, 3: 20, 4: 8}

// counts reads a comma-separated list of positive integers from flag name.
func counts(name, list string) []int {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "%s: %q is not a count\n", name, s)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}

func accuracyAt(ms []isnmf.Method, F int) {
	for _, k := range counts("-atoms", *atoms) {
		m := dictionary(F, k, uint64(k))
		cols := m.Sample(rng.New(*seed, 2, uint64(F), uint64(k)), *columns)
		exact := make([]float64, len(cols))
		for n, x := range cols {
			var err error
			if exact[n], err = m.LogEvidenceQuadrature(x, quadPanels[k]); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
		}
		var aisCPU time.Duration // AIS's CPU per column here, when it is among the methods
		for _, method := range ms {
			var sumErr, maxErr, maxZ float64
			var runStages int
			start := cputime.Now()
			for n, x := range cols {
				got, se, s := estimate(method, m, x, uint64(k), uint64(n))
				runStages += s
				e := math.Abs(got - exact[n])
				sumErr += e
				maxErr = math.Max(maxErr, e)
				if se > 0 {
					maxZ = math.Max(maxZ, e/se)
				} else if e > 1e-9 {
					maxZ = math.Inf(1)
				}
			}
			per := (cputime.Now() - start) / time.Duration(len(cols))
			if _, ok := method.(isnmf.AIS); ok {
				aisCPU = per
			}
			vsAIS := "-"
			if aisCPU > 0 {
				vsAIS = fmt.Sprintf("%.2f", float64(per)/float64(aisCPU))
			}
			fmt.Printf("%4d %3d %6s %10.4f %9.4f %7.2f %11.0f %11s %7s\n", F, k, method.Name(), sumErr/float64(len(cols)), maxErr, maxZ,
				float64(runStages)/float64(len(cols)**replicas), per.Round(time.Millisecond), vsAIS)
		}
	}
}

func agreement(ms []isnmf.Method) {
	const K = 15
	fmt.Printf("agreement at K = %d (each method against the mean of the others: mean |gap| in nats, largest |gap| in combined standard errors)\n", K)
	m := dictionary(10, K, 100)
	cols := m.Sample(rng.New(*seed, 3), *columns)
	est := make([][2]float64, len(ms)*len(cols))
	for i, method := range ms {
		start := cputime.Now()
		for n, x := range cols {
			l, se, _ := estimate(method, m, x, 100, uint64(n))
			est[i*len(cols)+n] = [2]float64{l, se}
		}
		fmt.Printf("  %s: CPU per column %s\n", method.Name(), ((cputime.Now() - start) / time.Duration(len(cols))).Round(time.Millisecond))
	}
	fmt.Printf("%6s %10s %9s\n", "method", "mean|gap|", "max z")
	for i, method := range ms {
		var sum, maxZ float64
		for n := range cols {
			var others, v float64
			count := 0
			for j := range ms {
				if _, prior := ms[j].(isnmf.IS); j != i && !prior {
					others += est[j*len(cols)+n][0]
					v += est[j*len(cols)+n][1] * est[j*len(cols)+n][1]
					count++
				}
			}
			others /= float64(count)
			gap := math.Abs(est[i*len(cols)+n][0] - others)
			se := math.Sqrt(est[i*len(cols)+n][1]*est[i*len(cols)+n][1] + v/float64(count*count))
			sum += gap
			maxZ = math.Max(maxZ, gap/se)
		}
		fmt.Printf("%6s %10.4f %9.2f\n", method.Name(), sum/float64(len(cols)), maxZ)
	}
	fmt.Println()
}

func classification(ms []isnmf.Method) {
	const K, N = 15, 10
	fmt.Printf("classification: two K = %d dictionaries differing in one column, %d columns from each; errors out of %d\n", K, N, 2*N)
	fmt.Printf("%6s %s\n", "method", "errors per dataset, mean ± sd")
	errs := make([][]int, len(ms))
	for rep := range *repeats {
		w1 := dictionary(10, K, uint64(200+rep))
		w2v := append([]float64(nil), w1.W...)
		r := rng.New(*seed, 4, uint64(rep))
		col := r.IntN(K)
		for f := range 10 {
			w2v[f*K+col] = r.ExpFloat64()
		}
		w2, _ := isnmf.New(10, K, w2v, 1, 1, false)
		dicts := []*isnmf.Model{w1, w2}
		var data [][]float64
		var truth []int
		for d, m := range dicts {
			for _, x := range m.Sample(rng.New(*seed, 5, uint64(rep), uint64(d)), N) {
				data, truth = append(data, x), append(truth, d)
			}
		}
		for i, method := range ms {
			wrong := 0
			for n, x := range data {
				l1, _, _ := estimate(method, w1, x, 300, uint64(rep), uint64(n), 0)
				l2, _, _ := estimate(method, w2, x, 300, uint64(rep), uint64(n), 1)
				if (l2 > l1) != (truth[n] == 1) {
					wrong++
				}
			}
			errs[i] = append(errs[i], wrong)
		}
	}
	for i, method := range ms {
		var s, s2 float64
		for _, e := range errs[i] {
			s += float64(e)
			s2 += float64(e * e)
		}
		n := float64(len(errs[i]))
		mean := s / n
		sd := math.Sqrt(math.Max(0, s2/n-mean*mean) * n / math.Max(1, n-1))
		fmt.Printf("%6s %v  %.1f ± %.1f\n", method.Name(), errs[i], mean, sd)
	}
	fmt.Println()
}

func rank() {
	const F, N, truth = 10, 8, 2
	fmt.Printf("rank selection under IS-NMF (w ~ Gamma(1, 1), h ~ IG(1, 1), real amplitudes), %d x %d data of rank %d: STI against full-model AIS (%d particles x %d stages, %d replicas)\n",
		F, N, truth, *particles, *fullStages, *replicas)
	spec := models.ISSpec(models.ISPrior{U: 0.5, WShape: 1, WRate: 1, HShape: 1, HScale: 1})
	info, err := models.Lookup(spec.Name)
	if err != nil {
		panic(err)
	}
	data, _, err := info.Generate.Draw(rng.New(*seed, 6), models.Truth{Model: spec.Name, Rank: truth, Shape: []int{F, N}}, spec.Params, spec.Dictionary)
	if err != nil {
		panic(err)
	}
	cols, err := isnmf.Columns(data, isnmf.Amplitudes, true)
	if err != nil {
		panic(err)
	}
	prob := estimators.STI{Model: spec, Config: sti.Default(spec.Name)}
	fmt.Printf("%4s %16s %16s %8s %10s %10s\n", "rank", "STI", "AIS", "gap/se", "STI CPU", "AIS CPU")
	for R := 1; R <= 4; R++ {
		start := cputime.Now()
		ev, err := estimators.RunRanks(context.Background(), prob, data, []int{R})
		if err != nil {
			panic(err)
		}
		stiCPU := cputime.Now() - start
		full := &isnmf.Full{F: F, N: N, R: R, X: cols, WShape: 1, WRate: 1, HShape: 1, HScale: 1}
		out := make([]float64, *replicas)
		start = cputime.Now()
		var wg sync.WaitGroup
		for i := range out {
			wg.Go(func() {
				out[i] = isnmf.FullAIS(full, isnmf.Budget{Particles: *particles, Stages: *fullStages}, rng.New(*seed, 7, uint64(R), uint64(i))).LogZ
			})
		}
		wg.Wait()
		aisCPU := cputime.Now() - start
		l, se := smc.Combine(out)
		e := ev[0]
		fmt.Printf("%4d %9.2f ± %4.2f %9.2f ± %4.2f %8.1f %10s %10s\n", R, e.LogEvidence, e.StdErr, l, se,
			(e.LogEvidence-l)/math.Hypot(e.StdErr, se), stiCPU.Round(time.Millisecond), aisCPU.Round(time.Millisecond))
	}
	fmt.Println()
}
