package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	core "github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/pipelines"
	"github.com/stirank/stirank/runners"
	"github.com/stirank/stirank/testdata"
	"github.com/stirank/stirank/transforms"
)

func init() {
	register(command{
		name:    core.MethodChib,
		summary: "baseline: estimate log p(X | R) for every candidate rank by Chib's method (Gibbs) on Beam",
		run:     runChib,
	})
}

// baselineFlags are the flags stirank chib and stirank ais share with stirank select.
type baselineFlags struct {
	data, model, ranks, out string
	// dict is the fixed dictionary of a model that takes one.
	dict string
	// supported are the models the command estimates.
	supported         []*models.Info
	seed              uint64
	replicas, workers int
	verbose, noReport bool
	// hypers are the flags of the models' prior hyper-parameters.
	hypers *modelFlags
}

// baselineSynopsis is the usage line of a baseline command that estimates the supported models.
func baselineSynopsis(supported []*models.Info) string {
	return `[--data DIR] [--model ` + strings.Join(models.NamesOf(supported), "|") + `] [--ranks 1-10] --out OUTDIR [flags] [Beam runner flags]`
}

// baselineModels opens the help of chib and ais: the models they estimate, named as the registry
// names them.
func baselineModels() string {
	return "Estimates log p(X | R) of every candidate rank R of Poisson " + models.Or(models.NamesOf(core.Models())) +
		" with exponential priors (or\nof the free block of " + models.Or(models.NamesOf(core.FixedModels())) + ", beside the fixed dictionary of --dict) by"
}

// addBaselineFlags adds the shared flags; replicas is the default number of replicas per rank.
// f.supported must be set.
func addBaselineFlags(fs *flag.FlagSet, f *baselineFlags, replicas int, replicaHelp string) {
	fs.StringVar(&f.data, "data", "", "dataset directory or URL (gs://…), or embedded:NAME for a dataset compiled in ("+strings.Join(testdata.Names, ", ")+"); default: embedded:"+testdata.Default)
	fs.StringVar(&f.model, "model", "", modelHelp(f.supported))
	fs.StringVar(&f.dict, "dict", "", dictHelp()+"; held fixed, its activations sampled with the free factors")
	fs.StringVar(&f.ranks, "ranks", "1-10", "candidate ranks: 1-10, 1,3,5 or 2-4,8")
	fs.StringVar(&f.out, "out", "", "output directory for evidence.json, evidence.csv, timing.json and the report (must not exist, or be empty)")
	f.hypers = addModelFlags(fs, f.supported, (*models.Info).PriorHypers)
	fs.Uint64Var(&f.seed, "seed", 1, "random seed; every replica's stream derives from it and the replica's (rank, index)")
	fs.IntVar(&f.replicas, "replicas", replicas, replicaHelp)
	fs.IntVar(&f.workers, "workers", 0, "replicas run at once per worker process (default: one per core)")
	fs.BoolVar(&f.verbose, "verbose", false, "show Beam's and prism's logs on stderr")
	addNoReport(fs, &f.noReport)
}

