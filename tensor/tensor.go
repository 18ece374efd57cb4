// Package tensor holds the in-memory sparse tensor that every numerical part of stirank reads:
// coordinate lists for the stored cells of a 1-, 2- or 3-way array, and the block grid that cuts
// each mode into B contiguous ranges for the "parts" schedules of parallel SGLD.
//
// The package is free of Beam and of any file format; io/tensorio reads and writes it.
package tensor

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// MaxOrder is the largest tensor order stirank handles.
const MaxOrder = 3

// Sparse is a tensor stored as one entry per stored cell. Cells that are not stored are zero
// (for count data) or simply absent (for the Gaussian model every cell is stored).
type Sparse struct {
	// Shape is the extent of every mode.
	Shape []int
	// Coords[m][n] is the 0-based mode-m index of stored cell n.
	Coords [][]int32
	// Values[n] is the value of stored cell n: its real part when the tensor is complex.
	Values []float64
	// Imag[n] is the imaginary part of stored cell n of a complex tensor, and Imag is nil for a
	// real one. Only what complex data reach carries it: reading and writing (Block included)
	// and the IS-NMF dictionary scorer; the count and real models never see a complex tensor
	// (io/tensorio refuses to read one for them).
	Imag []float64 `json:",omitempty"`
}

// Complex reports whether the tensor holds complex values.
func (t *Sparse) Complex() bool { return t.Imag != nil }

// New returns an empty tensor of the given shape with room for capacity cells.
func New(shape []int, capacity int) (*Sparse, error) {
	if len(shape) < 1 || len(shape) > MaxOrder {
		return nil, fmt.Errorf("tensor: order %d not supported (1 to %d)", len(shape), MaxOrder)
	}
	for m, n := range shape {
		if n <= 0 || n > math.MaxInt32 {
			return nil, fmt.Errorf("tensor: mode %d has extent %d (must be 1 to %d)", m, n, math.MaxInt32)
		}
	}
	t := &Sparse{Shape: append([]int(nil), shape...), Coords: make([][]int32, len(shape))}
	for m := range t.Coords {
		t.Coords[m] = make([]int32, 0, capacity)
	}
	t.Values = make([]float64, 0, capacity)
	return t, nil
}

// Append adds one cell. It does not validate; call Validate once the tensor is complete.
func (t *Sparse) Append(idx []int, v float64) {
	for m := range t.Coords {
		t.Coords[m] = append(t.Coords[m], int32(idx[m]))
	}
	t.Values = append(t.Values, v)
}

// Order is the number of modes.
func (t *Sparse) Order() int { return len(t.Shape) }

// NNZ is the number of stored cells.
func (t *Sparse) NNZ() int { return len(t.Values) }

// Cells is the number of cells of the full array, stored or not.
func (t *Sparse) Cells() float64 {
	c := 1.0
	for _, n := range t.Shape {
		c *= float64(n)
	}
	return c
}

// Index returns the coordinates of stored cell n in dst (which must have room for Order entries).
func (t *Sparse) Index(n int, dst []int) []int {
	dst = dst[:0]
	for m := range t.Coords {
		dst = append(dst, int(t.Coords[m][n]))
	}
	return dst
}

// CellError reports a bad stored cell: which one and what is wrong with it.
type CellError struct {
	Cell    int   // position of the cell in storage order
	Index   []int // its coordinates
	Problem string
}

func (e *CellError) Error() string {
	return fmt.Sprintf("cell %d at %v: %s", e.Cell, e.Index, e.Problem)
}

