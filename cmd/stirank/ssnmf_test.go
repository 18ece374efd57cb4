package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/pipelines"
	"github.com/stirank/stirank/report"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// writeDense writes a rows × cols row-major matrix as a real dataset with every cell stored.
func writeDense(t *testing.T, dir string, rows, cols int, values []float64) {
	t.Helper()
	x, err := tensor.New([]int{rows, cols}, len(values))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range values {
		x.Append([]int{i / cols, i % cols}, v)
	}
	if _, err := tensorio.Write(context.Background(), dir, x, tensorio.WriteOptions{Kind: tensorio.Real}); err != nil {
		t.Fatal(err)
	}
}

// ssnmfDatasets writes counts drawn from D H_D + W H — a fixed dictionary D of kd columns and a
// free block of rank R, every factor Exp(rate) — and D as a dictionary dataset, and returns
// their directories.
func ssnmfDatasets(t *testing.T, dir string, shape []int, kd, R int, rate float64) (string, string) {
	t.Helper()
	K := kd + R
	x, factors, err := models.GeneratePoisson(rng.New(4, 0x55), shape, K, []float64{rate, rate})
	if err != nil {
		t.Fatal(err)
	}
	var d []float64
	for i := range shape[0] {
		d = append(d, factors[0][i*K:i*K+kd]...)
	}
	data, dict := filepath.Join(dir, "data"), filepath.Join(dir, "dict")
	if _, err := tensorio.Write(context.Background(), data, x, tensorio.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	writeDense(t, dict, shape[0], kd, d)
	return data, dict
}

// selectSSNMF draws data of the given shape from a dictionary of kd columns beside a free block of
// rank r, all factors Exp(rate) (ssnmfDatasets), and runs select --model ssnmf on them with that
// prior rate, the ranks and the flags given.
func selectSSNMF(t *testing.T, shape []int, kd, r int, rate float64, ranks string, flags ...string) (data, dict, out, stdout string, res pipelines.Result) {
	t.Helper()
	dir := t.TempDir()
	data, dict = ssnmfDatasets(t, dir, shape, kd, r, rate)
	out = filepath.Join(dir, "out")
	args := []string{"select", "--model", "ssnmf", "--data", data, "--dict", dict, "--ranks", ranks, "--rate", strconv.FormatFloat(rate, 'g', -1, 64), "--out", out, "--quiet"}
	stdout = selectOK(t, append(args, flags...)...)
	t.Log("\n" + stdout)
	return data, dict, out, stdout, readResult(t, out)
}

// On data drawn from a two-column dictionary plus a free block of rank 2, select --model ssnmf
// with that dictionary chooses free rank 2 with the default Gibbs chains.
func TestSelectSSNMFRecoversFreeRank(t *testing.T) {
	_, _, _, _, r := selectSSNMF(t, []int{30, 25}, 2, 2, 0.4, "1-3", "--no-report")
	if r.Model != "ssnmf" || r.BestRank != 2 || len(r.Ranks) != 3 {
		t.Errorf("model %s, best free rank %d of %d ranks; want ssnmf, 2", r.Model, r.BestRank, len(r.Ranks))
	}
	for _, rr := range r.Ranks {
		if len(rr.Diverged) > 0 {
			t.Errorf("rank %d diverged: %v", rr.Rank, rr.Diverged)
		}
	}
}

// generate --model ssnmf draws data from a dictionary beside a free block, and select --model
// ssnmf with the same dictionary finds the free rank drawn; truth.json names the dictionary.
func TestGenerateSSNMFRoundTrip(t *testing.T) {
	dir := t.TempDir()
	dict := filepath.Join(dir, "dict")
	r := rng.New(6)
	d := make([]float64, 30*2)
	for i := range d {
		d[i] = r.ExpFloat64() / 0.4
	}
	writeDense(t, dict, 30, 2, d)
	data := filepath.Join(dir, "data")
	mustExec(t, "generate", "--model", "ssnmf", "--dict", dict, "--shape", "30x25", "--rank", "2", "--rate", "0.4", "--seed", "3", "--out", data)
	var truth models.SSNMFTruth
	readJSON(t, filepath.Join(data, truthFile), &truth)
	if truth.Dictionary != dict || truth.Rank != 2 || len(truth.HD) != 25 || len(truth.HD[0]) != 2 || len(truth.W) != 30 || len(truth.W[0]) != 2 {
		t.Errorf("truth: dictionary %q, rank %d, H_D %d×%d, W %d×%d", truth.Dictionary, truth.Rank, len(truth.HD), len(truth.HD[0]), len(truth.W), len(truth.W[0]))
	}
	out := filepath.Join(dir, "out")
	stdout := selectOK(t, "select", "--model", "ssnmf", "--data", data, "--dict", dict, "--ranks", "0-3", "--rate", "0.4", "--out", out, "--quiet", "--no-report")
	t.Log("\n" + stdout)
	res := readResult(t, out)
	if res.BestRank != 2 {
		t.Errorf("select chose free rank %d on data drawn at 2", res.BestRank)
	}
}

// ais and chib --model ssnmf hold the dictionary fixed and sample the rest: on a 12×10 set drawn
// from a one-column dictionary beside a free rank-1 block, their estimates at free ranks 0–2 agree
// with select's and with each other within three combined standard errors (plus 0.3 nat), and at
// rank 0, where the evidence is a product of Gamma integrals (models' exact ssnmf), with the exact
// value within three of their own.
func TestBaselinesSSNMFAgreeWithSelect(t *testing.T) {
	dir := t.TempDir()
	data, dict := ssnmfDatasets(t, dir, []int{12, 10}, 1, 1, 0.5)
	common := []string{"--model", "ssnmf", "--data", data, "--dict", dict, "--ranks", "0-2", "--rate", "0.5"}
	aisOut, chibOut, selOut := filepath.Join(dir, "ais"), filepath.Join(dir, "chib"), filepath.Join(dir, "select")
	mustExec(t, append([]string{"ais", "--out", aisOut, "--no-report"}, common...)...)
	mustExec(t, append([]string{"chib", "--out", chibOut, "--no-report"}, common...)...)
	selectOK(t, append([]string{"select", "--out", selOut, "--quiet", "--no-report"}, common...)...)
	ais, chib, sel := readResult(t, aisOut), readResult(t, chibOut), readResult(t, selOut)
	if len(ais.Ranks) != 3 || len(chib.Ranks) != 3 || len(sel.Ranks) != 3 {
		t.Fatalf("ranks: ais %d, chib %d, select %d", len(ais.Ranks), len(chib.Ranks), len(sel.Ranks))
	}
	for i, s := range sel.Ranks {
		a, c := ais.Ranks[i], chib.Ranks[i]
		t.Logf("free rank %d: ais %.3f ± %.3f, chib %.3f ± %.3f, select %.3f ± %.3f", s.Rank, a.LogEvidence, a.StdErr, c.LogEvidence, c.StdErr, s.LogEvidence, s.StdErr)
		for _, pair := range [][2]string{{"ais", "select"}, {"chib", "select"}, {"ais", "chib"}} {
			by := map[string]pipelines.RankResult{"ais": a, "chib": c, "select": s}
			x, y := by[pair[0]], by[pair[1]]
			se := math.Hypot(float64(x.StdErr), float64(y.StdErr))
			if x.Rank != y.Rank || !(math.Abs(float64(x.LogEvidence-y.LogEvidence)) <= 3*se+0.3) {
				t.Errorf("free rank %d: %s %.3f ± %.3f, %s %.3f ± %.3f", y.Rank, pair[0], x.LogEvidence, x.StdErr, pair[1], y.LogEvidence, y.StdErr)
			}
		}
	}
	x := readDataset(t, data)
	spec, err := withDictionary(context.Background(), models.Spec{Name: "ssnmf", Params: models.Params{"rates": models.Nums(0.5, 0.5), "param": models.Word("log")}}, dict, x.Tensor.Shape)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := spec.Exact(x.Tensor, 0)
	if err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]pipelines.RankResult{"ais": ais.Ranks[0], "chib": chib.Ranks[0]} {
		t.Logf("free rank 0: %s %.3f ± %.3f, exact %.3f", name, a.LogEvidence, a.StdErr, exact)
		if !(math.Abs(float64(a.LogEvidence)-exact) <= 3*float64(a.StdErr)+0.05) {
			t.Errorf("free rank 0: %s %.3f ± %.3f, exact %.3f", name, a.LogEvidence, a.StdErr, exact)
		}
	}
}

