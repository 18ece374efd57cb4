package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cellsOf returns the cells of a 3-way dataset by coordinates.
func cellsOf(t *testing.T, dir string) map[[3]int32]float64 {
	t.Helper()
	x := readDataset(t, dir).Tensor
	m := map[[3]int32]float64{}
	for n, v := range x.Values {
		m[[3]int32{x.Coords[0][n], x.Coords[1][n], x.Coords[2][n]}] = v
	}
	return m
}

func TestAppend(t *testing.T) {
	in := t.TempDir()
	dir := filepath.Join(t.TempDir(), "ds")
	mustExec(t, "import", "--in", writeFile(t, in, "base.csv", "i,j,k,value\n0,1,0,3\n2,0,1,1\n2,3,1,5\n"), "--out", dir)

	// Mode 0 grows from a CSV file (0-based), mode 1 from a .tns file (1-based), mode 2 from a
	// dataset.
	out := mustExec(t, "append", "--data", dir, "--in", writeFile(t, in, "more.csv", "i,j,k,value\n3,0,0,2\n0,0,0,1\n"))
	if !strings.HasPrefix(out, "appended 2 cells to "+dir+": version 2, shape 4x4x2, 5 stored cells in 2 shards (checksum ") {
		t.Errorf("output %q", out)
	}
	mustExec(t, "append", "--data", dir, "--in", writeFile(t, in, "more.txt", "# FROSTT\n1 6 1 4\n"), "--format", "tns")
	other := filepath.Join(t.TempDir(), "other")
	mustExec(t, "import", "--in", writeFile(t, in, "other.csv", "i,j,k,value\n1,1,2,7\n"), "--out", other)
	out = mustExec(t, "append", "--data", dir, "--in", other)
	if !strings.Contains(out, "version 4, shape 4x6x3, 7 stored cells in 4 shards") {
		t.Errorf("output %q", out)
	}
	want := map[[3]int32]float64{{0, 1, 0}: 3, {2, 0, 1}: 1, {2, 3, 1}: 5, {3, 0, 0}: 2, {0, 0, 0}: 1, {0, 5, 0}: 4, {1, 1, 2}: 7}
	got := cellsOf(t, dir)
	if len(got) != len(want) {
		t.Errorf("cells %v, want %v", got, want)
	}
	for c, v := range want {
		if got[c] != v {
			t.Errorf("cell %v = %v, want %v", c, got[c], v)
		}
	}

	// inspect shows the version, and reads an earlier one.
	if out := mustExec(t, "inspect", dir); !strings.Contains(out, "version      4\n") || !strings.Contains(out, "shape        4x6x3\n") {
		t.Errorf("inspect:\n%s", out)
	}
	out = mustExec(t, "inspect", "--version", "1", dir)
	for _, w := range []string{"version      1\n", "shape        3x4x2\n", "stored cells 3 ", "verdict      valid\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("inspect --version 1 lacks %q:\n%s", w, out)
		}
	}
	if code, _, stderr := execData(t, "inspect", "--version", "5", dir); code != 1 || !strings.Contains(stderr, "no version 5: the dataset is at version 4") {
		t.Errorf("inspect --version 5: exit %d, %q", code, stderr)
	}

	// --replace overwrites a stored cell's value and keeps the count.
	out = mustExec(t, "append", "--data", dir, "--in", writeFile(t, in, "fix.csv", "i,j,k,value\n0,1,0,8\n"), "--replace")
	if !strings.Contains(out, "version 5, shape 4x6x3, 7 stored cells") {
		t.Errorf("output %q", out)
	}
	if got := cellsOf(t, dir); got[[3]int32{0, 1, 0}] != 8 || len(got) != 7 {
		t.Errorf("after --replace: %v", got)
	}
}

// TestAppendErrors checks that bad input fails with one line naming the file, the line and the
// problem, and leaves the dataset as it was.
func TestAppendErrors(t *testing.T) {
	in := t.TempDir()
	dir := filepath.Join(t.TempDir(), "ds")
	mustExec(t, "import", "--in", writeFile(t, in, "base.csv", "i,j,k,value\n0,1,0,3\n2,0,1,1\n2,3,1,5\n"), "--out", dir)
	manifest, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	data := listing(t, filepath.Join(dir, "data"))
	other := filepath.Join(t.TempDir(), "other")
	mustExec(t, "import", "--in", writeFile(t, in, "other.csv", "i,j,k,value\n1,1,1,7\n2,3,1,1\n"), "--out", other)
	tests := []struct {
		name, content string
		args          []string
		want          string
	}{
		{"dup.csv", "i,j,k,value\n5,0,0,1\n\n2,3,1,2\n", nil,
			"dup.csv line 4: cell [2 3 1] is already stored (data/shard-00000.parquet row 2); pass --replace to overwrite it"},
		{"dup.tns", "6 1 1 1\n3 4 2 2\n", nil, "dup.tns line 2: cell [2 3 1] is already stored"},
		{"neg.csv", "i,j,k,value\n5,0,0,1\n5,1,0,-1\n", nil, "neg.csv line 3: count -1 is negative"},
		{"nan.csv", "i,j,k,value\n5,0,0,NaN\n", nil, "nan.csv line 2: value NaN is not finite"},
		{"order.csv", "i,j,value\n5,0,1\n", nil, "order.csv: the cells are 2-way, the dataset is 3-way"},
		{"twice.csv", "i,j,k,value\n5,0,0,1\n5,0,0,2\n", nil, "twice.csv line 3: cell [5 0 0] stored twice (first on line 2)"},
		{"", "", []string{"--in", other}, other + "/data/shard-00000.parquet row 1: cell [2 3 1] is already stored (data/shard-00000.parquet row 2)"},
	}
	for _, tt := range tests {
		args := tt.args
		if tt.content != "" {
			args = []string{"--in", writeFile(t, in, tt.name, tt.content)}
		}
		code, stdout, stderr := execData(t, append([]string{"append", "--data", dir}, args...)...)
		if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and %q", tt.name, code, stdout, stderr, tt.want)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "manifest.json")); !bytes.Equal(b, manifest) {
			t.Errorf("%s: manifest.json changed", tt.name)
		}
		if after := listing(t, filepath.Join(dir, "data")); after != data {
			t.Errorf("%s: data/ changed: %s", tt.name, after)
		}
	}

	usage := []struct {
		args []string
		want string
	}{
		{[]string{"--data", dir}, "--data and --in are required"},
		{[]string{"--data", "gs://bucket/ds", "--in", "x.csv"}, "appends need a local or mounted directory"},
		{[]string{"--data", dir, "--in", filepath.Join(in, "dup.csv"), "--format", "xls"}, `text format "xls"`},
		{[]string{"--data", dir, "--in", filepath.Join(in, "x.dat")}, `cannot tell the format from the extension "dat"`},
		{[]string{"--data", dir, "--in", other, "--format", "csv"}, "--format is for text files"},
	}
	for _, tt := range usage {
		if code, _, stderr := execData(t, append([]string{"append"}, tt.args...)...); code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("stirank append %s: exit %d, %q; want exit 2 and %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
	}
	if d := readDataset(t, dir); d.Manifest.Version != 1 || !slices.Equal(d.Manifest.Shape, []int{3, 4, 2}) {
		t.Errorf("dataset now version %d, shape %v", d.Manifest.Version, d.Manifest.Shape)
	}
}
