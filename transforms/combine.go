package transforms

import (
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stirank/stirank/evidence"
)

func init() {
	register.Combiner3[summaries, evidence.ChainSummary, evidence.RankEvidence](&RankEvidenceFn{})
	register.Combiner3[rankList, evidence.RankEvidence, []evidence.RankEvidence](&gatherFn{})
}

// CombinePerRank reduces a PCollection<KV<int, evidence.ChainSummary>> keyed by rank into a
// PCollection<KV<int, evidence.RankEvidence>>, one element per rank, with evidence.Combine.
func CombinePerRank(s beam.Scope, ladder evidence.Ladder, summaries beam.PCollection) beam.PCollection {
	s = s.Scope("CombinePerRank")
	return beam.CombinePerKey(s, &RankEvidenceFn{Ladder: ladder}, summaries)
}

// summaries is the accumulator of RankEvidenceFn: the chain summaries seen so far.
type summaries struct {
	Chains []evidence.ChainSummary
}

// RankEvidenceFn is a CombineFn from the chain summaries of one rank to its evidence. It keeps
// every summary (a few hundred small records per rank) and sorts them by temperature and replica
// before evidence.Combine, so the result is bit-identical whatever order the bundles arrive in.
type RankEvidenceFn struct {
	Ladder evidence.Ladder
}

func (f *RankEvidenceFn) CreateAccumulator() summaries { return summaries{} }

func (f *RankEvidenceFn) AddInput(a summaries, s evidence.ChainSummary) summaries {
	a.Chains = append(a.Chains, s)
	return a
}

func (f *RankEvidenceFn) MergeAccumulators(a, b summaries) summaries {
	a.Chains = append(a.Chains, b.Chains...)
	return a
}

func (f *RankEvidenceFn) ExtractOutput(a summaries) (evidence.RankEvidence, error) {
	cs := append([]evidence.ChainSummary(nil), a.Chains...)
	SortSummaries(cs)
	for i := 1; i < len(cs); i++ {
		if cs[i].Rank == cs[i-1].Rank && cs[i].TIndex == cs[i-1].TIndex && cs[i].Chain == cs[i-1].Chain {
			return evidence.RankEvidence{}, fmt.Errorf("rank %d: chain %d at temperature %d reported twice", cs[i].Rank, cs[i].Chain, cs[i].TIndex)
		}
	}
	return evidence.Combine(f.Ladder, cs)
}

// SortSummaries orders chain summaries by rank, temperature index and replica.
func SortSummaries(cs []evidence.ChainSummary) {
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.Rank != b.Rank {
			return a.Rank < b.Rank
		}
		if a.TIndex != b.TIndex {
			return a.TIndex < b.TIndex
		}
		return a.Chain < b.Chain
	})
}

// Gather collects a PCollection<evidence.RankEvidence> into a single []evidence.RankEvidence
// ordered by rank.
func Gather(s beam.Scope, ranks beam.PCollection) beam.PCollection {
	s = s.Scope("Gather")
	return beam.Combine(s, &gatherFn{}, ranks)
}

type rankList struct {
	Ranks []evidence.RankEvidence
}

type gatherFn struct{}

func (gatherFn) CreateAccumulator() rankList { return rankList{} }

func (gatherFn) AddInput(a rankList, r evidence.RankEvidence) rankList {
	a.Ranks = append(a.Ranks, r)
	return a
}

func (gatherFn) MergeAccumulators(a, b rankList) rankList {
	a.Ranks = append(a.Ranks, b.Ranks...)
	return a
}

func (gatherFn) ExtractOutput(a rankList) []evidence.RankEvidence {
	out := append([]evidence.RankEvidence(nil), a.Ranks...)
	sort.Slice(out, func(i, j int) bool { return out[i].Rank < out[j].Rank })
	return out
}
