package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/memlimit"
	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/pipelines"
	"github.com/stirank/stirank/runners"
	"github.com/stirank/stirank/samplers"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/tensor"
	"github.com/stirank/stirank/testdata"
	"github.com/stirank/stirank/transforms"
)

func init() {
	// The workers of a pipeline are this binary: they find the embedded datasets where the
	// launcher does.
	transforms.RegisterEmbedded(testdata.FS)
}

func init() {
	register(command{
		name:    "select",
		summary: "estimate log p(X | R) for every candidate rank by STI on Beam and pick the rank",
		run:     runSelect,
	})
}

// defaultLadder is the --ladder of sti.Default's ladder.
var defaultLadder = fmt.Sprintf("power:%g", float64(evidence.DefaultPower))

// gibbsSampler is the --sampler that runs the chains on the model's data-augmentation kernel
// (sti.Config.Gibbs); the SG-MCMC sampler then serves the mode search.
const gibbsSampler = "gibbs"

// gibbsModels lists the models with a Gibbs kernel.
func gibbsModels() string {
	var names []string
	for _, info := range models.All() {
		if info.Gibbs {
			names = append(names, info.Name)
		}
	}
	return strings.Join(names, ", ")
}

// fittedLadderModels lists the models whose default ladder is fitted to the data (sti.Config.FitLadder):
// Poisson CP with exponential priors, whose rank-1 evidence is exact, the baselines' models.
func fittedLadderModels() string {
	var names []string
	for _, info := range estimators.BaselineModels() {
		names = append(names, info.Name)
	}
	return strings.Join(names, ", ")
}

// allocatedModels lists the models whose chains' records --allocate shares among the rungs: those
// with the exact rank-1 curve (fittedLadderModels) and those with their own (Info.PowerVariance).
func allocatedModels() string {
	var names []string
	for _, info := range models.All() {
		if info.ExpPoissonRates != nil || info.PowerVariance != nil {
			names = append(names, info.Name)
		}
	}
	return strings.Join(names, ", ")
}

// embeddedPrefix selects an embedded dataset with --data.
const embeddedPrefix = "embedded:"

// maxRank bounds the ranks --ranks accepts.
const maxRank = 10000

var selectSynopsis = `[--data DIR] [--model ` + strings.Join(models.Names(), "|") + `] [--ranks 1-10] --out OUTDIR [flags] [Beam runner flags]`

// selectDetails is what select -h -all adds to its description: the defaults, sti.Default's.
func selectDetails() string {
	start := func(c sti.Config) string {
		if c.Start == sti.PriorStart {
			return ""
		}
		em := ""
		if c.StartEM > 0 {
			em = fmt.Sprintf(" and %d EM sweeps", c.StartEM)
		}
		return fmt.Sprintf(",\n          every chain of a rank starts from the best of %d prior draws carried %d ascent steps%s (one search per rank)", c.Starts, c.StartSteps, em)
	}
	sub := func(c sti.Config) string {
		if c.Subsample > 0 {
			return fmt.Sprintf("a random subsample of %d cells per step", c.Subsample)
		}
		return "all cells every step"
	}
	groups := configGroups()
	c := groups[0].cfg
	var perModel strings.Builder
	for _, g := range groups {
		if g.cfg.Gibbs {
			truncate := ""
			if g.cfg.Runs(sti.TruncateName) {
				truncate = ",\n          records of a start's transient (MSER-5, at most half) dropped"
			}
			descent := ""
			if g.cfg.Start == sti.DescentStart {
				descent = fmt.Sprintf(",\n          carried by its replica's walk, %d sweeps at t = 1 (--relax) then %d per rung down the ladder, to its own rung (--descent)", g.cfg.Relax, g.cfg.Descent)
			}
			if g.cfg.Runs(sti.SteinName) {
				descent += ",\n          each record at " + steinRanks(g.cfg) + " with Stein control variates about the mode (--stein)"
				if g.cfg.Rank1 != nil {
					descent += " and, at rank 1, the conditional\n          expectations of the log-likelihood given all factors but one"
				}
			}
			if b := g.cfg.Rank1; b != nil {
				descent += fmt.Sprintf(",\n          rank 1, whose rows are drawn from their exact conditional, on %d temperatures with %d sweeps\n          of which %d burn-in and %d per rung of descent (unless a ladder or a chain length is given)", b.Rungs, b.Steps, b.Burnin, b.Descent)
			}
			fmt.Fprintf(&perModel, "\n  %-7s %d sweeps of the %s kernel of which %d burn-in%s%s%s", g.label+":", g.cfg.Steps, gibbsSampler, g.cfg.Burnin, truncate, start(g.cfg), descent)
			continue
		}
		fmt.Fprintf(&perModel, "\n  %-7s %d %s steps of which %d burn-in, step %g, %s%s", g.label+":", g.cfg.Steps, g.cfg.Sampler, g.cfg.Burnin, g.cfg.Step, sub(g.cfg), start(g.cfg))
	}
	return fmt.Sprintf(`Defaults (sti.Default): a power ladder of %d temperatures above 0 with exponent %g (%s),
steepened up to %d for %s where the data's exact rank-1 curve needs it,
%d chains per temperature, SG-MCMC steps with control variates where a step reads a subsample;%s

Gibbs chains run in rounds that double their records; after each round a rank whose evidence
lies more than 3 combined standard errors below the leader's leaves the race, and the run stops
when one rank is left (its standard error refined to 0.5 nat where that is cheap) or the budget
(--budget) is spent, and says which ranks it could not tell apart. docs/method.md says why.`,
		len(c.Ladder)-1, float64(evidence.DefaultPower), defaultLadder, evidence.MaxFitPower, fittedLadderModels(), c.Chains,
		perModel.String())
}

// selectAbout is select's description under its synopsis.
func selectAbout() string {
	var list strings.Builder
	for _, info := range models.All() {
		fmt.Fprintf(&list, "\n  %-7s %d-way: %s", info.Name, info.Order, info.Summary)
	}
	return fmt.Sprintf(`Estimates log p(X | R) of every candidate rank R by Stochastic Thermodynamic Integration on Beam
(prism in this process by default), picks the rank and says how sure it is; writes
OUTDIR/evidence.json, evidence.csv and report.html. Without --data it runs on the embedded
default dataset (Poisson NMF, 30x20, true rank 3).

Models (--model):%s`, list.String())
}

