package transforms

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
)

func init() {
	register.Function2x2(stripState)
	register.DoFn2x0[estimators.Task, func(estimators.Task)](&shardFn{})
	register.Function1x2(keyEvidence)
	register.Function1x2(keyStanding)
	register.DoFn5x1[int, func(*[]evidence.RankEvidence) bool, func(*evidence.Standing) bool, func(evidence.Standing), func(int, verdict), error](&decideFn{})
	register.Iter1[[]evidence.RankEvidence]()
	register.Iter1[evidence.Standing]()
	register.Emitter1[evidence.Standing]()
	register.Emitter2[int, verdict]()
	register.DoFn5x1[context.Context, int, func(*estimators.Result) bool, func(*verdict) bool, func(estimators.Task), error](&continueFn{})
	register.Iter1[estimators.Result]()
	register.Iter1[verdict]()
}

// Race runs a racing estimator (estimators.Racer) for ranks in at most rounds rounds, as one job:
// the start stages (Expand), then round after round the chains the race still runs (Run), each
// round's results combined per rank with every earlier round's (CombinePerRank keeps each
// task's latest), the race's standing decided from them (evidence.Decide), and the next
// round's tasks continued from this round's states for the ranks that go on
// (evidence.Standing.Continues; estimators.Continue). States and decisions travel between rounds
// as PCollections, joined by key (CoGroupByKey) rather than read as side inputs, so the job runs
// on any runner, and a round with nothing to run costs only its stages. The chains travel in
// shards parts (a task stays in its part from round to round, ShardOf): a runner may hand a
// stage's whole input to a worker in one message, which prism does and gRPC caps at 2 GB, and
// the states of a large tensor's chains weigh more. It returns every rank's evidence after the
// last round, a PCollection<KV<int, evidence.RankEvidence>>, their costs, a
// PCollection<KV<int, RankTime>>, and the final standing, a PCollection<evidence.Standing> of one
// element. extra is how many rounds a rank may run past the one that completes its configured
// budget (estimators.Rounder.FullRound).
func Race(s beam.Scope, e estimators.Estimator, ranks []int, fn *RunFn, rounds, extra, shards int) (ranksEv, times, standing beam.PCollection) {
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
		ranksEv = CombinePerRank(rs, fn.Work, beam.Flatten(rs, all...))
		gathered := Gather(rs, beam.DropKey(rs, ranksEv))
		joined := beam.CoGroupByKey(rs, beam.ParDo(rs, keyEvidence, gathered), beam.ParDo(rs, keyStanding, standing))
		var verdicts beam.PCollection
		standing, verdicts = beam.ParDo2(rs, &decideFn{Round: k, RunID: fn.RunID}, joined)
		if k+1 < rounds {
			cont := &continueFn{Work: fn.Work, Ranks: ranks, Round: k, Extra: extra, RunID: fn.RunID, StartDir: fn.StartDir, StateDir: fn.StateDir}
			for p := range tasks {
				tasks[p] = beam.Reshuffle(rs, beam.ParDo(rs, cont, beam.CoGroupByKey(rs, outs[p], verdicts)))
			}
		}
	}
	return ranksEv, TimePerRank(s, beam.Flatten(s, all...)), standing
}

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

// stripState drops a result's state, which the next round reads and the rank's combine does not.
func stripState(rank int, r estimators.Result) (int, estimators.Result) {
	r.State, r.Stored = nil, ""
	return rank, r
}

// keyEvidence and keyStanding key every element by 0, for a join of collections of one element
// each. (Beam registers functions by name, which a generic function's instances share.)
func keyEvidence(v []evidence.RankEvidence) (int, []evidence.RankEvidence) { return 0, v }

func keyStanding(v evidence.Standing) (int, evidence.Standing) { return 0, v }

// decideFn decides the race's standing after its round from every rank's evidence and the
// standing before, joined by key, emits it and, for every rank, its verdict (keyed by rank, to
// join with the round's results), and tells the in-process progress tracker of RunID.
type decideFn struct {
	Round int
	RunID string
}

func (f *decideFn) ProcessElement(_ int, ranks func(*[]evidence.RankEvidence) bool, prev func(*evidence.Standing) bool, emit func(evidence.Standing), emitVerdict func(int, verdict)) error {
	var evs []evidence.RankEvidence
	if !ranks(&evs) {
		return fmt.Errorf("round %d: no evidence to decide on", f.Round)
	}
	var p evidence.Standing
	if !prev(&p) {
		return fmt.Errorf("round %d: no standing before it", f.Round)
	}
	s := evidence.Decide(p, evs, f.Round)
	publish(f.RunID, s)
	emit(s)
	for _, re := range evs {
		emitVerdict(re.Rank, verdict{Standing: s, Evidence: re})
	}
	return nil
}

// verdict is what the race says of a rank after a round: the standing and the rank's evidence,
// from which Standing.Continues decides whether its tasks go on.
type verdict struct {
	Standing evidence.Standing
	Evidence evidence.RankEvidence
}

// continueFn emits, for each result of its round whose task stopped in a state, the task that
// carries it on in the next round, where the race runs its rank on (evidence.Standing.Continues)
// and the rank has not run its last round: extra past the round that completes its configured
// budget, which the worker's problem knows from the data (estimators.Rounder).
type continueFn struct {
	Work               Work
	Ranks              []int
	Round, Extra       int
	RunID              string
	StartDir, StateDir string

	rounder estimators.Rounder
}

func (f *continueFn) Setup(ctx context.Context) error {
	_, p, err := loadResumed(ctx, f.Work, f.StartDir, f.StateDir)
	if err != nil {
		return err
	}
	r, ok := p.(estimators.Rounder)
	if !ok {
		return fmt.Errorf("estimator %s does not run in rounds", f.Work.Estimator.Name)
	}
	f.rounder = r
	return nil
}

func (f *continueFn) ProcessElement(ctx context.Context, rank int, results func(*estimators.Result) bool, verdicts func(*verdict) bool, emit func(estimators.Task)) error {
	reportReads(ctx)
	var v verdict
	if !verdicts(&v) {
		return fmt.Errorf("round %d: the race said nothing of rank %d", f.Round, rank)
	}
	if !v.Standing.Continues(f.Ranks, v.Evidence, f.Round+1, f.rounder.FullRound(rank)+f.Extra) {
		return nil
	}
	var r estimators.Result
	for results(&r) {
		if r.State == nil && r.Stored == "" {
			continue
		}
		t := estimators.Continue(r, !f.rounder.Controlled(v.Evidence))
		planned(f.RunID, []estimators.Task{t})
		emit(t)
	}
	return nil
}
