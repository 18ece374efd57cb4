package report

import (
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/stirank/stirank/runstate"
)

// historyRun is one committed run of a state directory: its chosen rank and that rank's evidence.
type historyRun struct {
	ID             string
	Time           time.Time
	DatasetVersion int
	ChosenRank     int
	// LogEvidence and StdErr are the chosen rank's; NaN when every rank diverged.
	LogEvidence, StdErr float64
}

// historyRuns groups the history's rows (one per run and rank, oldest first) into runs.
func historyRuns(rows []runstate.HistoryRow) []historyRun {
	var runs []historyRun
	for _, h := range rows {
		if len(runs) == 0 || runs[len(runs)-1].ID != h.RunID {
			runs = append(runs, historyRun{ID: h.RunID, Time: h.Time, DatasetVersion: h.DatasetVersion,
				ChosenRank: h.ChosenRank, LogEvidence: math.NaN(), StdErr: math.NaN()})
		}
		if h.Rank == h.ChosenRank {
			runs[len(runs)-1].LogEvidence, runs[len(runs)-1].StdErr = h.LogEvidence, h.StdErr
		}
	}
	return runs
}

// historyFigure draws the chosen rank and its log evidence (±2 s.e.) against the run, labelled
// by dataset version.
func historyFigure(runs []historyRun) *Figure {
	top := newPlot("", "", "chosen rank")
	bottom := newPlot("", "run (dataset version)", "log p(X | R) of the chosen rank")
	var chosen plotter.XYs
	var ev points
	var ticks plot.ConstantTicks
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, h := range runs {
		x := float64(i)
		chosen = append(chosen, plotter.XY{X: x, Y: float64(h.ChosenRank)})
		lo, hi = math.Min(lo, float64(h.ChosenRank)), math.Max(hi, float64(h.ChosenRank))
		if !math.IsNaN(h.LogEvidence) {
			ev.add(x, h.LogEvidence, 2*h.StdErr)
		}
		ticks = append(ticks, plot.Tick{Value: x, Label: "v" + strconv.Itoa(h.DatasetVersion)})
	}
	l, s, _ := plotter.NewLinePoints(chosen)
	l.Color, s.Color = grey, black
	top.Add(l, s)
	var rankTicks plot.ConstantTicks
	for k := int(lo); k <= int(hi); k++ {
		rankTicks = append(rankTicks, plot.Tick{Value: float64(k), Label: strconv.Itoa(k)})
	}
	top.Y.Tick.Marker = rankTicks
	top.Y.Min, top.Y.Max = lo-0.5, hi+0.5
	ev.draw(bottom, black, draw.CircleGlyph{}, "")
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Tick.Marker = ticks
		p.X.Min, p.X.Max = -0.5, float64(len(runs))-0.5
	}
	return &Figure{
		Name:    "history",
		Caption: "The chosen rank and its log evidence, ±2 standard errors, run by run.",
		Width:   7 * vg.Inch, Height: 4.5 * vg.Inch,
		Draw: func(dc draw.Canvas) { stack(dc, []*plot.Plot{top, bottom}, []float64{0.4, 0.6}) },
	}
}

func historyTable(runs []historyRun) *Table {
	t := &Table{Head: []string{"run", "committed (UTC)", "dataset version", "chosen rank", "log p(X|R)", "± stderr"}}
	for _, h := range runs {
		t.Rows = append(t.Rows, Row{Cells: []string{h.ID, h.Time.UTC().Format(time.RFC3339), strconv.Itoa(h.DatasetVersion),
			strconv.Itoa(h.ChosenRank), num(h.LogEvidence, 2), num(h.StdErr, 2)}})
	}
	return t
}
