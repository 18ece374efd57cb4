package pipelines

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/tensor"
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
	r := newRace(t)
	data, spec, cfg, ranks := r.data, r.spec, r.cfg, r.ranks
	want, standing := r.inProcess(t, estimators.TimeBudget{})
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

// race is the race of ranks 1–4 on a 14×11 matrix of rank 2 that the race tests run.
type race struct {
	data  *tensor.Sparse
	spec  models.Spec
	cfg   sti.Config
	ranks []int
}

func newRace(t *testing.T) race {
	rates := []float64{0.5, 0.5}
	data, _, err := models.GeneratePoisson(rand.New(rand.NewPCG(3, 3)), []int{14, 11}, 2, rates)
	if err != nil {
		t.Fatal(err)
	}
	return race{data, models.PoissonSpec("nmf", rates, models.LogScale), raceConfig(), []int{1, 2, 3, 4}}
}

// inProcess runs the race in this process (estimators.RunRace) within budget.
func (r race) inProcess(t *testing.T, budget estimators.TimeBudget) ([]evidence.RankEvidence, evidence.Standing) {
	t.Helper()
	evs, standing, err := estimators.RunRace(context.Background(), estimators.STI{Model: r.spec, Config: r.cfg}, r.data, r.ranks, 0, budget)
	if err != nil {
		t.Fatal(err)
	}
	return evs, standing
}

// TestRaceStopsAtItsTimeBudget: a race whose time is up when its first round ends runs no
// other, through Beam as in this process, and says so: the standing and evidence.json name the
// round after which the time was up, the ranks still live beside the leader are unresolved, and
// the verdict asks for a longer --time where they lie near the best.
func TestRaceStopsAtItsTimeBudget(t *testing.T) {
	r := newRace(t)
	past := estimators.TimeBudget{Start: 1, Deadline: 2}
	want, standing := r.inProcess(t, past)
	if !standing.TimeUp || standing.Round != 0 {
		t.Fatalf("standing %+v: want the time up after round 0", standing)
	}
	o := inline(t, r.data, r.spec, r.cfg)
	o.Ranks, o.Rounds, o.Budget = r.ranks, 6, past
	got, _ := runPipeline(t, o)
	if got.TimeUpAfterRound == nil || *got.TimeUpAfterRound != 0 {
		t.Errorf("time up after round %v, want 0", got.TimeUpAfterRound)
	}
	for i, re := range want {
		g := got.Ranks[i]
		if re.Round != 0 || g.Round != 0 || float64(g.LogEvidence) != re.LogEvidence {
			t.Errorf("rank %d: pipeline %v to round %d, in process %v to round %d; want round 0 alike", re.Rank, g.LogEvidence, g.Round, re.LogEvidence, re.Round)
		}
	}
	if !slices.Equal(got.Unresolved, standing.Unresolved(r.ranks)) {
		t.Errorf("unresolved %v, in process %v", got.Unresolved, standing.Unresolved(r.ranks))
	}
	if len(got.Unresolved) == 0 {
		t.Fatal("no rank unresolved after round 0: the test no longer tests the verdict")
	}
	if v := got.Verdict(); !strings.Contains(v, "run again with a longer --time (this run's time was up after round 0)") {
		t.Errorf("verdict %q does not ask for a longer --time", v)
	}
}
