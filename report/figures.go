package report

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/stirank/stirank/pipelines"
)

var (
	black  = color.RGBA{A: 255}
	blue   = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	red    = color.RGBA{R: 200, G: 30, B: 30, A: 255}
	grey   = color.RGBA{R: 150, G: 150, B: 150, A: 255}
	barCol = color.RGBA{R: 120, G: 150, B: 190, A: 255}
)

// evidenceFigure draws log evidence against rank with ±2 s.e. bars (and the SMC estimate beside
// the integral where the run has one), the chosen rank marked, and p(R | X) as bars beneath.
func evidenceFigure(r pipelines.Result) *Figure {
	top := newPlot("", "", "log p(X | R)")
	bottom := newPlot("", "rank", "p(R | X)")
	var ti, smc, diverged points
	probs := points{}
	for _, rr := range r.Ranks {
		x := float64(rr.Rank)
		if v := float64(rr.LogEvidence); !math.IsNaN(v) {
			ti.add(x, v, 2*float64(rr.StdErr))
		} else {
			diverged.add(x, 0, 0)
		}
		if v := float64(rr.SMC); rr.Replicas > 0 && !math.IsNaN(v) {
			// Offset so the two estimates' bars do not hide each other.
			smc.add(x+0.2, v, 2*float64(rr.SMCStdErr))
		}
		if p := float64(rr.PosteriorProb); !math.IsNaN(p) {
			probs.add(x, p, 0)
		}
	}
	lo, hi := yRange(ti, smc)
	ti, below := ti.split(lo)
	smc, belowSMC := smc.split(lo)
	below.xys = append(below.xys, belowSMC.xys...)
	ti.draw(top, black, draw.CircleGlyph{}, "thermodynamic integral ±2 s.e.")
	if len(smc.xys) > 0 {
		smc.draw(top, blue, draw.TriangleGlyph{}, "SMC (annealing) ±2 s.e.")
	}
	if len(below.xys) > 0 {
		// Far-off ranks are written at the axis' foot: drawn to scale they would squash the
		// error bars of the ranks that compete into invisibility.
		xyl := plotter.XYLabels{}
		for _, p := range below.xys {
			xyl.XYs = append(xyl.XYs, plotter.XY{X: p.X, Y: lo})
			xyl.Labels = append(xyl.Labels, "↓ "+strconv.FormatFloat(p.Y, 'f', 0, 64))
		}
		if l, err := plotter.NewLabels(xyl); err == nil {
			for i := range l.TextStyle {
				l.TextStyle[i].Font.Size = vg.Points(8)
				l.TextStyle[i].Color = grey
				l.TextStyle[i].XAlign = draw.XCenter
			}
			top.Add(l)
		}
	}
	if len(diverged.xys) > 0 {
		for i := range diverged.xys {
			diverged.xys[i].Y = lo
		}
		s, _ := plotter.NewScatter(diverged.xys)
		s.GlyphStyle = draw.GlyphStyle{Color: red, Radius: vg.Points(4), Shape: draw.CrossGlyph{}}
		top.Add(s)
		top.Legend.Add("diverged (no estimate)", s)
	}
	if rr, ok := r.Best(); ok {
		s, _ := plotter.NewScatter(plotter.XYs{{X: float64(rr.Rank), Y: float64(rr.LogEvidence)}})
		s.GlyphStyle = draw.GlyphStyle{Color: red, Radius: vg.Points(6), Shape: draw.RingGlyph{}}
		top.Add(s)
		top.Legend.Add(fmt.Sprintf("chosen rank %d", rr.Rank), s)
		mark := plotter.XYs{{X: float64(rr.Rank), Y: 0}, {X: float64(rr.Rank), Y: 1}}
		l, _ := plotter.NewLine(mark)
		l.LineStyle = draw.LineStyle{Color: red, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(3), vg.Points(3)}}
		bottom.Add(l)
	}
	top.Y.Min, top.Y.Max = lo, hi
	bottom.Add(&bars{xys: probs.xys, width: 0.6, color: barCol})
	bottom.Y.Min, bottom.Y.Max = 0, 1
	rankAxes(r, top, bottom)
	top.Legend.Top, top.Legend.Left = false, false
	top.Legend.YPosition = draw.PosBottom
	// Inset so the ring of the chosen rank's entry stays inside the canvas.
	top.Legend.XOffs, top.Legend.YOffs = -vg.Points(6), vg.Points(4)
	return &Figure{
		Name:    "evidence",
		Caption: "Log evidence against rank, ±2 standard errors, and the posterior rank probabilities.",
		Width:   7 * vg.Inch, Height: 5 * vg.Inch,
		Draw: func(dc draw.Canvas) { stack(dc, []*plot.Plot{top, bottom}, []float64{0.68, 0.32}) },
	}
}

// zoomNats is how far below the best estimate the evidence axis reaches at most.
const zoomNats = 250

