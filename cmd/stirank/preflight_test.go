package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Inputs and flags that ask for more memory than any machine has are refused before anything is
// allocated or written: one line naming them and the amount, exit 1, no output.
func TestMemoryPreflight(t *testing.T) {
	dir := t.TempDir()
	mtx := filepath.Join(dir, "big.mtx")
	if err := os.WriteFile(mtx, []byte("%%MatrixMarket matrix coordinate integer general\n1000000000 1000000000 2\n1 1 3\n5 7 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	selectOK(t, "import", "--in", mtx, "--out", big)
	small := filepath.Join(dir, "small")
	selectOK(t, "generate", "--model", "nmf", "--shape", "4x5", "--rank", "1", "--out", small)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"generate", "--model", "nmf", "--shape", "3x3", "--rank", "1000000000"}, "--shape 3x3 --rank 1000000000 needs about"},
		{[]string{"generate", "--model", "cp", "--shape", "1000000000x1000000000x1000000000", "--rank", "2"}, "--shape 1000000000x1000000000x1000000000 --rank 2 needs about"},
		{[]string{"select", "--data", big, "--ranks", "1-2"}, "shape 1000000000x1000000000 at rank 2 with"},
		{[]string{"select", "--data", small, "--ranks", "1", "--temperatures", "1000000000"}, "--temperatures 1000000000 with"},
		{[]string{"chib", "--data", big, "--ranks", "1"}, "shape 1000000000x1000000000 at rank 1 with"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		code, _, stderr := selectRun(t, append(tc.args, "--out", out)...)
		if code == 0 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "of memory, more than") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: wrote %s", tc.args, out)
		}
	}
}
