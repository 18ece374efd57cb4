package baselines

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/stirank/stirank/evidence"
)

// Method names.
const (
	MethodChib = "chib"
	MethodAIS  = "ais"
)

// Summary is what one replica of a method reports for its rank: a Chib replica's estimate, or an
// AIS run's log weight. All fields are exported so it can cross Beam stages.
type Summary struct {
	Method        string
	Rank, Replica int
	// LogEvidence is a Chib replica's estimate of log p(X | R), or an AIS run's log weight.
	LogEvidence float64
	// StdErr is a Chib replica's batch-means standard error (NaN for an AIS run).
	StdErr float64
	// LabelSwitching is a Chib replica's label-switching diagnostic (see ChibResult).
	LabelSwitching float64
	// Sweeps counts Gibbs or slice-sampling sweeps; CellEvals per-cell evaluations.
	Sweeps    int
	CellEvals int64
	// Divergence describes a non-finite value; empty when there was none.
	Divergence string
}

// Summary returns the replica's summary.
func (r ChibResult) Summary() Summary {
	return Summary{Method: MethodChib, Rank: r.Rank, Replica: r.Replica, LogEvidence: r.LogEvidence, StdErr: r.StdErr,
		LabelSwitching: r.LabelSwitching, Sweeps: r.Sweeps, CellEvals: r.CellEvals, Divergence: r.Divergence}
}

// Summary returns the run's summary.
func (r AISRun) Summary() Summary {
	return Summary{Method: MethodAIS, Rank: r.Rank, Replica: r.Run, LogEvidence: r.LogWeight, StdErr: math.NaN(),
		Sweeps: r.Sweeps, CellEvals: r.CellEvals, Divergence: r.Divergence}
}

// Run runs replica replica of method at rank R.
func (p *Problem) Run(ctx context.Context, method string, R, replica int, chib ChibConfig, ais AISConfig) (Summary, error) {
	switch method {
	case MethodChib:
		r, err := p.Chib(ctx, R, replica, chib)
		return r.Summary(), err
	case MethodAIS:
		r, err := p.AIS(ctx, R, replica, ais)
		return r.Summary(), err
	}
	return Summary{}, fmt.Errorf("unknown method %q (chib or ais)", method)
}

// CombineRank reduces the replicas of one rank into its evidence, whatever order they come in:
//
//   - chib: the mean of the replicas' estimates; StdErrWithin = √(Σ se_k²)/K from their batch
//     means, and StdErr the larger of that and the replicas' spread sd/√K (K ≥ 2);
//   - ais: log((1/S) Σ_s w_s) over the runs, with the delta-method standard error
//     sd(w)/(√S·mean w) as both StdErr and StdErrWithin.
//
// Trapezoid is NaN (there is no ladder) and Rungs is empty. A replica that diverged leaves the
// rank without an estimate (LogEvidence NaN), as in sti.
func CombineRank(method string, sums []Summary) (evidence.RankEvidence, error) {
	if len(sums) == 0 {
		return evidence.RankEvidence{}, fmt.Errorf("no replica summaries")
	}
	ss := slices.Clone(sums)
	slices.SortFunc(ss, func(a, b Summary) int { return a.Replica - b.Replica })
	re := evidence.RankEvidence{Rank: ss[0].Rank, Trapezoid: math.NaN()}
	for i, s := range ss {
		if s.Rank != re.Rank {
			return re, fmt.Errorf("summaries of ranks %d and %d mixed", re.Rank, s.Rank)
		}
		if s.Method != method {
			return re, fmt.Errorf("rank %d: a %q summary among %q ones", s.Rank, s.Method, method)
		}
		if i > 0 && s.Replica == ss[i-1].Replica {
			return re, fmt.Errorf("rank %d: replica %d reported twice", s.Rank, s.Replica)
		}
		re.Steps += s.Sweeps
		re.CellEvals += s.CellEvals
		if s.Divergence != "" {
			re.Diverged = append(re.Diverged, s.Divergence)
		}
	}
	if len(re.Diverged) > 0 {
		re.LogEvidence, re.StdErr, re.StdErrWithin = math.NaN(), math.NaN(), math.NaN()
		return re, nil
	}
	K := float64(len(ss))
	switch method {
	case MethodChib:
		mean, within := 0.0, 0.0
		for _, s := range ss {
			mean += s.LogEvidence
			within += s.StdErr * s.StdErr
		}
		mean /= K
		within = math.Sqrt(within) / K
		se := within
		if len(ss) >= 2 {
			v := 0.0
			for _, s := range ss {
				v += (s.LogEvidence - mean) * (s.LogEvidence - mean)
			}
			se = max(se, math.Sqrt(v/(K-1)/K))
		}
		re.LogEvidence, re.StdErr, re.StdErrWithin = mean, se, within
	case MethodAIS:
		lw := make([]float64, len(ss))
		for i, s := range ss {
			lw[i] = s.LogEvidence
		}
		re.LogEvidence, re.StdErr = logMeanExp(lw)
		re.StdErrWithin = re.StdErr
	default:
		return re, fmt.Errorf("unknown method %q (chib or ais)", method)
	}
	return re, nil
}
