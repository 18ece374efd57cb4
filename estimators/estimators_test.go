package estimators

import (
	"context"
	"math"
	"os"
	"reflect"
	"testing"

	"github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/io/chainstate"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/sti"
)

func TestRegistry(t *testing.T) {
	if got := Names(); !reflect.DeepEqual(got, []string{"ais", "chib", "sti"}) {
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
	if n := len(e.Tasks(3)); n != len(cfg.Ladder)*cfg.Chains {
		t.Errorf("%d tasks", n)
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

// An STI problem saves its chains' final states and resumes from them.
func TestSTIResume(t *testing.T) {
	ctx := context.Background()
	data, _, err := models.GeneratePoisson(rng.New(3), []int{8, 6}, 2, []float64{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sti.Default("nmf")
	cfg.Ladder = evidence.Power(2, 4)
	cfg.Steps, cfg.Burnin, cfg.WarmBurnin, cfg.Starts = 30, 10, 5, 0
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
	if _, err := os.Stat(chainstate.Path(dir, ChainID(task))); err != nil {
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
	if err != nil || !sum.Warm || warm.Task != task {
		t.Errorf("resumed chain %+v (%v)", sum, err)
	}
}