// selectFlags are the command's own flags (the Beam flags are forwarded by the runners package).
type selectFlags struct {
	data, model, ranks, out, ladder, sampler, start        string
	samplerParams                                          map[string]float64
	temperatures, chains, steps, burnin, subsample, blocks int
	descent, relax, ascent                                 int
	anneal, reference, stein, allocate                     bool
	particles                                              int
	workers                                                int
	// budget is --budget: the multiple of the configured records a racing rank may reach.
	budget int
	// timeLimit is --time, the wall-clock time a race may take from started, when the flags
	// were read; 0 for no limit.
	timeLimit time.Duration
	started   time.Time
	// warmBurnin is reanalyze's --warm-burnin (sti.Config.WarmBurnin).
	warmBurnin     int
	seed           uint64
	step           float64
	quiet, verbose bool
	progressEvery  time.Duration
	// noReport is --no-report; command is the command line, recorded in evidence.json.
	noReport bool
	command  []string
	// hypers are the models' hyper-parameter flags.
	hypers *modelFlags
	// dict is --dict, the fixed dictionary of a model that takes one.
	dict string
}

// steinRanks spells out the ranks whose chains a configuration controls (the Stein post-processor,
// Config.SteinBelow).
func steinRanks(c sti.Config) string {
	switch {
	case !c.Runs(sti.SteinName):
		return "none"
	case c.SteinBelow > 0:
		return fmt.Sprintf("ranks below %d", c.SteinBelow)
	}
	return "every rank"
}

// selectUser are the flags of select a user sets, the ones -h lists.
var selectUser = []userFlag{
	{"data", "DIR", "your dataset (stirank import makes one from a CSV), a URL (gs://…) or embedded:NAME; default embedded:default"},
	{"model", "NAME", ""},
	{"ranks", "LIST", ""},
	rateUser,
	budgetUser,
	timeUser,
	chainsUser,
	{"seed", "N", "random seed: the same seed gives the same numbers on any runner"},
	{"out", "DIR", ""},
}

var (
	rateUser   = userFlag{"rate", "R", "prior of every factor of nmf, ssnmf, cp: auto, a hyperprior on the data's scale, or a fixed rate R, prior mean 1/R (README: Choosing the prior)"}
	budgetUser = userFlag{"budget", "N", "when the choice is not settled, a rank may run up to N times its records (a power of two)"}
	timeUser   = userFlag{"time", "D", fmt.Sprintf("size the first round to about a quarter of D (such as 10m or 1h30m), start no round that would not end within D and say which ranks are unresolved; a rank may then reach %d times its records unless --budget is given", timedBudget)}
	chainsUser = userFlag{"chains", "N", "replicas per rank and temperature, whose spread sets the error bars: more narrow a close choice's"}
)

// selectGroups groups the tuning flags of select (and reanalyze) by what they tune.
func selectGroups(hypers *modelFlags) []flagGroup {
	var priors []string
	for _, n := range slices.Sorted(maps.Keys(hypers.owners)) {
		if n != rateUser.name {
			priors = append(priors, n)
		}
	}
	return []flagGroup{
		{"the ladder of temperatures", []string{"temperatures", "ladder", "allocate", "anneal", "particles", "reference"}},
		{"the chains", []string{"start", "steps", "burnin", "warm-burnin", "sampler", "sampler-param", "step", "subsample", "blocks"}},
		{"the Gibbs chains' starts and checks (" + gibbsModels() + ")", []string{"relax", "descent", "ascent", "stein"}},
		{"the models' priors and inputs", append(priors, "dict")},
		{"running and output", []string{"out", "workers", "quiet", "progress-every", "verbose", "no-report", "exact", "state-url"}},
	}
}