// yRange returns the evidence axis limits: the extent of the bars within zoomNats of the best
// estimate, with room beneath for the legend.
func yRange(sets ...points) (lo, hi float64) {
	best := math.Inf(-1)
	for _, s := range sets {
		for _, p := range s.xys {
			best = math.Max(best, p.Y)
		}
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range sets {
		for i, p := range s.xys {
			if p.Y >= best-zoomNats {
				lo = math.Min(lo, p.Y-s.errs[i].Low)
				hi = math.Max(hi, p.Y+s.errs[i].High)
			}
		}
	}
	if math.IsInf(lo, 0) {
		return -1, 1
	}
	span := math.Max(hi-lo, 2)
	return lo - 0.3*span, hi + 0.08*span
}

// split returns the points at or above lo and those below.
func (s points) split(lo float64) (in, below points) {
	for i, p := range s.xys {
		if p.Y >= lo {
			in.add(p.X, p.Y, s.errs[i].High)
		} else {
			below.add(p.X, p.Y, 0)
		}
	}
	return in, below
}

// rankAxes gives the plots the same integer rank axis.
func rankAxes(r pipelines.Result, ps ...*plot.Plot) {
	lo, hi := r.Ranks[0].Rank, r.Ranks[0].Rank
	for _, rr := range r.Ranks {
		lo, hi = min(lo, rr.Rank), max(hi, rr.Rank)
	}
	var ticks plot.ConstantTicks
	step := max(1, (hi-lo+1)/15)
	for k := lo; k <= hi; k += step {
		ticks = append(ticks, plot.Tick{Value: float64(k), Label: strconv.Itoa(k)})
	}
	for _, p := range ps {
		p.X.Min, p.X.Max = float64(lo)-0.6, float64(hi)+0.6
		p.X.Tick.Marker = ticks
	}
}

// stack draws the plots one above the other with the given shares of the height, their data
// areas aligned left and right so that a shared x axis lines up.
func stack(dc draw.Canvas, ps []*plot.Plot, shares []float64) {
	h := dc.Max.Y - dc.Min.Y
	cs := make([]draw.Canvas, len(ps))
	top := dc.Max.Y
	for i := range ps {
		c := dc
		c.Max.Y = top
		c.Min.Y = top - vg.Length(shares[i])*h
		top = c.Min.Y
		cs[i] = c
	}
	var left, right vg.Length
	for i, p := range ps {
		d := p.DataCanvas(cs[i])
		left = max(left, d.Min.X-cs[i].Min.X)
		right = max(right, cs[i].Max.X-d.Max.X)
	}
	for i, p := range ps {
		d := p.DataCanvas(cs[i])
		c := cs[i]
		c.Min.X += left - (d.Min.X - cs[i].Min.X)
		c.Max.X -= right - (cs[i].Max.X - d.Max.X)
		p.Draw(c)
	}
}

// newPlot returns a plot with the report's fonts and a light grid.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.TextStyle.Font.Size = vg.Points(10)
	p.Y.Label.TextStyle.Font.Size = vg.Points(10)
	p.X.Tick.Label.Font.Size = vg.Points(9)
	p.Y.Tick.Label.Font.Size = vg.Points(9)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Y.Tick.Marker = plainTicks{}
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = color.RGBA{R: 230, G: 230, B: 230, A: 255}, color.RGBA{R: 230, G: 230, B: 230, A: 255}
	p.Add(g)
	return p
}

// points are estimates with symmetric error bars.
type points struct {
	xys  plotter.XYs
	errs plotter.YErrors
}

func (s *points) add(x, y, err float64) {
	s.xys = append(s.xys, plotter.XY{X: x, Y: y})
	s.errs = append(s.errs, struct{ Low, High float64 }{err, err})
}

// errXYs is what plotter.NewYErrorBars reads.
type errXYs struct {
	plotter.XYs
	plotter.YErrors
}

func (e errXYs) Len() int { return len(e.XYs) }

// draw adds the points and their error bars to p, with a legend entry when label is set.
func (s points) draw(p *plot.Plot, c color.Color, shape draw.GlyphDrawer, label string) {
	if len(s.xys) == 0 {
		return
	}
	eb, err := plotter.NewYErrorBars(errXYs{s.xys, s.errs})
	if err == nil {
		eb.LineStyle.Color = c
		eb.CapWidth = vg.Points(4)
		p.Add(eb)
	}
	sc, _ := plotter.NewScatter(s.xys)
	sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2.5), Shape: shape}
	p.Add(sc)
	if label != "" {
		p.Legend.Add(label, sc)
	}
}

// bars is a bar chart at arbitrary x positions (plotter.BarChart places bars at consecutive
// integers, but the ranks tried may skip some).
type bars struct {
	xys   plotter.XYs
	width float64
	color color.Color
}

func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	for _, v := range b.xys {
		x0, x1 := tx(v.X-b.width/2), tx(v.X+b.width/2)
		y0, y1 := ty(0), ty(v.Y)
		c.FillPolygon(b.color, c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}))
	}
}

func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), 0, 0
	for _, v := range b.xys {
		xmin, xmax, ymax = math.Min(xmin, v.X-b.width/2), math.Max(xmax, v.X+b.width/2), math.Max(ymax, v.Y)
	}
	return
}

// plainTicks are gonum's default ticks labelled without trailing zeros (-2500, not -2500.00).
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ts {
		if t.Label != "" {
			ts[i].Label = strconv.FormatFloat(t.Value, 'g', 10, 64)
		}
	}
	return ts
}
