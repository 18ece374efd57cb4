package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"

	"github.com/stirank/stirank/io/chainstate"
	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/pipelines"
	"github.com/stirank/stirank/report"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/runners"
	"github.com/stirank/stirank/runstate"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/transforms"
)

func init() {
	register(command{
		name:    "reanalyze",
		summary: "re-run the rank selection on a grown dataset, warm-starting from the last run, and keep a history",
		run:     runReanalyze,
	})
}

const reanalyzeSynopsis = `--data DIR --state STATEDIR [--window K] [--warm-burnin N] [select flags] [Beam runner flags]`

// reanalyzeAbout is reanalyze's description under its synopsis.
const reanalyzeAbout = `Re-runs the rank selection of select on a dataset that grows (stirank append), warm-starting
every chain from the last run's, for scheduled runs (cron, Airflow, Kubernetes CronJobs).
STATEDIR (created if needed) keeps the last committed run and the history of every run; an unchanged dataset
exits 0 at once. Every flag of select applies (stirank reanalyze -h -all).`

// reanalyzeUser are the flags of reanalyze a user sets, the ones -h lists.
var reanalyzeUser = []userFlag{
	{"data", "DIR", "the dataset that grows (a directory or a URL)"},
	{"state", "STATEDIR", ""},
	{"ranks", "LIST", ""},
	{"window", "K", ""},
	{"model", "NAME", ""},
	rateUser,
	budgetUser,
	timeUser,
	chainsUser,
	{"seed", "N", "random seed, mixed with the dataset version"},
}

// reanalyzeDetails is what reanalyze -h -all adds to its description.
func reanalyzeDetails() string {
	// Only models whose parameters grow with the data settle new rows; the others have none.
	settle := 0
	for _, g := range configGroups() {
		settle = max(settle, g.cfg.SettleSteps)
	}
	return fmt.Sprintf(`  - When the dataset and the settings are those of the last run, it says so and exits 0 at once.
  - Otherwise every (rank, temperature, chain) resumes from the chain's saved final state: factor
    rows of new indices are carried from prior draws to their conditional mode by %d steps of
    ascent (a Gibbs chain draws them from their conditionals in its first sweep instead), then a
    burn-in of --warm-burnin steps or sweeps (default: %s) replaces the mode
    search and the cold burn-in. A chain resumes from its replica's state at the rung whose
    temperature, scaled by the data's growth, is nearest its own. Ranks without saved states
    start cold, and so does a rank whose saved t = 1 states, carried to their modes, fall more
    than 2 nats of log posterior behind a fresh mode search on the grown data (the dominant mode
    moved). A change of model, prior, ladder or chains makes the whole run cold.
  - --window K analyses only the ranks within K of the last best rank (inside --ranks), and
    extends the window by K while the best rank sits at its edge.
  - The new states, evidence.json/csv, report.html with its figures (--no-report to skip) and
    one history row per analysed rank are committed atomically: STATEDIR/latest/evidence.json,
    STATEDIR/latest/report.html, STATEDIR/history.csv and history.parquet.
    A run killed at any moment leaves the last committed run intact; the next run redoes it.
  - One run at a time per STATEDIR: a second one is refused while the first holds the lock.

Every chain's random streams derive from the seed, the dataset version and the chain's (rank,
temperature, replica), so a rerun after a crash gives the same numbers.`, settle, perModelDefault(func(c sti.Config) any { return c.WarmBurnin }))
}

// reanalyzeFlags are reanalyze's own flags, besides select's.
type reanalyzeFlags struct {
	state      string
	stateURL   string
	window     int
	warmBurnin int
	// seed is --seed as given; the run's seed mixes it with the dataset version.
	seed uint64
}

