package estimators

import (
	"context"
	"fmt"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/sti"
)

// PhaseKind is the Task.Kind of a rank's phase check (sti.Problem.PhaseCheck): a walk back up the
// ladder from the state the start stage left at rung Index (sti.RankStart.Check), whose means
// the rank's combiner compares with its rungs' (evidence.PhaseWalk).
const PhaseKind = "phase"

func init() {
	registerCheck(PhaseKind, stiCheck{
		run: func(ctx context.Context, p *sti.Problem, t Task) (Result, error) {
			theta, err := Unpack[[]float64](t.Payload)
			if err != nil {
				return Result{}, fmt.Errorf("rank %d: phase check: %w", t.Rank, err)
			}
			means, steps, cells, err := p.PhaseCheck(ctx, t.Rank, t.Index, theta)
			if err != nil {
				return Result{}, err
			}
			return Result{Task: t, Steps: steps, CellEvals: cells, Summary: Pack(evidence.PhaseWalk{From: t.Index, Means: means})}, nil
		},
		steps: func(c sti.Config, t Task, fixed, order, nnz int) int {
			return c.CheckSteps(t.Rank, fixed, order, nnz)
		},
		read: func(summary []byte) (evidence.Check, error) {
			return Unpack[evidence.PhaseWalk](summary)
		},
	})
}

// phaseTask is the follow-on task of a rank whose start stage st left the phase check a state,
// nil where it left none.
func phaseTask(rank int, st *sti.RankStart) []Task {
	if st.Check == nil {
		return nil
	}
	return []Task{{Rank: rank, Stage: 1, Index: st.CheckFrom, Kind: PhaseKind, Payload: Pack(st.Check)}}
}
