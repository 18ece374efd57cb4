package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models/isnmf"
	"github.com/stirank/stirank/pipelines"
	"github.com/stirank/stirank/report"
	"github.com/stirank/stirank/runners"
	"github.com/stirank/stirank/tensor"
	"github.com/stirank/stirank/transforms"
)

func init() {
	register(command{
		name:    "dictionary",
		summary: "score fixed dictionaries on data under Itakura–Saito NMF: log p(X | W) by AIS, SMC1 or SMC2 on Beam",
		run:     runDictionary,
	})
}

var dictionarySynopsis = `--data DIR (--dict [NAME=]DIR ... | --nid) [--values real|power] [--method ` + strings.Join(isnmf.MethodNames(), "|") + `] --out OUTDIR [flags] [Beam runner flags]`

const dictionaryHelp = `Scores dictionaries W (F x K, non-negative; cells not stored are 0) on an F x N data matrix X
under the multiplicative exponential noise model of NMF with the Itakura-Saito divergence:
x_fn ~ N(0, sum_k w_fk h_kn) with h_kn ~ IG(a, b), for real amplitudes (--values real), for the
powers |x|^2 of complex values such as a power spectrogram (--values power), or for complex
values themselves, such as a short-time Fourier transform (a dataset of value kind complex, from
a CSV with header i,j,re,im: they always enter as complex, the circular complex model on |x|^2,
and the evidence is their density, that of their powers less F log(pi) per column). For every dictionary
it estimates log p(X | W) = sum_n log p(x_n | W), each column by independent runs of annealed
importance sampling or of the SMC samplers of Dikmen & Cemgil (SMC1: columns moved out of one
collapsed column; SMC2: columns and features brought in one at a time), and writes OUTDIR/
evidence.json and evidence.csv with the evidence of every dictionary and column, the posterior
probabilities of the dictionaries and the best one. One Beam element per (dictionary, column,
replica). --classify prints, for every column, the dictionary that explains it best.

--nid searches the nonnegative interpolative decomposition (Dikmen & Cemgil section 4.2) of
non-negative data: which columns of X, taken as the dictionary, best explain the others. The
score of a subset r is log p(X(:, r)) + log p(X(:, not r) | W = X(:, r)) with W ~ Gamma(--w-shape,
--w-rate); all 2^N - 1 subsets up to N = 12 columns, greedy forward selection beyond.`

