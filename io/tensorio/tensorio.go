// Package tensorio reads and writes stirank datasets: a directory holding Parquet shards of
// sparse tensor cells and a manifest.json that describes them (shape, value kind, the shards with
// row counts and checksums, the optional block layout). docs/format.md specifies the format.
//
// Datasets are read from local paths or any Beam filesystem URL (gs://, s3://, memfs:// when the
// program links the filesystem in), and from an fs.FS for embedded data. Every value read is
// validated; a problem is reported as an *Error naming the file and the row or line.
//
// The package also imports the text layouts sparse tensors are usually published in: CSV with a
// header, FROSTT .tns and Matrix Market coordinate files.
package tensorio

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/stirank/stirank/tensor"
)

// ValueKind says what the values of a dataset are.
type ValueKind string

const (
	// Count values are non-negative integers; cells that are not stored are zero.
	Count ValueKind = "count"
	// Real values are any finite numbers.
	Real ValueKind = "real"
	// Complex values have a finite real part (the value column) and a finite imaginary part
	// (the imag column, tensor.Sparse.Imag), such as the short-time Fourier transform of a
	// signal; a cell is zero when both parts are.
	Complex ValueKind = "complex"
)

// ParseValueKind reads "count", "real" or "complex".
func ParseValueKind(s string) (ValueKind, error) {
	switch k := ValueKind(s); k {
	case Count, Real, Complex:
		return k, nil
	}
	return "", fmt.Errorf("value kind %q is not %q, %q or %q", s, Count, Real, Complex)
}

// Error is a problem with a dataset or input file: which file, where in it, and what is wrong.
type Error struct {
	// File is the path or URL of the file.
	File string
	// Row is the 0-based row of a Parquet shard the problem is in, or -1.
	Row int64
	// Line is the 1-based line of a text file the problem is in, or 0.
	Line int
	Err  error
}

func (e *Error) Error() string {
	switch {
	case e.Row >= 0:
		return fmt.Sprintf("%s row %d: %v", e.File, e.Row, e.Err)
	case e.Line > 0:
		return fmt.Sprintf("%s line %d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// fileError reports a problem with a whole file.
func fileError(file string, format string, args ...any) error {
	return &Error{File: file, Row: -1, Err: fmt.Errorf(format, args...)}
}

// rowError reports a problem with one row of a Parquet shard.
func rowError(file string, row int64, format string, args ...any) error {
	return &Error{File: file, Row: row, Err: fmt.Errorf(format, args...)}
}

// lineError reports a problem with one line of a text file.
func lineError(file string, line int, format string, args ...any) error {
	return &Error{File: file, Row: -1, Line: line, Err: fmt.Errorf(format, args...)}
}

// maxExactCount is the largest count a float64 holds exactly.
const maxExactCount = 1 << 53

// valueProblem returns what is wrong with a stored value, or "".
func valueProblem(v float64, counts, zerosStored bool) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Sprintf("value %v is not finite", v)
	case counts && v < 0:
		return fmt.Sprintf("count %v is negative", v)
	case counts && v != math.Trunc(v):
		return fmt.Sprintf("count %v is not an integer", v)
	case counts && v > maxExactCount:
		return fmt.Sprintf("count %v is too large to be exact", v)
	case !zerosStored && v == 0:
		return "value 0 is stored but the manifest says zeros are not stored"
	}
	return ""
}

// imagProblem returns what is wrong with the imaginary part of a stored complex value whose real
// part is re, or "".
func imagProblem(re, im float64, zerosStored bool) string {
	switch {
	case math.IsNaN(im) || math.IsInf(im, 0):
		return fmt.Sprintf("imaginary part %v is not finite", im)
	case !zerosStored && re == 0 && im == 0:
		return "value 0 is stored but the manifest says zeros are not stored"
	}
	return ""
}

// inferKind returns Complex for a tensor with imaginary parts, else Count when every value is a
// non-negative integer, else Real.
func inferKind(t *tensor.Sparse) ValueKind {
	if t.Complex() {
		return Complex
	}
	for _, v := range t.Values {
		if !(v >= 0 && v <= maxExactCount && v == math.Trunc(v)) {
			return Real
		}
	}
	return Count
}

// hasZero reports whether any stored value is zero (both parts, for a complex tensor).
func hasZero(t *tensor.Sparse) bool {
	for n, v := range t.Values {
		if v == 0 && (t.Imag == nil || t.Imag[n] == 0) {
			return true
		}
	}
	return false
}

// duplicate returns the positions of two cells of t with the same coordinates (first < second),
// or ok=false. It sorts the row-major linear indices of the cells: 8 bytes per cell, well under a
// hash set's cost, which matters at 10⁸ cells.
func duplicate(t *tensor.Sparse) (first, second int, ok bool) {
	if !fitsUint64(t.Shape) {
		return duplicateByCoords(t)
	}
	keys := make([]uint64, t.NNZ())
	for c := range keys {
		keys[c] = linear(t, c)
	}
	slices.Sort(keys)
	for c := 1; c < len(keys); c++ {
		if keys[c] != keys[c-1] {
			continue
		}
		first = -1
		for n := range t.Values {
			if linear(t, n) != keys[c] {
				continue
			}
			if first >= 0 {
				return first, n, true
			}
			first = n
		}
	}
	return 0, 0, false
}

// duplicateByCoords is duplicate for shapes with more than 2⁶⁴ cells, whose linear indices
// overflow: it sorts cell positions by coordinates instead.
func duplicateByCoords(t *tensor.Sparse) (first, second int, ok bool) {
	perm := make([]int, t.NNZ())
	for c := range perm {
		perm[c] = c
	}
	compare := func(a, b int) int {
		for m := range t.Coords {
			if c := cmp.Compare(t.Coords[m][a], t.Coords[m][b]); c != 0 {
				return c
			}
		}
		return cmp.Compare(a, b)
	}
	slices.SortFunc(perm, compare)
	for c := 1; c < len(perm); c++ {
		if sameCell(t, perm[c-1], perm[c]) {
			return perm[c-1], perm[c], true
		}
	}
	return 0, 0, false
}

func sameCell(t *tensor.Sparse, a, b int) bool {
	for m := range t.Coords {
		if t.Coords[m][a] != t.Coords[m][b] {
			return false
		}
	}
	return true
}

// fitsUint64 reports whether every cell of shape has a distinct uint64 row-major index.
func fitsUint64(shape []int) bool {
	total := 1.0
	for _, n := range shape {
		total *= float64(n)
	}
	return total < 1<<63
}

// linear is the row-major linear index of cell c of t.
func linear(t *tensor.Sparse, c int) uint64 {
	key := uint64(0)
	for m, n := range t.Shape {
		key = key*uint64(n) + uint64(t.Coords[m][c])
	}
	return key
}
