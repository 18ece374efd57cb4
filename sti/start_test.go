package sti

import (
	"context"
	"strings"
	"testing"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
)

// testStart is a start stage of the tests: every chain starts at θ = 1 and the stage costs 7
// passes, and says it costs a replica 10⁸ sweeps.
type testStart struct{}

func init() { registerStart("test-start", testStart{}) }

func (testStart) Start(_ context.Context, p *Problem, m models.Model, rank int) (*RankStart, error) {
	cfg := p.RankConfig(rank)
	out := &RankStart{States: make([][]ChainState, cfg.Chains), Steps: 7}
	for q := range out.States {
		out.States[q] = make([]ChainState, len(cfg.Ladder))
		for i, t := range cfg.Ladder {
			if t > 0 {
				theta := make([]float64, m.Dim())
				for k := range theta {
					theta[k] = 1
				}
				out.States[q][i] = ChainState{Theta: theta}
			}
		}
	}
	return out, nil
}

func (testStart) Steps(Config, float64, int) int { return 7 }

func (testStart) Sweeps(Config) float64 { return 1e8 }

func (testStart) Check(Config) error { return nil }

// A rank starts by the stage its configuration names: the presets name the prior draws, the
// modes and the descent where their chains start so; StartRank and the progress plan run the
// stage registered under the name (with every chain's budget set), StartRankFrom refuses a stage
// that does not resume, and Validate refuses a name nobody registered, or a stage the
// configuration cannot run, in one line that names it.
func TestStartStageIsChosenByName(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Default("gauss"), PriorStart}, {DefaultAnnealed("nmf"), AnnealStart}, {DefaultAnnealed("gauss"), AnnealStart}, {DefaultSGMCMC("nmf"), ModesStart},
		{Default("nmf"), DescentStart}, {Default("cp"), DescentStart}, {Default("nmf").WithDescent(0), ModesStart},
	} {
		if c.cfg.Start != c.want {
			t.Errorf("start stage %q, want %q", c.cfg.Start, c.want)
		}
	}

	d, rates := poissonData(t, []int{10, 8}, 2, 0.5, 5)
	cfg := Default("nmf")
	cfg.Ladder = evidence.Power(4, 4)
	cfg.Start, cfg.Rank1 = "test-start", nil
	p, err := NewProblem(d, models.PoissonSpec("nmf", rates, models.LogScale), cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.StartRank(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if th := st.States[1][2].Theta; st.Steps != 7 || len(th) == 0 || th[0] != 1 || st.States[1][2].Budget != p.Records(2, 2) {
		t.Errorf("StartRank ran another stage than the one named: %d steps, θ %v, budget %d", st.Steps, th, st.States[1][2].Budget)
	}
	if n := cfg.StartStageSteps(2, 0, 2, d.NNZ()); n != 7 {
		t.Errorf("the progress plan counts %d passes for the stage, which says 7", n)
	}
	// Round 0 is sized by what the stage says it costs: the descent's fits in round 0's work on
	// these data, the test stage's does not.
	descent := cfg
	descent.Start = DescentStart
	if k, kd := cfg.Doublings(2, 0, d.NNZ()), descent.Doublings(2, 0, d.NNZ()); kd != minDoublings || k <= kd {
		t.Errorf("round 0 doubles %d times under the test stage and %d under the descent: not sized by the stage's cost", k, kd)
	}
	if cfg.Resumes() || !Default("nmf").Resumes() {
		t.Error("Resumes does not follow the stage")
	}
	if _, _, err := p.StartRankFrom(context.Background(), 2, nil); err == nil || !strings.Contains(err.Error(), `"test-start"`) {
		t.Errorf("StartRankFrom with a stage that does not resume: %v", err)
	}

	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"unknown", func(c *Config) { c.Start = "nope" }, `no start stage "nope"`},
		{"none", func(c *Config) { c.Start = "" }, `no start stage ""`},
		{"descent without Gibbs", func(c *Config) { c.Gibbs = false }, `start stage "descent"`},
		{"descent without sweeps", func(c *Config) { c.Descent = 0 }, `start stage "descent"`},
		{"rank 1 descent without sweeps", func(c *Config) { c.Rank1.Descent = 0 }, `rank 1: start stage "descent"`},
		{"modes without starts", func(c *Config) { c.Start, c.Starts = ModesStart, 0 }, `start stage "modes"`},
	} {
		c0 := Default("nmf")
		rb := *c0.Rank1
		c0.Rank1 = &rb
		c.edit(&c0)
		if err := c0.Validate(); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.name, err, c.want)
		}
	}
}

// The annealed presets name the anneal start stage, and StartRank runs it: every replica's
// annealing, bit for bit Anneal's on its own streams, with a chain's start at each of the stages
// Annealed.Rungs chooses and none elsewhere; it makes the ladders, so the rank does not race, and
// a start stage that does not anneal refuses annealing settings.
func TestAnnealStartIsChosenByName(t *testing.T) {
	d := gaussData(t, 5, 1)
	cfg := DefaultAnnealed("gauss")
	cfg.Chains, cfg.Annealing.Particles, cfg.Annealing.Rungs = 2, 16, 5
	p, err := NewProblem(d, models.GaussSpec(models.ICASSPGauss), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.OwnLadders() || Default("gauss").OwnLadders() {
		t.Error("OwnLadders does not follow the stage")
	}
	st, err := p.StartRank(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Annealed) != 2 || len(st.States) != 2 {
		t.Fatalf("%d annealings and %d replicas' states, want 2 of each", len(st.Annealed), len(st.States))
	}
	steps := 0
	for q := range 2 {
		run, err := p.Anneal(context.Background(), 2, q, *cfg.Annealing)
		if err != nil {
			t.Fatal(err)
		}
		steps += run.Steps
		if a := st.Annealed[q]; a.LogZ != run.LogZ || len(a.T) != len(run.Stages) || len(st.States[q]) != len(run.Stages) {
			t.Errorf("replica %d: the stage's annealing (log Z %v, %d stages) is not Anneal's (%v, %d)", q, a.LogZ, len(a.T), run.LogZ, len(run.Stages))
			continue
		}
		chosen := map[int]bool{}
		for _, k := range run.Rungs(cfg.Annealing.Rungs) {
			chosen[k] = true
		}
		for k, s := range st.States[q] {
			if chosen[k] != (s.Theta != nil) || (s.Theta != nil && s.Theta[0] != run.Stages[k].Start[0]) {
				t.Errorf("replica %d, stage %d: start %v, chosen %v", q, k, s.Theta, chosen[k])
			}
		}
	}
	if st.Steps != steps {
		t.Errorf("the stage reports %d steps, its annealings made %d", st.Steps, steps)
	}
}
