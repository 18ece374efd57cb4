package runners

import (
	"flag"
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
