package transforms

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/io/chainstate"
	"github.com/stirank/stirank/sti"
)

func init() {
	register.DoFn2x0[[]byte, func(sti.ChainID)](&fanOutFn{})
	register.Emitter1[sti.ChainID]()
	register.DoFn3x1[context.Context, sti.ChainID, func(int, evidence.ChainSummary), error](&RunChainFn{})
	register.Emitter2[int, evidence.ChainSummary]()
}

// FanOut returns one sti.ChainID per (rank, temperature index, chain replica) of the sweep,
// reshuffled so the runner can spread the chains over its workers.
func FanOut(s beam.Scope, ranks []int, temperatures, chains int) beam.PCollection {
	s = s.Scope("FanOut")
	imp := beam.Impulse(s)
	ids := beam.ParDo(s, &fanOutFn{Ranks: ranks, Temperatures: temperatures, Chains: chains}, imp)
	return beam.Reshuffle(s, ids)
}

// fanOutFn emits the chain IDs, the costliest (highest rank) first.
type fanOutFn struct {
	Ranks        []int
	Temperatures int
	Chains       int
}

func (f *fanOutFn) ProcessElement(_ []byte, emit func(sti.ChainID)) {
	ranks := append([]int(nil), f.Ranks...)
	sort.Sort(sort.Reverse(sort.IntSlice(ranks)))
	for _, r := range ranks {
		for ti := range f.Temperatures {
			for c := range f.Chains {
				emit(sti.ChainID{Rank: r, TIndex: ti, Chain: c})
			}
		}
	}
}

// RunChains runs one chain per sti.ChainID of ids and returns the summaries keyed by rank:
// a PCollection<KV<int, evidence.ChainSummary>>.
func RunChains(s beam.Scope, fn *RunChainFn, ids beam.PCollection) beam.PCollection {
	s = s.Scope("RunChains")
	return beam.ParDo(s, fn, ids)
}

// RunChainFn runs one STI chain per element through (*sti.Problem).RunChain. The problem is
// prepared once per worker process (see LoadProblem) and shared by every bundle of the process.
//
// The chains of a bundle run concurrently, up to Workers at a time across all the DoFn instances
// of the process: a runner such as prism hands the whole fan-out to one bundle, and running its
// elements one after the other would leave every core but one idle. Results are emitted on the
// bundle's goroutine as chains finish, and FinishBundle waits for the rest, so a bundle commits
// only when all its chains are done. Chains are seeded by their IDs alone, so the results do not
// depend on the order or the concurrency they run with.
type RunChainFn struct {
	Work Work
	// RunID names the in-process progress tracker (see Track) chains report to; empty for none.
	RunID string
	// Workers bounds the chains that run at once in a worker process; 0 means GOMAXPROCS.
	Workers int
	// StartDir, when set, is a directory of chain states (io/chainstate) that chains resume from
	// (sti.Resumption); a chain without a state file there starts cold. StateDir, when set,
	// receives every chain's final state. Both are local directories the workers share (one
	// machine, or a mount common to a cluster's workers) or Beam filesystem URLs. A retried chain
	// rewrites its state with the same bytes.
	StartDir, StateDir string

	problem *problemEntry
	chains  Concurrent[evidence.ChainSummary]
}

// Setup prepares (or finds) the worker's problem.
func (f *RunChainFn) Setup(ctx context.Context) error {
	e, err := loadEntry(ctx, f.Work)
	if err != nil {
		return err
	}
	f.problem = e
	f.chains.Start()
	return nil
}

// Teardown stops any chain still running (after a failed bundle).
func (f *RunChainFn) Teardown() { f.chains.Stop() }

// ProcessElement starts the chain id and emits the chains of the bundle that have finished.
func (f *RunChainFn) ProcessElement(ctx context.Context, id sti.ChainID, emit func(int, evidence.ChainSummary)) error {
	if err := f.flush(ctx, emit); err != nil {
		return err
	}
	err := f.chains.Go(f.Workers, func(ctx context.Context) (evidence.ChainSummary, error) {
		sum, final, err := f.run(ctx, id)
		if err == nil && (sum.Rank != id.Rank || sum.TIndex != id.TIndex || sum.Chain != id.Chain) {
			err = fmt.Errorf("chain %+v reported as %d/%d/%d", id, sum.Rank, sum.TIndex, sum.Chain)
		}
		if err == nil && final != nil && f.StateDir != "" {
			err = chainstate.Write(ctx, chainstate.Path(f.StateDir, id), final)
		}
		if err != nil {
			return sum, fmt.Errorf("chain rank %d, temperature %d, replica %d: %w", id.Rank, id.TIndex, id.Chain, err)
		}
		report(f.RunID, sum)
		return sum, nil
	})
	if err != nil {
		return err
	}
	return f.flush(ctx, emit)
}

// run runs chain id: resumed from the states in StartDir when it is set (see sti.Resumption),
// otherwise from the configured start.
func (f *RunChainFn) run(ctx context.Context, id sti.ChainID) (evidence.ChainSummary, *sti.State, error) {
	if f.StartDir == "" {
		return f.problem.p.Resume(ctx, id, nil)
	}
	return f.problem.resumption(f.StartDir).Run(ctx, id)
}

// FinishBundle waits for the bundle's chains and emits the rest.
func (f *RunChainFn) FinishBundle(ctx context.Context, emit func(int, evidence.ChainSummary)) error {
	f.chains.Wait()
	return f.flush(ctx, emit)
}

// flush emits the finished chains and counts their steps in Beam metrics.
func (f *RunChainFn) flush(ctx context.Context, emit func(int, evidence.ChainSummary)) error {
	done, err := f.chains.Take()
	if err != nil {
		return err
	}
	for _, s := range done {
		StepsCounter(s.Rank).Inc(ctx, int64(s.Steps))
		chainsCounter.Inc(ctx, 1)
		if s.Divergence != "" {
			divergedCounter.Inc(ctx, 1)
		}
		emit(s.Rank, s)
	}
	return nil
}

// Metrics namespace and names of the counters the pipeline reports.
const (
	MetricsNamespace = "stirank"
	ChainsMetric     = "chains_done"
	DivergedMetric   = "chains_diverged"
)

var (
	chainsCounter   = beam.NewCounter(MetricsNamespace, ChainsMetric)
	divergedCounter = beam.NewCounter(MetricsNamespace, DivergedMetric)
)

// StepsMetric names the counter of sampler steps done for a rank.
func StepsMetric(rank int) string { return fmt.Sprintf("steps_rank_%d", rank) }

// StepsCounter is the counter of sampler steps done for a rank.
func StepsCounter(rank int) beam.Counter { return beam.NewCounter(MetricsNamespace, StepsMetric(rank)) }
