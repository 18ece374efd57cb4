// Command rungs compares, rung by rung, the rank-1 ladder of stirank select runs on Poisson NMF or
// CP data with the exact curve it estimates: f(t) = d log Z(t)/dt and v(t) = Var_t[log p(X | θ)] =
// d²log Z(t)/dt², by central differences of models.Rank1LogPowerPrior (under --rate auto the
// hyperprior's, the rates integrated out too). It prints each rung's
// offset from f(t) in nats and in its standard errors, the ratio of the recorded variance to v(t),
// and what the offsets of f and v add to the integral through the weights of evidence.Ladder.Rule,
// so it shows which temperatures an estimate's error comes from and whether neighbouring rungs err
// together. The ladder's rule applied to the exact f and v gives the discretisation error alone;
// the same for other ladders of as many rungs, with the standard error they would have from
// independent records, shows what the ladder's shape can gain.
//
//	stirank select --data D --ranks 1 --rate 0.1 --exact --out OUT
//	go run ./bench/rungs OUT [OUT2 …]
package main

import (
	"context"
	"fmt"
	"log"
	"math"
	"os"

	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/pipelines"
	"github.com/stirank/stirank/sti"
)

func main() {
	log.SetFlags(0)
	if len(os.Args) < 2 {
		log.Fatal("usage: go run ./bench/rungs OUTDIR [OUTDIR …] (each a stirank select output with rank 1 of nmf or cp)")
	}
	for _, dir := range os.Args[1:] {
		if err := compare(dir); err != nil {
			log.Fatalf("%s: %v", dir, err)
		}
	}
}

func compare(dir string) error {
	ctx := context.Background()
	res, err := pipelines.ReadResult(ctx, dir)
	if err != nil {
		return err
	}
	ds, err := tensorio.Read(ctx, res.Data.Source, tensorio.ReadOptions{})
	if err != nil {
		return err
	}
	if info, err := models.Lookup(res.Model); err != nil || info.ExpPoissonRates == nil {
		return fmt.Errorf("model %s: rank-1 Poisson NMF or CP only", res.Model)
	}
	// The run's prior of the rates: fixed, or the hyperprior of --rate auto at rank 1.
	prior, err := models.PoissonPrior(ds.Tensor, 1, res.Prior)
	if err != nil {
		return err
	}
	logZ, err := models.Rank1LogPowerPrior(ds.Tensor, prior)
	if err != nil {
		return err
	}
	var rank *pipelines.RankResult
	for i := range res.Ranks {
		if res.Ranks[i].Rank == 1 {
			rank = &res.Ranks[i]
		}
	}
	if rank == nil {
		return fmt.Errorf("no rank 1 among the results")
	}
	exact, err := logZ(1)
	if err != nil {
		return err
	}
	l := make(evidence.Ladder, len(rank.Ladder))
	f, v, fe, ve := make([]float64, len(l)), make([]float64, len(l)), make([]float64, len(l)), make([]float64, len(l))
	for i, r := range rank.Ladder {
		l[i], f[i], v[i] = r.T, float64(r.MeanLogLik), float64(r.VarLogLik)
		if r.T == 0 {
			// log Z has no finite-difference derivative at 0 from one side worth trusting; the
			// rule's weight there is t₁/2, under 10⁻⁹ on the default ladder.
			fe[i], ve[i] = f[i], v[i]
			continue
		}
		if fe[i], ve[i], err = curve(logZ, r.T); err != nil {
			return err
		}
	}
	wf, wv := l.Rule()
	fmt.Printf("%s: estimate − exact %+.2f ± %.2f; the rule on the exact f and v − exact %+.2f\n",
		dir, float64(rank.LogEvidence)-exact, float64(rank.StdErr), evidence.Integrate(l, fe, ve)-exact)
	fmt.Printf("%12s %14s %8s %8s %12s %12s %10s %6s\n", "t", "f − exact", "in s.e.", "v/v(t)", "wf·Δf", "wv·Δv", "wf·s.e.", "ESS")
	sumF, sumV := 0.0, 0.0
	for i, r := range rank.Ladder {
		df, dv := wf[i]*(f[i]-fe[i]), wv[i]*(v[i]-ve[i])
		sumF += df
		sumV += dv
		fmt.Printf("%12.4g %14.1f %8.1f %8.3f %12.2f %12.2f %10.2f %6.0f\n", r.T, f[i]-fe[i], (f[i]-fe[i])/float64(r.StdErr), v[i]/ve[i], df, dv, wf[i]*float64(r.StdErr), float64(r.ESS))
	}
	fmt.Printf("%12s %14s %8s %8s %12.2f %12.2f\n", "total", "", "", "", sumF, sumV)
	ess := 0.0
	for _, r := range rank.Ladder {
		ess += float64(r.ESS) / float64(len(rank.Ladder))
	}
	fmt.Printf("ladders of as many rungs on the exact curve, each rung with this run's mean ESS (%.0f) of independent records:\n", ess)
	cands := candidates(len(l) - 1)
	fitted, c, err := evidence.FitPower(len(l)-1, logZ, sti.LadderTolerance)
	if err != nil {
		return err
	}
	cands = append(cands, candidate{fmt.Sprintf("fitted (power:%g)", c), fitted})
	for _, c := range cands {
		bias, floor, err := onCurve(logZ, c.l, f[0], v[0], ess)
		if err != nil {
			return err
		}
		fmt.Printf("  %-26s the rule − exact %+6.2f, Monte Carlo standard error %.2f\n", c.name, bias-exact, floor)
	}
	return nil
}

