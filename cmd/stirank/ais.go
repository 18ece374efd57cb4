package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	core "github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/estimators"
)

func init() {
	register(command{
		name:    core.MethodAIS,
		summary: "baseline: estimate log p(X | R) for every candidate rank by annealed importance sampling on Beam",
		run:     runAIS,
	})
}

func runAIS(ctx context.Context, args []string, stdout io.Writer) error {
	d := core.DefaultAIS()
	f := &baselineFlags{supported: estimators.ChibAISModels()}
	var (
		temperatures, sweeps int
		refBurnin, refSweeps int
		schedule             string
		width                float64
	)
	fs := newFlagSet(core.MethodAIS, baselineSynopsis(f.supported))
	addBaselineFlags(fs, f, 8, "independent AIS runs per rank (the estimate is the log of their mean weight)")
	fs.IntVar(&temperatures, "temperatures", d.Temperatures, fmt.Sprintf("intermediate distributions p(θ) p(X | θ)^t, t from 0 to 1 (%d with --reference-sweeps)", core.ReferenceTemperatures))
	fs.StringVar(&schedule, "schedule", "power:4", "annealing schedule: power:C (t_k = (k/K)^C) or sigmoid:S (Grosse et al. 2015, logistic on [-S, S]); sigmoid:6 with --reference-sweeps")
	fs.IntVar(&sweeps, "sweeps", d.Sweeps, "sweeps at each temperature: of the Gibbs kernel from the prior, of slice sampling from a reference")
	fs.Float64Var(&width, "width", d.Width, "initial slice width, in e-folds of a factor entry (with --reference-sweeps)")
	fs.IntVar(&refSweeps, "reference-sweeps", 0, "anneal from a Gamma reference fitted to this many Gibbs sweeps at t = 1 instead of from the prior (0: from the prior)")
	fs.IntVar(&refBurnin, "reference-burnin", core.DefaultReferenceBurnin, "Gibbs sweeps of burn-in before the reference's sweeps (with --reference-sweeps)")
	help := baselineModels() + `
annealed importance sampling (Neal 2001) from the prior to the posterior along the power
posteriors p(θ) p(X | θ)^t, as a baseline for stirank select: the same data, rank and output
conventions (evidence.json, evidence.csv), one Beam element per (rank, run). The transitions are
sweeps of the Gibbs kernel of the augmented model that stirank select's chains run, exact for
every t. Too few temperatures bias the estimate low by more than its standard error shows: double
--temperatures until it stops moving.

With --reference-sweeps S each run first fits a product of Gamma densities, one per factor entry,
to S Gibbs sweeps at t = 1 (after --reference-burnin sweeps from the best of 4 short runs), averages
it over the relabelings of the components, and anneals from it to the posterior along
q^(1-t) (p(θ) p(X | θ))^t by coordinate-wise slice sampling of the log-factors, with scale moves
after every sweep. On large informative data, where the
path from the prior changes phase and AIS from it keeps rising with the temperatures, this path
does not. It estimates the mass of the basin the Gibbs run found and its relabelings, as Chib's
method does: at over-fitted ranks of small data with large counts, whose posterior has other
basins, it comes out low.`
	return baselineCommand(ctx, core.MethodAIS, help, args, stdout, fs, f, func(set map[string]bool) (any, error) {
		cfg := d
		cfg.Sweeps, cfg.Width = sweeps, width
		if refSweeps > 0 {
			if f.dict != "" {
				return nil, usagef("--reference-sweeps does not combine with --dict: AIS beside a fixed dictionary anneals from the prior")
			}
			cfg = cfg.FromReference(refSweeps)
			cfg.ReferenceBurnin = refBurnin
			ranks, _ := parseRanks(f.ranks)
			if top := slices.Max(ranks); top > core.MaxReferenceRank {
				return nil, usagef("--ranks %s: AIS from a reference runs up to rank %d (its density is a permanent over the components)", f.ranks, core.MaxReferenceRank)
			}
		} else if set["reference-burnin"] {
			return nil, usagef("--reference-burnin needs --reference-sweeps")
		}
		if set["temperatures"] {
			cfg.Temperatures = temperatures
		}
		if refSweeps == 0 || set["schedule"] {
			kind, arg, _ := strings.Cut(schedule, ":")
			v, err := strconv.ParseFloat(arg, 64)
			if err != nil || !(v > 0) {
				return nil, usagef("--schedule %q: want power:C or sigmoid:S with a positive number", schedule)
			}
			switch kind {
			case "power":
				cfg.Schedule, cfg.Power = "power", v
			case "sigmoid":
				cfg.Schedule, cfg.Scale = "sigmoid", v
			default:
				return nil, usagef("--schedule %q: want power:C or sigmoid:S", schedule)
			}
		}
		cfg.Seed = f.seed
		return estimators.AISConfig{Replicas: f.replicas, AISConfig: cfg}, nil
	})
}
