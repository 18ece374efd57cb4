package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// README.md is at most 300 lines, every flag it names is a flag of the command on its line (or,
// in prose, of some command), and its test command is the one .ci/run runs.
func TestReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(readme, []byte("\n")); n > 300 {
		t.Errorf("README.md has %d lines; at most 300", n)
	}
	helpAll := map[string]string{}
	var every strings.Builder
	for name := range commands {
		helpAll[name] = helpOf(t, name, "-h", "-all")
		every.WriteString(helpAll[name])
	}
	command := regexp.MustCompile(`(?:stirank|\./cmd/stirank) ([a-z-]+)`)
	flagRef := regexp.MustCompile(`--([a-z][a-z0-9_-]*)`)
	for i, line := range strings.Split(string(readme), "\n") {
		help := every.String()
		if m := command.FindStringSubmatch(line); m != nil && helpAll[m[1]] != "" {
			help = helpAll[m[1]]
		}
		for _, f := range flagRef.FindAllStringSubmatch(line, -1) {
			if !flagNamed(f[1]).MatchString(help) {
				t.Errorf("README.md:%d names --%s, which is no flag there:\n%s", i+1, f[1], line)
			}
		}
	}
	ci, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	// The test command is the line of .ci/run that runs go test; README's first code block, its
	// two set-up commands, gives it with a comment after it.
	var run string
	for _, line := range strings.Split(string(ci), "\n") {
		if strings.HasPrefix(line, "go test ") {
			run = line
		}
	}
	_, first, _ := strings.Cut(string(readme), "```sh\n")
	first, _, _ = strings.Cut(first, "```")
	if run == "" || !strings.Contains("\n"+first, "\n"+run+"   ") {
		t.Errorf("README.md's first code block does not give the test command .ci/run runs (%q):\n%s", run, first)
	}
}

// A newcomer's path through the built binary: the help, a run on a CSV with a header, the report
// written and the verdict printed, and a bad flag answered in one line.
func TestNewcomerPath(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := goBuild(t, dir, "stirank", "github.com/stirank/stirank/cmd/stirank")
	stirank := func(args ...string) (code int, stdout, stderr string) {
		var out, errOut bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &errOut
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errOut.String()
	}
	if code, stdout, _ := stirank("--help"); code != 0 || !strings.Contains(stdout, "  select ") {
		t.Errorf("--help: exit %d:\n%s", code, stdout)
	}
	csv := "i,j,value\n0,0,5\n0,1,1\n1,0,4\n1,2,7\n2,1,3\n2,2,6\n3,0,2\n3,3,9\n"
	if err := os.WriteFile(filepath.Join(dir, "counts.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := stirank("import", "--in", "counts.csv", "--out", "counts"); code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := stirank(append([]string{"select", "--data", "counts", "--ranks", "1-2", "--out", "evidence"}, cheap...)...)
	if code != 0 {
		t.Fatalf("select: exit %d: %s", code, stderr)
	}
	if !verdictIs(stdout, 1) && !verdictIs(stdout, 2) {
		t.Errorf("select does not end with its verdict:\n%s", stdout)
	}
	if fi, err := os.Stat(filepath.Join(dir, "evidence", "report.html")); err != nil || fi.Size() == 0 {
		t.Errorf("no report written: %v", err)
	}
	code, stdout, stderr = stirank("select", "--rnaks", "1-3", "--out", "x")
	if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "rnaks") {
		t.Errorf("a bad flag: exit %d, stdout %q, stderr %q; want exit 2 and one line naming it", code, stdout, stderr)
	}
}
