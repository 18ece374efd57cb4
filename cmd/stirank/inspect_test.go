package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stirank/stirank/io/tensorio/tensoriotest"
)

func TestInspect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	file := writeFile(t, t.TempDir(), "m.csv", "i,j,value\n0,1,3\n2,0,1\n2,3,5\n")
	mustExec(t, "import", "--in", file, "--out", dir, "--shape", "4x5", "--blocks", "2")
	out := mustExec(t, "inspect", dir)
	for _, want := range []string{
		"order        2\n",
		"shape        4x5\n",
		"value kind   count\n",
		"stored cells 3 (density 0.15)\n",
		"zeros stored false\n",
		"blocks       2 per mode, 4 blocks; bounds mode-0 [0 2 4] mode-1 [0 2 5]\n",
		"values       min 1, max 5, sum 9\n",
		"verdict      valid\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	// Real data is valid as it is, not as counts.
	file = writeFile(t, t.TempDir(), "r.csv", "i,value\n0,1.5\n")
	real := filepath.Join(t.TempDir(), "real")
	mustExec(t, "import", "--in", file, "--out", real)
	code, stdout, stderr := execData(t, "inspect", "--counts", real)
	if code != 1 || !strings.Contains(stdout, "verdict      invalid") || !strings.Contains(stderr, "row 0: count 1.5 is not an integer") {
		t.Errorf("inspect --counts of real data: exit %d, %q, %q", code, stdout, stderr)
	}
	if code, _, stderr := execData(t, "inspect"); code != 2 || !strings.Contains(stderr, "want exactly one dataset") {
		t.Errorf("inspect without a directory: exit %d, %q", code, stderr)
	}
}

// TestInspectCorpus inspects every bad dataset of the corpus: each must be reported invalid with
// exit 1 and a one-line message naming the file, the row and the problem, and be left as it was.
func TestInspectCorpus(t *testing.T) {
	cases, err := tensoriotest.Corpus(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cases {
		if c.Dataset == "" {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			before := listing(t, c.Dataset)
			code, stdout, stderr := execData(t, "inspect", c.Dataset)
			if code != 1 || !strings.HasSuffix(stdout, "verdict      invalid\n") {
				t.Errorf("exit %d, stdout %q; want 1 and an invalid verdict", code, stdout)
			}
			if strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q is not one line", stderr)
			}
			for _, w := range c.Want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			if after := listing(t, c.Dataset); after != before {
				t.Errorf("inspect changed the dataset: %s, then %s", before, after)
			}
		})
	}
	if n < 15 {
		t.Errorf("only %d bad datasets", n)
	}
}

// listing describes the files under dir and their sizes.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %v; ", p, info.Size(), info.ModTime())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
