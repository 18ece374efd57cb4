package main

import (
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
