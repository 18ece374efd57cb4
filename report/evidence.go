package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/stirank/stirank/pipelines"
	"github.com/stirank/stirank/runstate"
)

// Evidence builds the report of an evidence.json (select, chib, ais, reanalyze). history is the
// state directory's history of a reanalyze run, this run included; nil otherwise. timing is the
// run's timing.json; an empty one leaves the time columns out.
func Evidence(r pipelines.Result, history []runstate.HistoryRow, timing pipelines.Timing) Report {
	rep := Report{Title: title(r), Summary: summary(r)}
	rep.Sections = append(rep.Sections, Section{
		Title: "Evidence against rank",
		Text: "Log evidence log p(X | R) of every rank with ±2 standard-error bars" + secondEstimate(r) +
			"; the chosen rank is ringed. Ranks more than 250 nats below the best are written at the foot of the axis with their value. Beneath: the posterior rank probabilities p(R | X) under a uniform prior over the ranks tried.",
		Figure: evidenceFigure(r),
	})
	rep.Sections = append(rep.Sections, Section{
		Title: "Diagnostics",
		Text:  "Per rank: what the estimate rests on" + timingText(timing) + ". A highlighted row has an issue, explained beneath the table.",
		Table: diagnosticsTable(r, timing),
	})
	if f := curvesFigure(r); f != nil {
		rep.Sections = append(rep.Sections, Section{
			Title: "f(t) per rank",
			Text: "The mean log-likelihood f(t) = E_t[log p(X | θ)] recorded at every rung of the ladder, ±2 standard errors; " +
				"log p(X | R) is its integral over t from 0 to 1. t is drawn on a t^(1/6) scale so the steep small-t region shows. " +
				"f cannot decrease: a rung below its left neighbour means chains that had not mixed.",
			Figure: f,
		})
	}
	if runs := historyRuns(history); len(runs) > 0 {
		rep.Sections = append(rep.Sections, Section{
			Title:  "History",
			Text:   "Every committed run of the state directory, oldest first: the rank it chose and that rank's log evidence (±2 standard errors) against the dataset version.",
			Figure: historyFigure(runs),
			Table:  historyTable(runs),
		})
	}
	rep.Inputs = inputs(r)
	return rep
}

// title names the command that produced r (recorded, or else the one its method implies) and
// its model.
func title(r pipelines.Result) string {
	cmd := r.Method
	switch {
	case len(r.Command) >= 2:
		cmd = r.Command[1]
	case cmd == "" || cmd == "sti":
		cmd = "select"
	}
	if r.Model == "" {
		return "stirank " + cmd
	}
	return fmt.Sprintf("stirank %s: %s", cmd, r.Model)
}

func summary(r pipelines.Result) string {
	rr, ok := r.Best()
	if !ok {
		return "No rank has an estimate: every rank diverged."
	}
	return fmt.Sprintf("Best rank: %d (log p(X | R) = %s ± %s, p(R | X) = %.3f).", rr.Rank,
		num(float64(rr.LogEvidence), 2), num(float64(rr.StdErr), 2), float64(rr.PosteriorProb))
}

// annealed reports whether the ranks carry the annealing's second estimate.
func annealed(r pipelines.Result) bool {
	return slices.ContainsFunc(r.Ranks, func(rr pipelines.RankResult) bool { return rr.Replicas > 0 })
}

func secondEstimate(r pipelines.Result) string {
	if annealed(r) {
		return " (circles: the thermodynamic integral; triangles: the annealing's SMC estimate)"
	}
	return ""
}

// timingText explains the time columns, when there are any.
func timingText(timing pipelines.Timing) string {
	if len(timing.Ranks) == 0 {
		return ""
	}
	return ", and what it cost: the wall-clock seconds of its tasks added up (tasks that ran side by side count each) and their CPU seconds (the process's CPU time split evenly among the tasks running at the time)"
}

