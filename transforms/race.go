package transforms

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
)

func init() {
	register.Function2x2(stripState)
	register.Function2x2(keyResult)
	register.Function1x2(keyStanding)
	register.DoFn2x0[estimators.Task, func(estimators.Task)](&shardFn{})
	register.DoFn3x0[int, estimators.Result, func(int, estimators.Result)](&bucketFn{})
	register.DoFn7x1[context.Context, int, func(*estimators.Result) bool, func(*evidence.Standing) bool, func(evidence.Standing), func(int, evidence.RankEvidence), func(int, goOn), error](&judgeFn{})
	register.Iter1[estimators.Result]()
	register.Iter1[evidence.Standing]()
	register.Iter1[goOn]()
	register.Emitter1[evidence.Standing]()
	register.Emitter2[int, evidence.RankEvidence]()
	register.Emitter2[int, goOn]()
	register.Emitter2[int, estimators.Result]()
	register.DoFn5x1[context.Context, int, func(*estimators.Result) bool, func(*goOn) bool, func(estimators.Task), error](&continueFn{})
}

// Race runs a racing estimator (estimators.Racer) for ranks in at most rounds rounds, as one job:
// the start stages (Expand), then round after round the chains the race still runs (Run), and
// after each round the race judged (estimators.Judge) from every task's results so far joined
// with the standing before, and the next round's tasks continued from this round's states for
// the ranks that go on (estimators.Continue). States and decisions travel between rounds as
// PCollections, joined by key (CoGroupByKey) rather than read as side inputs, so the job runs on
// any runner; a round costs two shuffles, since a runner such as prism pays for every stage
// whatever it carries. The chains travel in shards parts (a task stays in its part from round
// to round, ShardOf): a runner may hand a stage's whole input to a worker in one message, which
// prism does and gRPC caps at 2 GB, and the states of a large tensor's chains weigh more. It
// returns every rank's evidence after the last round, a PCollection<KV<int,
// evidence.RankEvidence>>, their costs, a PCollection<KV<int, RankTime>>, and the final
// standing, a PCollection<evidence.Standing> of one element. extra is how many rounds a rank may
// run past the one that completes its configured budget (estimators.Rounder.FullRound), and
// budget the wall-clock time the race may take (its judges read the worker's clock).
func Race(s beam.Scope, e estimators.Estimator, ranks []int, fn *RunFn, rounds, extra, shards int, budget estimators.TimeBudget) (ranksEv, times, standing beam.PCollection) {
	s = s.Scope("Race")
	shards = max(shards, 1)
	first, next := Expand(s, fn, FanOut(s, e, ranks))
	all := []beam.PCollection{first}
	tasks := make([]beam.PCollection, shards)
	for p := range tasks {
		part := next
		if shards > 1 {
			part = beam.ParDo(s, &shardFn{Shard: p, Shards: shards}, next)
		}
		tasks[p] = beam.Reshuffle(s, part)
	}
	standing = beam.Create(s, evidence.Standing{Round: -1})
	for k := range rounds {
		rs := s.Scope(fmt.Sprintf("Round%d", k))
		outs := make([]beam.PCollection, shards)
		for p := range tasks {
			outs[p] = Run(rs, fn, tasks[p])
			all = append(all, beam.ParDo(rs, stripState, outs[p]))
		}
		joined := beam.CoGroupByKey(rs, beam.ParDo(rs, keyResult, beam.Flatten(rs, all...)), beam.ParDo(rs, keyStanding, standing))
		var goes beam.PCollection
		standing, ranksEv, goes = beam.ParDo3(rs, &judgeFn{Work: fn.Work, Ranks: ranks, Round: k, Extra: extra, Budget: budget, Buckets: raceBuckets, RunID: fn.RunID, StartDir: fn.StartDir, StateDir: fn.StateDir}, joined)
		if k+1 < rounds {
			for p := range tasks {
				bucketed := beam.ParDo(rs, &bucketFn{Buckets: raceBuckets}, outs[p])
				tasks[p] = beam.ParDo(rs, &continueFn{RunID: fn.RunID}, beam.CoGroupByKey(rs, bucketed, goes))
			}
		}
	}
	return ranksEv, TimePerRank(s, beam.Flatten(s, all...)), standing
}

// raceBuckets is how many keys a round's results are spread over to meet the ranks that go on
// (bucketFn): enough that a runner with many workers shares the next round's chains among
// them, as a shuffle of their own would.
const raceBuckets = 64

// ShardOf is the part of Race's shards that task t travels in: a mix of its rank, rung, replica
// and chain, so that every rank's chains spread over all parts.
func ShardOf(t estimators.Task, shards int) int {
	h := uint64(t.Rank)*0x9e3779b97f4a7c15 ^ uint64(t.Index)*0xbf58476d1ce4e5b9 ^ uint64(t.Replica)*0x94d049bb133111eb ^ uint64(t.Chain)*0x2545f4914f6cdd1d
	return int((h ^ h>>31) % uint64(shards))
}