func runReanalyze(ctx context.Context, args []string, stdout io.Writer) error {
	runners.ResetFlags()
	defer runners.ResetFlags()
	rf := &reanalyzeFlags{}
	fs, f := newSelectFlagSet("reanalyze", reanalyzeSynopsis, reanalyzeAbout, reanalyzeDetails(), reanalyzeUser, func(fs *flag.FlagSet) {
		fs.StringVar(&rf.state, "state", "", "state directory: the last run's chain states and evidence, the history, a lock")
		fs.StringVar(&rf.stateURL, "state-url", "", "keep the chain states under this URL (gs://bucket/prefix) instead of in STATEDIR, for workers that cannot reach STATEDIR (Dataflow)")
		fs.IntVar(&rf.window, "window", 0, "analyse only the ranks within K of the last best rank (0: all of --ranks)")
		fs.IntVar(&rf.warmBurnin, "warm-burnin", 0, fmt.Sprintf("burn-in steps of a chain resumed from its saved state (default: %s)", perModelDefault(func(c sti.Config) any { return c.WarmBurnin })))
	})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := setFlags(fs)
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case f.data == "" || strings.HasPrefix(f.data, embeddedPrefix):
		return usagef("--data DIR is required: a dataset that grows by stirank append")
	case rf.state == "":
		return usagef("--state STATEDIR is required")
	case f.out != "":
		return usagef("--out does not apply: results go to STATEDIR/latest")
	case rf.window < 0:
		return usagef("--window %d must not be negative", rf.window)
	case set["warm-burnin"] && rf.warmBurnin < 1:
		return usagef("--warm-burnin %d must be at least 1", rf.warmBurnin)
	}
	if err := runners.Check(); err != nil {
		return usageError{err}
	}
	allowed, err := parseRanks(f.ranks)
	if err != nil {
		return usageError{err}
	}
	if runners.IsDryRun() {
		return usagef("reanalyze commits its results; a dry run has none (use select for that)")
	}
	if rf.stateURL != "" && !tensorio.IsURL(rf.stateURL) {
		return usagef("--state-url %s is not a URL (gs://bucket/prefix); local states belong in --state", rf.stateURL)
	}
	if rf.stateURL != "" {
		// An unknown scheme would otherwise fail only when the first chain state is written,
		// after the sampling.
		fsys, err := filesystem.New(ctx, rf.stateURL)
		if err != nil {
			return usagef("--state-url %s: %v", rf.stateURL, err)
		}
		fsys.Close()
	}
	if runners.IsRemote() && (rf.stateURL == "" || !tensorio.IsURL(f.data)) {
		return usagef("--runner=%s: its workers cannot reach local directories; give the data as a URL and --state-url gs://bucket/prefix for the chain states (STATEDIR stays here)", runners.Name())
	}

	// The data are checked before STATEDIR is created, so bad data leave nothing behind.
	m, err := readManifest(ctx, f.data)
	if err != nil {
		return err
	}
	dir, err := runstate.Open(rf.state)
	if err != nil {
		return err
	}
	defer dir.Close()
	prev, hasPrev, err := dir.Current()
	if err != nil {
		return err
	}
	rf.seed = f.seed
	f.seed = rng.Key(f.seed, uint64(m.Version))
	f.warmBurnin = rf.warmBurnin
	spec, cfg, _, err := modelAndConfig(f, set, f.data, len(m.Shape))
	if err != nil {
		return err
	}
	// The dictionary is part of the settings: another one starts every chain cold.
	if spec, err = withDictionary(ctx, spec, f.dict, m.Shape); err != nil {
		return err
	}
	settings := reanalysisSettings(spec, cfg, rf, f.ranks)
	if hasPrev && prev.DatasetChecksum == m.Checksum() && prev.Settings == settings.key() {
		fmt.Fprintf(stdout, "unchanged: %s version %d (checksum %.12s) was analysed by run %s at %s; best rank: %d\n",
			f.data, m.Version, m.Checksum(), prev.ID, prev.Time.Format("2006-01-02T15:04:05Z07:00"), prev.BestRank)
		return nil
	}
	job, err := prepareSelection(ctx, f, set)
	if err != nil {
		return err
	}
	f.command = commandLine("reanalyze", args)
	if job.manifest.Checksum() != m.Checksum() {
		return fmt.Errorf("%s changed while it was being read (an append ran meanwhile); run again", f.data)
	}
	startDir := ""
	if hasPrev && prevWarmKey(prev) == settings.warm {
		startDir = dir.StatesDir(prev)
	} else if hasPrev {
		fmt.Fprintf(os.Stderr, "the model, prior, ladder or chains changed since run %s: every chain starts cold\n", prev.ID)
	}
	ranks := allowed
	if hasPrev && rf.window > 0 && prev.BestRank >= 0 {
		ranks = window(allowed, prev.BestRank-rf.window, prev.BestRank+rf.window)
		if len(ranks) == 0 {
			// --ranks no longer holds the last best rank: start over.
			ranks = allowed
		}
	}

	id := fmt.Sprintf("v%06d-%.10s-%.8s", m.Version, m.Checksum(), settings.all)
	txn, err := dir.Begin(id)
	if err != nil {
		return err
	}
	defer txn.Abort()
	// Chain states go to the staging directory, which the commit renames into the run's, or, with
	// --state-url, to the run's own prefix there (a killed run leaves only files that its rerun,
	// which has the same id, rewrites with the same bytes).
	states := txn.StatesDir()
	if rf.stateURL != "" {
		states = strings.TrimSuffix(rf.stateURL, "/") + "/" + id
	}
	var res *pipelines.Result
	var timing pipelines.Timing
	for pass := 1; len(ranks) > 0; pass++ {
		o := pipelines.Options{Ranks: ranks, OutDir: filepath.Join(txn.Dir(), fmt.Sprintf("pass-%d", pass)), StartDir: startDir, StateDir: states}
		r, err := job.run(ctx, f, o, stdout)
		if err != nil {
			return err
		}
		t, err := pipelines.ReadTiming(o.OutDir)
		if err != nil {
			return err
		}
		timing.Ranks = append(timing.Ranks, t.Ranks...)
		if err := os.RemoveAll(o.OutDir); err != nil {
			return err
		}
		if res == nil {
			res = r
		} else if merged, err := res.Merge(*r); err != nil {
			return err
		} else {
			res = &merged
		}
		ranks = widen(allowed, res, rf.window)
	}
	js, err := res.JSON()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(txn.Dir(), pipelines.EvidenceJSON), js, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(txn.Dir(), pipelines.EvidenceCSV), res.CSV(), 0o644); err != nil {
		return err
	}
	slices.SortFunc(timing.Ranks, func(a, b transforms.RankTime) int { return a.Rank - b.Rank })
	tj, err := timing.JSON()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(txn.Dir(), pipelines.TimingJSON), tj, 0o644); err != nil {
		return err
	}
	run := runstate.Run{
		ID: id, DatasetVersion: m.Version, DatasetChecksum: m.Checksum(), Settings: settings.key(),
		Seed: f.seed, BestRank: int(res.BestRank),
	}
	if rf.stateURL != "" {
		run.States = states
	}
	var rows []runstate.HistoryRow
	for _, rr := range res.Ranks {
		run.Ranks = append(run.Ranks, rr.Rank)
		rows = append(rows, runstate.HistoryRow{
			Rank: rr.Rank, LogEvidence: float64(rr.LogEvidence), StdErr: float64(rr.StdErr),
			PosteriorProb: float64(rr.PosteriorProb), Steps: rr.Steps, WarmStart: rr.WarmChains > 0,
		})
	}
	if !f.noReport {
		// The report shows this run in the history, so its commit time is fixed here; the
		// report's files are part of the run and published to latest/ with evidence.json.
		run.Time = time.Now()
		history, err := dir.HistoryWith(run, rows)
		if err != nil {
			return err
		}
		if _, err := report.Evidence(*res, history, timing).Write(txn.Dir()); err != nil {
			return err
		}
	}
	if err := txn.Commit(run, rows); err != nil {
		return err
	}
	if rf.stateURL != "" {
		// The state directory keeps this run and the one before; so does the URL.
		if err := chainstate.Prune(ctx, rf.stateURL, id, prev.ID); err != nil {
			fmt.Fprintf(os.Stderr, "warning: removing old chain states: %v\n", err)
		}
	}
	how := "cold"
	if startDir != "" {
		how = "warm-started from run " + prev.ID
	}
	fmt.Fprintf(stdout, "%s on %s version %d (%s), ranks %s, %d sampler steps, %s\n",
		res.Model, f.data, m.Version, formatShape(m.Shape), compactRanks(run.Ranks), res.Steps, how)
	fmt.Fprint(stdout, res.Table())
	if !f.noReport {
		fmt.Fprintf(os.Stderr, "report: %s\n", filepath.Join(dir.Path(), "latest", report.HTML))
	}
	fmt.Fprintf(stdout, "committed run %s: %s\n", id, filepath.Join(dir.Path(), "history.csv"))
	return nil
}

