// Command stirank chooses the rank of matrix and tensor factorisations by estimating the log
// marginal likelihood of every candidate rank with Stochastic Thermodynamic Integration.
//
//	stirank <command> [flags]
//
// Run "stirank help" for the list of commands and "stirank <command> -h" for their flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/stirank/stirank/runners"
)

// command is one subcommand of stirank.
type command struct {
	name    string
	summary string
	// run parses args (everything after the command name) and does the work. It returns a
	// usageError for bad flags so main can print one line and exit 2.
	run func(ctx context.Context, args []string, stdout io.Writer) error
}

var commands = map[string]command{}

// register adds a subcommand; each lives in its own file and registers itself in init.
func register(c command) { commands[c.name] = c }

// usageError marks errors caused by the command line rather than by the data or the computation.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// newFlagSet returns a flag set that reports parse errors instead of exiting. The flag package
// calls Usage on every parse error, so Usage does nothing: parseFlags prints the usage on -h only,
// and a bad flag stays one line. Its help (helps) starts as the synopsis.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	helps[fs] = &commandHelp{synopsis: synopsis}
	return fs
}

// parseFlags parses args and turns flag errors into usage errors; -h prints the usage to stderr
// (-h -all every flag) and returns flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if help, all := helpRequest(args); help {
		printUsage(os.Stderr, fs, all)
		return flag.ErrHelp
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	return nil
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "stirank estimates log p(X | R) for every candidate rank R of a matrix or tensor factorisation")
	fmt.Fprintln(w, "by Stochastic Thermodynamic Integration and picks the rank.")
	fmt.Fprintln(w, "\nusage: stirank <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'stirank <command> -h' for the flags of a command, 'stirank <command> -h -all' for every one.")
}

func main() {
	// A runner that starts this binary as a Beam worker passes --worker: run the SDK harness
	// instead of a command.
	runners.InitWorker()
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printHelp(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "stirank: unknown command %q (run 'stirank help')\n", args[0])
		return 2
	}
	err := c.run(ctx, args[1:], stdout)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "stirank %s: %s\n", c.name, oneLine(err.Error()))
		return 2
	default:
		fmt.Fprintf(stderr, "stirank %s: %s\n", c.name, oneLine(err.Error()))
		return 1
	}
}

// oneLine keeps an error to a single line of output.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
