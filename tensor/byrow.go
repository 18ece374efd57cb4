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

// GroupByRow returns the cells grouped by their mode-m index (a counting sort: stable, O(NNZ)).
func (t *Sparse) GroupByRow(m int) *ByRow {
	n := t.NNZ()
	g := &ByRow{Mode: m, Start: make([]int, t.Shape[m]+1), Values: make([]float64, n)}
	for _, i := range t.Coords[m] {
		g.Start[i+1]++
	}
	for i := range t.Shape[m] {
		g.Start[i+1] += g.Start[i]
	}
	next := append([]int(nil), g.Start[:t.Shape[m]]...)
	pos := make([]int, n)
	for c, i := range t.Coords[m] {
		pos[c] = next[i]
		next[i]++
	}
	for k := range t.Order() {
		if k == m {
			continue
		}
		o := make([]int32, n)
		for c, i := range t.Coords[k] {
			o[pos[c]] = i
		}
		g.Other = append(g.Other, o)
	}
	for c, v := range t.Values {
		g.Values[pos[c]] = v
	}
	return g
}