func runDictionary(ctx context.Context, args []string, stdout io.Writer) error {
	runners.ResetFlags()
	defer runners.ResetFlags()
	var (
		data, out, method, values string
		dicts                     multiFlag
		a, b, wShape, wRate       float64
		particles, stages         int
		cess                      float64
		replicas, workers         int
		seed                      uint64
		classify, nid, verbose    bool
		noReport                  bool
	)
	fs := newFlagSet("dictionary", dictionarySynopsis)
	fs.StringVar(&data, "data", "", "data matrix (features x columns): a dataset directory or URL")
	fs.Var(&dicts, "dict", "a dictionary to score (features x K), as [NAME=]DIR; repeat for several")
	fs.StringVar(&values, "values", string(isnmf.Amplitudes), "how the values of a real or count dataset enter: real (amplitudes x) or power (|x|^2 of complex values); complex data enter as complex values")
	fs.StringVar(&method, "method", isnmf.AIS{}.Name(), "estimator: "+strings.Join(isnmf.MethodNames(), ", ")+" ("+isnmf.IS{}.Name()+": plain importance sampling from the prior, the baseline; it fails where the posterior of h is concentrated in many directions)")
	fs.Float64Var(&a, "a", 1, "shape of the inverse-gamma prior of every excitation h_kn")
	fs.Float64Var(&b, "b", 1, "scale of the inverse-gamma prior of every excitation h_kn")
	fs.IntVar(&particles, "particles", 100, "particles per run")
	fs.IntVar(&stages, "stages", 1000, "intermediate targets per run: temperatures for ais; for smc1 and smc2 the fewest steps, spread evenly over the path, to which --cess adds (at most 20 times as many)")
	fs.Float64Var(&cess, "cess", 0, fmt.Sprintf("smc1 and smc2: add stages where a step would leave the conditional effective sample size, as a fraction of the particles, below this (default %g; 0: the even schedule alone)", isnmf.DefaultCESS))
	fs.IntVar(&replicas, "replicas", 4, "independent runs per (dictionary, column); the estimate is the log of their mean")
	fs.Uint64Var(&seed, "seed", 1, "random seed; every run's stream derives from it and its (dictionary, column, replica)")
	fs.IntVar(&workers, "workers", 0, "runs at once per worker process (default: one per core)")
	fs.BoolVar(&classify, "classify", false, "print, for every column, the dictionary with the highest evidence")
	fs.BoolVar(&nid, "nid", false, "search the nonnegative interpolative decomposition of the data (needs --values power; no --dict)")
	fs.Float64Var(&wShape, "w-shape", 1, "with --nid: shape of the Gamma prior of the dictionary entries")
	fs.Float64Var(&wRate, "w-rate", 1, "with --nid: rate of the Gamma prior of the dictionary entries")
	fs.StringVar(&out, "out", "", "output directory for evidence.json and evidence.csv (must not exist, or be empty)")
	fs.BoolVar(&verbose, "verbose", false, "show Beam's and prism's logs on stderr")
	addNoReport(fs, &noReport)
	h := helps[fs]
	h.about = dictionaryHelp
	h.user = []userFlag{{"data", "DIR", ""}, {"dict", "[NAME=]DIR", ""}, {"values", "real|power", ""}, {"method", "NAME", ""},
		{"classify", "", ""}, {"nid", "", ""}, {"seed", "N", ""}, {"out", "DIR", ""}}
	h.groups = []flagGroup{
		{"the estimator", []string{"particles", "stages", "cess", "replicas"}},
		{"the priors", []string{"a", "b", "w-shape", "w-rate"}},
		{"running and output", []string{"workers", "verbose", "no-report"}},
	}
	h.beam = runners.AddFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case data == "":
		return usagef("--data is required")
	case out == "":
		return usagef("--out is required")
	case nid && len(dicts) > 0:
		return usagef("--nid takes its dictionaries from the data's columns; give no --dict")
	case !nid && len(dicts) == 0:
		return usagef("give at least one --dict (or --nid)")
	case nid && values != string(isnmf.Powers):
		return usagef("--nid needs --values power: the selected columns are the dictionary, so the data must be non-negative powers")
	case replicas < 1:
		return usagef("--replicas %d must be at least 1", replicas)
	case workers < 0:
		return usagef("--workers %d must not be negative", workers)
	case !(wShape > 0 && wRate > 0) || math.IsInf(wShape, 0) || math.IsInf(wRate, 0):
		return usagef("--w-shape %v and --w-rate %v must be positive and finite", wShape, wRate)
	}
	if err := runners.Check(); err != nil {
		return usageError{err}
	}
	if err := pipelines.CheckOutDir(ctx, out); err != nil {
		return usageError{err}
	}
	if _, err := isnmf.ParseValues(values); err != nil {
		return usageError{err}
	}
	estimator, err := isnmf.NewMethod(method, isnmf.Budget{Particles: particles, Stages: stages, CESS: cess})
	if err != nil {
		return usageError{err}
	}
	cessSet := false
	fs.Visit(func(f *flag.Flag) { cessSet = cessSet || f.Name == "cess" })
	switch {
	case cess > 0 && !isnmf.ChoosesStages(estimator):
		return usagef("--cess is for smc1 and smc2; %s runs its --stages", method)
	case !cessSet && isnmf.ChoosesStages(estimator):
		cess = isnmf.DefaultCESS
	}
	src, info, m, _, err := openData(ctx, &selectFlags{data: data}, false)
	if err != nil {
		return err
	}
	// The value kind decides how complex data enter, so --values is for real and count data.
	valuesSet := false
	fs.Visit(func(fl *flag.Flag) { valuesSet = valuesSet || fl.Name == "values" })
	switch {
	case m.Kind == tensorio.Complex && nid:
		return usagef("--nid takes its dictionary from the data's columns, which must be powers: %s holds complex values; import their powers |x|^2 as a real dataset and pass --values power", data)
	case m.Kind == tensorio.Complex && valuesSet && values != string(isnmf.Complex):
		return usagef("--values %s: %s holds complex values, which enter as complex values (give no --values)", values, data)
	case m.Kind == tensorio.Complex:
		values = string(isnmf.Complex)
	case values == string(isnmf.Complex):
		return usagef("--values complex: %s holds %s values; complex values come from a dataset of value kind complex", data, m.Kind)
	}
	x, _, err := src.Load(ctx, tensorio.ReadOptions{Complex: m.Kind == tensorio.Complex})
	if err != nil {
		return err
	}
	if len(info.Shape) != 2 {
		return fmt.Errorf("%s: a %d-way array; IS-NMF scores a matrix (features x columns)", data, len(info.Shape))
	}
	work := transforms.DictionaryWork{Data: src, Values: values, Complete: m.Kind != tensorio.Count, Method: method,
		Particles: particles, Stages: stages, CESS: cess, Replicas: replicas, A: a, B: b, Seed: seed}
	cols, err := isnmf.Columns(x, isnmf.Values(values), work.Complete)
	if err != nil {
		return fmt.Errorf("%s: %w", data, err)
	}
	meta := pipelines.DictionaryMeta{Data: info, Command: commandLine("dictionary", args), Version: version()}
	if nid {
		if err := runNID(ctx, stdout, work, meta, x, cols, out, workers, wShape, wRate, verbose); err != nil {
			return err
		}
		return dictionaryReport(ctx, out, noReport)
	}
	all := make([]int, len(cols))
	for n := range all {
		all[n] = n
	}
	for _, d := range dicts {
		name, dir, ok := strings.Cut(d, "=")
		if !ok {
			name, dir = filepath.Base(filepath.Clean(d)), d
		}
		dsrc, dinfo, _, _, err := openData(ctx, &selectFlags{data: dir}, false)
		if err != nil {
			return err
		}
		work.Dicts = append(work.Dicts, transforms.Dictionary{Name: name, Source: dsrc, Columns: all})
		k := 0
		if len(dinfo.Shape) == 2 {
			k = dinfo.Shape[1]
		}
		meta.Dicts = append(meta.Dicts, pipelines.DictionaryInfo{Source: dinfo.Source, Checksum: dinfo.Checksum, K: k})
	}
	r, err := scoreDictionaries(ctx, stdout, work, meta, out, workers, verbose)
	if err != nil {
		return err
	}
	schedule := fmt.Sprintf("%d stages", stages)
	if cess > 0 {
		schedule = fmt.Sprintf("%d stages or more (conditional ESS %g; %.0f on average)", stages, cess, meanStages(r))
	}
	fmt.Fprintf(stdout, "%s on %s (%s, %s values), %d dictionaries, %d replicas of %d particles x %s\n",
		method, data, formatShape(info.Shape), values, len(work.Dicts), replicas, particles, schedule)
	fmt.Fprint(stdout, r.Table())
	if classify {
		fmt.Fprint(stdout, r.Classify())
	}
	return dictionaryReport(ctx, out, noReport)
}

