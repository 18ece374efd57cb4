package main

import (
	"flag"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/sti"
)

// helpOf returns what stirank args prints on stderr (the usage goes to the process's stderr).
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	code, _, stderr := selectRun(t, args...)
	os.Stderr = saved
	w.Close()
	out := <-done
	if code != 0 {
		t.Fatalf("stirank %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return out
}

// flagNamed matches a flag's name as help prints it: -name or --name, then a space, '=' or the
// end of a line.
func flagNamed(name string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[\s(])--?` + regexp.QuoteMeta(name) + `([\s=,]|$)`)
}

// Every command's -h fits one screen (50 lines); select's names the flags a user sets, one line
// each; and -h -all lists every flag, so nothing -h leaves out is out of reach.
func TestHelpFitsOneScreen(t *testing.T) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		help := helpOf(t, name, "-h")
		if n := strings.Count(help, "\n"); n > 50 || n < 3 {
			t.Errorf("stirank %s -h prints %d lines; want at most 50:\n%s", name, n, help)
		}
	}
	help := helpOf(t, "select", "-h")
	for _, name := range []string{"data", "model", "ranks", "rate", "budget", "time", "seed", "out", "runner"} {
		if lines := regexp.MustCompile(`(?m)^  --`+name+` .*$`).FindAllString(help, -1); len(lines) != 1 {
			t.Errorf("select -h lists --%s on %d lines; want one:\n%s", name, len(lines), help)
		}
	}
	for _, name := range names {
		all := helpOf(t, name, "-h", "-all")
		for fs := range helps {
			if fs.Name() != name {
				continue
			}
			fs.VisitAll(func(fl *flag.Flag) {
				if !flagNamed(fl.Name).MatchString(all) {
					t.Errorf("%s -h -all does not list --%s", name, fl.Name)
				}
			})
		}
		if i := strings.Index(all, "\nother:\n"); i >= 0 {
			t.Errorf("%s -h -all: flags in no group:%s", name, all[i:])
		}
	}
	for _, p := range sti.Presets {
		if help := helpOf(t, "select", "-h", "-all"); !strings.Contains(help, p.Name+" (") {
			t.Errorf("select -h -all does not list the defaults of preset %s", p.Name)
		}
	}
	if help := helpOf(t, "select", "--all", "--help"); strings.Count(help, "\n") < 100 {
		t.Errorf("select --all --help printed %d lines, not every flag", strings.Count(help, "\n"))
	}
}