// reanalyze --model ssnmf resumes its chains from their saved states when the data gain columns
// (frames), the H factor's rows holding the dictionary's activations beside the free block's; it
// chooses the free rank drawn both times, and a different dictionary starts every chain cold.
func TestReanalyzeSSNMF(t *testing.T) {
	dir := t.TempDir()
	full, dict := ssnmfDatasets(t, dir, []int{20, 24}, 2, 2, 0.5)
	x := readDataset(t, full).Tensor
	var files []string
	for k := range 2 {
		s := x.Slab(1, 12*k, 12*(k+1))
		var b strings.Builder
		b.WriteString("i,j,value\n")
		for n, v := range s.Values {
			fmt.Fprintf(&b, "%d,%d,%g\n", s.Coords[0][n], s.Coords[1][n], v)
		}
		files = append(files, writeFile(t, dir, fmt.Sprintf("inc%d.csv", k+1), b.String()))
	}
	data, state := filepath.Join(dir, "grown"), filepath.Join(dir, "state")
	args := append([]string{"reanalyze", "--model", "ssnmf", "--dict", dict, "--data", data, "--state", state, "--rate", "0.5", "--ranks", "1-3"}, cheap...)
	selectOK(t, "import", "--in", files[0], "--out", data, "--shape", "20x12")
	selectOK(t, args...)
	selectOK(t, "append", "--data", data, "--in", files[1])
	selectOK(t, args...)
	h := history(t, state)
	if len(h) != 6 {
		t.Fatalf("history of %d rows, want 6", len(h))
	}
	// On the first half (12 frames) ranks 2 and 3 lie within their errors of each other: the drawn
	// rank must not be left below the chosen one there, and must be chosen on the whole.
	for i, r := range h {
		t.Logf("%+v", r)
		run := h[i/3*3 : i/3*3+3]
		if run[0].Rank != 1 || run[1].Rank != 2 || run[2].Rank != 3 {
			t.Fatalf("a run's rows are not ranks 1-3 in order: %+v", run)
		}
		chosen, drawn := run[r.ChosenRank-1], run[1]
		if r.WarmStart != (i >= 3) || (i >= 3 && r.ChosenRank != 2) ||
			chosen.LogEvidence-drawn.LogEvidence > 3*math.Hypot(chosen.StdErr, drawn.StdErr) {
			t.Errorf("row %d: chosen %d, warm %v; want 2 (on the whole) or one within 3 combined standard errors of 2, %v", i, r.ChosenRank, r.WarmStart, i >= 3)
		}
	}
	other := filepath.Join(dir, "other")
	d := slices.Clone(readDataset(t, dict).Tensor.Values)
	for i := range d {
		d[i] *= 2
	}
	writeDense(t, other, 20, 2, d)
	selectOK(t, append(slices.Clone(args[:4]), append([]string{other}, args[5:]...)...)...)
	h = history(t, state)
	if len(h) != 9 || h[6].WarmStart || h[7].WarmStart || h[8].WarmStart {
		t.Errorf("another dictionary: history of %d rows, the last run's warm: %v; want 9 rows, the last 3 cold", len(h), len(h) == 9 && (h[6].WarmStart || h[7].WarmStart || h[8].WarmStart))
	}
}

