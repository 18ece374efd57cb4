package testdata_test

import (
	"encoding/json"
	"io/fs"
	"path"
	"testing"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/testdata"
)

// TestDatasets reads every embedded dataset and checks it against its truth.json.
func TestDatasets(t *testing.T) {
	for _, name := range testdata.Names {
		t.Run(name, func(t *testing.T) {
			d, err := tensorio.ReadFS(testdata.FS, name, tensorio.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := fs.ReadFile(testdata.FS, path.Join(name, "truth.json"))
			if err != nil {
				t.Fatal(err)
			}
			var truth struct {
				Model string `json:"model"`
				Rank  int    `json:"rank"`
				Shape []int  `json:"shape"`
			}
			if err := json.Unmarshal(b, &truth); err != nil {
				t.Fatal(err)
			}
			if truth.Rank < 1 || len(truth.Shape) != d.Manifest.Order {
				t.Errorf("truth.json says rank %d, shape %v; the dataset has shape %v", truth.Rank, truth.Shape, d.Manifest.Shape)
			}
			wantKind := tensorio.Count
			if truth.Model == "gauss" {
				wantKind = tensorio.Real
			}
			if d.Manifest.Kind != wantKind {
				t.Errorf("%s data of kind %s", truth.Model, d.Manifest.Kind)
			}
		})
	}
}
