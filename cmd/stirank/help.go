package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// commandHelp is what -h prints of a command. A command with few flags prints them all; one with
// many names the flags a user sets (user), which -h lists one line each, and groups the others by
// what they tune (groups), which -h -all lists as well, so the first screen stays one screen.
type commandHelp struct {
	synopsis string
	// about is printed under the synopsis; details under it too, with -all only.
	about, details string
	// user are the flags a user sets, in the order -h lists them.
	user []userFlag
	// groups are the other flags by what they tune; -h -all puts a flag in none under "other".
	groups []flagGroup
	// beam are the Beam flags the command forwards (runners.AddFlags): -h names --runner alone.
	beam []string
	// appendix is printed last with -all (the samplers and their parameters).
	appendix func() string
}

// userFlag is a flag a user sets: -h lists it as "--name ARG  brief".
type userFlag struct {
	name, arg, brief string
}

// flagGroup is a titled group of tuning flags.
type flagGroup struct {
	title string
	names []string
}

// helps holds each flag set's help, printed on -h.
var helps = map[*flag.FlagSet]*commandHelp{}

// runnerBrief is the one line -h gives the Beam flags of a command that runs a pipeline.
const runnerBrief = "where the pipeline runs: prism in this process (default), direct, universal, flink, spark, dataflow (docs/runners.md)"

// helpRequest reports whether args ask for help (-h, -help), and for every flag (-all with it).
// It reads args before the flag package does, which would stop at -h or refuse -all.
func helpRequest(args []string) (help, all bool) {
	for _, a := range args {
		switch strings.TrimLeft(a, "-") {
		case "h", "help":
			help = help || strings.HasPrefix(a, "-")
		case "all":
			all = all || strings.HasPrefix(a, "-")
		}
	}
	return help, help && all
}

// printUsage prints the help of fs, every flag with all.
func printUsage(w io.Writer, fs *flag.FlagSet, all bool) {
	h := helps[fs]
	fmt.Fprintf(w, "usage: stirank %s %s\n", fs.Name(), h.synopsis)
	if h.about != "" {
		fmt.Fprintf(w, "\n%s\n", h.about)
	}
	if all && h.details != "" {
		fmt.Fprintf(w, "\n%s\n", h.details)
	}
	placed := map[string]bool{}
	for _, n := range h.beam {
		placed[n] = true
	}
	if len(h.user) == 0 {
		fmt.Fprintln(w, "\nflags:")
		printDefaults(w, fs, func(name string) bool { return !placed[name] })
		printBeamFlags(w, h.beam)
		return
	}
	fmt.Fprintln(w, "\nflags:")
	user := h.user
	if len(h.beam) > 0 {
		user = append(slices.Clip(user), userFlag{"runner", "NAME", runnerBrief})
	}
	width := 0
	for _, u := range user {
		width = max(width, len(u.name)+len(u.arg)+1)
	}
	isUser := map[string]bool{}
	for _, u := range user {
		isUser[u.name], placed[u.name] = true, true
		fl := fs.Lookup(u.name)
		brief := u.brief
		if brief == "" {
			brief = fl.Usage
		}
		if d := fl.DefValue; d != "" && d != "0" && d != "0s" && d != "false" && !strings.Contains(brief, "default") {
			brief += " (default " + d + ")"
		}
		fmt.Fprintf(w, "  --%-*s  %s\n", width, u.name+" "+u.arg, brief)
	}
	var titles []string
	for _, g := range h.groups {
		titles = append(titles, g.title)
	}
	if !all {
		fmt.Fprintf(w, "\n%s\n", wrapWords(fmt.Sprintf("The other flags tune the engine (%s): stirank %s -h -all lists them, grouped.", strings.Join(titles, "; "), fs.Name()), 96, ""))
		return
	}
	fmt.Fprintln(w, "\nthe same flags in full:")
	printDefaults(w, fs, func(name string) bool { return isUser[name] && name != "runner" })
	for _, g := range h.groups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		printDefaults(w, fs, func(name string) bool { return !isUser[name] && slices.Contains(g.names, name) })
		for _, n := range g.names {
			placed[n] = true
		}
	}
	var other []string
	fs.VisitAll(func(fl *flag.Flag) {
		if !placed[fl.Name] {
			other = append(other, fl.Name)
		}
	})
	if len(other) > 0 {
		fmt.Fprintln(w, "\nother:")
		printDefaults(w, fs, func(name string) bool { return slices.Contains(other, name) })
	}
	if h.appendix != nil {
		fmt.Fprintf(w, "\n%s", h.appendix())
	}
	printBeamFlags(w, h.beam)
}

// printDefaults prints the flags of fs that keep selects, as the flag package prints flags.
func printDefaults(w io.Writer, fs *flag.FlagSet, keep func(name string) bool) {
	some := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(fl *flag.Flag) {
		if keep(fl.Name) {
			some.Var(fl.Value, fl.Name, fl.Usage)
			// Var takes the default from the value now; the flag's own is the one to show.
			some.Lookup(fl.Name).DefValue = fl.DefValue
		}
	})
	some.SetOutput(w)
	some.PrintDefaults()
}

// printBeamFlags names the Beam flags a command forwards, if any.
func printBeamFlags(w io.Writer, beam []string) {
	if len(beam) == 0 {
		return
	}
	fmt.Fprintf(w, "\nBeam runner flags (docs/runners.md): --runner=prism (default), direct, universal, flink, spark\nor dataflow, and every other Beam flag:\n  %s\n", wrapNames(beam, 96))
}

// wrapNames lists names as flags, --name, in lines of at most width characters.
func wrapNames(names []string, width int) string {
	flags := make([]string, len(names))
	for i, n := range names {
		flags[i] = "--" + n
	}
	return wrapWords(strings.Join(flags, " "), width, "  ")
}

// wrapWords breaks text into lines of at most width characters (a longer word has its own), the
// lines after the first begun by indent.
func wrapWords(text string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(text) {
		if i > 0 {
			if line+1+len([]rune(w)) > width {
				b.WriteString("\n" + indent)
				line = len(indent)
			} else {
				b.WriteString(" ")
				line++
			}
		}
		b.WriteString(w)
		line += len([]rune(w))
	}
	return b.String()
}