// Validate checks that every coordinate lies inside the shape, every value (both parts of a
// complex one) is finite, no cell is stored twice, and, when counts is set, that every value is a
// non-negative integer. It returns the first problem found as a *CellError.
func (t *Sparse) Validate(counts bool) error {
	if len(t.Coords) != len(t.Shape) {
		return fmt.Errorf("tensor: %d coordinate columns for order %d", len(t.Coords), len(t.Shape))
	}
	for m := range t.Coords {
		if len(t.Coords[m]) != len(t.Values) {
			return fmt.Errorf("tensor: mode %d has %d coordinates for %d values", m, len(t.Coords[m]), len(t.Values))
		}
	}
	if t.Imag != nil && len(t.Imag) != len(t.Values) {
		return fmt.Errorf("tensor: %d imaginary parts for %d values", len(t.Imag), len(t.Values))
	}
	idx := make([]int, len(t.Shape))
	bad := func(n int, format string, args ...any) error {
		return &CellError{Cell: n, Index: append([]int(nil), t.Index(n, idx)...), Problem: fmt.Sprintf(format, args...)}
	}
	for n, v := range t.Values {
		for m := range t.Shape {
			if c := t.Coords[m][n]; c < 0 || int(c) >= t.Shape[m] {
				return bad(n, "mode-%d index %d outside [0, %d)", m, c, t.Shape[m])
			}
		}
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return bad(n, "value %v is not finite", v)
		case t.Imag != nil && (math.IsNaN(t.Imag[n]) || math.IsInf(t.Imag[n], 0)):
			return bad(n, "imaginary part %v is not finite", t.Imag[n])
		case counts && t.Imag != nil:
			return bad(n, "counts are real, the value is complex")
		case counts && v < 0:
			return bad(n, "count %v is negative", v)
		case counts && v != math.Trunc(v):
			return bad(n, "count %v is not an integer", v)
		case counts && v > 1<<53:
			return bad(n, "count %v is too large to be exact", v)
		}
	}
	if n, first := t.duplicate(); n >= 0 {
		return bad(n, "stored twice (first as cell %d)", first)
	}
	return nil
}

// duplicate returns a cell stored twice and the position of its first copy, or -1. Of all repeats
// it returns the one stored earliest. Sorting positions by linear index costs 12 bytes a cell,
// far less than a hash set.
func (t *Sparse) duplicate() (int, int) {
	n := len(t.Values)
	keys := make([]uint64, n)
	for c := range keys {
		for m := range t.Shape {
			keys[c] = keys[c]*uint64(t.Shape[m]) + uint64(t.Coords[m][c])
		}
	}
	perm := make([]int32, n)
	for c := range perm {
		perm[c] = int32(c)
	}
	slices.SortFunc(perm, func(a, b int32) int {
		if c := cmp.Compare(keys[a], keys[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	dup, first := -1, -1
	for i := 1; i < n; i++ {
		if keys[perm[i]] == keys[perm[i-1]] && (dup < 0 || int(perm[i]) < dup) {
			dup, first = int(perm[i]), int(perm[i-1])
			for j := i - 1; j > 0 && keys[perm[j-1]] == keys[perm[i]]; j-- {
				first = int(perm[j-1])
			}
		}
	}
	return dup, first
}

// Sum returns the sum of the stored values.
func (t *Sparse) Sum() float64 {
	s := 0.0
	for _, v := range t.Values {
		s += v
	}
	return s
}

// WithoutZeros returns the tensor with its stored zeros left out, cells in their order; t itself
// when it stores none. Models whose unstored cells are zeros (models.Info.UnstoredZero) see the
// same data either way, and a stored zero costs them as much as any other cell.
func (t *Sparse) WithoutZeros() *Sparse {
	zeros := 0
	for _, v := range t.Values {
		if v == 0 {
			zeros++
		}
	}
	if zeros == 0 {
		return t
	}
	n := t.NNZ() - zeros
	s := &Sparse{Shape: append([]int(nil), t.Shape...), Coords: make([][]int32, t.Order()), Values: make([]float64, 0, n)}
	for m := range s.Coords {
		s.Coords[m] = make([]int32, 0, n)
	}
	for i, v := range t.Values {
		if v == 0 {
			continue
		}
		for m := range s.Coords {
			s.Coords[m] = append(s.Coords[m], t.Coords[m][i])
		}
		s.Values = append(s.Values, v)
	}
	return s
}

// ErrEmpty is returned for a tensor with no stored cells where cells are needed.
var ErrEmpty = errors.New("tensor: no stored cells")

// Slab returns the cells whose mode-m index lies in [lo, hi), in their order, keeping their
// coordinates, in a tensor whose mode-m extent is hi (the data a growing tensor held when that
// mode had reached hi, as far as the slab goes).
func (t *Sparse) Slab(m, lo, hi int) *Sparse {
	shape := append([]int(nil), t.Shape...)
	shape[m] = hi
	s := &Sparse{Shape: shape, Coords: make([][]int32, t.Order())}
	for n, v := range t.Values {
		if i := int(t.Coords[m][n]); i >= lo && i < hi {
			for k := range s.Coords {
				s.Coords[k] = append(s.Coords[k], t.Coords[k][n])
			}
			s.Values = append(s.Values, v)
		}
	}
	return s
}