// newSelectFlagSet returns the flags of select, for command name (select, or a command that
// runs a selection, such as reanalyze) with its synopsis, description (about; details with -all)
// and the flags a user sets; extra adds the command's own flags.
func newSelectFlagSet(name, synopsis, about, details string, user []userFlag, extra func(*flag.FlagSet)) (*flag.FlagSet, *selectFlags) {
	f := &selectFlags{}
	fs := newFlagSet(name, synopsis)
	p := configGroups()[0].cfg
	fs.StringVar(&f.data, "data", "", "dataset directory or URL (gs://…), or embedded:NAME for a dataset compiled in ("+strings.Join(testdata.Names, ", ")+"); default: embedded:"+testdata.Default)
	fs.StringVar(&f.model, "model", "", modelHelp(models.All()))
	fs.StringVar(&f.ranks, "ranks", "1-10", "candidate ranks: 1-10, 1,3,5 or 2-4,8 (from 0 for "+models.And(zeroRankNames())+")")
	fs.StringVar(&f.out, "out", "", "output directory for evidence.json, evidence.csv, timing.json and the report (must not exist, or be empty)")
	fs.IntVar(&f.temperatures, "temperatures", len(p.Ladder)-1, "number of temperatures above 0 on the ladder")
	fs.StringVar(&f.ladder, "ladder", defaultLadder, fmt.Sprintf("ladder: power:C (t_i = (i/T)^C), uniform, sigmoid:S (a logistic of −S..S rescaled to 0..1), path:S (sigmoid:S and up to 7 rungs toward 1 − 10⁻⁶, --reference's default with S = 6), or list:0,…,1 (ignores --temperatures); without it %s fit C to the data (%d to %d, see docs/method.md)", fittedLadderModels(), evidence.DefaultPower, evidence.MaxFitPower))
	fs.IntVar(&f.chains, "chains", p.Chains, "chains (replicas) per rank and temperature; with --anneal, annealed replicas per rank (default 3)")
	fs.BoolVar(&f.anneal, "anneal", false, "anneal a population per replica (adaptive-tempered SMC) for an adaptive ladder, chain starts and a second estimate, SMC's, flagged where the two disagree (docs/method.md: as accurate as the default ladder on small sets; on large data it costs several times more and can miss modes)")
	fs.BoolVar(&f.reference, "reference", false, fmt.Sprintf("integrate along the path from a reference fitted to the posterior instead of the power posteriors (%s): each of 4 replicas per rank fits its own to a Gibbs run at t = 1, then runs one chain per rung of a path:6 ladder of 27 temperatures (--steps and --burnin count its slice-sampling sweeps); replicas whose runs found basins of less mass are listed apart (docs/method.md: slower; on large informative matrices it avoids the phase change of the path from the prior))", models.Or(models.NamesOf(estimators.BaselineModels()))))
	fs.StringVar(&f.start, "start", "", fmt.Sprintf("start stage of every rank's chains: %s (%s: --anneal) (default: %s)", strings.Join(sti.StartNames(), ", "), sti.AnnealStart, perModelDefault(func(c sti.Config) any { return c.Start })))
	fs.IntVar(&f.particles, "particles", 0, fmt.Sprintf("particles per annealed replica (with --anneal; default: %s)",
		perModel(configGroupsOf(sti.DefaultAnnealed), func(c sti.Config) any { return c.Annealing.Particles })))
	fs.StringVar(&f.sampler, "sampler", "", "kernel of the chains: "+gibbsSampler+" (for "+gibbsModels()+": the model's exact data-augmentation Gibbs sampler; --steps and --burnin count its sweeps) or an SG-MCMC kernel: "+strings.Join(samplers.Names(), ", ")+" (their parameters are listed below) (default: "+
		perModelDefault(func(c sti.Config) any {
			if c.Gibbs {
				return gibbsSampler
			}
			return c.Sampler
		})+")")
	fs.Func("sampler-param", "parameters of the sampler as name=value, several separated by commas; repeatable (each sampler's parameters are listed below)", func(s string) error {
		kv, err := samplers.ParseParams(s)
		if f.samplerParams == nil {
			f.samplerParams = map[string]float64{}
		}
		maps.Copy(f.samplerParams, kv)
		return err
	})
	fs.IntVar(&f.steps, "steps", 0, fmt.Sprintf("steps per chain, burn-in included: sweeps for the %s kernel, and with --anneal passes over the data for %s (default: %s)", gibbsSampler, gibbsModels(), perModelDefault(func(c sti.Config) any { return c.Steps })))
	fs.IntVar(&f.burnin, "burnin", 0, fmt.Sprintf("burn-in steps per chain (default: %s; at most a fifth of --steps when only --steps is given)", perModelDefault(func(c sti.Config) any { return c.Burnin })))
	fs.IntVar(&f.descent, "descent", 0, fmt.Sprintf("%s: sweeps per rung of a walk down the ladder from the rank's mode, one per replica, that starts each rung's chain (0: every chain starts at the mode) (default: %s)", gibbsModels(), perModelDefault(func(c sti.Config) any { return c.Descent })))
	fs.IntVar(&f.relax, "relax", 0, fmt.Sprintf("%s: sweeps at t = 1 that each replica's walk makes from the rank's mode before it walks down the ladder (default: %s, scaled with --steps)", gibbsModels(), perModelDefault(func(c sti.Config) any { return c.Relax })))
	fs.IntVar(&f.ascent, "ascent", 0, fmt.Sprintf("%s: sweeps per rung of the phase check, a walk back up the ladder from t = 0.01 that flags a rank where f(t) changes phase and widens its stderr (0: no check) (default: %s)", gibbsModels(), perModelDefault(func(c sti.Config) any { return c.Ascent })))
	fs.BoolVar(&f.allocate, "allocate", true, allocatedModels()+": each rung's chains record in proportion to the standard deviation the rung adds to the integral, per unit of cost, on an exact curve (the rank-1 curve or the model's own), for no more cost and no more records in all (docs/method.md; --allocate=false: --steps minus --burnin at every rung)")
	fs.BoolVar(&f.stein, "stein", true, gibbsModels()+": the Gibbs chains' rung means are controlled by Stein variates about the rank's mode and, at rank 1, by the log-likelihood's conditional expectations given all factors but one, which keep their expectation and remove most of their variance (default: "+perModelDefault(func(c sti.Config) any { return steinRanks(c) })+"; above a matrix's lowest rank the variates bias the means where counts are large, see docs/method.md; a race drops them for a rank whose replicas' spread dwarfs its chains' own noise). --stein: at every rank; --stein=false: plain means at every rank")
	fs.Float64Var(&f.step, "step", 0, fmt.Sprintf("step size after burn-in (default: %s)", perModelDefault(func(c sti.Config) any { return c.Step })))
	fs.IntVar(&f.subsample, "subsample", 0, fmt.Sprintf("cells per step, drawn at random (default: %s; 0 is all cells)", perModelDefault(func(c sti.Config) any { return c.Subsample })))
	fs.IntVar(&f.blocks, "blocks", 0, strings.Join(factoredNames(), ", ")+": cut every mode into B ranges and step over B^(order−1) parts (B for a matrix, B² for a 3-way tensor) (default 1: all cells)")
	fs.Uint64Var(&f.seed, "seed", p.Seed, "random seed; every chain's streams derive from it and the chain's (rank, temperature, replica)")
	f.hypers = addModelFlags(fs, models.All(), func(info *models.Info) []models.Hyper { return info.Hypers })
	fs.StringVar(&f.dict, "dict", "", dictHelp())
	fs.IntVar(&f.workers, "workers", 0, "chains run at once per worker process (default: one per core)")
	fs.IntVar(&f.budget, "budget", 1, "Gibbs chains run in rounds that double their records until the choice of rank is settled: a rank may reach this many times the configured records (a power of two) before the run stops and says which ranks it could not tell apart")
	fs.DurationVar(&f.timeLimit, "time", 0, fmt.Sprintf("wall-clock time the race may take from the start: its first round (the start stage and the first records) is sized to take about a quarter of it on 2 cores, and it starts no later round that it does not expect to end in time, then says which ranks it could not tell apart; without --budget, a rank may reach %d times its configured records within it", timedBudget))
	f.started = time.Now()
	fs.BoolVar(&f.quiet, "quiet", false, "no progress on stderr")
	fs.DurationVar(&f.progressEvery, "progress-every", 30*time.Second, "interval between progress lines when stderr is not a terminal (a log file, a pipe)")
	fs.BoolVar(&f.verbose, "verbose", false, "show Beam's and prism's logs on stderr")
	addNoReport(fs, &f.noReport)
	if extra != nil {
		extra(fs)
	}
	h := helps[fs]
	h.about, h.details, h.user, h.groups = about, details, user, selectGroups(f.hypers)
	h.appendix = func() string {
		var presets strings.Builder
		if err := sti.WritePresets(&presets); err != nil {
			panic(err)
		}
		return "samplers (--sampler NAME --sampler-param name=value,…):\n" + samplerList() +
			"\ndefaults (sti/presets.json: each preset, the settings it changes from the one it comes from, and why):\n" + presets.String()
	}
	h.beam = runners.AddFlags(fs)
	return fs, f
}

