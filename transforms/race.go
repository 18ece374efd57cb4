package transforms

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
)

func init() {
	register.Function2x2(stripState)
	register.DoFn3x1[[]evidence.RankEvidence, evidence.Standing, func(evidence.Standing), error](&decideFn{})
	register.Emitter1[evidence.Standing]()
	register.DoFn5x1[context.Context, estimators.Result, evidence.Standing, []evidence.RankEvidence, func(estimators.Task), error](&continueFn{})
}

// Race runs a racing estimator (estimators.Racer) for ranks in at most rounds rounds, as one job:
// the start stages (Expand), then round after round the chains the race still runs (Run), each
// round's results combined per rank with every earlier round's (CombinePerRank keeps each
// task's latest), the race's standing decided from them (evidence.Decide), and the next
// round's tasks continued from this round's states for the ranks that go on
// (evidence.Standing.Continues; estimators.Continue). States and decisions travel between rounds
// as PCollections, so the job runs on any runner, and a round with nothing to run costs only its
// stages. It returns every rank's evidence after the last round, a PCollection<KV<int,
// evidence.RankEvidence>>, their costs, a PCollection<KV<int, RankTime>>, and the final
// standing, a singleton PCollection<evidence.Standing>. extra is how many rounds a rank may run
// past the one that completes its configured budget (estimators.Rounder.FullRound).
func Race(s beam.Scope, e estimators.Estimator, ranks []int, fn *RunFn, rounds, extra int) (ranksEv, times, standing beam.PCollection) {
	s = s.Scope("Race")
	first, next := Expand(s, fn, FanOut(s, e, ranks))
	all := []beam.PCollection{first}
	tasks := beam.Reshuffle(s, next)
	standing = beam.Create(s, evidence.Standing{Round: -1})
	for k := range rounds {
		rs := s.Scope(fmt.Sprintf("Round%d", k))
		out := Run(rs, fn, tasks)
		all = append(all, beam.ParDo(rs, stripState, out))
		ranksEv = CombinePerRank(rs, fn.Work, beam.Flatten(rs, all...))
		gathered := Gather(rs, beam.DropKey(rs, ranksEv))
		standing = beam.ParDo(rs, &decideFn{Round: k}, gathered, beam.SideInput{Input: standing})
		if k+1 < rounds {
			tasks = beam.Reshuffle(rs, beam.ParDo(rs, &continueFn{Work: fn.Work, Ranks: ranks, Round: k, Extra: extra, StartDir: fn.StartDir, StateDir: fn.StateDir},
				beam.DropKey(rs, out), beam.SideInput{Input: standing}, beam.SideInput{Input: gathered}))
		}
	}
	return ranksEv, TimePerRank(s, beam.Flatten(s, all...)), standing
}

// stripState drops a result's state, which the next round reads and the rank's combine does not.
func stripState(rank int, r estimators.Result) (int, estimators.Result) {
	r.State = nil
	return rank, r
}

// decideFn decides the race's standing after its round from every rank's evidence and the
// standing before.
type decideFn struct {
	Round int
}

func (f *decideFn) ProcessElement(ranks []evidence.RankEvidence, prev evidence.Standing, emit func(evidence.Standing)) error {
	emit(evidence.Decide(prev, ranks, f.Round))
	return nil
}

// continueFn emits, for a result of its round whose task stopped in a state, the task that
// carries it on in the next round, where the race runs its rank on (evidence.Standing.Continues)
// and the rank has not run its last round: extra past the round that completes its configured
// budget, which the worker's problem knows from the data (estimators.Rounder).
type continueFn struct {
	Work               Work
	Ranks              []int
	Round, Extra       int
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

func (f *continueFn) ProcessElement(_ context.Context, r estimators.Result, standing evidence.Standing, ranks []evidence.RankEvidence, emit func(estimators.Task)) error {
	if r.State == nil {
		return nil
	}
	i := slices.IndexFunc(ranks, func(re evidence.RankEvidence) bool { return re.Rank == r.Task.Rank })
	if i < 0 {
		return fmt.Errorf("round %d: no evidence of rank %d", f.Round, r.Task.Rank)
	}
	if standing.Continues(f.Ranks, ranks[i], f.Round+1, f.rounder.FullRound(r.Task.Rank)+f.Extra) {
		emit(estimators.Continue(r))
	}
	return nil
}
