// Package pipelines builds stirank's Beam pipelines. RankSelection estimates the log evidence
// of every candidate rank with one of the registered estimators (package estimators: STI, Chib,
// AIS) and writes evidence.json, evidence.csv and timing.json: it fans out one element per task of the
// estimator (for STI a (rank, temperature, chain), for the baselines a (rank, replica)),
// reshuffles them so the runner can spread them, runs each task on the workers
// (transforms.RunFn; for a staged estimator the first-stage tasks start follow-on tasks, which
// run in turn: see transforms.Estimate), combines the tasks of each rank into its evidence
// (transforms.RankEvidenceFn), and gathers the ranks into the result. This package only builds
// graphs; the numbers come from the Beam-free packages behind the estimators.
package pipelines

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/transforms"
)

func init() {
	register.DoFn5x1[context.Context, int, func(*[]evidence.RankEvidence) bool, func(*transforms.RankTime) bool, func(*evidence.Standing) bool, error](&writeFn{})
	register.Iter1[[]evidence.RankEvidence]()
	register.Iter1[evidence.Standing]()
	register.Iter1[transforms.RankTime]()
	register.Function1x2(keyRanks)
	register.Function1x2(keyTime)
	register.Function1x2(keyStanding)
}

// Options configures a rank selection.
type Options struct {
	// Work is the data, model and estimator every task shares.
	Work transforms.Work
	// Ranks are the candidate ranks, each at least the model's smallest (models.Info.MinRank).
	Ranks []int
	// OutDir receives evidence.json, evidence.csv and timing.json: a local directory or a Beam filesystem URL
	// that the worker running the last step can write.
	OutDir string
	// RunID names the in-process progress tracker (transforms.Track) tasks report to.
	RunID string
	// Workers bounds the tasks that run at once per worker process; 0 means GOMAXPROCS.
	Workers int
	// StartDir and StateDir are where tasks resume from and where they leave their final states
	// (see transforms.RunFn; STI only); empty for neither.
	StartDir, StateDir string
	// Spill is a local directory a race's states travel through between its stages instead of
	// its collections (transforms.RunFn.Spill), for workers in the launching process; empty for
	// none.
	Spill string
	// Meta is recorded in the result; its Model, Estimator and Ranks are filled from Work and
	// Ranks.
	Meta Meta
	// Rounds is the most rounds a racing estimator runs (estimators.Racer; transforms.Race), 0
	// for DefaultRounds, and Extra how many of them a rank may run past the one that completes
	// its configured budget.
	Rounds, Extra int
	// Shards is how many parts a race's chains travel in between its stages (transforms.Race),
	// 0 for one.
	Shards int
	// Budget is the wall-clock time a race may take (estimators.TimeBudget); zero for none.
	Budget estimators.TimeBudget
}

// DefaultRounds is the most rounds of a race whose launcher did not count them from the data:
// enough for data on which a rank's records double from an eighth of the budget, with four to
// spare. A round left with nothing to run costs only its stages.
const DefaultRounds = 8

// validateRanks checks a list of candidate ranks of the named model: at least one, each at least
// the model's smallest, none twice.
func validateRanks(ranks []int, model string) error {
	if len(ranks) == 0 {
		return errors.New("no ranks to try")
	}
	info, err := models.Lookup(model)
	if err != nil {
		return err
	}
	seen := map[int]bool{}
	for _, r := range ranks {
		if r < info.MinRank() {
			return fmt.Errorf("rank %d: the ranks of %s start at %d", r, model, info.MinRank())
		}
		if seen[r] {
			return fmt.Errorf("rank %d listed twice", r)
		}
		seen[r] = true
	}
	return nil
}

// Validate checks the options without reading any data.
func (o Options) Validate() error {
	if err := validateRanks(o.Ranks, o.Work.Model.Name); err != nil {
		return err
	}
	if err := o.Work.Source.Validate(); err != nil {
		return err
	}
	_, err := o.Work.New()
	return err
}

