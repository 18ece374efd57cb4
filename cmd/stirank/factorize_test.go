package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/io/tensorio"
)

// sameFiles reports whether two directory trees hold the same files with the same bytes.
func sameFiles(t *testing.T, a, b string) bool {
	t.Helper()
	read := func(root string) map[string][]byte {
		files := map[string][]byte{}
		err := filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			files[rel], err = os.ReadFile(p)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	x, y := read(a), read(b)
	if len(x) != len(y) {
		return false
	}
	for name, data := range x {
		if !bytes.Equal(data, y[name]) {
			return false
		}
	}
	return true
}

func TestFactorize(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "x")
	mustExec(t, "generate", "--model", "nmf", "--shape", "30x40", "--rank", "3", "--seed", "2", "--out", data)
	fit := func(name string, seed string) (w, h string) {
		w, h = filepath.Join(dir, name+"-w"), filepath.Join(dir, name+"-h")
		out := mustExec(t, "factorize", "--data", data, "--rank", "3", "--out", w, "--h-out", h, "--seed", seed, "--iters", "200")
		if !strings.Contains(out, "factorized "+data+" (30x40) at rank 3") {
			t.Errorf("output %q", out)
		}
		return w, h
	}
	w1, h1 := fit("a", "5")
	w2, h2 := fit("b", "5")
	w3, _ := fit("c", "6")
	if !sameFiles(t, w1, w2) || !sameFiles(t, h1, h2) {
		t.Error("the same seed wrote different datasets")
	}
	if sameFiles(t, w1, w3) {
		t.Error("different seeds wrote the same W")
	}
	w, h := readDataset(t, w1), readDataset(t, h1)
	if w.Manifest.Kind != tensorio.Real || !slices.Equal(w.Manifest.Shape, []int{30, 3}) || w.Tensor.NNZ() != 90 {
		t.Errorf("W manifest %+v", w.Manifest)
	}
	if !slices.Equal(h.Manifest.Shape, []int{3, 40}) || h.Manifest.Provenance["factor"] != "H" || h.Manifest.Provenance["rank"] != "3" {
		t.Errorf("H manifest %+v", h.Manifest)
	}
	for _, v := range append(w.Tensor.Values, h.Tensor.Values...) {
		if !(v >= 0) {
			t.Fatalf("factor entry %v", v)
		}
	}
	// W can be read back as the input of another fit: a real dataset with every cell stored.
	mustExec(t, "factorize", "--data", w1, "--rank", "1", "--out", filepath.Join(dir, "ww"))
}

func TestFactorizeErrors(t *testing.T) {
	dir := t.TempDir()
	cube := filepath.Join(dir, "cube")
	mustExec(t, "generate", "--model", "cp", "--shape", "4x5x6", "--rank", "2", "--out", cube)
	negative := filepath.Join(dir, "neg")
	mustExec(t, "import", "--in", writeFile(t, dir, "neg.csv", "i,j,value\n0,0,1.5\n1,1,-2\n"), "--out", negative)
	holey := filepath.Join(dir, "holey")
	mustExec(t, "import", "--in", writeFile(t, dir, "holey.csv", "i,j,value\n0,0,1.5\n1,1,2\n"), "--out", holey)
	full := filepath.Join(dir, "full")
	mustExec(t, "import", "--in", writeFile(t, dir, "full.csv", "i,j,value\n0,0,1\n1,1,2\n"), "--out", full)
	busy := filepath.Join(dir, "busy")
	if err := os.Mkdir(busy, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, busy, "x", "")
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--data", full, "--rank", "0"}, 2, "--rank 0 must be at least 1"},
		{[]string{"--data", full, "--rank", "1", "--tol", "-1"}, 2, "--tol -1 must not be negative"},
		{[]string{"--rank", "1"}, 2, "--data and --out are required"},
		{[]string{"--data", cube, "--rank", "2"}, 1, cube + ": KL-NMF factorises a matrix, not a 3-way array"},
		{[]string{"--data", negative, "--rank", "1"}, 1, negative + ": cell (1, 1) is -2"},
		{[]string{"--data", holey, "--rank", "1"}, 1, holey + ": a real dataset with cells not stored"},
		{[]string{"--data", full, "--rank", "1", "--h-out", busy}, 1, busy + ": output directory is not empty"},
	} {
		out := filepath.Join(t.TempDir(), "w")
		code, _, stderr := execData(t, append([]string{"factorize", "--out", out}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("factorize %v: exit %d, stderr %q; want exit %d and one line with %q", tt.args, code, stderr, tt.code, tt.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("factorize %v left %s behind", tt.args, out)
		}
	}
}
