package runners

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
)

func TestFlagsForwardAndReset(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("out", "", "ours")
	names := AddFlags(fs)
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	for _, n := range []string{"runner", "endpoint", "environment_type", "project", "region", "staging_location", "dry_run", "worker_binary"} {
		if !has[n] {
			t.Errorf("Beam flag --%s not forwarded", n)
		}
	}
	for _, n := range []string{"worker", "control_endpoint", "out"} {
		if has[n] {
			t.Errorf("--%s should not be forwarded", n)
		}
	}
	if err := fs.Parse([]string{"--runner=universal", "--endpoint=localhost:1", "--environment_type=LOOPBACK", "--resource_hints=min_ram=1GB"}); err != nil {
		t.Fatal(err)
	}
	if Name() != "universal" || *jobopts.Endpoint != "localhost:1" || !IsLocal() || IsRemote() || Check() != nil {
		t.Errorf("after parse: runner %q endpoint %q local %v", Name(), *jobopts.Endpoint, IsLocal())
	}
	ResetFlags()
	if Name() != Default || *jobopts.Endpoint != "" || *jobopts.EnvironmentType != "" || len(jobopts.ResourceHints) != 0 {
		t.Errorf("after reset: runner %q endpoint %q env %q hints %v", Name(), *jobopts.Endpoint, *jobopts.EnvironmentType, jobopts.ResourceHints)
	}
	if !IsLocal() {
		t.Error("in-process prism is local")
	}
}

func TestCheck(t *testing.T) {
	defer ResetFlags()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	AddFlags(fs)
	for args, ok := range map[string]bool{
		"--runner=spaceship": false,
		"--runner=flink":     false, // no endpoint
		"--runner=direct":    true,
		"--runner=dataflow":  true,
		"--runner=prism":     true,
	} {
		ResetFlags()
		if err := fs.Parse([]string{args}); err != nil {
			t.Fatal(err)
		}
		if err := Check(); (err == nil) != ok {
			t.Errorf("%s: %v", args, err)
		}
	}
	ResetFlags()
	fs.Parse([]string{"--runner=dataflow", "--dry_run"})
	if !IsDryRun() || !IsRemote() || IsLocal() {
		t.Error("dataflow dry run")
	}
}

func TestFindJob(t *testing.T) {
	msgs := []string{"Dry-run: not submitting job!", "pipeline { ... }", "{\n  \"name\": \"go-job\"\n}", "done"}
	if got := findJob(msgs); got != "{\n  \"name\": \"go-job\"\n}" {
		t.Errorf("findJob: %q", got)
	}
	if got := findJob(msgs[:2]); got != "" {
		t.Errorf("findJob without a job: %q", got)
	}
}

// privateTemp gives a run its own temporary directory and removes it after; the directories of
// killed runs are removed by the next run, those of live processes are kept.
func TestPrivateTemp(t *testing.T) {
	base := t.TempDir()
	t.Setenv("TMPDIR", base)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	killed := filepath.Join(base, fmt.Sprintf("%s%d-123", tempPrefix, dead.Process.Pid))
	live := filepath.Join(base, fmt.Sprintf("%s%d-456", tempPrefix, os.Getppid()))
	for _, d := range []string{killed, live} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "beamloopbackworker-1"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	restore := privateTemp()
	private := os.TempDir()
	if filepath.Dir(private) != base || !strings.HasPrefix(filepath.Base(private), fmt.Sprintf("%s%d-", tempPrefix, os.Getpid())) {
		t.Fatalf("temporary directory during the run: %s", private)
	}
	if f, err := os.CreateTemp("", "beamloopbackworker-*"); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	restore()
	if os.TempDir() != base {
		t.Errorf("temporary directory after the run: %s, want %s", os.TempDir(), base)
	}
	for d, want := range map[string]bool{killed: false, live: true, private: false} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", d, err == nil, want)
		}
	}
}
