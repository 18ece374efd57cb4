package estimators

import (
	"context"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/io/chainstate"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/sti"
	"github.com/stirank/stirank/tensor"
)

func TestRegistry(t *testing.T) {
	if got := Names(); !reflect.DeepEqual(got, []string{"ais", "chib", "path", "sti"}) {
		t.Errorf("registered %v", got)
	}
	nmf := models.PoissonSpec("nmf", []float64{1, 1}, models.LogScale)
	cfg := sti.Default("nmf")
	s, err := NewSpec(STIName, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(nmf, s)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.(STI); !reflect.DeepEqual(got, STI{Model: nmf, Config: cfg}) {
		t.Errorf("decoded %+v", got)
	}
	// A race starts from one task per rank, its start stage; chains on an SG-MCMC kernel without
	// a start are tasks of their own.
	if n := len(e.Tasks(3)); n != 1 || !IsRacer(e) {
		t.Errorf("%d tasks, racing %v", n, IsRacer(e))
	}
	g := STI{Config: sti.Default("gauss")}
	if n := len(g.Tasks(3)); n != len(g.Config.Ladder)*g.Config.Chains || IsStaged(g) {
		t.Errorf("gauss: %d tasks, staged %v", n, IsStaged(g))
	}
	for _, bad := range []struct {
		model models.Spec
		name  string
		cfg   any
	}{
		{nmf, "nope", cfg},
		{nmf, STIName, sti.Config{}},
		{nmf, STIName, "not a configuration"},
		{models.GaussSpec(models.ICASSPGauss), baselines.MethodChib, ChibConfig{Replicas: 1, ChibConfig: baselines.DefaultChib()}},
		{nmf, baselines.MethodAIS, AISConfig{Replicas: 0, AISConfig: baselines.DefaultAIS()}},
	} {
		s, err := NewSpec(bad.name, bad.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(bad.model, s); err == nil {
			t.Errorf("%s %s %v accepted", bad.model.Name, bad.name, bad.cfg)
		}
	}
}

// Pack keeps every float64 bit for bit, NaN included.
func TestPack(t *testing.T) {
	s := baselines.Summary{Method: baselines.MethodAIS, Rank: 2, Replica: 1, LogEvidence: -1.0 / 3, StdErr: math.NaN(), Sweeps: 7}
	got, err := Unpack[baselines.Summary](Pack(s))
	if err != nil {
		t.Fatal(err)
	}
	if math.Float64bits(got.StdErr) != math.Float64bits(s.StdErr) {
		t.Errorf("NaN became %v", got.StdErr)
	}
	got.StdErr, s.StdErr = 0, 0
	if got != s {
		t.Errorf("round trip %+v, want %+v", got, s)
	}
}

// An STI problem saves its SG-MCMC chains' final states and resumes from them.
func TestSTIResume(t *testing.T) {
	ctx := context.Background()
	data, _, err := models.GeneratePoisson(rng.New(3), []int{8, 6}, 2, []float64{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sti.DefaultSGMCMC("nmf")
	cfg.Ladder = evidence.Power(2, 4)
	cfg.Steps, cfg.Burnin, cfg.WarmBurnin, cfg.Start = 30, 10, 5, sti.PriorStart
	p, err := STI{Model: models.PoissonSpec("nmf", []float64{1, 1}, models.LogScale), Config: cfg}.Prepare(data)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	task := Task{Rank: 2, Index: 2, Replica: 1}
	cold, err := p.(Resumable).Resume("", dir).Run(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(chainstate.Path(dir, chainOf(ChainID(task)))); err != nil {
		t.Fatalf("no state saved: %v", err)
	}
	plain, err := p.Run(ctx, task)
	if err != nil || !reflect.DeepEqual(plain, cold) {
		t.Errorf("saving the state changed the chain: %+v vs %+v (%v)", plain, cold, err)
	}
	warm, err := p.(Resumable).Resume(dir, "").Run(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Unpack[evidence.ChainSummary](warm.Summary)
	if err != nil || !sum.Warm || !reflect.DeepEqual(warm.Task, task) {
		t.Errorf("resumed chain %+v (%v)", sum, err)
	}
}

// Less orders by rank, stage, index, replica, chain and kind, each field deciding only when those
// before it tie, and ignores the payload.
func TestTaskLess(t *testing.T) {
	ordered := []Task{
		{Rank: 1, Stage: 1, Index: 9, Replica: 9, Chain: 9},
		{Rank: 2, Index: 0, Replica: 5, Chain: 0},
		{Rank: 2, Index: 1, Replica: 0},
		{Rank: 2, Index: 1, Replica: 1},
		{Rank: 2, Stage: 1, Index: 0, Replica: 7, Chain: 3},
		{Rank: 2, Stage: 1, Index: 1, Replica: 0, Chain: 5},
		{Rank: 2, Stage: 1, Index: 1, Replica: 1, Chain: 0},
		{Rank: 2, Stage: 1, Index: 1, Replica: 1, Chain: 1},
		{Rank: 2, Stage: 1, Index: 1, Replica: 1, Chain: 1, Kind: PhaseKind},
	}
	for i, a := range ordered {
		for j, b := range ordered {
			if got := a.Less(b); got != (i < j) {
				t.Errorf("%+v.Less(%+v) = %v", a, b, got)
			}
		}
	}
	a := Task{Rank: 1, Stage: 1, Payload: []byte{1}}
	b := Task{Rank: 1, Stage: 1, Payload: []byte{0, 2}}
	if a.Less(b) || b.Less(a) {
		t.Error("the payload orders tasks")
	}
}

// stagedSTI is STI claiming to be staged, or not, as on says.
type stagedSTI struct {
	STI
	on bool
}

func (e stagedSTI) Staged() bool { return e.on }

func TestIsStaged(t *testing.T) {
	for _, c := range []struct {
		e    Estimator
		want bool
	}{{STI{Config: sti.Config{Start: sti.PriorStart}}, false}, {Chib{}, false}, {AIS{}, false}, {stagedSTI{on: false}, false}, {stagedSTI{on: true}, true}, {STI{Config: sti.Default("nmf")}, true}, {STI{Config: sti.Default("gauss")}, false}, {STI{Config: sti.DefaultAnnealed("gauss")}, true}, {Path{}, true}} {
		if got := IsStaged(c.e); got != c.want {
			t.Errorf("IsStaged(%T %+v) = %v", c.e, c.e, got)
		}
	}
	// The annealed start makes its own ladders: its chains run once, not in rounds.
	if IsRacer(STI{Config: sti.DefaultAnnealed("nmf")}) || !IsRacer(STI{Config: sti.Default("nmf")}) {
		t.Error("IsRacer does not follow the start stage")
	}
}

// A ladder the workers fit to the data (sti.Config.FitLadder) is steeper than the configured one
// on data with counts in the hundreds (at rank 2: rank 1's twice as many rungs keep exponent 6); Combine integrates over the temperatures the chains ran at
// and refuses chains of one rung that disagree on it.
func TestSTICombinesTheFittedLadder(t *testing.T) {
	rates := []float64{0.1, 0.1}
	data, _, err := models.GeneratePoisson(rng.New(3), []int{250, 250}, 2, rates)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sti.Default("nmf")
	cfg.Steps, cfg.Burnin, cfg.Start, cfg.Chains = 3, 1, sti.PriorStart, 1
	e := STI{Model: models.PoissonSpec("nmf", rates, models.LogScale), Config: cfg}
	results, _ := runRank(t, e, data, 2)
	re, err := e.Combine(2, results)
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.Ladder; len(re.Rungs) != len(l) || !(re.Rungs[1].T < l[1]) {
		t.Fatalf("combined %d rungs, the first above 0 at %v (configured %d rungs, the first at %v)", len(re.Rungs), re.Rungs[1].T, len(l), l[1])
	}
	sum, err := Unpack[evidence.ChainSummary](results[6].Summary)
	if err != nil {
		t.Fatal(err)
	}
	sum.Chain, sum.T = 1, sum.T*1.01
	odd := Result{Task: Task{Rank: 2, Stage: 1, Index: sum.TIndex, Replica: 1}, Summary: Pack(sum)}
	if _, err := e.Combine(2, append(results, odd)); err == nil || !strings.Contains(err.Error(), "temperature index 5") {
		t.Errorf("chains of one rung at two temperatures combined (%v)", err)
	}
}

// A rank whose start stage leaves the phase check a state gets one follow-on task of the check's
// own kind (PhaseKind), not a chain: it reports the walk (evidence.PhaseWalk), its cost counts in
// the rank's, and the combiner merges its verdict with the estimate.
func TestPhaseCheckIsATaskOfItsOwnKind(t *testing.T) {
	rates := []float64{1, 1}
	data, _, err := models.GeneratePoisson(rng.New(5), []int{12, 10}, 2, rates)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sti.Default("nmf")
	cfg.Ladder, cfg.FitLadder, cfg.Allocate, cfg.Rank1 = evidence.Power(8, 4), false, false, nil
	cfg.Steps, cfg.Burnin, cfg.Chains, cfg.Starts, cfg.StartEM, cfg.Relax, cfg.Descent, cfg.Ascent = 16, 4, 2, 2, 5, 5, 2, 2
	e := STI{Model: models.PoissonSpec("nmf", rates, models.LogScale), Config: cfg}
	results, next := runRank(t, e, data, 2)
	var checks []Task
	for _, task := range next {
		if task.Kind != "" {
			checks = append(checks, task)
		}
	}
	if len(checks) != 1 || checks[0].Kind != PhaseKind || checks[0].Chain != 0 || len(next) != 2*len(cfg.Ladder)+1 {
		t.Fatalf("follow-on tasks %d, checks %+v; want a chain per rung and replica and one phase check", len(next), checks)
	}
	slices.SortFunc(results, ByTask)
	var walk evidence.PhaseWalk
	checkSteps := 0
	for _, r := range results {
		if r.Task.Kind == PhaseKind {
			if walk, err = Unpack[evidence.PhaseWalk](r.Summary); err != nil || walk.From != checks[0].Index || len(walk.Means) != len(cfg.Ladder)-walk.From {
				t.Fatalf("the check reported %+v (%v)", walk, err)
			}
			checkSteps = r.Steps
		}
	}
	re, err := e.Combine(2, results)
	if err != nil {
		t.Fatal(err)
	}
	without, err := e.Combine(2, slices.DeleteFunc(slices.Clone(results), func(r Result) bool { return r.Task.Kind != "" }))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(re.Ascent, walk.Means) || re.AscentFrom != walk.From || without.Ascent != nil || re.Steps != without.Steps+checkSteps || re.LogEvidence != without.LogEvidence {
		t.Errorf("the combiner did not merge the check: walk %v from %d (%d steps, %d without the check)", re.Ascent, re.AscentFrom, re.Steps, without.Steps)
	}
}

// runRank runs rank's start stage of the staged STI estimator e on data and then every
// follow-on task once (round 0), and returns the results, the start's first, and the follow-on
// tasks.
func runRank(t *testing.T, e STI, data *tensor.Sparse, rank int) ([]Result, []Task) {
	t.Helper()
	ctx := context.Background()
	p, err := e.Prepare(data)
	if err != nil {
		t.Fatal(err)
	}
	start, next, err := p.(Expander).Expand(ctx, e.Tasks(rank)[0])
	if err != nil {
		t.Fatal(err)
	}
	results := []Result{start}
	for _, task := range next {
		r, err := p.Run(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		r.State = nil
		results = append(results, r)
	}
	return results, next
}
