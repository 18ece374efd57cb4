// Command race runs the race of select's defaults (estimators.RunRace) on data sets with known
// answers, in this process, and prints per data set and seed what it chose, how sure it was, what
// it cost, and each rank's estimate against its reference where one is known: the exact rank-1
// evidence, and the stored long-AIS references of bench/anneal. It checks the race's promises:
// the true rank chosen, every rank's error bar covering its estimate (within 3 standard errors of
// its reference), and the chosen rank separated from the others beyond 3 combined standard
// errors or reported unresolved.
//
//	go run ./bench/race [-seeds 4] [-only NAME] [-budget B] [-markdown]
//
// With -budget B (a power of two) a rank may reach B times its configured records, as select
// --budget B gives it: run beside the default, it checks that the choice does not change when the
// race is given more budget.
//
// With -markdown it prints docs/accuracy.md's table and summary, which hold no time (a race's
// numbers are the same on any machine and number of cores, its time is not): the cost column is
// the passes over the data the race spent. TestAccuracyDocReproduces reruns its first row.
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stirank/stirank/bench/internal/refs"
	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/tensor"
)

// set is a data set, the ranks raced on it and its true rank (0 where unknown).
type set struct {
	name  string
	data  *tensor.Sparse
	spec  models.Spec
	ranks []int
	truth int
}

func main() {
	seeds := flag.Int("seeds", 4, "seeds of each data set")
	only := flag.String("only", "", "run only the data sets whose name contains this")
	markdown := flag.Bool("markdown", false, "print a markdown table (docs/accuracy.md)")
	budget := flag.Int("budget", 1, "a rank may reach this many times its configured records (a power of two), as select --budget")
	roundWork := flag.Float64("round-work", 0, "round 0 may cost a rank at most this many cell-component operations, as select --time sets it (sti.TimedRoundWork); 0: the default")
	prior := flag.String("prior", "", "race under another prior of the factors than the one each set was drawn at: auto (--rate auto), or a number the drawn rates are multiplied by; only rank 1's exact value is then a reference")
	flag.Parse()
	if *markdown && *prior != "" {
		log.Fatal("-markdown writes docs/accuracy.md, whose references hold under the drawn prior only: drop -prior")
	}
	if *budget < 1 || bits.OnesCount(uint(*budget)) != 1 {
		log.Fatalf("-budget %d: want a power of two", *budget)
	}
	if err := race(os.Stdout, *seeds, *only, *markdown, bits.TrailingZeros(uint(*budget)), *roundWork, *prior); err != nil {
		log.Fatal(err)
	}
}

// race runs the races of seeds 1 to seeds on the data sets whose name contains only, each rank
// allowed extra rounds past its configured records and round 0 roundWork (sti.Config.RoundWork),
// under the prior named by prior (withPrior), and prints them to w.
func race(w io.Writer, seeds int, only string, markdown bool, extra int, roundWork float64, prior string) error {
	var sets []set
	gen := func(name string, seed uint64, shape []int, trueR int, rate, rowShape float64, ranks []int) {
		d, spec, err := refs.Generated(seed, shape, trueR, rate, rowShape)
		if err != nil {
			log.Fatal(err)
		}
		sets = append(sets, set{name, d, spec, ranks, trueR})
	}
	// The data sets of bench/anneal, under its names, whose stored references cover some ranks.
	gen("nmf 30x20 rank 3, rate 0.3", 3, []int{30, 20}, 3, 0.3, 0, ranges(1, 6))
	gen("nmf 100x75 rank 3, rate 5 (ICASSP)", 3, []int{100, 75}, 3, 5, 0, ranges(1, 10))
	gen("cp 6x5x4 rank 3, rate 0.3", 3, []int{6, 5, 4}, 3, 0.3, 0, ranges(1, 5))
	gen("nmf 12x10 rank 2, rate 0.01 (counts up to 1.4e5)", 5, []int{12, 10}, 2, 0.01, 0, ranges(1, 4))
	gen("cp 8x6x5 rank 2, rate 0.1, seed 7 (counts in the tens of thousands)", 7, []int{8, 6, 5}, 2, 0.1, 0, ranges(1, 4))
	gen("nmf 40x30 rank 4, rate 1, row shape 0.5, seed 32", 32, []int{40, 30}, 4, 1, 0.5, ranges(1, 6))
	nmf, err := models.ForOrder(2)
	if err != nil {
		return err
	}
	glass, err := refs.Glass()
	if err != nil {
		return err
	}
	sets = append(sets, set{"glass 8x8 (real counts, social mobility)", glass, models.PoissonSpec(nmf.Name, []float64{0.3, 0.3}, models.LogScale), ranges(1, 6), 0})
	if markdown {
		fmt.Fprintf(w, "%s\n\n| data | seed | chosen (true) | unresolved | passes over the data | ranks with a reference: offset ± stderr (last round run) |\n", accuracyIntro(seeds, only))
		fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- |")
	}
	var right, runs, covered, checked, separated int
	for _, s := range sets {
		if !strings.Contains(s.name, only) {
			continue
		}
		spec, err := withPrior(s.spec, prior)
		if err != nil {
			return err
		}
		for seed := 1; seed <= seeds; seed++ {
			cfg := sti.Default(s.spec.Name)
			cfg.Seed, cfg.RoundWork = uint64(seed), roundWork
			t0 := time.Now()
			evs, standing, err := estimators.RunRace(context.Background(), estimators.STI{Model: spec, Config: cfg}, s.data, s.ranks, extra, estimators.TimeBudget{})
			if err != nil {
				return fmt.Errorf("%s seed %d: %w", s.name, seed, err)
			}
			el := time.Since(t0)
			evs = standing.Final(evs)
			steps := 0
			for _, re := range evs {
				steps += re.Steps
			}
			best := evs[0]
			for _, re := range evs {
				if re.LogEvidence > best.LogEvidence {
					best = re
				}
			}
			runs++
			if s.truth == 0 || best.Rank == s.truth {
				right++
			}
			unresolved := standing.Unresolved(s.ranks)
			near := ""
			if n := nearRanks(evs, best); len(n) == 0 || len(unresolved) > 0 {
				separated++
			} else {
				// The race left these behind on earlier estimates; the verdict names them.
				near = fmt.Sprintf(", near %v", n)
			}
			var cells []string
			for _, re := range evs {
				// The stored references hold under the prior the set was drawn at only.
				ref, ok, err := refs.Stored(s.name, re.Rank)
				if err != nil {
					return err
				}
				ok = ok && prior == ""
				if !ok && re.Rank == 1 {
					info, _ := models.Lookup(spec.Name)
					if v, err := info.Exact(s.data, 1, spec); err == nil {
						ref, ok = v, true
					}
				}
				if !ok {
					continue
				}
				checked++
				d := re.LogEvidence - ref
				mark := ""
				if math.Abs(d) <= 3*re.StdErr {
					covered++
				} else {
					mark = " ✗"
				}
				cells = append(cells, fmt.Sprintf("R%d %+.2f ± %.2f (r%d)%s", re.Rank, d, re.StdErr, re.Round, mark))
			}
			truth := "?"
			if s.truth > 0 {
				truth = strconv.Itoa(s.truth)
			}
			if markdown {
				fmt.Fprintf(w, "| %s | %d | %d (%s) | %v%s | %d | %s |\n", s.name, seed, best.Rank, truth, unresolved, near, steps, strings.Join(cells, "; "))
			} else {
				fmt.Fprintf(w, "%-56s seed %d: chose %d (true %s), unresolved %v%s, %.1f s; %s\n", s.name, seed, best.Rank, truth, unresolved, near, el.Seconds(), strings.Join(cells, "; "))
			}
		}
	}
	fmt.Fprintf(w, "\n%d of %d races chose the true rank (or, without one, any); %d of %d estimates with a reference within 3 reported standard errors of it; %d of %d choices separated beyond 3 combined standard errors from every other rank or reported unresolved\n",
		right, runs, covered, checked, separated, runs)
	return nil
}

