package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stirank/stirank/pipelines"
)

// dictionaryResult is a scoring of three dictionaries on three columns; the third dictionary
// has a diverged column, and column 1 is a close call.
func dictionaryResult() pipelines.DictionaryResult {
	r := pipelines.DictionaryResult{Kind: "dictionary", Method: "smc2", Values: "real", Particles: 100, Stages: 1000, Replicas: 4, Seed: 1,
		Data: pipelines.DataInfo{Source: "x", Shape: []int{10, 3}}, Divergences: []string{"dictionary 2, column 0, replica 1: stage 5: log weight NaN"}}
	col := func(n int, l, se float64) pipelines.ColumnScore {
		return pipelines.ColumnScore{Column: n, LogEvidence: pipelines.Float(l), StdErr: pipelines.Float(se)}
	}
	add := func(name string, k int, cols ...pipelines.ColumnScore) {
		var total, v float64
		for _, c := range cols {
			total += float64(c.LogEvidence)
			v += float64(c.StdErr * c.StdErr)
		}
		r.Dictionaries = append(r.Dictionaries, pipelines.DictionaryScore{Name: name, DictionaryInfo: pipelines.DictionaryInfo{K: k},
			LogEvidence: pipelines.Float(total), StdErr: pipelines.Float(math.Sqrt(v)), Columns: cols})
	}
	add("small", 2, col(0, -20, 0.1), col(1, -30, 0.1), col(2, -25, 0.1))
	add("true", 3, col(0, -18, 0.1), col(1, -30.05, 0.1), col(2, -22, 0.1))
	add("broken", 4, col(0, math.NaN(), math.NaN()), col(1, -31, 0.1), col(2, -26, 0.1))
	r.Dictionaries[0].PosteriorProb, r.Dictionaries[1].PosteriorProb, r.Dictionaries[2].PosteriorProb = 0.01, 0.99, pipelines.Float(math.NaN())
	r.Best = "true"
	return r
}

// The report of a dictionary scoring renders to the same bytes twice, parses, ranks the
// dictionaries best first, and flags the diverged dictionary and the close column.
func TestDictionaryReport(t *testing.T) {
	r := dictionaryResult()
	_, a, err := Dictionary(r).Render()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Dictionary(r).Write(dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, HTML))
	if !bytes.Equal(a, b) {
		t.Error("two renderings differ")
	}
	parseXML(t, HTML, b)
	for _, want := range []string{"Best dictionary: true", `<tr class="flag"><td>3</td><td>broken</td>`, "column 1: small beats true by less than two standard errors"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if i, j := bytes.Index(b, []byte("<td>true</td>")), bytes.Index(b, []byte("<td>small</td>")); i < 0 || j < i {
		t.Error("the dictionaries are not listed best first")
	}
}