// A bad dictionary, or --dict where it does not apply, is one line naming the dictionary and the
// problem, a non-zero exit and no output directory.
func TestSelectSSNMFBadDictionary(t *testing.T) {
	dir := t.TempDir()
	data, dict := ssnmfDatasets(t, dir, []int{6, 5}, 2, 1, 1)
	short := filepath.Join(dir, "short")
	writeDense(t, short, 5, 2, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	zeroCol := filepath.Join(dir, "zero-column")
	writeDense(t, zeroCol, 6, 2, []float64{1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0})
	negative := filepath.Join(dir, "negative")
	writeDense(t, negative, 6, 2, []float64{1, 1, 2, 1, 3, -1, 4, 1, 5, 1, 6, 1})
	notDataset := filepath.Join(dir, "empty")
	if err := os.Mkdir(notDataset, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		code int
		args []string
		want string
	}{
		{"rows", 1, []string{"--dict", short}, "dictionary " + short + " has 5 rows, the data 6"},
		{"zero column", 1, []string{"--dict", zeroCol}, "dictionary " + zeroCol + ": column 1 is all zeros"},
		{"negative", 1, []string{"--dict", negative}, negative + ": dictionary entry (2, 1) is -1"},
		{"missing", 2, []string{"--dict", filepath.Join(dir, "nothing")}, "--dict " + filepath.Join(dir, "nothing") + ": no such dataset directory"},
		{"not a dataset", 1, []string{"--dict", notDataset}, notDataset},
		{"no dict", 2, nil, "--model ssnmf needs --dict DIR"},
		{"dict on nmf", 2, []string{"--model", "nmf", "--dict", dict}, "--dict applies to ssnmf, not nmf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"select", "--model", "ssnmf", "--data", data, "--ranks", "1", "--out", out}, cheap...)
			code, stdout, stderr := selectRun(t, append(args, tc.args...)...)
			if code != tc.code || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || stdout != "" {
				t.Errorf("exit %d (want %d), stdout %q, stderr %q (want one line with %q)", code, tc.code, stdout, stderr, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was created", out)
			}
		})
	}
}

// exactLine matches what --exact prints for a rank.
var exactLine = regexp.MustCompile(`exact log p\(X\|R=0\) = (-?[0-9.]+); estimate − exact = ([-+][0-9.]+) \(([-+][0-9.]+) s\.e\.\)`)

// On data drawn from a one-column dictionary alone, select --model ssnmf --ranks 0-2 chooses
// rank 0 — the dictionary with no free block — and --exact prints the closed-form evidence of
// rank 0, which the default chains' estimate is within 3 standard errors and 1 nat of. The
// report rings rank 0.
func TestSelectSSNMFChoosesZeroRank(t *testing.T) {
	data, dict, out, stdout, r := selectSSNMF(t, []int{20, 15}, 1, 0, 0.5, "0-2", "--exact")
	if r.BestRank != 0 || len(r.Ranks) != 3 || r.Ranks[0].Rank != 0 || !verdictIs(stdout, 0) {
		t.Errorf("best rank %d of ranks %v; want 0 of 0-2", r.BestRank, r.Ranks)
	}
	m := exactLine.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("--exact printed no exact evidence of rank 0:\n%s", stdout)
	}
	ds, err := tensorio.Read(context.Background(), data, tensorio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := withDictionary(context.Background(), models.PoissonSpec("ssnmf", []float64{0.5, 0.5}, models.LogScale), dict, ds.Manifest.Shape)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := models.Lookup("ssnmf")
	exact, err := info.Exact(ds.Tensor, 0, spec)
	if err != nil {
		t.Fatal(err)
	}
	est, se := float64(r.Ranks[0].LogEvidence), float64(r.Ranks[0].StdErr)
	if m[1] != strconv.FormatFloat(exact, 'f', 2, 64) || math.Abs(est-exact) > min(3*se, 1) {
		t.Errorf("rank 0: estimate %.3f ± %.3f, exact %.3f (printed %s)", est, se, exact, m[1])
	}
	page := string(readFile(t, filepath.Join(out, report.HTML)))
	if !strings.Contains(page, "Best rank: 0 (") {
		t.Error("the report does not give rank 0 as the best")
	}
	if svg := readFile(t, filepath.Join(out, "evidence.svg")); !bytes.Contains(svg, []byte("chosen rank 0")) {
		t.Error("the evidence figure does not ring rank 0")
	}
}

// On data with a free block of rank 2 beside a one-column dictionary, the dictionary alone
// (rank 0) loses to a free block by far.
func TestSelectSSNMFPrefersFreeBlockOverZeroRank(t *testing.T) {
	_, _, _, _, r := selectSSNMF(t, []int{20, 15}, 1, 2, 0.5, "0-2", "--no-report")
	best, ok := r.Best()
	zero := r.Ranks[0]
	if !ok || best.Rank == 0 || zero.Rank != 0 || float64(best.LogEvidence-zero.LogEvidence) < 10*float64(best.StdErr+zero.StdErr) {
		t.Errorf("best rank %d (%v), rank %d at %v ± %v; want a free block well above rank 0", r.BestRank, best.LogEvidence, zero.Rank, zero.LogEvidence, zero.StdErr)
	}
}
