package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/testdata"
)

// execData runs one stirank command line and returns its exit code and output.
func execData(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// mustExec runs a command line that must succeed.
func mustExec(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := execData(t, args...)
	if code != 0 {
		t.Fatalf("stirank %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return stdout
}

// readDataset reads a dataset that must be valid.
func readDataset(t *testing.T, dir string) *tensorio.Dataset {
	t.Helper()
	d, err := tensorio.Read(context.Background(), dir, tensorio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// sameCells reports whether two datasets hold the same cells in the same order.
func sameCells(a, b *tensorio.Dataset) bool {
	x, y := a.Tensor, b.Tensor
	if !slices.Equal(x.Shape, y.Shape) || !slices.Equal(x.Values, y.Values) {
		return false
	}
	return slices.EqualFunc(x.Coords, y.Coords, slices.Equal)
}

func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	nmf := filepath.Join(dir, "nmf")
	out := mustExec(t, "generate", "--model", "nmf", "--shape", "12x8", "--rank", "2", "--rates", "0.5,2", "--seed", "3", "--blocks", "2", "--out", nmf)
	if !strings.Contains(out, "wrote "+nmf+": nmf 12x8 rank 2 seed 3") {
		t.Errorf("output %q", out)
	}
	d := readDataset(t, nmf)
	if d.Manifest.Kind != tensorio.Count || d.Manifest.Blocks == nil || d.Manifest.Blocks.B != 2 {
		t.Errorf("manifest %+v", d.Manifest)
	}
	var pt models.PoissonTruth
	readJSON(t, filepath.Join(nmf, "truth.json"), &pt)
	if pt.Model != "nmf" || pt.Rank != 2 || pt.Seed != 3 || !slices.Equal(pt.Rates, []float64{0.5, 2}) ||
		len(pt.Factors) != 2 || len(pt.Factors[0]) != 12 || len(pt.Factors[1]) != 8 || len(pt.Factors[1][7]) != 2 {
		t.Errorf("truth %+v", pt)
	}

	if b, _ := os.ReadFile(filepath.Join(nmf, "truth.json")); bytes.Contains(b, []byte("row_shape")) || bytes.Contains(b, []byte("activities")) {
		t.Errorf("truth.json without --row-shape records activities:\n%s", b)
	}

	cp := filepath.Join(dir, "cp")
	mustExec(t, "generate", "--model", "cp", "--shape", "6,5,4", "--rank", "2", "--out", cp)
	if d := readDataset(t, cp); !slices.Equal(d.Manifest.Shape, []int{6, 5, 4}) {
		t.Errorf("cp shape %v", d.Manifest.Shape)
	}
	// --row-shape 0 is the default, bit for bit.
	cp0 := filepath.Join(dir, "cp0")
	mustExec(t, "generate", "--model", "cp", "--shape", "6,5,4", "--rank", "2", "--row-shape", "0", "--out", cp0)
	if !sameCells(readDataset(t, cp0), readDataset(t, cp)) {
		t.Error("--row-shape 0 changed the cells")
	}
	heavy := filepath.Join(dir, "heavy")
	mustExec(t, "generate", "--model", "cp", "--shape", "6,5,4", "--rank", "2", "--row-shape", "0.3", "--out", heavy)
	var ht models.PoissonTruth
	readJSON(t, filepath.Join(heavy, "truth.json"), &ht)
	if ht.RowShape != 0.3 || len(ht.Activities) != 3 || len(ht.Activities[2]) != 4 {
		t.Errorf("truth with --row-shape 0.3: row_shape %v, activities %v", ht.RowShape, ht.Activities)
	}

	gauss := filepath.Join(dir, "gauss")
	mustExec(t, "generate", "--model", "gauss", "--shape", "300", "--rank", "4", "--mu", "1", "--var-theta", "2", "--var-x", "0.5", "--out", gauss)
	g := readDataset(t, gauss)
	var gt models.GaussTruth
	readJSON(t, filepath.Join(gauss, "truth.json"), &gt)
	if g.Manifest.Kind != tensorio.Real || g.Manifest.Cells != 300 || len(gt.Theta) != 4 || gt.Mu != 1 || gt.VarTheta != 2 || gt.VarX != 0.5 {
		t.Errorf("gauss manifest %+v, truth %+v", g.Manifest, gt)
	}
	// truth.json carries the exact evidence of the data written.
	m, err := models.NewGauss(g.Tensor.Values, 4, models.GaussPrior{Mu: 1, VarTheta: 2, VarX: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if m.LogEvidence() != gt.LogEvidence {
		t.Errorf("log evidence %v in truth.json, %v from the data", gt.LogEvidence, m.LogEvidence())
	}
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func TestGenerateUsage(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--model", "nmf", "--shape", "5x5", "--rank", "2"}, "--out is required"},
		{[]string{"--shape", "5x5", "--rank", "2"}, "--model is required"},
		{[]string{"--model", "pca", "--shape", "5x5", "--rank", "2"}, `unknown --model "pca"`},
		{[]string{"--model", "nmf", "--shape", "5x5"}, "--rank 0 must be at least 1"},
		{[]string{"--model", "nmf", "--rank", "2"}, "--shape is required"},
		{[]string{"--model", "nmf", "--shape", "5xx5", "--rank", "2"}, `--shape "5xx5"`},
		{[]string{"--model", "nmf", "--shape", "5x0", "--rank", "2"}, `extent "0" is not an integer`},
		{[]string{"--model", "nmf", "--shape", "5x5x5", "--rank", "2"}, "nmf needs a shape of 2 modes"},
		{[]string{"--model", "cp", "--shape", "5x5", "--rank", "2"}, "cp needs a shape of 3 modes"},
		{[]string{"--model", "gauss", "--shape", "5x5", "--rank", "2"}, "gauss needs --shape N"},
		{[]string{"--model", "gauss", "--shape", "50", "--rank", "2", "--rate", "2"}, "--rate applies to nmf, ssnmf and cp"},
		{[]string{"--model", "gauss", "--shape", "50", "--rank", "2", "--var-x", "0"}, "var-x 0 must be positive"},
		{[]string{"--model", "nmf", "--shape", "5x5", "--rank", "2", "--mu", "2"}, "--mu applies to gauss"},
		{[]string{"--model", "nmf", "--shape", "5x5", "--rank", "2", "--rate", "1", "--rates", "1,1"}, "not both"},
		{[]string{"--model", "nmf", "--shape", "5x5", "--rank", "2", "--rates", "1,1,1"}, "want 2 comma-separated rates"},
		{[]string{"--model", "nmf", "--shape", "5x5", "--rank", "2", "--rate", "-1"}, "rate -1 must be positive"},
		{[]string{"--model", "cp", "--shape", "5x5x5", "--rank", "2", "--row-shape", "-0.3"}, "row-shape -0.3 must not be negative"},
		{[]string{"--model", "nmf", "--shape", "5x5", "--rank", "2", "--row-shape", "NaN"}, "row-shape NaN is not finite"},
		{[]string{"--model", "gauss", "--shape", "50", "--rank", "2", "--row-shape", "0.3"}, "--row-shape applies to nmf and cp"},
		{[]string{"--model", "nmf", "--shape", "5x5", "--rank", "2", "--seed", "x"}, `invalid value "x" for flag -seed`},
		{[]string{"--model", "nmf", "--shape", "5x5", "--rank", "2", "extra"}, `unexpected argument "extra"`},
		{[]string{"--model", "ssnmf", "--shape", "5x5", "--rank", "2"}, "--model ssnmf needs --dict DIR"},
		{[]string{"--model", "nmf", "--shape", "5x5", "--rank", "2", "--dict", out}, "--dict applies to ssnmf, not nmf"},
		{[]string{"--model", "ssnmf", "--shape", "5x5", "--rank", "-1"}, "--rank -1 must not be negative"},
	}
	for _, tt := range tests {
		args := append([]string{"generate"}, tt.args...)
		if !slices.Contains(tt.args, "--out") && tt.want != "--out is required" {
			args = append(args, "--out", out)
		}
		code, _, stderr := execData(t, args...)
		if code != 2 || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("stirank %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(args, " "), code, stderr, tt.want)
		}
	}
	// A failure past the flags (more blocks than rows) is exit 1.
	code, _, stderr := execData(t, "generate", "--model", "nmf", "--shape", "5x5", "--rank", "2", "--blocks", "9", "--out", out)
	if code != 1 || !strings.Contains(stderr, "fewer than 9 blocks") {
		t.Errorf("too many blocks: exit %d, %q", code, stderr)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("failed commands left %v behind", entries)
	}
}

// sameTruth compares two truth.json files: the drawn parameters exactly, and the exact log
// evidence to rounding, so that a change in how models computes it does not fail the data.
func sameTruth(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y map[string]any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	ex, _ := x["log_evidence"].(float64)
	ey, _ := y["log_evidence"].(float64)
	delete(x, "log_evidence")
	delete(y, "log_evidence")
	return math.Abs(ex-ey) <= 1e-9*math.Abs(ey) && reflect.DeepEqual(x, y)
}

// TestTestdataReproducible runs the generate command lines of testdata/README.md and checks that
// they reproduce the embedded datasets exactly.
func TestTestdataReproducible(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "testdata", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const prefix = "go run ./cmd/stirank "
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		args := strings.Fields(line)
		o := slices.Index(args, "--out")
		if o < 0 || o+1 >= len(args) {
			t.Fatalf("README line %q has no --out", line)
		}
		name := strings.TrimPrefix(args[o+1], "testdata/")
		seen[name] = true
		args[o+1] = filepath.Join(t.TempDir(), name)
		mustExec(t, args...)

		fresh := readDataset(t, args[o+1])
		embedded, err := tensorio.ReadFS(testdata.FS, name, tensorio.ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !sameCells(fresh, embedded) {
			t.Errorf("%s: %q does not reproduce the embedded cells", name, line)
		}
		want, err := fs.ReadFile(testdata.FS, path.Join(name, truthFile))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(args[o+1], truthFile))
		if err != nil {
			t.Fatal(err)
		}
		if !sameTruth(t, got, want) {
			t.Errorf("%s: %q does not reproduce the embedded truth.json", name, line)
		}
	}
	for _, name := range testdata.Names {
		if !seen[name] {
			t.Errorf("testdata/README.md has no command line for %s", name)
		}
	}
}