// withPrior returns spec under prior: unchanged for "", the hyperprior of --rate auto for
// models.AutoWord, else its rates multiplied by the number prior spells.
func withPrior(spec models.Spec, prior string) (models.Spec, error) {
	switch prior {
	case "":
		return spec, nil
	case models.AutoWord:
		return spec.With("rates", models.Word(models.AutoWord)), nil
	}
	f, err := strconv.ParseFloat(prior, 64)
	if err != nil || !(f > 0) || math.IsInf(f, 0) {
		return models.Spec{}, fmt.Errorf("-prior %q: want %s or a positive factor", prior, models.AutoWord)
	}
	rates := append([]float64(nil), spec.Params["rates"].Nums...)
	for i := range rates {
		rates[i] *= f
	}
	return spec.With("rates", models.Nums(rates...)), nil
}

// accuracyIntro is the title and the explanation docs/accuracy.md gives its table.
func accuracyIntro(seeds int, only string) string {
	command := fmt.Sprintf("go run ./bench/race -seeds %d -markdown > docs/accuracy.md", seeds)
	if only != "" {
		command = fmt.Sprintf("go run ./bench/race -seeds %d -only %q -markdown", seeds, only)
	}
	return `# Accuracy of select's defaults

Written by ` + "`" + command + "`" + ` (about 6 minutes on 2 shared cores); do
not edit it by hand. Each row is one race of ` + "`stirank select`" + `'s defaults (the rounds, the elimination
at 3 combined standard errors, the leader refined toward 0.5 nat: docs/method.md) on a data set with
a known answer, run in process by ` + "`estimators.RunRace`" + `, the code the pipeline runs. **chosen (true)** is
the rank of highest evidence and the rank the data were drawn at (? for the Glass table, real
data). **unresolved** lists the ranks the race could not leave behind within its budget: the
verdict line of ` + "`select`" + ` names them; "near" lists ranks the race left behind on earlier
estimates whose final ones lie within 3 combined standard errors of the chosen rank's, which the
verdict names too, asking for more replicas. **passes over the data** is the race's cost in all (a Gibbs
sweep makes two per factor); the numbers do not depend on the machine, so the table holds no
time. The last column sets each rank's estimate against its reference: the exact evidence at rank 1,
elsewhere a long annealed-importance-sampling run stored in ` + "`bench/internal/refs`" + ` (rank r, offset
estimate − reference ± the reported standard error, the last round the rank ran); ✗ marks an
offset beyond 3 standard errors. The heavy-tailed 40x30 matrix is where f(t) changes phase: the
phase check widens its error bars to tens of nats, and the race says it cannot tell its ranks apart
(docs/method.md, the phase check).`
}

// nearRanks lists the ranks whose estimates lie within evidence.RaceZ combined standard errors of
// best's and both their start allowances, as the verdict reads them.
func nearRanks(evs []evidence.RankEvidence, best evidence.RankEvidence) []int {
	var near []int
	for _, re := range evs {
		if re.Rank != best.Rank && best.LogEvidence-re.LogEvidence <= evidence.RaceZ*math.Hypot(best.StdErr, re.StdErr)+best.StartAllowance()+re.StartAllowance() {
			near = append(near, re.Rank)
		}
	}
	return near
}

func ranges(lo, hi int) []int {
	var r []int
	for i := lo; i <= hi; i++ {
		r = append(r, i)
	}
	return r
}
