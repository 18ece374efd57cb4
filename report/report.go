// Package report turns a command's results into report.html and its figures (SVG and PNG) in the
// command's output directory, so a run can be judged by looking rather than by reading JSON.
//
// A Report is kind-independent: a title, the inputs, figures and tables. Each kind of result has
// a function that builds one (Evidence for evidence.json); Write renders it. The page is a single
// file that opens offline: the figures are embedded in it as data URIs, and also written beside it
// for use elsewhere. Another kind of result (a dictionary, say) needs only its own builder that
// fills a Report; the figure helpers (newPlot, points, stack) serve it too.
package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"path/filepath"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/stirank/stirank/internal/atomicfile"
	"github.com/stirank/stirank/internal/par"
)

// HTML is the name of the page Write writes.
const HTML = "report.html"

// pngDPI is the resolution of the PNG figures: a screen's, which keeps them small.
const pngDPI = 96

// Report is one page: what ran, figures and tables.
type Report struct {
	Title string
	// Summary is the one-line answer (e.g. the chosen rank).
	Summary string
	Inputs  []Field
	// Sections appear in order, each with an optional figure and table.
	Sections []Section
}

// Field is one named input of the run.
type Field struct {
	Name, Value string
	// Pre shows the value preformatted (a configuration).
	Pre bool
}

// Section is a heading with text, a figure, a table, or any of them.
type Section struct {
	Title, Text string
	Figure      *Figure
	Table       *Table
}

// Figure is drawn by Draw on a canvas of Width × Height; Write saves it as Name.svg and Name.png.
type Figure struct {
	Name, Caption string
	Width, Height vg.Length
	Draw          func(dc draw.Canvas)
}

// Table is a table whose flagged rows are highlighted, with their notes listed beneath.
type Table struct {
	Head []string
	Rows []Row
}

// Row is one row of a table; Notes explain a flag, one sentence each.
type Row struct {
	Cells []string
	Flag  bool
	Notes []string
}

// Write renders the report into dir: every figure as SVG and PNG, then report.html, each file
// replaced atomically so a reader never sees a half-written one. It returns the names of the
// files written, the page last.
func (r Report) Write(dir string) ([]string, error) {
	files, page, err := r.Render()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range append(files, File{Name: HTML, Data: page}) {
		if err := atomicfile.WriteFile(filepath.Join(dir, f.Name), f.Data); err != nil {
			return names, fmt.Errorf("writing the report: %w", err)
		}
		names = append(names, f.Name)
	}
	return names, nil
}

// File is a named file of a rendered report.
type File struct {
	Name string
	Data []byte
}

// Render returns the figure files and the page without writing anything. The bytes depend on
// the report's content only, so the same report renders identically every time.
func (r Report) Render() ([]File, []byte, error) {
	var files []File
	type figureView struct {
		Caption, SVGName, PNGName string
		Src                       template.URL
	}
	type sectionView struct {
		Title, Text string
		Figure      *figureView
		Table       *Table
	}
	// The figures render on every core: drawing and compressing them is most of a report's cost.
	type rendered struct {
		svg, png []byte
		err      error
	}
	figures := make([]rendered, len(r.Sections))
	par.Tasks(len(r.Sections), func(i int) {
		if f := r.Sections[i].Figure; f != nil {
			figures[i].svg, figures[i].png, figures[i].err = f.render()
		}
	})
	var sections []sectionView
	for i, s := range r.Sections {
		sv := sectionView{Title: s.Title, Text: s.Text, Table: s.Table}
		if f := s.Figure; f != nil {
			svg, png, err := figures[i].svg, figures[i].png, figures[i].err
			if err != nil {
				return nil, nil, fmt.Errorf("figure %s: %w", f.Name, err)
			}
			files = append(files, File{f.Name + ".svg", svg}, File{f.Name + ".png", png})
			sv.Figure = &figureView{
				Caption: f.Caption, SVGName: f.Name + ".svg", PNGName: f.Name + ".png",
				// A data URI keeps the page one self-contained file.
				Src: template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(svg)),
			}
		}
		sections = append(sections, sv)
	}
	var page bytes.Buffer
	err := pageTemplate.Execute(&page, struct {
		Title, Summary string
		Inputs         []Field
		Sections       []sectionView
	}{r.Title, r.Summary, r.Inputs, sections})
	if err != nil {
		return nil, nil, err
	}
	return files, page.Bytes(), nil
}

// render draws the figure as SVG (fonts named, not embedded, to keep it small) and as PNG.
func (f *Figure) render() (svg, png []byte, err error) {
	sc := vgsvg.NewWith(vgsvg.UseWH(f.Width, f.Height))
	f.Draw(draw.New(sc))
	var sb bytes.Buffer
	if _, err := sc.WriteTo(&sb); err != nil {
		return nil, nil, err
	}
	ic := vgimg.NewWith(vgimg.UseWH(f.Width, f.Height), vgimg.UseDPI(pngDPI))
	f.Draw(draw.New(ic))
	var pb bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: ic}).WriteTo(&pb); err != nil {
		return nil, nil, err
	}
	return sb.Bytes(), pb.Bytes(), nil
}

// pageTemplate is XHTML-compatible (every element closed, no named entities beyond XML's) so
// that the page is well-formed XML as well as HTML, which the tests check with encoding/xml.
var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; max-width: 60em; margin: 1em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
.summary { font-size: 1.2em; font-weight: bold; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { padding: 0.2em 0.6em; border-bottom: 1px solid #e4e4e4; text-align: right; }
th { background: #f2f2f2; }
td:first-child, th:first-child { text-align: left; }
table.inputs td { text-align: left; vertical-align: top; }
tr.flag td { background: #fde2e1; }
.notes li { color: #a00; }
pre { margin: 0; white-space: pre-wrap; font-size: 0.85em; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; }
figcaption { font-size: 0.9em; color: #555; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="summary">{{.Summary}}</p>
{{range .Sections}}<h2>{{.Title}}</h2>
{{if .Text}}<p>{{.Text}}</p>
{{end}}{{with .Figure}}<figure>
<img src="{{.Src}}" alt="{{.Caption}}"/>
<figcaption>{{.Caption}} (<a href="{{.SVGName}}">SVG</a>, <a href="{{.PNGName}}">PNG</a>)</figcaption>
</figure>
{{end}}{{with .Table}}<table>
<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr{{if .Flag}} class="flag"{{end}}>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<ul class="notes">
{{range .Rows}}{{range .Notes}}<li>{{.}}</li>
{{end}}{{end}}</ul>
{{end}}{{end}}<h2>Inputs</h2>
<table class="inputs">
{{range .Inputs}}<tr><td>{{.Name}}</td><td>{{if .Pre}}<pre>{{.Value}}</pre>{{else}}{{.Value}}{{end}}</td></tr>
{{end}}</table>
</body>
</html>
`))