// shardFn keeps the tasks of part Shard of Shards (ShardOf).
type shardFn struct {
	Shard, Shards int
}

func (f *shardFn) ProcessElement(t estimators.Task, emit func(estimators.Task)) {
	if ShardOf(t, f.Shards) == f.Shard {
		emit(t)
	}
}

// stripState drops a result's state, which the next round reads and the judge does not.
func stripState(rank int, r estimators.Result) (int, estimators.Result) {
	r.State, r.Stored = nil, ""
	return rank, r
}

// keyResult and keyStanding key every element by 0, for the join of every result with the
// standing before. (Beam registers functions by name, which a generic function's instances
// share.)
func keyResult(_ int, r estimators.Result) (int, estimators.Result) { return 0, r }

func keyStanding(v evidence.Standing) (int, evidence.Standing) { return 0, v }

// judgeFn judges the race after its round (estimators.Judge) from every task's results so far
// and the standing before, joined by key: it emits the standing, every rank's evidence keyed by
// rank, and to every one of Buckets keys the ranks that go on (goOn); and tells the in-process
// progress tracker of RunID. It knows each rank's configured budget from its worker's problem.
type judgeFn struct {
	Work               Work
	Ranks              []int
	Round, Extra       int
	Budget             estimators.TimeBudget
	Buckets            int
	RunID              string
	StartDir, StateDir string

	estimator estimators.Estimator
	rounder   estimators.Rounder
}

func (f *judgeFn) Setup(ctx context.Context) error {
	_, p, err := loadResumed(ctx, f.Work, f.StartDir, f.StateDir)
	if err != nil {
		return err
	}
	r, ok := p.(estimators.Rounder)
	if !ok {
		return fmt.Errorf("estimator %s does not run in rounds", f.Work.Estimator.Name)
	}
	f.rounder = r
	f.estimator, err = estimators.New(f.Work.Model, f.Work.Estimator)
	return err
}

func (f *judgeFn) ProcessElement(ctx context.Context, _ int, results func(*estimators.Result) bool, prev func(*evidence.Standing) bool, emit func(evidence.Standing), emitEvidence func(int, evidence.RankEvidence), emitGoOn func(int, goOn)) error {
	reportReads(ctx)
	byRank := map[int][]estimators.Result{}
	var r estimators.Result
	for results(&r) {
		byRank[r.Task.Rank] = append(byRank[r.Task.Rank], r)
	}
	if len(byRank) == 0 {
		return fmt.Errorf("round %d: no evidence to decide on", f.Round)
	}
	var before evidence.Standing
	if !prev(&before) {
		return fmt.Errorf("round %d: no standing before it", f.Round)
	}
	evs, after, plain, err := estimators.Judge(f.estimator, f.rounder, f.Ranks, byRank, before, f.Round, f.Extra, f.Budget, time.Now().UnixNano())
	if err != nil {
		return fmt.Errorf("round %d: %w", f.Round, err)
	}
	publish(f.RunID, after)
	emit(after)
	for _, re := range evs {
		emitEvidence(re.Rank, re)
	}
	var g goOn
	for _, rank := range f.Ranks {
		if p, ok := plain[rank]; ok {
			g.Ranks, g.Plain = append(g.Ranks, rank), append(g.Plain, p)
		}
	}
	for b := range f.Buckets {
		emitGoOn(b, g)
	}
	return nil
}

// goOn lists the ranks whose chains go on to the next round, and for each whether it goes on
// plain, without control variates (estimators.Judge).
type goOn struct {
	Ranks []int
	Plain []bool
}

// bucketFn keys a round's results by one of Buckets keys, a mix of the task alone (ShardOf), for
// the join with the ranks that go on.
type bucketFn struct {
	Buckets int
}

func (f *bucketFn) ProcessElement(_ int, r estimators.Result, emit func(int, estimators.Result)) {
	emit(ShardOf(r.Task, f.Buckets), r)
}

// continueFn emits, for each result of its round whose task stopped in a state and whose rank
// goes on (goOn), the task that carries it on in the next round.
type continueFn struct {
	RunID string
}

func (f *continueFn) ProcessElement(ctx context.Context, _ int, results func(*estimators.Result) bool, goes func(*goOn) bool, emit func(estimators.Task)) error {
	reportReads(ctx)
	var g goOn
	if !goes(&g) {
		return fmt.Errorf("the race said nothing of the round's ranks")
	}
	var r estimators.Result
	for results(&r) {
		i := slices.Index(g.Ranks, r.Task.Rank)
		if i < 0 || (r.State == nil && r.Stored == "") {
			continue
		}
		t := estimators.Continue(r, g.Plain[i])
		planned(f.RunID, []estimators.Task{t})
		emit(t)
	}
	return nil
}
