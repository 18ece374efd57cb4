package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stirank/stirank/models/isnmf"
	"github.com/stirank/stirank/pipelines"
	"github.com/stirank/stirank/rng"
)

// matrixCSV writes an F×N matrix as an i,j,value CSV and imports it as a dataset.
func matrixCSV(t *testing.T, dir, name string, f, n int, at func(i, j int) float64) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("i,j,value\n")
	for i := range f {
		for j := range n {
			fmt.Fprintf(&b, "%d,%d,%.17g\n", i, j, at(i, j))
		}
	}
	csv := writeFile(t, dir, name+".csv", b.String())
	out := filepath.Join(dir, name)
	baselineOK(t, "import", "--in", csv, "--out", out)
	return out
}

// isData draws real data with F = 10 from a K = 2 dictionary as Dikmen & Cemgil §4.1 do, and
// returns the dictionary's two columns (as one-column dictionaries too) and the data.
func isData(t *testing.T, dir string) (data, w2, w1 string, model2, model1 *isnmf.Model, cols [][]float64) {
	r := rng.New(17)
	const F, N = 10, 4
	w := make([]float64, F*2)
	for i := range w {
		w[i] = r.ExpFloat64()
	}
	x := make([][]float64, N)
	for n := range x {
		h := []float64{1 / r.ExpFloat64(), 1 / r.ExpFloat64()}
		x[n] = make([]float64, F)
		for f := range F {
			x[n][f] = r.NormFloat64() * math.Sqrt(w[2*f]*h[0]+w[2*f+1]*h[1])
		}
	}
	data = matrixCSV(t, dir, "x", F, N, func(i, j int) float64 { return x[j][i] })
	w2 = matrixCSV(t, dir, "w2", F, 2, func(i, j int) float64 { return w[2*i+j] })
	w1 = matrixCSV(t, dir, "w1", F, 1, func(i, j int) float64 { return w[2*i] + w[2*i+1] })
	var err error
	if model2, err = isnmf.New(F, 2, w, 1, 1, false); err != nil {
		t.Fatal(err)
	}
	sum := make([]float64, F)
	for f := range F {
		sum[f] = w[2*f] + w[2*f+1]
	}
	if model1, err = isnmf.New(F, 1, sum, 1, 1, false); err != nil {
		t.Fatal(err)
	}
	for _, c := range x {
		p := make([]float64, F)
		for f, v := range c {
			p[f] = v * v
		}
		cols = append(cols, p)
	}
	return
}