// Evidence adds the estimation to the pipeline and returns its PCollection<KV<int,
// evidence.RankEvidence>>, one element per rank, what each rank cost, a PCollection<KV<int,
// transforms.RankTime>>, and for a racing estimator (estimators.Racer) the race's final
// standing, a singleton PCollection<evidence.Standing> (an empty PCollection otherwise). The
// options must be valid (see Validate).
func Evidence(s beam.Scope, o Options) (ranks, times, standing beam.PCollection) {
	s = s.Scope("Evidence")
	e, err := o.Work.New()
	if err != nil {
		panic(fmt.Sprintf("pipelines: invalid options: %v", err))
	}
	fn := &transforms.RunFn{Work: o.Work, RunID: o.RunID, Workers: o.Workers, StartDir: o.StartDir, StateDir: o.StateDir, Spill: o.Spill}
	if estimators.IsRacer(e) {
		rounds := o.Rounds
		if rounds == 0 {
			rounds = DefaultRounds
		}
		return transforms.Race(s, e, o.Ranks, fn, rounds, o.Extra, o.Shards, o.Budget)
	}
	ranks, times = transforms.Estimate(s, e, o.Ranks, fn)
	return ranks, times, beam.CreateList(s, []evidence.Standing{})
}

// RankSelection adds the whole rank selection to the pipeline: the estimation, then a last step that
// gathers every rank, computes the posterior rank probabilities and the best rank, and writes
// the results to o.OutDir.
func RankSelection(s beam.Scope, o Options) {
	s = s.Scope("RankSelection")
	ranks, times, standing := Evidence(s, o)
	all := transforms.Gather(s, beam.DropKey(s, ranks))
	// Joined by key rather than read as side inputs, which not every runner has ready in time.
	joined := beam.CoGroupByKey(s, beam.ParDo(s, keyRanks, all), beam.ParDo(s, keyTime, beam.DropKey(s, times)), beam.ParDo(s, keyStanding, standing))
	beam.ParDo0(s, &writeFn{OutDir: o.OutDir, Meta: o.meta()}, joined)
}

// keyRanks, keyTime and keyStanding key every element by 0, for the join of the write step.
func keyRanks(v []evidence.RankEvidence) (int, []evidence.RankEvidence) { return 0, v }

func keyTime(v transforms.RankTime) (int, transforms.RankTime) { return 0, v }

func keyStanding(v evidence.Standing) (int, evidence.Standing) { return 0, v }

func (o Options) meta() Meta {
	m := o.Meta
	m.Model, m.Estimator = o.Work.Model, o.Work.Estimator
	m.Ranks = append([]int(nil), o.Ranks...)
	sort.Ints(m.Ranks)
	return m
}

// New validates the options and returns the rank-selection pipeline.
func New(o Options) (*beam.Pipeline, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.OutDir == "" {
		return nil, errors.New("no output directory")
	}
	p, s := beam.NewPipelineWithRoot()
	RankSelection(s, o)
	return p, nil
}

// writeFn writes the result of the gathered ranks.
type writeFn struct {
	OutDir string
	Meta   Meta
}

func (f *writeFn) ProcessElement(ctx context.Context, _ int, gathered func(*[]evidence.RankEvidence) bool, times func(*transforms.RankTime) bool, standings func(*evidence.Standing) bool) error {
	var ranks []evidence.RankEvidence
	if !gathered(&ranks) {
		return errors.New("no rank was estimated")
	}
	// A race ends in one standing; an estimation that does not race has none.
	var standing *evidence.Standing
	var st evidence.Standing
	for standings(&st) {
		standing = &evidence.Standing{Round: st.Round, Leader: st.Leader, Left: st.Left, TimeUp: st.TimeUp}
	}
	r, err := NewRaceResult(f.Meta, ranks, standing)
	if err != nil {
		return err
	}
	if _, ok := r.Best(); !ok {
		return fmt.Errorf("every rank diverged; first: %s", r.Divergences[0])
	}
	var t Timing
	var rt transforms.RankTime
	for times(&rt) {
		t.Ranks = append(t.Ranks, rt)
	}
	slices.SortFunc(t.Ranks, func(a, b transforms.RankTime) int { return a.Rank - b.Rank })
	return WriteResult(ctx, f.OutDir, r, t)
}
