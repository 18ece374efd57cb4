package chainstate

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
)

// finalState is a state of a small CP model at rank 2: its parameters a prior draw; under auto
// (the hyperprior of --rate auto) they end with a log rate per factor.
func finalState(t testing.TB, auto bool) *models.State {
	t.Helper()
	d, _, err := models.GeneratePoisson(rng.New(1), []int{5, 4, 3}, 2, []float64{1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	prior := models.RatePrior{Rates: []float64{1, 1, 1}}
	if auto {
		if prior, err = models.AutoPrior(d, 2); err != nil {
			t.Fatal(err)
		}
	}
	m, err := models.NewPoissonPrior("cp", d, 2, prior, models.LogScale)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, m.Dim())
	m.SamplePrior(rng.New(2), theta)
	return &models.State{Model: m.Name(), Rank: 2, Factors: m.Factors(), Theta: theta, Size: d.Sum()}
}

func TestRoundTrip(t *testing.T) {
	for _, auto := range []bool{false, true} {
		t.Run(map[bool]string{false: "fixed", true: "auto"}[auto], func(t *testing.T) {
			s := finalState(t, auto)
			if want := len(s.Factors); auto && len(s.Theta) != 5*2+4*2+3*2+want {
				t.Fatalf("%d parameters under auto", len(s.Theta))
			}
			path := Path(t.TempDir(), Chain{Rank: 2, Rung: 30, Replica: 1})
			if filepath.Base(path) != "r002-t030-c01.parquet" {
				t.Errorf("file name %s", filepath.Base(path))
			}
			if err := Write(context.Background(), path, s); err != nil {
				t.Fatal(err)
			}
			got, err := Read(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			if got.Model != s.Model || got.Rank != s.Rank || got.Size != s.Size || s.Size <= 0 || !slices.Equal(got.Factors, s.Factors) || !slices.Equal(got.Theta, s.Theta) {
				t.Errorf("read back %+v, wrote %+v", got, s)
			}
			// A rewrite (a retried chain) gives the same bytes.
			first, _ := os.ReadFile(path)
			if err := Write(context.Background(), path, s); err != nil {
				t.Fatal(err)
			}
			if again, _ := os.ReadFile(path); !slices.Equal(first, again) {
				t.Error("rewriting the same state changed the file")
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".tmp-*")); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(context.Background(), filepath.Join(dir, "missing.parquet")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	s := finalState(t, true)
	good := filepath.Join(dir, "good.parquet")
	if err := Write(context.Background(), good, s); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	bad := filepath.Join(dir, "bad.parquet")
	os.WriteFile(bad, data[:len(data)/2], 0o644)
	if _, err := Read(context.Background(), bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("truncated file: %v", err)
	}
	// A state whose layout does not fit its parameters.
	broken := *s
	broken.Factors = slices.Clone(s.Factors)
	broken.Factors[0].Rows += 3
	if err := Write(context.Background(), bad, &broken); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("writing a layout larger than the parameters: %v", err)
	}
	// After its factors a state holds one log rate per factor or none: two are a broken layout.
	short := *s
	short.Theta = s.Theta[:len(s.Theta)-1]
	if err := Write(context.Background(), bad, &short); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("writing two rates after three factors: %v", err)
	}
}

// States round-trip through a Beam filesystem URL too, a missing one is fs.ErrNotExist, and Prune
// keeps only the runs it is told to.
func TestURL(t *testing.T) {
	ctx := context.Background()
	s := finalState(t, false)
	id := Chain{Rank: 2, Rung: 3, Replica: 1}
	for _, run := range []string{"a", "b", "c"} {
		if err := Write(ctx, Path("memfs://chainstate-test/"+run, id), s); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Read(ctx, Path("memfs://chainstate-test/b", id))
	if err != nil || !slices.Equal(got.Theta, s.Theta) {
		t.Fatalf("read back from memfs: %v", err)
	}
	if _, err := Read(ctx, Path("memfs://chainstate-test/b", Chain{Rank: 9})); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing object: %v", err)
	}
	if err := Prune(ctx, "memfs://chainstate-test", "b", "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(ctx, Path("memfs://chainstate-test/a", id)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pruned run a is still there: %v", err)
	}
	for _, run := range []string{"b", "c"} {
		if _, err := Read(ctx, Path("memfs://chainstate-test/"+run, id)); err != nil {
			t.Errorf("kept run %s: %v", run, err)
		}
	}
}