type candidate struct {
	name string
	l    evidence.Ladder
}

// candidates are the power ladder of exponent 6, a steeper one and geometric ladders from 10⁻⁶ and
// 10⁻⁷, T rungs above 0 each (compare uses them with the ladder evidence.FitPower fits, the
// default's for Poisson data): the geometric ones space the rungs evenly in log t, where t·sd(t),
// a rung's share of the integral's noise, is flat once the likelihood dominates the prior.
func candidates(T int) []candidate {
	out := []candidate{{fmt.Sprintf("power:%d", evidence.DefaultPower), evidence.Power(T, evidence.DefaultPower)}, {"power:8", evidence.Power(T, 8)}}
	for _, lo := range []float64{1e-6, 1e-7} {
		l := evidence.Ladder{0}
		for i := range T {
			l = append(l, lo*math.Pow(1/lo, float64(i)/float64(T-1)))
		}
		l[T] = 1
		out = append(out, candidate{fmt.Sprintf("geometric from %.0e", lo), l})
	}
	return out
}

// onCurve applies ladder l's rule to the exact f and v (at t = 0 the run's recorded f0 and v0)
// and returns it with the standard error the rule would have with n independent records per rung:
// √Σ (wf² v + wv² · 2v²) / n, the variance of a rung's mean and, for Gaussian records, of its
// variance.
func onCurve(logZ func(float64) (float64, error), l evidence.Ladder, f0, v0, n float64) (est, se float64, err error) {
	f, v := make([]float64, len(l)), make([]float64, len(l))
	f[0], v[0] = f0, v0
	for i := 1; i < len(l); i++ {
		if f[i], v[i], err = curve(logZ, l[i]); err != nil {
			return 0, 0, err
		}
	}
	wf, wv := l.Rule()
	for i := range l {
		se += (wf[i]*wf[i]*v[i] + wv[i]*wv[i]*2*v[i]*v[i]) / n
	}
	return evidence.Integrate(l, f, v), math.Sqrt(se), nil
}

// curve returns f(t) and v(t) by central differences of the exact rank-1 log Z with a step of
// t·10⁻⁴: log Z is smooth, and near 0 it is about t·f(t), small enough that rounding does not swamp
// the differences.
func curve(logZ func(float64) (float64, error), t float64) (f, v float64, err error) {
	_, f, v, err = evidence.Derivatives(logZ, t, t*1e-4)
	return f, v, err
}