// meanStages is the mean number of stages of the runs of a result.
func meanStages(r pipelines.DictionaryResult) float64 {
	var sum, n float64
	for _, d := range r.Dictionaries {
		for _, c := range d.Columns {
			for _, s := range c.Stages {
				sum += float64(s)
				n++
			}
		}
	}
	return sum / n
}

// dictionaryReport writes the report of the result in out, unless noReport; a failure removes
// out, which the run created.
func dictionaryReport(ctx context.Context, out string, noReport bool) error {
	if noReport {
		return nil
	}
	r, err := pipelines.ReadDictionaryResult(ctx, out)
	if err == nil {
		err = writeReport(out, report.Dictionary(r))
	}
	if err != nil {
		removeOutDir(out)
	}
	return err
}

// multiFlag collects a repeated string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// scoreDictionaries checks the work on this machine — every dictionary read and checked, so bad
// input fails before any output — then runs the pipeline and reads the result back.
func scoreDictionaries(ctx context.Context, stdout io.Writer, work transforms.DictionaryWork, meta pipelines.DictionaryMeta,
	out string, workers int, verbose bool) (pipelines.DictionaryResult, error) {
	if _, err := work.Load(ctx); err != nil {
		return pipelines.DictionaryResult{}, err
	}
	p, err := pipelines.NewDictionary(pipelines.DictionaryOptions{Work: work, OutDir: out, Workers: workers, Meta: meta})
	if err != nil {
		return pipelines.DictionaryResult{}, err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	existed := dirExists(out)
	res, err := runners.Run(ctx, p, runners.Logging{Verbose: verbose})
	if err != nil {
		if !existed {
			removeOutDir(out)
		}
		return pipelines.DictionaryResult{}, fmt.Errorf("pipeline failed: %s", pipelineError(err))
	}
	printWorkerReads(stdout, res)
	r, err := pipelines.ReadDictionaryResult(ctx, out)
	if err != nil {
		if !existed {
			removeOutDir(out)
		}
		return r, fmt.Errorf("reading the results back: %w", err)
	}
	return r, nil
}

// nidExhaustive is the largest number of columns whose every subset the NID search scores.
const nidExhaustive = 12

// runNID scores column subsets of x as dictionaries of the other columns: every subset for up to
// nidExhaustive columns, else greedy forward selection (add the column that raises the score
// most, while one does), each round a pipeline of its own.
func runNID(ctx context.Context, stdout io.Writer, work transforms.DictionaryWork, meta pipelines.DictionaryMeta,
	x *tensor.Sparse, cols [][]float64, out string, workers int, shape, rate float64, verbose bool) error {
	N := len(cols)
	if N < 2 {
		return fmt.Errorf("%s: --nid needs at least 2 columns, the data have %d", meta.Data.Source, N)
	}
	subsetWork := func(subsets [][]int) (transforms.DictionaryWork, pipelines.DictionaryMeta, error) {
		w, m := work, meta
		w.Dicts, m.Dicts = nil, nil
		for _, r := range subsets {
			d, info, err := nidDictionary(x, cols, r, shape, rate)
			if err != nil {
				return w, m, err
			}
			w.Dicts, m.Dicts = append(w.Dicts, d), append(m.Dicts, info)
		}
		return w, m, nil
	}
	if N <= nidExhaustive {
		var subsets [][]int
		for mask := 1; mask < 1<<N; mask++ {
			var r []int
			for n := range N {
				if mask&(1<<n) != 0 {
					r = append(r, n)
				}
			}
			subsets = append(subsets, r)
		}
		w, m, err := subsetWork(subsets)
		if err != nil {
			return err
		}
		r, err := scoreDictionaries(ctx, stdout, w, m, out, workers, verbose)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "nonnegative ID of %s (%d columns): all %d subsets by %s\nbest subset: %s (log score %.2f)\n",
			meta.Data.Source, N, len(subsets), work.Method, r.Best, bestScore(r))
		return nil
	}
	var (
		chosen []int
		best   pipelines.DictionaryResult
	)
	bestSoFar := math.Inf(-1)
	round := 0
	for len(chosen) < N {
		var subsets [][]int
		for n := range N {
			if !containsInt(chosen, n) {
				subsets = append(subsets, append(append([]int(nil), chosen...), n))
			}
		}
		w, m, err := subsetWork(subsets)
		if err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "stirank-nid-")
		if err != nil {
			return err
		}
		os.Remove(dir)
		r, err := scoreDictionaries(ctx, stdout, w, m, dir, workers, verbose)
		os.RemoveAll(dir)
		if err != nil {
			return err
		}
		round++
		score := bestScore(r)
		fmt.Fprintf(stdout, "round %d: best %s (log score %.2f)\n", round, r.Best, score)
		if score <= bestSoFar {
			break
		}
		bestSoFar, best = score, r
		for d, ds := range r.Dictionaries {
			if ds.Name == r.Best {
				chosen = subsets[d]
			}
		}
	}
	// The result written is the round that chose the subset: every candidate it weighed.
	if err := pipelines.WriteDictionaryResult(ctx, out, best); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "nonnegative ID of %s (%d columns), greedy forward selection by %s\nbest subset: %s (log score %.2f)\n",
		meta.Data.Source, N, work.Method, nidName(chosen), bestSoFar)
	return nil
}

