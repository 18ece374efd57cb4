package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/io/tensorio/tensoriotest"
)

// writeFile writes a hand-written input file and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestImport(t *testing.T) {
	dir := t.TempDir()
	// The same 3×4 count matrix in the three formats: cells (0,1)=3, (2,0)=1, (2,3)=5.
	inputs := []struct {
		name, content string
		flags         []string
	}{
		{"m.csv", "i,j,value\n0,1,3\n2,0,1\n2,3,5\n", nil},
		{"m.tns", "# FROSTT\n1 2 3\n3 1 1\n3 4 5\n", nil},
		{"m.mtx", "%%MatrixMarket matrix coordinate integer general\n3 4 3\n1 2 3\n3 1 1\n3 4 5\n", nil},
		{"m.txt", "1 2 3\n3 1 1\n3 4 5\n", []string{"--format", "tns"}},
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			file := writeFile(t, dir, in.name, in.content)
			out := filepath.Join(t.TempDir(), "ds")
			stdout := mustExec(t, append([]string{"import", "--in", file, "--out", out, "--blocks", "2"}, in.flags...)...)
			if !strings.Contains(stdout, "count 3x4, 3 stored cells") {
				t.Errorf("output %q", stdout)
			}
			d := readDataset(t, out)
			got := map[[2]int32]float64{}
			for n, v := range d.Tensor.Values {
				got[[2]int32{d.Tensor.Coords[0][n], d.Tensor.Coords[1][n]}] = v
			}
			want := map[[2]int32]float64{{0, 1}: 3, {2, 0}: 1, {2, 3}: 5}
			if !slices.Equal(d.Manifest.Shape, []int{3, 4}) || len(got) != 3 || got[[2]int32{0, 1}] != 3 || got[[2]int32{2, 0}] != 1 || got[[2]int32{2, 3}] != 5 {
				t.Errorf("shape %v, cells %v; want [3 4], %v", d.Manifest.Shape, got, want)
			}
			if d.Manifest.Kind != tensorio.Count || d.Manifest.Blocks == nil {
				t.Errorf("manifest %+v", d.Manifest)
			}
		})
	}

	// Kind and shape flags.
	file := writeFile(t, dir, "r.csv", "i,j,k,value\n0,0,0,1.5\n1,2,3,-2\n")
	out := filepath.Join(dir, "real")
	mustExec(t, "import", "--in", file, "--out", out, "--shape", "2x3x5")
	if d := readDataset(t, out); d.Manifest.Kind != tensorio.Real || !slices.Equal(d.Manifest.Shape, []int{2, 3, 5}) {
		t.Errorf("manifest %+v", d.Manifest)
	}
	file = writeFile(t, dir, "c.csv", "i,value\n0,1\n4,2\n")
	out = filepath.Join(dir, "forced-real")
	mustExec(t, "import", "--in", file, "--out", out, "--kind", "real")
	if d := readDataset(t, out); d.Manifest.Kind != tensorio.Real {
		t.Errorf("--kind real gave %s", d.Manifest.Kind)
	}
}

// TestImportComplex imports f,n,re,im and f,n,value CSVs as complex datasets (the header, or
// --kind complex, says so), which inspect shows and the commands of real values refuse in one
// line.
func TestImportComplex(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "z.csv", "i,j,re,im\n0,1,1.5,-2\n2,0,0,0.25\n2,3,-1,0\n")
	out := filepath.Join(dir, "z")
	if stdout := mustExec(t, "import", "--in", file, "--out", out); !strings.Contains(stdout, "complex 3x4, 3 stored cells") {
		t.Errorf("output %q", stdout)
	}
	d, err := tensorio.Read(context.Background(), out, tensorio.ReadOptions{Complex: true})
	if err != nil {
		t.Fatal(err)
	}
	x := d.Tensor
	if d.Manifest.Kind != tensorio.Complex || !slices.Equal(x.Values, []float64{1.5, 0, -1}) || !slices.Equal(x.Imag, []float64{-2, 0.25, 0}) {
		t.Errorf("manifest %+v, values %v, imaginary parts %v", d.Manifest, x.Values, x.Imag)
	}
	if stdout := mustExec(t, "inspect", out); !strings.Contains(stdout, "value kind   complex") ||
		!strings.Contains(stdout, "real parts min -1, max 1.5; imaginary parts min -2, max 0.25; largest |x| 2.5") {
		t.Errorf("inspect: %q", stdout)
	}
	code, _, stderr := execData(t, "select", "--data", out, "--ranks", "1", "--out", filepath.Join(dir, "sel"))
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "value_kind complex: this reader takes real values only") {
		t.Errorf("select on complex data: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "sel")); err == nil {
		t.Error("select left output behind")
	}
	code, _, stderr = execData(t, "import", "--in", writeFile(t, dir, "v.csv", "i,j,value\n0,1,2\n"), "--out", filepath.Join(dir, "v"), "--kind", "complex")
	if code != 1 || !strings.Contains(stderr, "line 1: complex values need the header i,j[,k],re,im") {
		t.Errorf("--kind complex with a value column: exit %d, stderr %q", code, stderr)
	}
}

func TestImportUsage(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "m.dat", "1 1 1\n")
	out := filepath.Join(dir, "out")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--out", out}, "--in and --out are required"},
		{[]string{"--in", file}, "--in and --out are required"},
		{[]string{"--in", file, "--out", out}, `cannot tell the format from the extension "dat"`},
		{[]string{"--in", file, "--out", out, "--format", "xls"}, `text format "xls" is not one of csv, tns, mtx`},
		{[]string{"--in", file, "--out", out, "--format", "tns", "--kind", "int"}, `value kind "int"`},
		{[]string{"--in", file, "--out", out, "--format", "tns", "--shape", "3by3"}, `--shape "3by3"`},
	}
	for _, tt := range tests {
		code, _, stderr := execData(t, append([]string{"import"}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("stirank import %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
	}
	code, _, stderr := execData(t, "import", "--in", filepath.Join(dir, "missing.csv"), "--out", out)
	if code != 1 || !strings.Contains(stderr, "missing.csv") {
		t.Errorf("missing input: exit %d, %q", code, stderr)
	}
}

// TestImportCorpus imports every bad text file of the corpus: each must fail with exit 1 and a
// one-line message naming the file, the line and the problem, and leave no output behind.
func TestImportCorpus(t *testing.T) {
	cases, err := tensoriotest.Corpus(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cases {
		if c.Text == "" {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			parent := t.TempDir()
			out := filepath.Join(parent, "ds")
			args := []string{"import", "--in", c.Text, "--out", out, "--format", string(c.Format)}
			if c.Options.Shape != nil {
				args = append(args, "--shape", formatShape(c.Options.Shape))
			}
			if c.Options.Kind != "" {
				args = append(args, "--kind", string(c.Options.Kind))
			}
			code, _, stderr := execData(t, args...)
			if code != 1 {
				t.Errorf("exit %d, want 1 (%s)", code, stderr)
			}
			if strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q is not one line", stderr)
			}
			for _, w := range c.Want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Errorf("left %v behind", entries)
			}
		})
	}
	if n < 15 {
		t.Errorf("only %d bad text inputs", n)
	}
}