// samplerList describes every registered kernel and its parameters, for the usage text.
func samplerList() string {
	var b strings.Builder
	for _, name := range samplers.Names() {
		r, _ := samplers.Lookup(name)
		fmt.Fprintf(&b, "  %-9s %s\n", name, r.Summary)
		for _, p := range r.Params {
			fmt.Fprintf(&b, "            %s (default %g): %s\n", p.Name, p.Default, p.Help)
		}
	}
	return b.String()
}

// checkRunArgs makes the checks every Beam command (select, chib, ais) makes once its flags are
// parsed: no stray arguments, --out given, valid runner flags and ranks, data and output where the
// runner's workers can reach them, and OUTDIR free (unless the run is dry). It returns the ranks
// and the flags given on the command line.
func checkRunArgs(ctx context.Context, fs *flag.FlagSet, out, data, rankSpec string) ([]int, map[string]bool, error) {
	if fs.NArg() > 0 {
		return nil, nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	if out == "" {
		return nil, nil, usagef("--out is required")
	}
	if err := runners.Check(); err != nil {
		return nil, nil, usageError{err}
	}
	ranks, err := parseRanks(rankSpec)
	if err != nil {
		return nil, nil, usageError{err}
	}
	if runners.IsRemote() {
		if !tensorio.IsURL(out) {
			return nil, nil, usagef("--out %s: workers of --runner=%s cannot write a local directory; give a URL such as gs://bucket/path", out, runners.Name())
		}
		if data != "" && !strings.HasPrefix(data, embeddedPrefix) && !tensorio.IsURL(data) {
			return nil, nil, usagef("--data %s: workers of --runner=%s cannot read a local directory; copy the dataset to a URL such as gs://bucket/path", data, runners.Name())
		}
	}
	if !runners.IsDryRun() {
		if err := pipelines.CheckOutDir(ctx, out); err != nil {
			return nil, nil, usageError{err}
		}
	}
	return ranks, setFlags(fs), nil
}

func runSelect(ctx context.Context, args []string, stdout io.Writer) error {
	runners.ResetFlags()
	defer runners.ResetFlags()
	var exact bool
	fs, f := newSelectFlagSet("select", selectSynopsis, selectAbout(), selectDetails(), selectUser, func(fs *flag.FlagSet) {
		fs.BoolVar(&exact, "exact", false, "also print the exact log p(X | R) at the ranks the model has one for (models with one: "+exactModels()+") and how far the estimate is from it: a check of the engine on your data")
	})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ranks, set, err := checkRunArgs(ctx, fs, f.out, f.data, f.ranks)
	if err != nil {
		return err
	}
	job, err := prepareSelection(ctx, f, set)
	if err != nil {
		return err
	}
	if exact && job.data == nil {
		return usagef("--exact needs the data in this process: remote workers read %s", f.data)
	}
	f.command = commandLine("select", args)
	existed := dirExists(f.out)
	r, err := job.run(ctx, f, pipelines.Options{Ranks: ranks, OutDir: f.out}, stdout)
	if err != nil || r == nil {
		return err
	}
	if !f.noReport {
		rep, err := evidenceReport(f.out, *r, nil)
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
	fmt.Fprintf(stdout, "%s on %s (%s), ranks %s, %d sampler steps\n", r.Model, job.meta.Source, formatShape(job.meta.Shape), f.ranks, r.Steps)
	if exact {
		if err := printExact(stdout, job, r); err != nil {
			return err
		}
	}
	fmt.Fprint(stdout, r.Table())
	return nil
}

// exactModels lists the registered models with an exact evidence at some rank, for --exact.
func exactModels() string {
	var names []string
	for _, info := range models.All() {
		if info.Exact != nil {
			names = append(names, info.Name)
		}
	}
	return strings.Join(names, ", ")
}

// printExact prints, for every rank of r the model has an exact evidence for, that value and the
// estimate's distance from it in nats and standard errors.
func printExact(w io.Writer, job *selection, r *pipelines.Result) error {
	found := false
	for _, rr := range r.Ranks {
		v, err := job.work.Model.Exact(job.data, rr.Rank)
		if errors.Is(err, models.ErrNoExact) {
			continue
		}
		if err != nil {
			return fmt.Errorf("exact evidence of rank %d: %w", rr.Rank, err)
		}
		found = true
		d, se := float64(rr.LogEvidence)-v, float64(rr.StdErr)
		fmt.Fprintf(w, "exact log p(X|R=%d) = %.2f; estimate − exact = %+.2f (%+.1f s.e.)\n", rr.Rank, v, d, d/se)
	}
	if !found {
		fmt.Fprintf(w, "no exact evidence for %s at these ranks (models with one at some rank: %s)\n", r.Model, exactModels())
	}
	return nil
}

// selection is a rank selection prepared from the command line: the work every chain shares and
// what the result records about the data.
type selection struct {
	work       transforms.Work
	est        estimators.Estimator
	meta       pipelines.DataInfo
	ladderSpec string
	// manifest is the dataset's manifest; nil for embedded data.
	manifest *tensorio.Manifest
	// data are the data when this process read them (see openData); nil otherwise.
	data *tensor.Sparse
	// planner plans the tasks' steps from the data when this process read them; nil otherwise.
	planner estimators.Planner
	// nnz is the number of non-zero cells the chains read: the stored cells, less any stored
	// zeros of a model that leaves them out where this process read the data.
	nnz int
}

// prepareSelection locates and reads the data (see openData), and builds the model and the STI
// configuration from the flags.
func prepareSelection(ctx context.Context, f *selectFlags, set map[string]bool) (*selection, error) {
	local := runners.IsLocal()
	// The data: read and validated in full here when they are local or embedded, or when the
	// chains run in this process (which then reuses them through the problem cache); only the
	// manifest is read when remote workers will read remote data.
	src, meta, m, data, err := openData(ctx, f, local || !tensorio.IsURL(f.data))
	if err != nil {
		return nil, err
	}
	spec, cfg, ladderSpec, err := modelAndConfig(f, set, src.String(), len(meta.Shape))
	if err != nil {
		return nil, err
	}
	if spec, err = withDictionary(ctx, spec, f.dict, meta.Shape); err != nil {
		return nil, err
	}
	ranks, err := parseRanks(f.ranks)
	if err != nil {
		return nil, usageError{err}
	}
	if f.timeLimit > 0 {
		cfg.RoundWork = sti.TimedRoundWork(f.timeLimit.Seconds(), len(ranks))
	}
	tasks, population := 0, 1
	for _, r := range ranks {
		rungs := len(cfg.AtRank(r).Ladder)
		if a := cfg.Annealing; a != nil {
			rungs, population = max(rungs, a.Rungs), a.Particles
		}
		tasks += rungs * cfg.Chains
	}
	if err := checkRunMemory(src.String(), meta.Shape, int64(meta.Cells), ranks, tasks, f.workers, population); err != nil {
		return nil, err
	}
	var est estimators.Estimator = estimators.STI{Model: spec, Config: cfg}
	es, err := estimators.NewSpec(estimators.STIName, cfg)
	if f.reference {
		pc, ls, err := pathConfig(spec.Name, f, set)
		if err != nil {
			return nil, err
		}
		est, ladderSpec = estimators.Path{Model: spec, Config: pc}, ls
		es, err = estimators.NewSpec(estimators.PathName, pc)
	}
	if err != nil {
		return nil, err
	}
	if err := checkRaceFlags(f, set, est, es.Name); err != nil {
		return nil, err
	}
	if f.reference && spec.Params.Auto("rates") {
		return nil, usagef("--reference fits its reference at fixed prior rates: give --rate R (the default, %s, samples them)", models.AutoWord)
	}
	work := transforms.Work{Source: src, Model: spec, Estimator: es}
	j := &selection{work: work, est: est, meta: meta, ladderSpec: ladderSpec, data: data, nnz: meta.Cells}
	if data != nil {
		j.nnz = data.NNZ()
		if spec.UnstoredZero() {
			j.nnz = data.WithoutZeros().NNZ()
		}
		p, err := est.Prepare(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		if local {
			transforms.Preload(work, p)
		}
		j.planner, _ = p.(estimators.Planner)
	}
	if src.Embedded == "" {
		j.manifest = m
	}
	return j, nil
}

// timedBudget is the budget (--budget) of a race given a time (--time) and no budget: the time,
// not a multiple of the records, decides when it stops.
const timedBudget = 16

// checkRaceFlags checks --budget and --time against each other and against the estimator, and
// lifts the budget to timedBudget when only a time is given.
func checkRaceFlags(f *selectFlags, set map[string]bool, est estimators.Estimator, name string) error {
	if f.budget < 1 || f.budget&(f.budget-1) != 0 {
		return usagef("--budget %d: want a power of two (1, 2, 4, …)", f.budget)
	}
	if f.timeLimit < 0 {
		return usagef("--time %v: want a positive duration, such as 10m", f.timeLimit)
	}
	if f.timeLimit > 0 && !estimators.IsRacer(est) {
		return usagef("--time applies to a race of Gibbs chains in rounds, which the %s estimator does not run", name)
	}
	if f.timeLimit > 0 && !set["budget"] {
		f.budget = timedBudget
	}
	return nil
}

// rounds is the most rounds a race of ranks runs with budget (a power of two, --budget), and how
// many of them a rank may run past the one that completes its configured records.
func (j *selection) rounds(ranks []int, budget int) (rounds, extra int) {
	for b := 1; b < budget; b *= 2 {
		extra++
	}
	e, ok := j.est.(estimators.STI)
	if !ok {
		return 1, extra
	}
	for _, r := range ranks {
		rounds = max(rounds, e.Config.Doublings(r, e.Model.FixedComponents(), j.nnz)+extra+1)
	}
	return rounds, extra
}

// shards is how many parts a race's chains travel in (transforms.Race): enough that each part's
// states, every chain's parameters and Stein centre in single precision, weigh at most
// shardBytes, far below the 2 GB that gRPC caps a message at.
func (j *selection) shards(ranks []int) int {
	e, ok := j.est.(estimators.STI)
	if !ok {
		return 1
	}
	rows := 0
	for _, n := range j.meta.Shape {
		rows += n
	}
	bytes := 0.0
	for _, r := range ranks {
		cfg := e.Config.AtRank(r)
		bytes += float64(cfg.Chains*len(cfg.Ladder)) * float64(rows*max(r, 1)) * 2 * 4
	}
	return max(1, int(math.Ceil(bytes/shardBytes)))
}

// shardBytes is what the states of one part of a race's chains may weigh (selection.shards).
const shardBytes = 256 << 20

// run runs the rank selection of o.Ranks into o.OutDir (o's work and metadata come from the
// selection) and reads the result back; nil for a dry run, whose job it prints. A failed run
// leaves no output directory it created.
func (j *selection) run(ctx context.Context, f *selectFlags, o pipelines.Options, stdout io.Writer) (*pipelines.Result, error) {
	local, dry := runners.IsLocal(), runners.IsDryRun()
	runID := newRunID()
	o.Work, o.RunID, o.Workers = j.work, runID, f.workers
	o.Rounds, o.Extra = j.rounds(o.Ranks, f.budget)
	if f.timeLimit > 0 {
		o.Budget = estimators.TimeBudget{Start: f.started.UnixNano(), Deadline: f.started.Add(f.timeLimit).UnixNano()}
	}
	o.Shards = j.shards(o.Ranks)
	if local && !dry && estimators.IsRacer(j.est) {
		// The in-process runner holds every collection in memory: the states travel through
		// a directory of the run's instead (transforms.RunFn.Spill).
		dir, err := os.MkdirTemp("", "stirank-states-")
		if err != nil {
			return nil, fmt.Errorf("a directory for the chains' states: %w", err)
		}
		defer os.RemoveAll(dir)
		o.Spill = dir
	}
	o.Meta = pipelines.Meta{LadderSpec: j.ladderSpec, Data: j.meta, Command: f.command, Version: version()}
	p, err := pipelines.New(o)
	if err != nil {
		return nil, err
	}
	plan := func(estimators.Task) int { return 0 }
	if j.planner != nil {
		plan = j.planner.TaskSteps
	}
	progress := transforms.Track(runID, j.est, o.Ranks, plan)
	defer transforms.Untrack(runID)
	var stopProgress func()
	showing := local && !dry && !f.quiet
	if showing {
		every := f.progressEvery
		if isTerminal(os.Stderr) {
			every = 0
		}
		stopProgress = showProgress(os.Stderr, progress, every)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	existed := dirExists(o.OutDir)
	res, err := runners.Run(ctx, p, runners.Logging{Verbose: f.verbose})
	if stopProgress != nil {
		stopProgress()
	}
	if err != nil {
		if !existed {
			removeOutDir(o.OutDir)
		}
		return nil, fmt.Errorf("pipeline failed: %s", pipelineError(err))
	}
	if res.DryRun() {
		fmt.Fprintln(stdout, res.Job)
		return nil, nil
	}
	printWorkerReads(stdout, res)
	r, err := pipelines.ReadResult(ctx, o.OutDir)
	if err != nil {
		if !existed {
			removeOutDir(o.OutDir)
		}
		return nil, fmt.Errorf("reading the results back: %w", err)
	}
	if showing && isTerminal(os.Stderr) {
		s := progress.Snapshot()
		fmt.Fprintf(os.Stderr, "%d chains, %d steps in %s (%s steps/s)", s.TasksDone, s.StepsDone, s.Elapsed.Round(100*time.Millisecond), humanRate(s.StepsPerSecond()))
		if n, ok := res.Counter(transforms.MetricsNamespace, transforms.TasksMetric); ok {
			fmt.Fprintf(os.Stderr, "; Beam metrics: %d chains", n)
		}
		fmt.Fprintln(os.Stderr)
	}
	return &r, nil
}

// modelAndConfig builds the model (by default the one of the data's order) and the STI
// configuration from the flags, for data named src of the given order.
func modelAndConfig(f *selectFlags, set map[string]bool, src string, order int) (models.Spec, sti.Config, string, error) {
	info, err := lookupModel(f.model, src, order)
	if err != nil {
		return models.Spec{}, sti.Config{}, "", err
	}
	if set["blocks"] && !info.Factored {
		return models.Spec{}, sti.Config{}, "", usagef("--blocks applies to %s, not %s", models.And(factoredNames()), info.Name)
	}
	if err := checkModelRanks(info, f.ranks); err != nil {
		return models.Spec{}, sti.Config{}, "", err
	}
	params, err := f.hypers.params(info, set)
	if err != nil {
		return models.Spec{}, sti.Config{}, "", err
	}
	spec := models.Spec{Name: info.Name, Params: params}
	cfg, ladderSpec, err := selectConfig(info.Name, f, set)
	if err != nil {
		return spec, cfg, "", err
	}
	if err := spec.Validate(); err != nil {
		return spec, cfg, "", usageError{err}
	}
	if err := cfg.Validate(); err != nil {
		return spec, cfg, "", usageError{err}
	}
	if info.Order != order {
		return spec, cfg, "", fmt.Errorf("model %s needs a %d-way tensor; %s is %d-way", info.Name, info.Order, src, order)
	}
	return spec, cfg, ladderSpec, nil
}

// openData locates the data and reads their manifest, and the cells too when full is set.
func openData(ctx context.Context, f *selectFlags, full bool) (transforms.Source, pipelines.DataInfo, *tensorio.Manifest, *tensor.Sparse, error) {
	var (
		src transforms.Source
		m   *tensorio.Manifest
		t   *tensor.Sparse
	)
	switch {
	case f.data == "" || strings.HasPrefix(f.data, embeddedPrefix):
		name := strings.TrimPrefix(f.data, embeddedPrefix)
		if name == "" {
			name = testdata.Default
		}
		if !slices.Contains(testdata.Names, name) {
			return src, pipelines.DataInfo{}, nil, nil, usagef("--data %s: no such embedded dataset (%s)", f.data, strings.Join(testdata.Names, ", "))
		}
		ds, err := tensorio.ReadFS(testdata.FS, name, tensorio.ReadOptions{})
		if err != nil {
			return src, pipelines.DataInfo{}, nil, nil, err
		}
		src = transforms.Source{Embedded: name}
		m, t = ds.Manifest, ds.Tensor
	default:
		url := f.data
		if !tensorio.IsURL(url) {
			abs, err := filepath.Abs(url)
			if err != nil {
				return src, pipelines.DataInfo{}, nil, nil, err
			}
			url = abs
			if fi, err := os.Stat(url); err != nil || !fi.IsDir() {
				if err == nil || errors.Is(err, fs.ErrNotExist) {
					return src, pipelines.DataInfo{}, nil, nil, usagef("--data %s: no such dataset directory", f.data)
				}
				return src, pipelines.DataInfo{}, nil, nil, err
			}
		}
		src = transforms.Source{URL: url}
		if full {
			ds, err := tensorio.Read(ctx, url, tensorio.ReadOptions{})
			if err != nil {
				return src, pipelines.DataInfo{}, nil, nil, err
			}
			m, t = ds.Manifest, ds.Tensor
		} else {
			var err error
			if m, err = tensorio.ReadManifest(ctx, url); err != nil {
				return src, pipelines.DataInfo{}, nil, nil, err
			}
		}
	}
	src.Checksum = m.Checksum()
	if src.URL != "" {
		src.Version = m.Version
	}
	info := pipelines.DataInfo{Source: src.String(), Checksum: src.Checksum, Shape: m.Shape, Cells: int(m.Cells)}
	if src.URL != "" {
		info.Source = f.data
	}
	return src, info, m, t, nil
}

// selectConfig is sti.Default(model) with the flags given applied. An SG-MCMC --sampler, or
// --blocks or --subsample (schedules of SG-MCMC steps), starts instead from the model's SG-MCMC
// defaults (sti.DefaultSGMCMC), whose steps are sampler steps rather than Gibbs sweeps.
func selectConfig(model string, f *selectFlags, set map[string]bool) (sti.Config, string, error) {
	cfg := sti.Default(model)
	if sg := set["blocks"] || set["subsample"] || set["sampler"]; sg && f.sampler != gibbsSampler {
		cfg = sti.DefaultSGMCMC(model)
	}
	ladderSpec := fmt.Sprintf("%s with %d temperatures", defaultLadder, len(cfg.Ladder)-1)
	// --start anneal is --anneal: the annealed start comes with its own ladders and settings.
	anneal := f.anneal || (set["start"] && f.start == sti.AnnealStart)
	if set["start"] {
		switch {
		case !slices.Contains(sti.StartNames(), f.start):
			return cfg, "", usagef("--start %q: no such start stage (there are %s)", f.start, strings.Join(sti.StartNames(), ", "))
		case f.anneal && f.start != sti.AnnealStart:
			return cfg, "", usagef("--anneal starts the chains from annealed populations: give --anneal or --start %s, not both", f.start)
		case set["descent"]:
			return cfg, "", usagef("--descent chooses the start stage itself (%s, or %s for 0): give --start or --descent, not both", sti.DescentStart, sti.ModesStart)
		}
	}
	if anneal && f.reference {
		return cfg, "", usagef("give --anneal or --reference, not both")
	}
	if anneal {
		if set["ladder"] || set["temperatures"] {
			return cfg, "", usagef("--anneal makes its own ladder: give --ladder or --temperatures without it")
		}
		cfg = sti.DefaultAnnealed(model)
		ladderSpec = "adaptive (annealing)"
		if set["particles"] {
			if f.particles < 2 || (cfg.Annealing.Chains > 0 && f.particles%cfg.Annealing.Chains != 0) {
				return cfg, "", usagef("--particles %d must be at least 2 and a multiple of %d", f.particles, max(cfg.Annealing.Chains, 1))
			}
			cfg.Annealing.Particles = f.particles
		}
	} else if set["particles"] {
		return cfg, "", usagef("--particles applies with --anneal")
	}
	if set["ladder"] || set["temperatures"] {
		if set["temperatures"] && strings.HasPrefix(f.ladder, "list:") {
			return cfg, "", usagef("--temperatures does not apply to a --ladder list")
		}
		// The ladder and every temperature's chains are allocated before anything else would
		// check their number.
		chains := cfg.Chains
		if set["chains"] {
			chains = max(f.chains, 1)
		}
		if err := memlimit.Check(fmt.Sprintf("--temperatures %d with %d chains", f.temperatures, chains), float64(f.temperatures+1)*float64(chains)*taskBytes); err != nil {
			return cfg, "", usageError{err}
		}
		l, err := evidence.ParseLadder(f.ladder, f.temperatures)
		if err != nil {
			return cfg, "", usageError{err}
		}
		cfg.Ladder = l
		ladderSpec = f.ladder
		if !strings.HasPrefix(f.ladder, "list:") {
			ladderSpec = fmt.Sprintf("%s with %d temperatures", f.ladder, f.temperatures)
		}
		// A ladder given is the ladder run.
		cfg.FitLadder = cfg.FitLadder && !set["ladder"]
	}
	if cfg.FitLadder {
		ladderSpec = fmt.Sprintf("power:%d to %d fitted to the data with %d temperatures", evidence.DefaultPower, evidence.MaxFitPower, len(cfg.Ladder)-1)
	}
	if set["chains"] {
		cfg.Chains = f.chains
	}
	if set["start"] {
		cfg.Start = f.start
	}
	if set["sampler"] && f.sampler != gibbsSampler {
		cfg.Sampler = f.sampler
	}
	if f.sampler == gibbsSampler && !cfg.Gibbs && !anneal {
		return cfg, "", usagef("--sampler %s: the %s model has no Gibbs kernel (%s)", gibbsSampler, model, gibbsModels())
	}
	// Every parameter's value is recorded, so evidence.json says what ran.
	sampler, err := samplers.New(cfg.Sampler, f.samplerParams)
	if err != nil {
		return cfg, "", usageError{err}
	}
	cfg.SamplerParams = sampler.Params
	if set["steps"] {
		if !set["relax"] && cfg.Steps > 0 {
			cfg.Relax = int(int64(cfg.Relax) * int64(f.steps) / int64(cfg.Steps))
		}
		cfg.Steps = f.steps
		if !set["burnin"] && cfg.Burnin > f.steps/5 {
			cfg.Burnin = f.steps / 5
		}
	}
	if set["burnin"] {
		cfg.Burnin = f.burnin
	}
	if set["warm-burnin"] {
		cfg.WarmBurnin = f.warmBurnin
	}
	if set["descent"] {
		switch {
		case f.descent < 0:
			return cfg, "", usagef("--descent %d must not be negative", f.descent)
		case !cfg.Gibbs:
			return cfg, "", usagef("--descent starts the Gibbs chains of a fixed ladder (%s without --anneal or an SG-MCMC --sampler)", gibbsModels())
		}
		cfg = cfg.WithDescent(f.descent)
	}
	if set["relax"] {
		switch {
		case f.relax < 0:
			return cfg, "", usagef("--relax %d must not be negative", f.relax)
		case cfg.Start != sti.DescentStart:
			return cfg, "", usagef("--relax begins the walks down the ladder that start the Gibbs chains of a fixed ladder (%s without --anneal, an SG-MCMC --sampler or --descent 0)", gibbsModels())
		}
		cfg.Relax = f.relax
	}
	if set["ascent"] {
		switch {
		case f.ascent < 0:
			return cfg, "", usagef("--ascent %d must not be negative", f.ascent)
		case cfg.Start != sti.DescentStart:
			return cfg, "", usagef("--ascent walks back up from the walks down the ladder that start the Gibbs chains of a fixed ladder (%s without --anneal, an SG-MCMC --sampler or --descent 0)", gibbsModels())
		}
		cfg.Ascent = f.ascent
	}
	if set["stein"] {
		if !cfg.Gibbs || cfg.Start == sti.PriorStart {
			return cfg, "", usagef("--stein controls the Gibbs chains of a fixed ladder that start from their rank's mode (%s without --anneal or an SG-MCMC --sampler)", gibbsModels())
		}
		// Given, it holds at every rank.
		cfg = cfg.With(sti.SteinName, f.stein)
		cfg.SteinBelow = 0
	}
	if set["allocate"] {
		if cfg.OwnLadders() {
			return cfg, "", usagef("--allocate shares the records of a fixed ladder's chains among its rungs: it does not apply with --anneal")
		}
		if info, _ := models.Lookup(model); f.allocate && info.ExpPoissonRates == nil && info.PowerVariance == nil {
			return cfg, "", usagef("--allocate needs an exact curve to read the rungs' variances from (%s); the %s model has none", allocatedModels(), model)
		}
		cfg.Allocate = f.allocate
	}
	if set["step"] {
		if !(f.step > 0) {
			return cfg, "", usagef("--step %v must be positive", f.step)
		}
		cfg.Step = f.step
	}
	if set["subsample"] && set["blocks"] {
		return cfg, "", usagef("give --subsample or --blocks, not both")
	}
	if set["subsample"] {
		if f.subsample < 0 {
			return cfg, "", usagef("--subsample %d must not be negative", f.subsample)
		}
		cfg.Subsample, cfg.Blocks = f.subsample, 1
	}
	if set["blocks"] {
		if f.blocks < 1 {
			return cfg, "", usagef("--blocks %d must be at least 1", f.blocks)
		}
		cfg.Blocks, cfg.Subsample = f.blocks, 0
	}
	if set["workers"] && f.workers < 0 {
		return cfg, "", usagef("--workers %d must not be negative", f.workers)
	}
	cfg.Seed = f.seed
	if cfg.Steps < 2 {
		return cfg, "", usagef("--steps %d must be at least 2", cfg.Steps)
	}
	if cfg.Burnin < 0 || cfg.Burnin >= cfg.Steps {
		return cfg, "", usagef("--burnin %d must be at least 0 and less than --steps %d", cfg.Burnin, cfg.Steps)
	}
	// A ladder or chain length given applies to every rank.
	for _, name := range []string{"ladder", "temperatures", "steps", "burnin", "warm-burnin", "descent"} {
		if set[name] {
			cfg.Rank1 = nil
		}
	}
	if b := cfg.Rank1; b != nil {
		ladderSpec += fmt.Sprintf(", %d at rank 1", b.Rungs)
	}
	return cfg, ladderSpec, nil
}

// pathConfig is estimators.DefaultPath with the flags given applied, for --reference on model;
// it returns the ladder's description too.
func pathConfig(model string, f *selectFlags, set map[string]bool) (estimators.PathConfig, string, error) {
	c := estimators.DefaultPath()
	info, err := models.Lookup(model)
	if err != nil {
		return c, "", err
	}
	if info.ExpPoissonRates == nil {
		return c, "", usagef("--reference runs on %s, not %s", models.Or(models.NamesOf(estimators.BaselineModels())), model)
	}
	for _, name := range []string{"anneal", "start", "sampler", "sampler-param", "blocks", "subsample", "descent", "relax", "ascent", "stein", "allocate", "step", "particles", "warm-burnin"} {
		if set[name] {
			return c, "", usagef("--%s does not apply with --reference, whose chains slice-sample from their references", name)
		}
	}
	spec := fmt.Sprintf("path:6 with %d temperatures, from a reference", len(c.Ladder)-1)
	if set["ladder"] || set["temperatures"] {
		l := "path:6"
		if set["ladder"] {
			l = f.ladder
		}
		if c.Ladder, err = evidence.ParseLadder(l, f.temperatures); err != nil {
			return c, "", usageError{err}
		}
		spec = fmt.Sprintf("%s with %d temperatures, from a reference", l, len(c.Ladder)-1)
	}
	if set["chains"] {
		c.Chains = f.chains
	}
	if set["steps"] {
		c.Steps = f.steps
		if !set["burnin"] && c.Burnin > f.steps/5 {
			c.Burnin = f.steps / 5
		}
	}
	if set["burnin"] {
		c.Burnin = f.burnin
	}
	c.Seed = f.seed
	if err := c.Validate(); err != nil {
		return c, "", usageError{err}
	}
	return c, spec, nil
}

// parseRanks reads 1-10, 1,3,5 or 2-4,8 into sorted distinct ranks, each from 0 to maxRank;
// whether the model has a rank 0 is checkModelRanks's to say.
func parseRanks(s string) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return nil, fmt.Errorf("--ranks %q: %q is not a rank or a range like 2-4", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil {
				return nil, fmt.Errorf("--ranks %q: %q is not a rank or a range like 2-4", s, part)
			}
		}
		if a < 0 || b < a || b > maxRank {
			return nil, fmt.Errorf("--ranks %q: %q must be ranks from 0 to %d, low to high", s, part, maxRank)
		}
		for r := a; r <= b; r++ {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// checkModelRanks refuses ranks of the --ranks spec s below the model's smallest: rank 0 is a
// model only of the models that declare it (models.Info.ZeroRank).
func checkModelRanks(info *models.Info, s string) error {
	ranks, err := parseRanks(s)
	if err != nil {
		return usageError{err}
	}
	if ranks[0] < info.MinRank() {
		return usagef("--ranks %s: rank %d is not a model of %s, whose ranks start at %d (models with a rank 0: %s)",
			s, ranks[0], info.Name, info.MinRank(), models.And(zeroRankNames()))
	}
	return nil
}

func newRunID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func dirExists(dir string) bool {
	if tensorio.IsURL(dir) {
		return false
	}
	_, err := os.Stat(dir)
	return err == nil
}

// removeOutDir removes a local output directory the failed run may have created.
func removeOutDir(dir string) {
	if !tensorio.IsURL(dir) {
		os.RemoveAll(dir)
	}
}

// pipelineError shortens Beam's nested job errors to their cause.
func pipelineError(err error) string {
	msg := err.Error()
	for _, marker := range []string{"caused by:", "Caused by:"} {
		if i := strings.LastIndex(msg, marker); i >= 0 {
			msg = msg[i+len(marker):]
		}
	}
	msg = strings.TrimSpace(msg)
	// "DoFn[UID:2, PID:e12, Name: …writeFn] failed: the cause"
	if strings.HasPrefix(msg, "DoFn[") {
		if i := strings.Index(msg, "] failed:"); i >= 0 {
			msg = strings.TrimSpace(msg[i+len("] failed:"):])
		}
	}
	return msg
}