// nidDictionary is the dictionary of subset r: the selected columns (as an inline matrix), scoring
// the others, with log p(W) under the Gamma prior.
func nidDictionary(x *tensor.Sparse, cols [][]float64, r []int, shape, rate float64) (transforms.Dictionary, pipelines.DictionaryInfo, error) {
	F := x.Shape[0]
	w, err := tensor.New([]int{F, len(r)}, F*len(r))
	if err != nil {
		return transforms.Dictionary{}, pipelines.DictionaryInfo{}, err
	}
	lg, _ := math.Lgamma(shape)
	var logPrior float64
	for k, n := range r {
		for f := range F {
			v := cols[n][f]
			w.Append([]int{f, k}, v)
			logPrior += shape*math.Log(rate) - lg + (shape-1)*math.Log(v) - rate*v
		}
	}
	if math.IsNaN(logPrior) || math.IsInf(logPrior, 0) {
		return transforms.Dictionary{}, pipelines.DictionaryInfo{}, fmt.Errorf("--nid: column %v has a zero entry, which a Gamma(%v, %v) prior on the dictionary gives density %v; use --w-shape 1", r, shape, rate, logPrior)
	}
	var others []int
	for n := range cols {
		if !containsInt(r, n) {
			others = append(others, n)
		}
	}
	src := transforms.Source{Inline: w}
	src.Checksum = transforms.InlineChecksum(w)
	return transforms.Dictionary{Name: nidName(r), Source: src, Columns: others},
		pipelines.DictionaryInfo{Source: "columns of the data", Checksum: src.Checksum, K: len(r), LogPrior: logPrior}, nil
}

func nidName(r []int) string {
	parts := make([]string, len(r))
	for i, n := range r {
		parts[i] = strconv.Itoa(n)
	}
	return "columns:" + strings.Join(parts, "+")
}

func bestScore(r pipelines.DictionaryResult) float64 {
	for _, d := range r.Dictionaries {
		if d.Name == r.Best {
			return float64(d.LogEvidence)
		}
	}
	return math.NaN()
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