// baselineCommand parses the command line of a baseline command and runs its pipeline with the
// estimator registered under the command's name. configure returns the estimator's configuration
// from the flags that were set.
func baselineCommand(ctx context.Context, name, help string, args []string, stdout io.Writer,
	fs *flag.FlagSet, f *baselineFlags, configure func(set map[string]bool) (any, error)) error {
	runners.ResetFlags()
	defer runners.ResetFlags()
	h := helps[fs]
	h.about = help
	h.user = []userFlag{{"data", "DIR", selectUser[0].brief}, {"model", "NAME", ""}, {"ranks", "LIST", ""}, rateUser,
		{"replicas", "N", ""}, {"seed", "N", ""}, {"out", "DIR", ""}}
	var priors, own []string
	running := []string{"workers", "verbose", "no-report"}
	fs.VisitAll(func(fl *flag.Flag) {
		switch {
		case slices.ContainsFunc(h.user, func(u userFlag) bool { return u.name == fl.Name }) || slices.Contains(running, fl.Name):
		case f.hypers.owners[fl.Name] != nil:
			priors = append(priors, fl.Name)
		default:
			own = append(own, fl.Name)
		}
	})
	h.groups = []flagGroup{{name + "'s own", own}, {"the models' priors", priors}, {"running and output", running}}
	h.beam = runners.AddFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ranks, set, err := checkRunArgs(ctx, fs, f.out, f.data, f.ranks)
	if err != nil {
		return err
	}
	if f.replicas < 1 {
		return usagef("--replicas %d must be at least 1", f.replicas)
	}
	if f.workers < 0 {
		return usagef("--workers %d must not be negative", f.workers)
	}
	local := runners.IsLocal()
	src, meta, _, data, err := openData(ctx, &selectFlags{data: f.data}, local || !tensorio.IsURL(f.data))
	if err != nil {
		return err
	}
	order := len(meta.Shape)
	supported := models.NamesOf(f.supported)
	info, err := lookupModel(f.model, src.String(), order)
	switch {
	case f.model == "" && (err != nil || !slices.Contains(f.supported, info)):
		return fmt.Errorf("%s: a %d-way tensor fits none of the models %s supports (%s)", src, order, name, strings.Join(supported, ", "))
	case err != nil:
		return err
	case !slices.Contains(f.supported, info):
		return usagef("--model %q: %s supports %s", f.model, name, models.And(supported))
	case info.Order != order:
		return fmt.Errorf("model %s needs a %d-way tensor; %s is %d-way", info.Name, info.Order, src, order)
	}
	if err := checkModelRanks(info, f.ranks); err != nil {
		return err
	}
	if err := checkRunMemory(src.String(), meta.Shape, int64(meta.Cells), ranks, len(ranks)*f.replicas, f.workers, 1); err != nil {
		return err
	}
	prior, err := f.hypers.params(info, set)
	if err != nil {
		return err
	}
	config, err := configure(set)
	if err != nil {
		return err
	}
	es, err := estimators.NewSpec(name, config)
	if err != nil {
		return err
	}
	spec, err := withDictionary(ctx, models.Spec{Name: info.Name, Params: prior}, f.dict, meta.Shape)
	if err != nil {
		return err
	}
	work := transforms.Work{Source: src, Model: spec, Estimator: es}
	est, err := work.New()
	if err != nil {
		return usageError{err}
	}
	if data != nil {
		p, err := est.Prepare(data)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		if local {
			transforms.Preload(work, p)
		}
	}
	o := pipelines.Options{Work: work, Ranks: ranks, OutDir: f.out, Workers: f.workers, Meta: pipelines.Meta{Data: meta, Command: commandLine(name, args), Version: version()}}
	p, err := pipelines.New(o)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	existed := dirExists(f.out)
	res, err := runners.Run(ctx, p, runners.Logging{Verbose: f.verbose})
	if err != nil {
		if !existed {
			removeOutDir(f.out)
		}
		return fmt.Errorf("pipeline failed: %s", pipelineError(err))
	}
	if res.DryRun() {
		fmt.Fprintln(stdout, res.Job)
		return nil
	}
	printWorkerReads(stdout, res)
	r, err := pipelines.ReadResult(ctx, f.out)
	if err != nil {
		if !existed {
			removeOutDir(f.out)
		}
		return fmt.Errorf("reading the results back: %w", err)
	}
	if !f.noReport {
		rep, err := evidenceReport(f.out, r, nil)
		if err == nil {
			err = writeReport(f.out, rep)
		}
		if err != nil {
			if !existed {
				removeOutDir(f.out)
			}
			return err
		}
	}
	fmt.Fprintf(stdout, "%s, %s on %s (%s), ranks %s, %d replicas, %d sweeps\n", name, r.Model, meta.Source, formatShape(meta.Shape), f.ranks, f.replicas, r.Steps)
	fmt.Fprint(stdout, r.Table())
	return nil
}

type chibFlags struct {
	burnin, samples, reducedBurnin, reducedSamples, blockSize, starts, startSweeps, maxPerm, maxExtend int
	targetSE                                                                                           float64
	paper                                                                                              bool
}

