package report

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/stirank/stirank/pipelines"
)

// tPower is the root of t the f(t) axes are linear in: the default ladder t_i = (i/T)^6 is then
// evenly spaced, and an adaptive ladder's rungs near 10⁻⁵ stay apart.
const tPower = 6

// rootScale places t at t^(1/tPower) on an axis.
type rootScale struct{}

func (rootScale) Normalize(lo, hi, x float64) float64 {
	r := func(v float64) float64 { return math.Pow(math.Max(v, 0), 1.0/tPower) }
	return (r(x) - r(lo)) / (r(hi) - r(lo))
}

// tTicks label the t axis at values that spread out on the root scale; the unlabelled ones are
// minor ticks, whose labels would overlap in a small panel.
var tTicks = plot.ConstantTicks{
	{Value: 0, Label: "0"}, {Value: 1e-6}, {Value: 1e-4, Label: "1e-4"}, {Value: 1e-3},
	{Value: 1e-2, Label: "0.01"}, {Value: 0.1, Label: "0.1"}, {Value: 0.5}, {Value: 1, Label: "1"},
}

// curvesCols is the number of panels per row of the f(t) figure.
const curvesCols = 3

// curvesFigure draws f(t) with ±2 s.e. bars, one panel per rank; nil when no rank has a ladder
// (chib, ais).
func curvesFigure(r pipelines.Result) *Figure {
	var panels []*plot.Plot
	for _, rr := range r.Ranks {
		if len(rr.Ladder) == 0 {
			continue
		}
		var pts points
		for _, g := range rr.Ladder {
			if v := float64(g.MeanLogLik); !math.IsNaN(v) && !math.IsNaN(float64(g.StdErr)) {
				pts.add(g.T, v, 2*float64(g.StdErr))
			}
		}
		title := fmt.Sprintf("rank %d", rr.Rank)
		if len(rr.Diverged) > 0 {
			title += " (diverged)"
		}
		p := newPlot(title, "t", "f(t)")
		pts.draw(p, black, draw.CircleGlyph{}, "")
		p.X.Scale, p.X.Tick.Marker = rootScale{}, tTicks
		p.X.Min, p.X.Max = 0, 1
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return nil
	}
	rows := (len(panels) + curvesCols - 1) / curvesCols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, curvesCols)
	}
	for i, p := range panels {
		grid[i/curvesCols][i%curvesCols] = p
	}
	tiles := draw.Tiles{Rows: rows, Cols: curvesCols, PadX: vg.Points(14), PadY: vg.Points(14),
		PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	return &Figure{
		Name:    "ft",
		Caption: fmt.Sprintf("f(t) per rank, ±2 standard errors, t on a t^(1/%d) scale.", tPower),
		Width:   9 * vg.Inch, Height: vg.Length(rows) * 2.4 * vg.Inch,
		Draw: func(dc draw.Canvas) {
			cs := plot.Align(grid, tiles, dc)
			for i, p := range panels {
				p.Draw(cs[i/curvesCols][i%curvesCols])
			}
		},
	}
}
