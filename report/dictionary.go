package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/stirank/stirank/pipelines"
)

// shownDictionaries is how many dictionaries, the best first, the figure and the table show: an
// interpolative-decomposition search scores up to 4 095 subsets.
const shownDictionaries = 40

// Dictionary builds the report of a dictionary scoring's evidence.json (stirank dictionary).
func Dictionary(r pipelines.DictionaryResult) Report {
	rep := Report{Title: "stirank dictionary: " + r.Method + " on " + r.Data.Source}
	if r.Best != "" {
		rep.Summary = "Best dictionary: " + r.Best
	} else {
		rep.Summary = "No dictionary has an estimate: every one has a diverged column."
	}
	order := ranked(r)
	note := ""
	if len(order) > shownDictionaries {
		note = fmt.Sprintf(" Only the %d best of %d dictionaries are shown.", shownDictionaries, len(order))
		order = order[:shownDictionaries]
	}
	rep.Sections = append(rep.Sections, Section{
		Title: "Evidence of each dictionary",
		Text: "log p(X | W), summed over the columns, with ±2 standard-error bars, best first; the best is ringed. " +
			"Beneath: the posterior probabilities p(W | X) under a uniform prior over the dictionaries scored." + note,
		Figure: dictionaryFigure(r, order),
		Table:  dictionaryTable(r, order),
	})
	if t := columnTable(r); t != nil {
		rep.Sections = append(rep.Sections, Section{
			Title: "Columns",
			Text:  "Per data column: the dictionary under which it is most probable, and by how many nats it beats the next one. A highlighted row is a call within two standard errors.",
			Table: t,
		})
	}
	add := func(name, value string) {
		if value != "" {
			rep.Inputs = append(rep.Inputs, Field{Name: name, Value: value})
		}
	}
	add("data", r.Data.Source)
	if len(r.Data.Shape) == 2 {
		add("shape", fmt.Sprintf("%d features × %d columns", r.Data.Shape[0], r.Data.Shape[1]))
	}
	add("checksum", r.Data.Checksum)
	add("values", r.Values)
	add("prior", fmt.Sprintf("h ~ IG(a=%v, b=%v)", r.Prior.A, r.Prior.B))
	add("method", fmt.Sprintf("%s, %d particles × %d stages, %d replicas per column", r.Method, r.Particles, r.Stages, r.Replicas))
	add("seed", strconv.FormatUint(r.Seed, 10))
	add("command line", shellLine(r.Command))
	add("stirank version", r.Version)
	return rep
}

// ranked lists the dictionaries' indices by decreasing evidence, diverged ones last.
func ranked(r pipelines.DictionaryResult) []int {
	order := make([]int, len(r.Dictionaries))
	for i := range order {
		order[i] = i
	}
	key := func(i int) float64 {
		v := float64(r.Dictionaries[i].LogEvidence)
		if math.IsNaN(v) {
			return math.Inf(-1)
		}
		return v
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(key(b), key(a)) })
	return order
}

func dictionaryFigure(r pipelines.DictionaryResult, order []int) *Figure {
	top := newPlot("", "", "log p(X | W)")
	bottom := newPlot("", "dictionary", "p(W | X)")
	var est, probs points
	var ticks plot.ConstantTicks
	for x, d := range order {
		ds := r.Dictionaries[d]
		label := ds.Name
		if len(order) > 12 {
			label = strconv.Itoa(x + 1)
		}
		ticks = append(ticks, plot.Tick{Value: float64(x), Label: label})
		if v := float64(ds.LogEvidence); !math.IsNaN(v) {
			est.add(float64(x), v, 2*float64(ds.StdErr))
			probs.add(float64(x), float64(ds.PosteriorProb), 0)
		}
	}
	lo, hi := yRange(est)
	est, _ = est.split(lo)
	est.draw(top, black, draw.CircleGlyph{}, "±2 s.e.")
	if len(est.xys) > 0 && r.Best != "" {
		s, _ := plotter.NewScatter(plotter.XYs{est.xys[0]})
		s.GlyphStyle = draw.GlyphStyle{Color: red, Radius: vg.Points(6), Shape: draw.RingGlyph{}}
		top.Add(s)
		top.Legend.Add("best: "+r.Best, s)
	}
	top.Y.Min, top.Y.Max = lo, hi
	bottom.Add(&bars{xys: probs.xys, width: 0.6, color: barCol})
	bottom.Y.Min, bottom.Y.Max = 0, 1
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Min, p.X.Max = -0.6, float64(len(order))-0.4
		p.X.Tick.Marker = ticks
	}
	top.Legend.Top, top.Legend.Left = true, false
	caption := "Log evidence of each dictionary, ±2 standard errors, and the posterior probabilities."
	if len(order) > 12 {
		caption += " Dictionaries are numbered by their place in the table below."
	}
	return &Figure{
		Name: "evidence", Caption: caption,
		Width: 7 * vg.Inch, Height: 5 * vg.Inch,
		Draw: func(dc draw.Canvas) { stack(dc, []*plot.Plot{top, bottom}, []float64{0.68, 0.32}) },
	}
}

func dictionaryTable(r pipelines.DictionaryResult, order []int) *Table {
	t := &Table{Head: []string{"#", "dictionary", "K", "columns", "log p(X | W)", "± stderr", "p(W | X)"}}
	for x, d := range order {
		ds := r.Dictionaries[d]
		row := Row{Cells: []string{strconv.Itoa(x + 1), ds.Name, strconv.Itoa(ds.K), strconv.Itoa(len(ds.Columns)),
			num(float64(ds.LogEvidence), 2), num(float64(ds.StdErr), 2), num(float64(ds.PosteriorProb), 3)}}
		if math.IsNaN(float64(ds.LogEvidence)) {
			row.Flag = true
			row.Notes = append(row.Notes, ds.Name+": a column's runs all diverged, so the dictionary has no estimate (see evidence.json's divergences).")
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// columnTable is the per-column classification, when every dictionary scores the same columns.
func columnTable(r pipelines.DictionaryResult) *Table {
	if len(r.Dictionaries) < 2 {
		return nil
	}
	n := len(r.Dictionaries[0].Columns)
	for _, d := range r.Dictionaries {
		if len(d.Columns) != n {
			return nil
		}
	}
	t := &Table{Head: []string{"column", "best dictionary", "log p(x | W)", "next", "by (nats)", "in stderr"}}
	for i := range n {
		best, next := -1, -1
		for d, ds := range r.Dictionaries {
			v := float64(ds.Columns[i].LogEvidence)
			if math.IsNaN(v) {
				continue
			}
			switch {
			case best < 0 || v > float64(r.Dictionaries[best].Columns[i].LogEvidence):
				best, next = d, best
			case next < 0 || v > float64(r.Dictionaries[next].Columns[i].LogEvidence):
				next = d
			}
		}
		if best < 0 || next < 0 {
			continue
		}
		b, c := r.Dictionaries[best].Columns[i], r.Dictionaries[next].Columns[i]
		gap := float64(b.LogEvidence - c.LogEvidence)
		se := math.Hypot(float64(b.StdErr), float64(c.StdErr))
		row := Row{Cells: []string{strconv.Itoa(b.Column), r.Dictionaries[best].Name, num(float64(b.LogEvidence), 2),
			r.Dictionaries[next].Name, num(gap, 2), num(gap/se, 1)}}
		if gap < 2*se {
			row.Flag = true
			row.Notes = append(row.Notes, fmt.Sprintf("column %d: %s beats %s by less than two standard errors; more replicas or stages would settle it.", b.Column, r.Dictionaries[best].Name, r.Dictionaries[next].Name))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}