// analysisSettings identifies what a run computed besides the data: warm is the part chain
// states depend on (model, prior, ladder, chains), all the rest of the configuration and the
// rank choice.
type analysisSettings struct {
	warm, all string
}

func (s analysisSettings) key() string { return "warm:" + s.warm + " all:" + s.all }

// prevWarmKey is the warm part of a committed run's settings.
func prevWarmKey(r runstate.Run) string {
	w, _, _ := strings.Cut(strings.TrimPrefix(r.Settings, "warm:"), " ")
	return w
}

// reanalysisSettings returns the settings of a run of model spec with configuration cfg (whose
// seed is the run's) over the ranks of rankSpec.
func reanalysisSettings(spec models.Spec, cfg sti.Config, rf *reanalyzeFlags, rankSpec string) analysisSettings {
	hash := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("reanalyze: settings do not encode: %v", err))
		}
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:8])
	}
	cfg.Seed = rf.seed // the run's seed follows the dataset version; the settings hold the flag's
	// The saved states are by rank, rung and replica: they fit a run on the same rungs.
	rungs := []any{spec, cfg.Ladder, cfg.Chains}
	if b := cfg.Rank1; b != nil {
		rungs = append(rungs, b.Rungs)
	}
	return analysisSettings{
		warm: hash(rungs),
		all:  hash([]any{spec, cfg, rankSpec, rf.window}),
	}
}

// readManifest reads the manifest of the dataset at a local path or URL.
func readManifest(ctx context.Context, data string) (*tensorio.Manifest, error) {
	if !tensorio.IsURL(data) {
		abs, err := filepath.Abs(data)
		if err != nil {
			return nil, err
		}
		data = abs
	}
	return tensorio.ReadManifest(ctx, data)
}

// window returns the ranks of allowed in [lo, hi].
func window(allowed []int, lo, hi int) []int {
	return slices.DeleteFunc(slices.Clone(allowed), func(r int) bool { return r < lo || r > hi })
}

// widen returns the ranks to add when the best rank of res sits at an edge of the ranks analysed:
// the allowed ranks within k beyond that edge (none without a window).
func widen(allowed []int, res *pipelines.Result, k int) []int {
	best, ok := res.Best()
	if k == 0 || !ok {
		return nil
	}
	lo, hi := res.Ranks[0].Rank, res.Ranks[len(res.Ranks)-1].Rank
	var more []int
	if best.Rank == lo {
		more = append(more, window(allowed, lo-k, lo-1)...)
	}
	if best.Rank == hi {
		more = append(more, window(allowed, hi+1, hi+k)...)
	}
	return more
}
