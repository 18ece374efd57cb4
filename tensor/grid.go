package tensor

import (
	"fmt"
)

// Grid cuts every mode of a shape into B contiguous ranges of near-equal length. Block (b0, b1, b2)
// is the Cartesian product of range b0 of mode 0, range b1 of mode 1, and so on.
type Grid struct {
	B int
	// Bounds[m] has B+1 entries: range b of mode m is [Bounds[m][b], Bounds[m][b+1]).
	Bounds [][]int
}

// NewGrid returns the B-way grid of shape. Every mode must have at least B indices.
func NewGrid(shape []int, B int) (Grid, error) {
	if B < 1 {
		return Grid{}, fmt.Errorf("tensor: block count %d must be at least 1", B)
	}
	g := Grid{B: B, Bounds: make([][]int, len(shape))}
	for m, n := range shape {
		if n < B {
			return Grid{}, fmt.Errorf("tensor: mode %d has %d indices, fewer than %d blocks", m, n, B)
		}
		g.Bounds[m] = make([]int, B+1)
		for b := 0; b <= B; b++ {
			g.Bounds[m][b] = int(int64(b) * int64(n) / int64(B))
		}
	}
	return g, nil
}

// NumBlocks is B^order.
func (g Grid) NumBlocks() int {
	n := 1
	for range g.Bounds {
		n *= g.B
	}
	return n
}

// RangeOf returns the range of mode m that contains index i.
func (g Grid) RangeOf(m, i int) int {
	b := int(int64(i) * int64(g.B) / int64(g.Bounds[m][g.B]))
	// The bounds are floors of b·n/B, so the estimate is off by at most one.
	for b > 0 && i < g.Bounds[m][b] {
		b--
	}
	for b < g.B-1 && i >= g.Bounds[m][b+1] {
		b++
	}
	return b
}

// Linear returns the position of block (b[0], b[1], …) in row-major block order.
func (g Grid) Linear(b []int) int {
	l := 0
	for _, bm := range b {
		l = l*g.B + bm
	}
	return l
}

// Coords returns the per-mode range indices of the block at row-major position l.
func (g Grid) Coords(l int, dst []int) []int {
	dst = dst[:len(g.Bounds)]
	for m := len(g.Bounds) - 1; m >= 0; m-- {
		dst[m] = l % g.B
		l /= g.B
	}
	return dst
}

// Blocked is a tensor whose cells are ordered by block, so the cells of one block are contiguous.
type Blocked struct {
	*Sparse
	Grid Grid
	// Offsets has NumBlocks+1 entries: the cells of block l are positions [Offsets[l], Offsets[l+1]).
	Offsets []int
}

// Block returns a copy of t with its cells reordered by the B-way grid (a stable counting sort, so
// cells keep their relative order inside a block).
func Block(t *Sparse, B int) (*Blocked, error) {
	g, err := NewGrid(t.Shape, B)
	if err != nil {
		return nil, err
	}
	nb := g.NumBlocks()
	of := make([]int32, t.NNZ())
	counts := make([]int, nb+1)
	bc := make([]int, t.Order())
	for n := range t.Values {
		for m := range bc {
			bc[m] = g.RangeOf(m, int(t.Coords[m][n]))
		}
		l := g.Linear(bc)
		of[n] = int32(l)
		counts[l+1]++
	}
	for l := 0; l < nb; l++ {
		counts[l+1] += counts[l]
	}
	offsets := append([]int(nil), counts...)
	out := &Sparse{Shape: append([]int(nil), t.Shape...), Coords: make([][]int32, t.Order()), Values: make([]float64, t.NNZ())}
	for m := range out.Coords {
		out.Coords[m] = make([]int32, t.NNZ())
	}
	if t.Imag != nil {
		out.Imag = make([]float64, t.NNZ())
	}
	for n := range t.Values {
		p := counts[of[n]]
		counts[of[n]]++
		for m := range out.Coords {
			out.Coords[m][p] = t.Coords[m][n]
		}
		out.Values[p] = t.Values[n]
		if t.Imag != nil {
			out.Imag[p] = t.Imag[n]
		}
	}
	return &Blocked{Sparse: out, Grid: g, Offsets: offsets}, nil
}

// BlockCells returns the half-open range of cell positions of block l.
func (b *Blocked) BlockCells(l int) (lo, hi int) { return b.Offsets[l], b.Offsets[l+1] }
