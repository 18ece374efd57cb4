// Command plot draws the speech experiment's figure (bench/speech/experiment.sh): the mean SDR and
// SI-SDR gain of enhancement against the speech dictionary size R^sp, and beneath it the STI log
// evidence of the training spectrogram with ±2 standard errors, on a shared log₂ R^sp axis, so
// that where the evidence peaks can be set against where enhancement stops improving.
//
//	go run ./bench/speech/plot -results OUTDIR/results.csv -evidence OUTDIR/evidence.csv -out OUTDIR/experiment
//
// writes OUTDIR/experiment.svg and OUTDIR/experiment.png.
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

func main() {
	results := flag.String("results", "", "results.csv of experiment.sh (one row per mixture and dictionary)")
	evidence := flag.String("evidence", "", "evidence.csv of experiment.sh (one row per R^sp); optional")
	out := flag.String("out", "", "path of the figure without extension: PATH.svg and PATH.png are written")
	flag.Parse()
	if *results == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "plot: want -results and -out")
		os.Exit(2)
	}
	if err := run(*results, *evidence, *out); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

// table is a CSV file's rows as maps from its header's column names.
func table(name string) ([]map[string]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var rows []map[string]string
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		row := map[string]string{}
		for i, h := range head {
			row[h] = rec[i]
		}
		rows = append(rows, row)
	}
}

// num reads column col of a row as a finite number.
func num(file string, line int, row map[string]string, col string) (float64, error) {
	v, err := strconv.ParseFloat(row[col], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s row %d: column %s is %q, not a finite number", file, line, col, row[col])
	}
	return v, nil
}

func run(resultsFile, evidenceFile, out string) error {
	rows, err := table(resultsFile)
	if err != nil {
		return err
	}
	// Mean gains per R^sp, in dB.
	type gains struct{ n, sdr, sisdr float64 }
	per := map[float64]*gains{}
	for i, row := range rows {
		var v [5]float64
		for j, col := range []string{"rank", "sdr", "input_sdr", "si_sdr", "input_si_sdr"} {
			if v[j], err = num(resultsFile, i+2, row, col); err != nil {
				return err
			}
		}
		g := per[v[0]]
		if g == nil {
			g = &gains{}
			per[v[0]] = g
		}
		g.n++
		g.sdr += v[1] - v[2]
		g.sisdr += v[3] - v[4]
	}
	if len(per) == 0 {
		return fmt.Errorf("%s has no rows", resultsFile)
	}
	var sdr, sisdr plotter.XYs
	for _, r := range slices.Sorted(maps.Keys(per)) {
		g := per[r]
		sdr = append(sdr, plotter.XY{X: math.Log2(r), Y: g.sdr / g.n})
		sisdr = append(sisdr, plotter.XY{X: math.Log2(r), Y: g.sisdr / g.n})
	}
	top := plot.New()
	top.Title.Text = "enhancement: mean gain over the test mixtures"
	top.Y.Label.Text = "mean gain (dB)"
	if err := plotutil.AddLinePoints(top, "SDR gain", sdr, "SI-SDR gain", sisdr); err != nil {
		return err
	}
	top.Legend.Top = true
	plots := []*plot.Plot{top}

	if evidenceFile != "" {
		rows, err := table(evidenceFile)
		if err != nil {
			return err
		}
		var ev plotter.XYs
		var bars plotter.YErrors
		for i, row := range rows {
			r, err := num(evidenceFile, i+2, row, "rank")
			if err != nil {
				return err
			}
			le, err := num(evidenceFile, i+2, row, "log_evidence")
			if err != nil {
				return err
			}
			se, err := num(evidenceFile, i+2, row, "stderr")
			if err != nil {
				return err
			}
			ev = append(ev, plotter.XY{X: math.Log2(r), Y: le})
			bars = append(bars, struct{ Low, High float64 }{2 * se, 2 * se})
		}
		bottom := plot.New()
		bottom.Y.Label.Text = "log p(X | R^sp)"
		pts, err := plotter.NewScatter(ev)
		if err != nil {
			return err
		}
		pts.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYer
			plotter.YErrorer
		}{ev, bars})
		if err != nil {
			return err
		}
		bottom.Add(pts, eb)
		bottom.Title.Text = "STI log evidence of the training spectrogram, ±2 s.e."
		plots = append(plots, bottom)
	}
	last := plots[len(plots)-1]
	last.X.Label.Text = "speech dictionary size R^sp"
	// One x range for both panels, padded so the end points' glyphs and bars show whole.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range plots {
		lo, hi = min(lo, p.X.Min), max(hi, p.X.Max)
	}
	for _, p := range plots {
		p.X.Tick.Marker = powersOfTwo{}
		p.X.Min, p.X.Max = lo-0.25, hi+0.25
	}
	return save(plots, out)
}

// powersOfTwo labels a log₂ axis with the powers of two it spans.
type powersOfTwo struct{}

func (powersOfTwo) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Ceil(lo); e <= hi; e++ {
		ts = append(ts, plot.Tick{Value: e, Label: strconv.Itoa(1 << int(e))})
	}
	return ts
}

// save draws the plots stacked, sharing the width, as PATH.svg and PATH.png.
func save(plots []*plot.Plot, path string) error {
	w, h := 16*vg.Centimeter, vg.Length(len(plots))*7*vg.Centimeter
	svg := vgsvg.New(w, h)
	png := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96))}
	for _, c := range []draw.Canvas{draw.New(svg), draw.New(png)} {
		tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Millimeter * 4}
		canvases := plot.Align(column(plots), tiles, c)
		for i, p := range plots {
			p.Draw(canvases[i][0])
		}
	}
	for ext, wt := range map[string]io.WriterTo{".svg": svg, ".png": png} {
		f, err := os.Create(path + ext)
		if err != nil {
			return err
		}
		if _, err := wt.WriteTo(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// column turns plots into the rows of a one-column grid.
func column(plots []*plot.Plot) [][]*plot.Plot {
	rows := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		rows[i] = []*plot.Plot{p}
	}
	return rows
}
