package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/models"
)

// docs/accuracy.md is the output of its command: its first row, rerun here, is in it byte for
// byte (a race's numbers do not depend on the machine or its cores).
func TestAccuracyDocReproduces(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a race")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "accuracy.md"))
	if err != nil {
		t.Fatal(err)
	}
	const name = "nmf 30x20 rank 3, rate 0.3"
	var out bytes.Buffer
	if err := race(&out, 1, name, true, 0, 0, ""); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	row := lines[slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "| --- ") })+1]
	if !strings.HasPrefix(row, "| "+name+" | 1 |") || !bytes.Contains(doc, []byte("\n"+row+"\n")) {
		t.Errorf("docs/accuracy.md does not hold the row its command prints now:\n%s\n(run go run ./bench/race -seeds 2 -markdown and put its output in docs/accuracy.md)", row)
	}
}

// -prior names the hyperprior, scales the drawn rates, and refuses anything else.
func TestWithPrior(t *testing.T) {
	spec := models.PoissonSpec("nmf", []float64{0.3, 0.5}, models.LogScale)
	auto, err := withPrior(spec, "auto")
	if err != nil || !auto.Params.Auto("rates") {
		t.Errorf("-prior auto: %v, %v", auto.Params["rates"], err)
	}
	scaled, err := withPrior(spec, "10")
	if err != nil || !slices.Equal(scaled.Params["rates"].Nums, []float64{3, 5}) || !slices.Equal(spec.Params["rates"].Nums, []float64{0.3, 0.5}) {
		t.Errorf("-prior 10: %v (drawn %v), %v", scaled.Params["rates"], spec.Params["rates"], err)
	}
	same, err := withPrior(spec, "")
	if err != nil || !slices.Equal(same.Params["rates"].Nums, spec.Params["rates"].Nums) {
		t.Errorf("no -prior: %v, %v", same.Params["rates"], err)
	}
	for _, bad := range []string{"x", "0", "-1", "Inf", "NaN"} {
		if _, err := withPrior(spec, bad); err == nil {
			t.Errorf("-prior %q: no error", bad)
		}
	}
}
