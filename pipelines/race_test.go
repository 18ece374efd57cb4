package pipelines

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/transforms"
)

// raceConfig is the default configuration cut to a unit test's budget.
func raceConfig() sti.Config {
	cfg := sti.Default("nmf")
	cfg.Ladder = evidence.Power(10, evidence.DefaultPower)
	cfg.Steps, cfg.Burnin = 48, 8
	cfg.Starts, cfg.StartEM, cfg.Relax, cfg.Descent, cfg.Ascent = 4, 60, 40, 4, 4
	cfg.Rank1.Rungs, cfg.Rank1.Steps, cfg.Rank1.Burnin, cfg.Rank1.Descent = 20, 24, 4, 2
	return cfg
}

// TestRaceMatchesInProcess runs a race of ranks 1–4 through Beam and in this process
// (estimators.RunRace): the same evidence to the last bit, the same ranks left behind in the
// same rounds, whatever the number of workers and of parts the chains travel in, with the states
// in the collections or in a directory (Options.Spill), and the rounds the evidence reports are those the
// race ran.
func TestRaceMatchesInProcess(t *testing.T) {
	rates := []float64{0.5, 0.5}
	data, _, err := models.GeneratePoisson(rand.New(rand.NewPCG(3, 3)), []int{14, 11}, 2, rates)
	if err != nil {
		t.Fatal(err)
	}
	spec := models.PoissonSpec("nmf", rates, models.LogScale)
	cfg := raceConfig()
	ranks := []int{1, 2, 3, 4}
	e := estimators.STI{Model: spec, Config: cfg}
	want, standing, err := estimators.RunRace(context.Background(), e, data, ranks, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("standing %+v", standing)
	for _, re := range want {
		t.Logf("rank %d: %.2f ± %.2f round %d", re.Rank, re.LogEvidence, re.StdErr, re.Round)
	}
	if len(standing.Left) == 0 {
		t.Fatalf("the race left no rank behind: %+v", standing)
	}
	for _, run := range []struct {
		workers, shards int
		spill           bool
	}{{1, 1, false}, {3, 1, true}, {2, 3, false}} {
		workers := run.workers
		o := inline(t, data, spec, cfg)
		o.Ranks, o.Workers, o.Rounds, o.Shards = ranks, workers, 6, run.shards
		transforms.SpillBytes = 64 << 10
		if run.spill {
			// Every state through the directory, however small.
			o.Spill, transforms.SpillBytes = t.TempDir(), 0
		}
		got, _ := runPipeline(t, o)
		for i, re := range want {
			g := got.Ranks[i]
			if float64(g.LogEvidence) != re.LogEvidence || float64(g.StdErr) != re.StdErr || g.Steps != int64(re.Steps) || g.Round != re.Round {
				t.Errorf("workers %d, shards %d, rank %d: pipeline %v ± %v in %d steps to round %d, in process %v ± %v in %d to round %d",
					workers, run.shards, re.Rank, g.LogEvidence, g.StdErr, g.Steps, g.Round, re.LogEvidence, re.StdErr, re.Steps, re.Round)
			}
			if g.Left != standing.Why(re.Rank) {
				t.Errorf("workers %d, rank %d: left %q, in process %q", workers, re.Rank, g.Left, standing.Why(re.Rank))
			}
			if len(g.Rounds) != re.Round+1 {
				t.Errorf("rank %d: %d rounds reported, ran to round %d", re.Rank, len(g.Rounds), re.Round)
			}
		}
		if !slices.Equal(got.Unresolved, standing.Unresolved(ranks)) {
			t.Errorf("unresolved %v, in process %v", got.Unresolved, standing.Unresolved(ranks))
		}
	}
}