// TestDictionaryCommand scores a K = 1 and a K = 2 dictionary through the Beam pipeline (SMC1 and
// AIS; every method is checked against exact values in models/isnmf): every
// column within 0.1 nat of its exact value (closed form, quadrature) and within three reported
// standard errors, the totals and the best dictionary consistent with the columns, evidence.csv
// and --classify, and a bit-identical rerun with one worker.
func TestDictionaryCommand(t *testing.T) {
	dir := t.TempDir()
	data, w2, w1, m2, m1, cols := isData(t, dir)
	for _, method := range []string{"smc1", "ais"} {
		out := filepath.Join(dir, "out-"+method)
		args := []string{"dictionary", "--data", data, "--dict", "two=" + w2, "--dict", w1, "--method", method,
			"--particles", "100", "--stages", "500", "--replicas", "4", "--classify", "--out", out}
		stdout := baselineOK(t, args...)
		r, err := pipelines.ReadDictionaryResult(context.Background(), out)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Dictionaries) != 2 || r.Dictionaries[0].Name != "two" || r.Dictionaries[1].Name != "w1" || r.Dictionaries[0].K != 2 {
			t.Fatalf("%s: dictionaries %+v", method, r.Dictionaries)
		}
		var best string
		bestEv := math.Inf(-1)
		for d, m := range []*isnmf.Model{m2, m1} {
			ds := r.Dictionaries[d]
			var total float64
			for n, c := range ds.Columns {
				exact, err := m.LogEvidenceQuadrature(cols[n], 80)
				if err != nil {
					t.Fatal(err)
				}
				got, se := float64(c.LogEvidence), float64(c.StdErr)
				if c.Column != n || math.Abs(got-exact) > 0.1 || math.Abs(got-exact) > 3*se+0.02 {
					t.Errorf("%s %s column %d: %.4f ± %.4f, exact %.4f", method, ds.Name, c.Column, got, se, exact)
				}
				// Every replica's stages are recorded: AIS's 500, and SMC1's at least 500 at K = 2
				// (its steps are at most 1/500 of the column's move, shorter where the default
				// conditional ESS target needs), none at K = 1.
				for _, st := range c.Stages {
					if len(c.Stages) != 4 || method == "ais" && st != 500 || method == "smc1" && (ds.K == 2 && (st < 500 || st > 20*500) || ds.K == 1 && st != 0) {
						t.Errorf("%s %s column %d: stages %v", method, ds.Name, c.Column, c.Stages)
						break
					}
				}
				total += got
			}
			if math.Abs(total-float64(ds.LogEvidence)) > 1e-9 {
				t.Errorf("%s %s: total %v is not the sum of its columns %v", method, ds.Name, ds.LogEvidence, total)
			}
			if total > bestEv {
				best, bestEv = ds.Name, total
			}
		}
		if r.Best != best || !strings.Contains(stdout, "best dictionary: "+best) || !strings.Contains(stdout, "column 3: ") {
			t.Errorf("%s: best %q, want %q; stdout:\n%s", method, r.Best, best, stdout)
		}
		csv, err := os.ReadFile(filepath.Join(out, pipelines.EvidenceCSV))
		if err != nil || strings.Count(string(csv), "\n") != 1+2*(4+1) {
			t.Errorf("%s: evidence.csv %q (%v)", method, csv, err)
		}
		if method == "smc1" {
			again := filepath.Join(dir, "again")
			baselineOK(t, append(args[:len(args)-1], again, "--workers", "1")...)
			b, err := pipelines.ReadDictionaryResult(context.Background(), again)
			if err != nil {
				t.Fatal(err)
			}
			// The command lines differ (--out, --workers); everything else must not.
			r.Command, b.Command = nil, nil
			x, _ := r.JSON()
			y, _ := b.JSON()
			if string(x) != string(y) {
				t.Errorf("a rerun with one worker differs")
			}
		}
	}
}

// TestDictionaryNID recovers which columns of a non-negative matrix generated by the
// interpolative decomposition model (F = 10, three columns of five are the dictionary) form it.
func TestDictionaryNID(t *testing.T) {
	dir := t.TempDir()
	r := rng.New(4)
	const F, K, N = 10, 3, 5
	w := make([]float64, F*K)
	for i := range w {
		w[i] = r.ExpFloat64()
	}
	selected := []int{0, 2, 4}
	x := make([][]float64, N)
	for n := range x {
		x[n] = make([]float64, F)
		if k := indexOf(selected, n); k >= 0 {
			for f := range F {
				x[n][f] = w[f*K+k]
			}
			continue
		}
		h := []float64{1 / r.ExpFloat64(), 1 / r.ExpFloat64(), 1 / r.ExpFloat64()}
		for f := range F {
			x[n][f] = (w[f*K]*h[0] + w[f*K+1]*h[1] + w[f*K+2]*h[2]) * r.ExpFloat64()
		}
	}
	data := matrixCSV(t, dir, "x", F, N, func(i, j int) float64 { return x[j][i] })
	out := filepath.Join(dir, "nid")
	stdout := baselineOK(t, "dictionary", "--data", data, "--nid", "--values", "power", "--method", "smc1",
		"--particles", "50", "--stages", "200", "--replicas", "2", "--out", out)
	res, err := pipelines.ReadDictionaryResult(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Dictionaries) != 1<<N-1 || res.Best != "columns:0+2+4" || !strings.Contains(stdout, "best subset: columns:0+2+4") {
		t.Errorf("%d subsets, best %q; stdout %q", len(res.Dictionaries), res.Best, stdout)
	}
}

