package sti

import (
	"fmt"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/tensor"
)

// LadderTolerance is the error, in nats, that the fitted ladder's rule may leave on the exact
// rank-1 curve (Config.FitLadder). At rank R about R times as many parameters bend near the same
// temperatures as at rank 1, and their discretisation errors add up, so the rank-1 error is kept
// well below the Monte Carlo error: with 0.1, a 250×250 NMF matrix with counts in the hundreds gets exponent 8
// (0.08 nat on that curve, 0.69 with 6), the 257×275 speech spectrogram and the small sets of go
// run ./bench/anneal keep 6, and the Facebook-size CP tensor gets 7.
const LadderTolerance = 0.1

// rank1Curve is the exact rank-1 curve log Z(t) of spec's model on data, or nil for a model
// without one.
func rank1Curve(data *tensor.Sparse, spec models.Spec) (func(t float64) (float64, error), error) {
	info, err := models.Lookup(spec.Name)
	if err != nil || info.ExpPoissonRates == nil {
		return nil, nil
	}
	prior, err := models.PoissonPrior(data, 1, spec.Params)
	if err != nil {
		return nil, err
	}
	return models.Rank1LogPowerPrior(data, prior)
}

// fitLadder is the power ladder of T rungs that evidence.FitPower fits to the exact rank-1 curve
// logZ.
func fitLadder(logZ func(t float64) (float64, error), T int) (evidence.Ladder, error) {
	l, _, err := evidence.FitPower(T, logZ, LadderTolerance)
	if err != nil {
		return nil, fmt.Errorf("fitting the ladder to the data: %w", err)
	}
	return l, nil
}