func diagnosticsTable(r pipelines.Result, timing pipelines.Timing) *Table {
	t := &Table{Head: []string{"rank", "log p(X|R)", "± stderr", "p(R|X)", "steps", "rungs", "ESS min", "ESS median", "divergences"}}
	ann := annealed(r)
	if ann {
		t.Head = append(t.Head, "SMC", "TI–SMC gap (s.e.)")
	}
	// An allowance for a start's transient the chains cannot yet show (RankResult.StartAllowance).
	allowed := slices.ContainsFunc(r.Ranks, func(rr pipelines.RankResult) bool { return rr.StartAllowance > 0 })
	if allowed {
		t.Head = append(t.Head, "± start")
	}
	// Under a hyperprior (--rate auto) the posterior of every rank's prior rates, as select prints
	// the chosen rank's.
	rated := slices.ContainsFunc(r.Ranks, func(rr pipelines.RankResult) bool { return len(rr.Rates) > 0 })
	if rated {
		t.Head = append(t.Head, "prior rates at t = 1 (by mode; product)")
	}
	timed := len(timing.Ranks) > 0
	if timed {
		t.Head = append(t.Head, "tasks", "wall s", "CPU s")
	}
	for _, rr := range r.Ranks {
		d := rr.Diagnose()
		cells := []string{strconv.Itoa(rr.Rank), num(float64(rr.LogEvidence), 2), num(float64(rr.StdErr), 2),
			num(float64(rr.PosteriorProb), 3), strconv.FormatInt(d.Steps, 10), strconv.Itoa(d.Rungs),
			num(d.ESSMin, 1), num(d.ESSMedian, 1), strconv.Itoa(d.Divergences)}
		if ann {
			cells = append(cells, num(float64(rr.SMC), 2), num(d.Gap, 1))
		}
		if allowed {
			start := ""
			if rr.StartAllowance > 0 {
				start = num(float64(rr.StartAllowance), 0)
			}
			cells = append(cells, start)
		}
		if rated {
			cells = append(cells, ratesCell(rr))
		}
		if timed {
			if rt, ok := timing.Rank(rr.Rank); ok {
				cells = append(cells, strconv.Itoa(rt.Tasks), num(rt.Seconds, 1), num(rt.CPUSeconds, 1))
			} else {
				cells = append(cells, "–", "–", "–")
			}
		}
		row := Row{Cells: cells, Flag: len(d.Issues) > 0}
		for _, is := range d.Issues {
			row.Notes = append(row.Notes, fmt.Sprintf("rank %d: %s", rr.Rank, is.Detail))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// ratesCell is the posterior of the rank's prior rates, "2.31 ± 0.12, 4.05 ± 0.30; 9.35 ± 0.41",
// or a dash where its chains recorded none.
func ratesCell(rr pipelines.RankResult) string {
	if len(rr.Rates) == 0 || rr.RateProduct == nil {
		return "–"
	}
	parts := make([]string, len(rr.Rates))
	for k, p := range rr.Rates {
		parts[k] = p.String()
	}
	return strings.Join(parts, ", ") + "; " + rr.RateProduct.String()
}

// num formats v with prec decimals, and NaN (no estimate) as a dash.
func num(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func inputs(r pipelines.Result) []Field {
	var fs []Field
	add := func(name, value string) {
		if value != "" {
			fs = append(fs, Field{Name: name, Value: value})
		}
	}
	add("data", r.Data.Source)
	if len(r.Data.Shape) > 0 {
		dims := make([]string, len(r.Data.Shape))
		for i, n := range r.Data.Shape {
			dims[i] = strconv.Itoa(n)
		}
		add("shape", fmt.Sprintf("%s, %d stored cells", strings.Join(dims, "×"), r.Data.Cells))
	}
	add("checksum", r.Data.Checksum)
	add("model", r.Model)
	if len(r.Prior) > 0 {
		// Sorted: map order would make two renderings of one result differ.
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(r.Prior)) {
			kv = append(kv, fmt.Sprintf("%s=%s", k, r.Prior[k]))
		}
		add("prior", strings.Join(kv, ", "))
	}
	add("method", r.Method)
	add("ladder", r.LadderSpec)
	add("seed", strconv.FormatUint(r.Seed, 10))
	add("sampler steps", strconv.FormatInt(r.Steps, 10))
	add("cell evaluations", strconv.FormatInt(r.CellEvals, 10))
	add("command line", shellLine(r.Command))
	add("stirank version", r.Version)
	if len(r.Config) > 0 {
		var v any
		if json.Unmarshal(r.Config, &v) == nil {
			// encoding/json sorts object keys, so the text is deterministic.
			b, _ := json.MarshalIndent(v, "", "  ")
			fs = append(fs, Field{Name: "configuration", Value: string(b), Pre: true})
		}
	}
	return fs
}

// shellLine joins a command line as a shell would take it back.
func shellLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?;&|<>()#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
