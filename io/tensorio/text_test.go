package tensorio_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/tensor"
)

// cells builds the expected tensor from 0-based cells {i, j, …, value}.
func cells(shape []int, rows ...[]float64) *tensor.Sparse {
	t := &tensor.Sparse{Shape: shape, Coords: make([][]int32, len(shape))}
	for _, r := range rows {
		for m := range shape {
			t.Coords[m] = append(t.Coords[m], int32(r[m]))
		}
		t.Values = append(t.Values, r[len(shape)])
	}
	return t
}

// complexCells gives t the imaginary parts imag.
func complexCells(t *tensor.Sparse, imag ...float64) *tensor.Sparse {
	t.Imag = imag
	return t
}

func TestReadText(t *testing.T) {
	tests := []struct {
		name, text string
		format     tensorio.TextFormat
		opts       tensorio.TextOptions
		want       *tensor.Sparse
		kind       tensorio.ValueKind
	}{{
		name:   "csv 3-way",
		text:   "i,j,k,value\n0,1,2,3\n4, 0, 1, 2.5\n",
		format: tensorio.CSV,
		want:   cells([]int{5, 2, 3}, []float64{0, 1, 2, 3}, []float64{4, 0, 1, 2.5}),
		kind:   tensorio.Real,
	}, {
		name:   "csv matrix with shape, header in capitals, CRLF",
		text:   "I,J,Value\r\n0,1,3\r\n2,0,7\r\n",
		format: tensorio.CSV,
		opts:   tensorio.TextOptions{Shape: []int{4, 4}},
		want:   cells([]int{4, 4}, []float64{0, 1, 3}, []float64{2, 0, 7}),
		kind:   tensorio.Count,
	}, {
		name:   "csv vector as real",
		text:   "i,value\n3,1\n0,2\n",
		format: tensorio.CSV,
		opts:   tensorio.TextOptions{Kind: tensorio.Real},
		want:   cells([]int{4}, []float64{3, 1}, []float64{0, 2}),
		kind:   tensorio.Real,
	}, {
		name:   "tns",
		text:   "# FROSTT\n1 2 3 4\n\n5 1 2 1\n",
		format: tensorio.TNS,
		want:   cells([]int{5, 2, 3}, []float64{0, 1, 2, 4}, []float64{4, 0, 1, 1}),
		kind:   tensorio.Count,
	}, {
		name:   "tns with shape",
		text:   "1 2 -0.5\n",
		format: tensorio.TNS,
		opts:   tensorio.TextOptions{Shape: []int{3, 3}},
		want:   cells([]int{3, 3}, []float64{0, 1, -0.5}),
		kind:   tensorio.Real,
	}, {
		name:   "mtx general integer",
		text:   "%%MatrixMarket matrix coordinate integer general\n% a comment\n3 4 2\n1 4 7\n3 1 2\n",
		format: tensorio.MTX,
		want:   cells([]int{3, 4}, []float64{0, 3, 7}, []float64{2, 0, 2}),
		kind:   tensorio.Count,
	}, {
		name:   "mtx symmetric real",
		text:   "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 1 1.5\n3 2 -2\n",
		format: tensorio.MTX,
		want:   cells([]int{3, 3}, []float64{0, 0, 1.5}, []float64{2, 1, -2}, []float64{1, 2, -2}),
		kind:   tensorio.Real,
	}, {
		name:   "mtx skew-symmetric",
		text:   "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 3\n",
		format: tensorio.MTX,
		want:   cells([]int{2, 2}, []float64{1, 0, 3}, []float64{0, 1, -3}),
		kind:   tensorio.Real,
	}, {
		name:   "mtx pattern",
		text:   "%%matrixmarket MATRIX Coordinate pattern general\n2 3 2\n1 3\n2 2\n",
		format: tensorio.MTX,
		want:   cells([]int{2, 3}, []float64{0, 2, 1}, []float64{1, 1, 1}),
		kind:   tensorio.Count,
	}, {
		name:   "csv complex f,n,re,im",
		text:   "i,j,re,im\n0,1,3,-4\n2, 0, 0, 1e-3\n1,1,-0.5,0\n",
		format: tensorio.CSV,
		want:   complexCells(cells([]int{3, 2}, []float64{0, 1, 3}, []float64{2, 0, 0}, []float64{1, 1, -0.5}), -4, 1e-3, 0),
		kind:   tensorio.Complex,
	}, {
		name:   "csv complex 3-way, header in capitals, kind given",
		text:   "I,J,K,Re,Im\n0,1,2,1,1\n",
		format: tensorio.CSV,
		opts:   tensorio.TextOptions{Kind: tensorio.Complex},
		want:   complexCells(cells([]int{1, 2, 3}, []float64{0, 1, 2, 1}), 1),
		kind:   tensorio.Complex,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, kind, err := tensorio.ReadText(strings.NewReader(tt.text), "input", tt.format, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			equalCells(t, got, tt.want)
			if kind != tt.kind {
				t.Errorf("kind %s, want %s", kind, tt.kind)
			}
			// And through a dataset.
			dir := filepath.Join(t.TempDir(), "ds")
			if _, err := tensorio.Write(context.Background(), dir, got, tensorio.WriteOptions{Kind: kind}); err != nil {
				t.Fatal(err)
			}
			d, err := tensorio.Read(context.Background(), dir, tensorio.ReadOptions{Complex: kind == tensorio.Complex})
			if err != nil {
				t.Fatal(err)
			}
			equalCells(t, d.Tensor, tt.want)
		})
	}
}

func TestTextFormatOf(t *testing.T) {
	for name, want := range map[string]tensorio.TextFormat{"a/b.csv": tensorio.CSV, "x.TNS": tensorio.TNS, "m.mtx": tensorio.MTX} {
		if got, err := tensorio.TextFormatOf(name); got != want || err != nil {
			t.Errorf("TextFormatOf(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := tensorio.TextFormatOf("data.txt"); err == nil {
		t.Error("TextFormatOf(data.txt) succeeded")
	}
}
