package tensor

// ByRow holds the stored cells of a tensor grouped by their index in one mode, for kernels that
// update a factor row by row and must read every cell of a row together. The cells of row i are
// the positions Start[i] to Start[i+1] of Other and Values, in their stored order.
type ByRow struct {
	// Mode is the mode the cells are grouped by.
	Mode int
	// Start has one entry per row of the mode and a last one, NNZ.
	Start []int
	// Other[j][p] is the index of position p's cell in the j-th of the other modes, in mode order.
	Other [][]int32
	// Values[p] is the value of position p's cell.
	Values []float64
}

// GroupByRow returns the cells grouped by their mode-m index (RowIndex, then the cells' other
// indices and values gathered in that order).
func (t *Sparse) GroupByRow(m int) *ByRow {
	start, cells := RowIndex(t.Coords[m], t.Shape[m])
	g := &ByRow{Mode: m, Start: start, Values: make([]float64, len(cells))}
	for k := range t.Order() {
		if k == m {
			continue
		}
		o := make([]int32, len(cells))
		for p, n := range cells {
			o[p] = t.Coords[k][n]
		}
		g.Other = append(g.Other, o)
	}
	for p, n := range cells {
		g.Values[p] = t.Values[n]
	}
	return g
}

// RowIndex lists the cells of every row of a mode whose cells have the indices coords (each in
// [0, rows)): row i's cells are cells[start[i]:start[i+1]], in their stored order (a stable
// counting sort, O(len(coords) + rows)).
func RowIndex(coords []int32, rows int) (start []int, cells []int32) {
	start = make([]int, rows+1)
	for _, i := range coords {
		start[i+1]++
	}
	for i := range rows {
		start[i+1] += start[i]
	}
	next := append([]int(nil), start[:rows]...)
	cells = make([]int32, len(coords))
	for n, i := range coords {
		cells[next[i]] = int32(n)
		next[i]++
	}
	return start, cells
}