func indexOf(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestDictionaryBadInput(t *testing.T) {
	dir := t.TempDir()
	good := matrixCSV(t, dir, "good", 3, 2, func(i, j int) float64 { return float64(i+j) + 1 })
	negative := matrixCSV(t, dir, "negative", 3, 2, func(i, j int) float64 { return 1 - float64(i*j) })
	zeroRow := matrixCSV(t, dir, "zerorow", 3, 1, func(i, j int) float64 { return float64(i) })
	wide := matrixCSV(t, dir, "wide", 4, 2, func(i, j int) float64 { return 1 })
	partial := writeFile(t, dir, "partial.csv", "i,j,value\n0,0,1.5\n1,0,-2\n2,1,0.5\n")
	holes := filepath.Join(dir, "holes")
	baselineOK(t, "import", "--in", partial, "--out", holes)
	cube := filepath.Join(dir, "cube")
	baselineOK(t, "generate", "--model", "cp", "--shape", "3x3x3", "--rank", "1", "--out", cube)
	complexData := filepath.Join(dir, "complex")
	baselineOK(t, "import", "--in", writeFile(t, dir, "complex.csv", "i,j,re,im\n0,0,1,2\n1,0,-1,0\n2,0,0,3\n0,1,1,1\n1,1,2,-2\n2,1,1,0.5\n"), "--out", complexData)
	complexHoles := filepath.Join(dir, "complexholes")
	baselineOK(t, "import", "--in", writeFile(t, dir, "complexholes.csv", "i,j,re,im\n0,0,1,2\n1,0,-1,0\n2,1,0,3\n"), "--out", complexHoles)
	for _, tc := range []struct {
		name string
		code int
		args []string
		want string
	}{
		{"negative entry", 1, []string{"--data", good, "--dict", negative}, "entry (2, 1) is -1"},
		{"all-zero row", 1, []string{"--data", good, "--dict", zeroRow}, "row 0 is all zero"},
		{"features differ", 1, []string{"--data", good, "--dict", wide}, "4 rows"},
		{"missing cell", 1, []string{"--data", holes, "--dict", good}, "(2, 0) is missing"},
		{"tensor data", 1, []string{"--data", cube, "--dict", good}, "3-way"},
		{"negative powers", 1, []string{"--data", negative, "--dict", good, "--values", "power"}, "powers are non-negative"},
		{"no dictionary", 2, []string{"--data", good}, "--dict"},
		{"nid with dict", 2, []string{"--data", good, "--nid", "--values", "power", "--dict", good}, "--nid"},
		{"nid amplitudes", 2, []string{"--data", good, "--nid"}, "--values power"},
		{"unknown method", 2, []string{"--data", good, "--dict", good, "--method", "vb"}, "vb"},
		{"values", 2, []string{"--data", good, "--dict", good, "--values", "complex"}, "complex"},
		{"complex data as powers", 2, []string{"--data", complexData, "--dict", good, "--values", "power"}, "holds complex values"},
		{"complex data as amplitudes", 2, []string{"--data", complexData, "--dict", good, "--values", "real"}, "holds complex values"},
		{"complex nid", 2, []string{"--data", complexData, "--nid", "--values", "power"}, "import their powers"},
		{"complex dictionary", 1, []string{"--data", good, "--dict", complexData}, "value_kind complex: this reader takes real values only"},
		{"complex missing cell", 1, []string{"--data", complexHoles, "--dict", good}, "(2, 0) is missing"},
		{"particles", 2, []string{"--data", good, "--dict", good, "--particles", "0"}, "particle"},
		{"cess", 2, []string{"--data", good, "--dict", good, "--method", "smc2", "--cess", "1"}, "conditional ESS target 1"},
		{"cess with ais", 2, []string{"--data", good, "--dict", good, "--cess", "0.9"}, "--cess is for smc1 and smc2"},
		{"prior", 1, []string{"--data", good, "--dict", good, "--a", "0"}, "IG(0, 1)"},
		{"no data dir", 2, []string{"--data", filepath.Join(dir, "nope"), "--dict", good}, "no such dataset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			code, _, stderr := baselineRun(t, append([]string{"dictionary", "--out", out}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, stderr)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "stirank dictionary: ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q: want one line mentioning %q", stderr, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s exists after a failed run", out)
			}
		})
	}
}