func runChib(ctx context.Context, args []string, stdout io.Writer) error {
	d := core.DefaultChib()
	f := &baselineFlags{supported: estimators.ChibAISModels()}
	c := &chibFlags{}
	fs := newFlagSet(core.MethodChib, baselineSynopsis(f.supported))
	addBaselineFlags(fs, f, 2, "independent Chib replicas per rank (the standard error is the larger of their spread and their batch means)")
	fs.IntVar(&c.burnin, "burnin", d.Burnin, "Gibbs sweeps of burn-in; θ* is the best of its second half, moved to the log-posterior mode")
	fs.IntVar(&c.samples, "samples", d.Samples, "sweeps of the full run (first block's ordinate)")
	fs.IntVar(&c.reducedBurnin, "reduced-burnin", d.ReducedBurnin, "burn-in sweeps of every reduced run")
	fs.IntVar(&c.reducedSamples, "reduced-samples", d.ReducedSamples, "sweeps of every reduced run")
	fs.IntVar(&c.blockSize, "block-size", d.BlockSize, "factor entries per ordinate block (whole rows, at least one); one reduced run per block")
	fs.IntVar(&c.starts, "starts", d.Starts, "prior draws competing for the start of burn-in")
	fs.IntVar(&c.startSweeps, "start-sweeps", d.StartSweeps, "sweeps each start runs")
	fs.Float64Var(&c.targetSE, "target-se", d.TargetSE, "a block whose log ordinate has a larger standard error gets its sweeps again, up to --max-extend times")
	fs.IntVar(&c.maxExtend, "max-extend", d.MaxExtend, "most sweeps of a block, in multiples of its own (1: never extend)")
	fs.IntVar(&c.maxPerm, "max-perm-rank", d.MaxPermRank, "largest rank whose ordinates are symmetrised exactly over the R! relabelings (cost 2^R·R per sweep)")
	fs.BoolVar(&c.paper, "paper", false, "the ICASSP 2016 recipe instead of the defaults: two whole-factor blocks, 7000 burn-in + 2000 sweeps, 5000 reduced (biased beyond toy sizes; for comparison)")
	help := baselineModels() + ` Chib's method on a Gibbs sampler of the augmented model (latent per-component counts, Gamma full
conditionals), as a baseline for stirank select: the same data, rank and output conventions
(evidence.json, evidence.csv), one Beam element per (rank, replica). The posterior ordinate is
taken block by block (about --block-size entries per block, one reduced Gibbs run each),
Rao-Blackwellised, and symmetrised exactly over the R! relabelings of the components. A replica
costs one Gibbs run per block: about (rows of the smaller factor) x R / --block-size runs of
--reduced-burnin + --reduced-samples sweeps, more for blocks extended to reach a small error.
Under --rate auto (nmf, cp) the rates are one more block: Chib's method at rates where their
posterior is dense, and their ordinate averaged over a Gibbs run under the hyperprior
(docs/prior.md).`
	return baselineCommand(ctx, core.MethodChib, help, args, stdout, fs, f, func(set map[string]bool) (any, error) {
		cfg := d
		if c.paper {
			cfg = core.PaperChib()
			for _, n := range []string{"burnin", "samples", "reduced-burnin", "reduced-samples", "block-size", "starts", "start-sweeps", "target-se", "max-extend"} {
				if set[n] {
					return nil, usagef("--%s does not combine with --paper", n)
				}
			}
		} else {
			cfg.Burnin, cfg.Samples, cfg.ReducedBurnin, cfg.ReducedSamples = c.burnin, c.samples, c.reducedBurnin, c.reducedSamples
			cfg.BlockSize, cfg.Starts, cfg.StartSweeps = c.blockSize, c.starts, c.startSweeps
			cfg.TargetSE, cfg.MaxExtend = c.targetSE, c.maxExtend
		}
		cfg.MaxPermRank = c.maxPerm
		cfg.Seed = f.seed
		return estimators.ChibConfig{Replicas: f.replicas, ChibConfig: cfg}, nil
	})
}
