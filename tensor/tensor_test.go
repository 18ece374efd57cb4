package tensor

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestGridRanges(t *testing.T) {
	for _, n := range []int{5, 7, 100, 1001} {
		for _, B := range []int{1, 2, 3, 5} {
			g, err := NewGrid([]int{n}, B)
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				b := g.RangeOf(0, i)
				if i < g.Bounds[0][b] || i >= g.Bounds[0][b+1] {
					t.Fatalf("n=%d B=%d: index %d put in range %d = [%d, %d)", n, B, i, b, g.Bounds[0][b], g.Bounds[0][b+1])
				}
			}
		}
	}
	if _, err := NewGrid([]int{3, 10}, 4); err == nil {
		t.Error("more blocks than indices accepted")
	}
}

func TestBlockKeepsCellsAndGroupsThem(t *testing.T) {
	s, _ := New([]int{9, 7, 5}, 0)
	for i := range 9 {
		for j := range 7 {
			for k := range 5 {
				if (i*31+j*17+k*7)%3 == 0 {
					s.Append([]int{i, j, k}, float64(i*100+j*10+k))
					s.Imag = append(s.Imag, -float64(i*100+j*10+k))
				}
			}
		}
	}
	b, err := Block(s, 3)
	if err != nil {
		t.Fatal(err)
	}
	if b.NNZ() != s.NNZ() || b.Offsets[len(b.Offsets)-1] != s.NNZ() {
		t.Fatalf("blocked has %d cells, want %d", b.NNZ(), s.NNZ())
	}
	bc := make([]int, 3)
	for l := range b.Grid.NumBlocks() {
		b.Grid.Coords(l, bc)
		lo, hi := b.BlockCells(l)
		for n := lo; n < hi; n++ {
			for m := range 3 {
				c := int(b.Coords[m][n])
				if c < b.Grid.Bounds[m][bc[m]] || c >= b.Grid.Bounds[m][bc[m]+1] {
					t.Fatalf("cell %d in block %v has mode-%d index %d", n, bc, m, c)
				}
			}
			// The value encodes the coordinates: cells moved as a whole.
			if want := float64(b.Coords[0][n])*100 + float64(b.Coords[1][n])*10 + float64(b.Coords[2][n]); b.Values[n] != want || b.Imag[n] != -want {
				t.Fatalf("cell %d: value %v%+vi for coordinates that encode %v", n, b.Values[n], b.Imag[n], want)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	mk := func(idx [][]int, vals []float64) *Sparse {
		s, _ := New([]int{4, 3}, 0)
		for n := range vals {
			s.Append(idx[n], vals[n])
		}
		return s
	}
	for _, c := range []struct {
		s      *Sparse
		counts bool
		want   string
	}{
		{mk([][]int{{0, 0}, {4, 1}}, []float64{1, 2}), false, "mode-0 index 4 outside [0, 4)"},
		{mk([][]int{{0, 0}, {1, 1}}, []float64{1, math.NaN()}), false, "not finite"},
		{mk([][]int{{0, 0}, {1, 1}}, []float64{1, -2}), true, "negative"},
		{mk([][]int{{0, 0}, {1, 1}}, []float64{1, 2.5}), true, "not an integer"},
		{mk([][]int{{2, 1}, {1, 1}, {2, 1}}, []float64{1, 2, 3}), false, "stored twice (first as cell 0)"},
		{withImag(mk([][]int{{0, 0}, {1, 1}}, []float64{1, 2}), 0, math.Inf(-1)), false, "imaginary part -Inf is not finite"},
		{withImag(mk([][]int{{0, 0}, {1, 1}}, []float64{1, 2}), 0, 0), true, "counts are real"},
	} {
		err := c.s.Validate(c.counts)
		var ce *CellError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want a cell error containing %q", err, c.want)
		}
	}
	if err := mk([][]int{{0, 0}, {1, 1}}, []float64{1, 2.5}).Validate(false); err != nil {
		t.Errorf("real values rejected: %v", err)
	}
	if err := withImag(mk([][]int{{0, 0}, {1, 1}}, []float64{1, -2.5}), -3, 0.5).Validate(false); err != nil {
		t.Errorf("complex values rejected: %v", err)
	}
	short := mk([][]int{{0, 0}, {1, 1}}, []float64{1, 2})
	short.Imag = []float64{1}
	if err := short.Validate(false); err == nil || !strings.Contains(err.Error(), "1 imaginary parts for 2 values") {
		t.Errorf("imaginary parts of the wrong length: %v", err)
	}
}

// withImag makes s complex with the given imaginary parts.
func withImag(s *Sparse, imag ...float64) *Sparse {
	s.Imag = imag
	return s
}

func TestSlab(t *testing.T) {
	x, _ := New([]int{2, 3, 4}, 0)
	x.Append([]int{0, 1, 0}, 1)
	x.Append([]int{1, 2, 3}, 2)
	x.Append([]int{1, 0, 2}, 3)
	s := x.Slab(2, 1, 3)
	if !slices.Equal(s.Shape, []int{2, 3, 3}) || !slices.Equal(s.Values, []float64{3}) || s.Index(0, nil)[2] != 2 {
		t.Fatalf("slab [1,3) of mode 2: shape %v values %v", s.Shape, s.Values)
	}
	if p := x.Slab(2, 0, 4); p.NNZ() != 3 || !slices.Equal(p.Shape, x.Shape) {
		t.Fatalf("whole slab: %d cells, shape %v", p.NNZ(), p.Shape)
	}
}

// Grouping by any mode keeps every cell once, under its row, in stored order within a row.
func TestGroupByRow(t *testing.T) {
	d, err := New([]int{3, 4, 2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cells := [][]int{{2, 1, 0}, {0, 3, 1}, {2, 0, 1}, {1, 1, 1}, {0, 0, 0}, {2, 3, 0}}
	for n, c := range cells {
		d.Append(c, float64(n+1))
	}
	for m := range d.Order() {
		g := d.GroupByRow(m)
		var got [][]int
		for i := range d.Shape[m] {
			for p := g.Start[i]; p < g.Start[i+1]; p++ {
				c := []int{}
				j := 0
				for k := range d.Order() {
					if k == m {
						c = append(c, i)
						continue
					}
					c = append(c, int(g.Other[j][p]))
					j++
				}
				got = append(got, append(c, int(g.Values[p])))
			}
		}
		var want [][]int
		for i := range d.Shape[m] {
			for n, c := range cells {
				if c[m] == i {
					want = append(want, append(append([]int(nil), c...), n+1))
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("mode %d: %v, want %v", m, got, want)
		}
	}
}