// TestDictionaryComplex imports complex data from a CSV of f,n,re,im and scores a K = 2 and a
// K = 1 dictionary on it, and on the same data given as their powers |x|² with --values power:
// the same streams see the same powers, so every column's evidence differs by exactly F log π
// (the density of a power is π times that of its complex value) and its standard error not at
// all; and each column is within 0.1 nat and three standard errors of its exact value.
func TestDictionaryComplex(t *testing.T) {
	dir := t.TempDir()
	r := rng.New(23)
	const F, N = 10, 3
	w := make([]float64, F*2)
	for i := range w {
		w[i] = r.ExpFloat64()
	}
	re, im := make([][]float64, N), make([][]float64, N)
	var powers [][]float64
	for n := range N {
		h := []float64{1 / r.ExpFloat64(), 1 / r.ExpFloat64()}
		re[n], im[n] = make([]float64, F), make([]float64, F)
		p := make([]float64, F)
		for f := range F {
			// Circular complex: each part carries half the variance.
			sd := math.Sqrt((w[2*f]*h[0] + w[2*f+1]*h[1]) / 2)
			re[n][f], im[n][f] = r.NormFloat64()*sd, r.NormFloat64()*sd
			p[f] = float64(re[n][f]*re[n][f]) + float64(im[n][f]*im[n][f])
		}
		powers = append(powers, p)
	}
	var b strings.Builder
	b.WriteString("i,j,re,im\n")
	for f := range F {
		for n := range N {
			fmt.Fprintf(&b, "%d,%d,%.17g,%.17g\n", f, n, re[n][f], im[n][f])
		}
	}
	complexData := filepath.Join(dir, "xc")
	if stdout := baselineOK(t, "import", "--in", writeFile(t, dir, "xc.csv", b.String()), "--out", complexData); !strings.Contains(stdout, "complex 10x3, 30 stored cells") {
		t.Errorf("import: %q", stdout)
	}
	powerData := matrixCSV(t, dir, "xp", F, N, func(i, j int) float64 { return powers[j][i] })
	w2 := matrixCSV(t, dir, "w2", F, 2, func(i, j int) float64 { return w[2*i+j] })
	w1 := matrixCSV(t, dir, "w1", F, 1, func(i, j int) float64 { return w[2*i] + w[2*i+1] })
	m2, err := isnmf.New(F, 2, w, 1, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	sum := make([]float64, F)
	for f := range F {
		sum[f] = w[2*f] + w[2*f+1]
	}
	m1, err := isnmf.New(F, 1, sum, 1, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	score := func(data string, values ...string) pipelines.DictionaryResult {
		out := filepath.Join(t.TempDir(), "out")
		args := append([]string{"dictionary", "--data", data, "--dict", w2, "--dict", w1, "--method", "smc2",
			"--particles", "100", "--stages", "500", "--replicas", "4", "--out", out}, values...)
		baselineOK(t, args...)
		res, err := pipelines.ReadDictionaryResult(context.Background(), out)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	c, p := score(complexData), score(powerData, "--values", "power")
	if c.Values != string(isnmf.Complex) || p.Values != string(isnmf.Powers) {
		t.Errorf("values %q and %q, want complex and power", c.Values, p.Values)
	}
	jacobian := F * math.Log(math.Pi)
	for d, m := range []*isnmf.Model{m2, m1} {
		cd, pd := c.Dictionaries[d], p.Dictionaries[d]
		if diff := float64(pd.LogEvidence - cd.LogEvidence); math.Abs(diff-N*jacobian) > 1e-9 {
			t.Errorf("%s: powers %v, complex %v: differ by %v, want N·F·log π = %v", cd.Name, pd.LogEvidence, cd.LogEvidence, diff, N*jacobian)
		}
		for n, cc := range cd.Columns {
			pc := pd.Columns[n]
			if diff := float64(pc.LogEvidence - cc.LogEvidence); math.Abs(diff-jacobian) > 1e-9 || math.Abs(float64(pc.StdErr-cc.StdErr)) > 1e-12 {
				t.Errorf("%s column %d: powers %v ± %v, complex %v ± %v: want a difference of F·log π = %v and equal errors",
					cd.Name, n, pc.LogEvidence, pc.StdErr, cc.LogEvidence, cc.StdErr, jacobian)
			}
			exact, err := m.LogEvidenceQuadrature(powers[n], 80)
			if err != nil {
				t.Fatal(err)
			}
			got, se := float64(cc.LogEvidence), float64(cc.StdErr)
			if math.Abs(got-exact) > 0.1 || math.Abs(got-exact) > 3*se+0.02 {
				t.Errorf("%s column %d: %.4f ± %.4f, exact %.4f", cd.Name, n, got, se, exact)
			}
		}
	}
}
