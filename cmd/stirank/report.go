package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/pipelines"
	"github.com/stirank/stirank/report"
	"github.com/stirank/stirank/runstate"
)

func init() {
	register(command{
		name:    "report",
		summary: "write report.html and the figures (SVG, PNG) of an output directory of select, chib, ais, reanalyze or dictionary",
		run:     runReport,
	})
}

func runReport(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("report", "OUTDIR")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one OUTDIR (holding evidence.json; STATEDIR/latest for reanalyze), got %d arguments", fs.NArg())
	}
	dir := fs.Arg(0)
	if tensorio.IsURL(dir) {
		return usagef("%s: the report is written next to evidence.json, so OUTDIR must be a local directory (copy it here first)", dir)
	}
	var rep report.Report
	if d, err := pipelines.ReadDictionaryResult(ctx, dir); err == nil {
		rep = report.Dictionary(d)
	} else {
		r, err := pipelines.ReadResult(ctx, dir)
		if err != nil {
			return err
		}
		// A reanalyze state directory's latest/ gets the history of its runs.
		history, _, err := runstate.ReadLatestHistory(dir)
		if err != nil {
			return err
		}
		if rep, err = evidenceReport(dir, r, history); err != nil {
			return err
		}
	}
	if _, err := rep.Write(dir); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(dir, report.HTML))
	return nil
}

// evidenceReport builds the report of result r, read from dir, with the run's timing.json.
func evidenceReport(dir string, r pipelines.Result, history []runstate.HistoryRow) (report.Report, error) {
	timing, err := pipelines.ReadTiming(dir)
	if err != nil {
		return report.Report{}, err
	}
	return report.Evidence(r, history, timing), nil
}

// addNoReport adds --no-report to a command that writes a report by default.
func addNoReport(fs *flag.FlagSet, p *bool) {
	fs.BoolVar(p, "no-report", false, "do not write report.html and its figures (SVG, PNG) beside evidence.json")
}

// writeReport writes the report rep into the run's fresh output directory dir. A failure
// removes what it wrote; the caller then fails the run as a whole. A URL dir gets none: the
// figures are drawn here, not on the workers that wrote evidence.json. Where the report is goes to
// stderr, with the progress: stdout stays the result (its first line names the run, its last the
// best rank).
func writeReport(dir string, rep report.Report) error {
	if tensorio.IsURL(dir) {
		fmt.Fprintf(os.Stderr, "no report for %s: copy it to a local directory and run stirank report there\n", dir)
		return nil
	}
	names, err := rep.Write(dir)
	if err != nil {
		for _, n := range names {
			os.Remove(filepath.Join(dir, n))
		}
		return err
	}
	fmt.Fprintf(os.Stderr, "report: %s\n", filepath.Join(dir, report.HTML))
	return nil
}

// commandLine is the command line recorded in evidence.json.
func commandLine(name string, args []string) []string {
	return append([]string{"stirank", name}, args...)
}

// version names the stirank build: the module version, and the VCS revision when the binary was
// built from a checkout ("(devel)" for go run).
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	v := bi.Main.Version
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		v += " " + rev[:min(12, len(rev))] + dirty
	}
	return v
}
