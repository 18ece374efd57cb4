package transforms

import (
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
)

func init() {
	register.Combiner3[results, estimators.Result, evidence.RankEvidence](&RankEvidenceFn{})
	register.Combiner3[rankList, evidence.RankEvidence, []evidence.RankEvidence](&gatherFn{})
}

// CombinePerRank reduces a PCollection<KV<int, estimators.Result>> keyed by rank into a
// PCollection<KV<int, evidence.RankEvidence>>, one element per rank, with the work's estimator.
func CombinePerRank(s beam.Scope, w Work, results beam.PCollection) beam.PCollection {
	s = s.Scope("CombinePerRank")
	return beam.CombinePerKey(s, &RankEvidenceFn{Model: w.Model, Estimator: w.Estimator}, results)
}

// results is the accumulator of RankEvidenceFn: the task results seen so far.
type results struct {
	Results []estimators.Result
}

// RankEvidenceFn is a CombineFn from the task results of one rank to its evidence. It keeps
// every result (a few hundred small records per rank) and sorts them by task before the
// estimator's Combine, so the evidence is bit-identical whatever order the bundles arrive in.
type RankEvidenceFn struct {
	Model     models.Spec
	Estimator estimators.Spec
}

func (f *RankEvidenceFn) CreateAccumulator() results { return results{} }

func (f *RankEvidenceFn) AddInput(a results, r estimators.Result) results {
	a.Results = append(a.Results, r)
	return a
}

func (f *RankEvidenceFn) MergeAccumulators(a, b results) results {
	a.Results = append(a.Results, b.Results...)
	return a
}

func (f *RankEvidenceFn) ExtractOutput(a results) (evidence.RankEvidence, error) {
	if len(a.Results) == 0 {
		return evidence.RankEvidence{}, fmt.Errorf("no task results")
	}
	e, err := estimators.New(f.Model, f.Estimator)
	if err != nil {
		return evidence.RankEvidence{}, err
	}
	return estimators.CombineRank(e, a.Results[0].Task.Rank, a.Results)
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
