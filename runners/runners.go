// Package runners chooses and configures the Beam runner stirank's pipelines run on.
//
// The runner is Beam's own --runner flag: prism (the default) runs the pipeline in this process
// on an in-process prism job server with a loopback worker; direct is Beam's older in-process
// runner; universal (alias portable), flink and spark submit the job to a job server given by
// --endpoint (with --environment_type=LOOPBACK the workers are this process, otherwise a worker
// binary or container); dataflow submits to Google Cloud Dataflow, or prints the job with
// --dry_run. Every Beam flag (--runner, --endpoint, --environment_type, --project, --region,
// --staging_location, --worker_binary, …) is accepted by the commands that run pipelines: AddFlags
// forwards them from Beam's global flag set.
//
// A worker binary is this very program started by the runner with --worker: InitWorker, called at
// the top of main, runs the SDK harness in that case and never returns. It does so too when the
// program is started with the flags of Beam's container contract, by a worker pool (ServePool,
// which serves Beam's external worker pool for --environment_type=EXTERNAL) or as the command of
// a PROCESS environment.
package runners

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	// The optimised runtime and the filesystems workers and launchers need.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec/optimized"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	beamrunners "github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	// Runner registrations.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/direct"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/flink"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/spark"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"google.golang.org/protobuf/encoding/protojson"
)

// Default is the runner used when --runner is not given.
const Default = "prism"

// Name returns the runner the next Run uses.
func Name() string {
	if r := strings.TrimSpace(*beamrunners.Runner); r != "" {
		return r
	}
	return Default
}

// Known lists the runner names Run accepts.
var Known = []string{"prism", "direct", "universal", "portable", "flink", "spark", "dataflow"}

// Check fails for an unknown runner name and for flag combinations that cannot work.
func Check() error {
	name := strings.ToLower(Name())
	known := false
	for _, k := range Known {
		if name == k || name == k+"runner" {
			known = true
		}
	}
	if !known {
		return fmt.Errorf("unknown runner %q (%s)", Name(), strings.Join(Known, ", "))
	}
	switch name {
	case "universal", "portable", "flink", "spark", "flinkrunner", "sparkrunner", "portablerunner":
		if *jobopts.Endpoint == "" && !IsDryRun() {
			return fmt.Errorf("--runner=%s needs --endpoint=HOST:PORT of a job server", Name())
		}
	}
	if isExternal() {
		if _, port, err := net.SplitHostPort(*jobopts.EnvironmentConfig); err != nil || port == "" {
			return fmt.Errorf("--environment_type=EXTERNAL needs --environment_config=HOST:PORT of a worker pool (stirank worker-pool), not %q", *jobopts.EnvironmentConfig)
		}
	}
	return nil
}

// IsDryRun reports whether the run only prints the job (--dry_run): the Dataflow job on
// Dataflow, the portable pipeline that a job server would receive on any other runner.
func IsDryRun() bool {
	f := flag.Lookup("dry_run")
	return f != nil && f.Value.String() == "true"
}

func isDataflow() bool {
	n := strings.ToLower(Name())
	return n == "dataflow" || n == "dataflowrunner"
}

// isExternal reports whether the job's workers come from a worker pool (--environment_type=EXTERNAL).
func isExternal() bool { return strings.EqualFold(*jobopts.EnvironmentType, "external") }

// isProcess reports whether the job's workers are processes a runner starts from a command
// (--environment_type=PROCESS).
func isProcess() bool { return strings.EqualFold(*jobopts.EnvironmentType, "process") }

// IsLocal reports whether the workers are this process (prism without an endpoint or an
// environment of other processes, direct, or any runner with --environment_type=LOOPBACK), so
// in-process progress reporting works.
func IsLocal() bool {
	n := strings.ToLower(Name())
	switch {
	case n == "direct" || n == "directrunner":
		return true
	case (n == "prism" || n == "prismrunner") && *jobopts.Endpoint == "" && *jobopts.EnvironmentType == "":
		return true
	case isDataflow():
		return false
	}
	return jobopts.IsLoopback()
}

// IsRemote reports whether the workers surely run on other machines (Dataflow), so they can
// read and write URLs only, not local paths.
func IsRemote() bool { return isDataflow() }

// forwarded are the Beam flags AddFlags adds to a command's flag set, by name.
var forwarded = map[string]*flag.Flag{}

// beamFlag sets a Beam flag through flag.CommandLine, so Beam sees it as set (Beam records the
// flags set on its command line as pipeline options).
type beamFlag struct{ f *flag.Flag }

func (b beamFlag) String() string {
	if b.f == nil {
		return ""
	}
	return b.f.Value.String()
}
func (b beamFlag) Set(v string) error { return flag.CommandLine.Set(b.f.Name, v) }
func (b beamFlag) IsBoolFlag() bool {
	bf, ok := b.f.Value.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
}

// AddFlags adds every Beam flag of the global flag set to fs (except those fs already has and
// the test framework's), and returns their names, sorted.
func AddFlags(fs *flag.FlagSet) []string {
	var names []string
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "test.") || fs.Lookup(f.Name) != nil || workerFlags[f.Name] {
			return
		}
		forwarded[f.Name] = f
		fs.Var(beamFlag{f}, f.Name, f.Usage)
		names = append(names, f.Name)
	})
	sort.Strings(names)
	return names
}

// workerFlags are set by a runner's container when it starts a worker, never by users.
var workerFlags = map[string]bool{
	"worker": true, "id": true, "logging_endpoint": true, "control_endpoint": true,
	"semi_persist_dir": true, "options": true, "status_endpoint": true,
}

// ResetFlags sets the forwarded Beam flags back to their defaults, so that one process can run
// several commands (tests) without one's --runner or --endpoint leaking into the next.
func ResetFlags() {
	for _, f := range forwarded {
		if f.Value.String() == f.DefValue {
			continue
		}
		v := reflect.ValueOf(f.Value)
		if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Slice {
			v.Elem().Set(reflect.Zero(v.Elem().Type()))
			continue
		}
		f.Value.Set(f.DefValue)
	}
}

// InitWorker runs the Beam SDK harness and exits when this program was started as a worker:
// with --worker, by Beam's boot loader in a runner's container or process environment, or with
// the flags of Beam's container contract (--id, --provision_endpoint, …), by a worker pool
// (ServePool) or as the command of a PROCESS environment. Otherwise it does nothing. Call it
// first thing in main.
func InitWorker() {
	args := os.Args[1:]
	switch {
	case hasWorkerFlag(args):
		flag.Parse()
		beam.Init() // runs the harness; exits the process when it ends
	case isContainerStart(args):
		bootWorker(args)
	}
}

// hasWorkerFlag reports whether args set --worker.
func hasWorkerFlag(args []string) bool {
	worker := false
	for _, a := range args {
		if a == "--worker" || a == "-worker" || strings.HasPrefix(a, "--worker=") || strings.HasPrefix(a, "-worker=") {
			worker = !strings.HasSuffix(a, "=false")
		}
	}
	return worker
}

var initOnce sync.Once

// Logging configures Beam's and prism's log output: nothing below errors when quiet, info and
// above otherwise. Beam's INFO lines otherwise fill stderr.
type Logging struct {
	// Verbose shows Beam's and prism's logs from info up.
	Verbose bool
	// W receives the log lines; nil means os.Stderr.
	W io.Writer
}

// logger is Beam's logger while a pipeline runs.
type logger struct {
	mu      sync.Mutex
	min     beamlog.Severity
	w       io.Writer
	capture *[]string
}

func (l *logger) Log(_ context.Context, sev beamlog.Severity, _ int, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.capture != nil && sev == beamlog.SevInfo {
		*l.capture = append(*l.capture, msg)
	}
	if sev >= l.min {
		fmt.Fprintln(l.w, strings.TrimRight(msg, "\n"))
	}
}

func setLogging(lg Logging, capture *[]string) {
	w := lg.W
	if w == nil {
		w = os.Stderr
	}
	min, level := beamlog.SevFatal, slog.Level(100)
	if lg.Verbose {
		min, level = beamlog.SevInfo, slog.LevelInfo
	}
	beamlog.SetLogger(&logger{min: min, w: w, capture: capture})
	slog.SetDefault(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})))
}

// Result is what a run returns.
type Result struct {
	// Runner is the runner used.
	Runner string
	// Job is the job of a dry run (--dry_run), as JSON: the Dataflow job on Dataflow, the
	// portable pipeline (Beam's pipeline_v1.Pipeline) on every other runner.
	Job string
	// Metrics are the job's metrics, when the runner reports them.
	Metrics *metrics.Results
}

// DryRun reports whether nothing ran because the job was only printed.
func (r Result) DryRun() bool { return r.Job != "" }

// prismEndpoint is the in-process prism job server, started by the first prism run and reused.
var prismEndpoint string

// Run runs the pipeline on the runner chosen by the Beam flags and waits for it to finish.
func Run(ctx context.Context, p *beam.Pipeline, lg Logging) (Result, error) {
	if err := Check(); err != nil {
		return Result{}, err
	}
	initOnce.Do(beam.Init)
	name := Name()
	res := Result{Runner: name}
	var captured []string
	dry := IsDryRun()
	if dry {
		setLogging(lg, &captured)
	} else {
		setLogging(lg, nil)
	}
	lower := strings.ToLower(name)
	inProcessPrism := (lower == "prism" || lower == "prismrunner") && *jobopts.Endpoint == ""
	if inProcessPrism && prismEndpoint != "" {
		*jobopts.Endpoint = prismEndpoint
		if *jobopts.EnvironmentType == "" {
			*jobopts.EnvironmentType = "loopback"
		}
	}
	defer privateTemp()()
	var (
		pr  beam.PipelineResult
		err error
	)
	if dry && !isDataflow() {
		res.Job, err = portableJob(ctx, p)
		return res, err
	}
	if !inProcessPrism && *jobopts.Endpoint != "" && !isDataflow() {
		// Beam waits two minutes for a job server that is not there; fail fast instead.
		c, err := net.DialTimeout("tcp", *jobopts.Endpoint, 5*time.Second)
		if err != nil {
			return res, fmt.Errorf("cannot reach the job server at --endpoint=%s: %v", *jobopts.Endpoint, err)
		}
		c.Close()
	}
	if isExternal() && inProcessPrism {
		// Here the job server is this process, which asks the pool for workers: a pool it
		// cannot use would make it wait, or panic. Other job servers (Flink's task managers)
		// resolve the pool's address where they run, so it is theirs to check.
		if err := checkPool(ctx, *jobopts.EnvironmentConfig); err != nil {
			return res, err
		}
	}
	if (isExternal() || isProcess()) && *jobopts.WorkerBinary == "" && goruntime.GOOS == "linux" && goruntime.GOARCH == "amd64" {
		// The workers run this program: staged, it is what a worker pool or a PROCESS command
		// checks its own binary against (see bootWorker). Beam would otherwise compile the
		// launcher's main package from source, which a built stirank does not have.
		if exe, err := os.Executable(); err == nil {
			*jobopts.WorkerBinary = exe
		}
	}
	if inProcessPrism {
		pr, err = prism.Execute(ctx, p)
		if prismEndpoint == "" {
			prismEndpoint = *jobopts.Endpoint
		}
	} else {
		pr, err = beam.Run(ctx, name, p)
	}
	if err != nil {
		return res, err
	}
	if dry {
		res.Job = findJob(captured)
		if res.Job == "" {
			return res, fmt.Errorf("dry run printed no job")
		}
		return res, nil
	}
	if pr != nil {
		m := pr.Metrics()
		res.Metrics = &m
	}
	return res, nil
}

// tempPrefix starts the names of the temporary directories privateTemp makes; the pid follows.
const tempPrefix = "stirank-beam-"

// privateTemp points the temporary directory ($TMPDIR) at a new directory of this run's own until
// the function it returns is called, which removes it. Beam's universal runner creates an empty
// placeholder worker file, beamloopbackworker-*, in the temporary directory on every loopback run
// and never removes it; a run killed before it could remove the file left it in the shared
// directory, and removing "the files that appeared during the run" instead could take another
// run's file before Beam staged it. A private directory holds only this run's files. Its name
// holds the pid, so that later runs remove the directories of processes that were killed.
func privateTemp() (restore func()) {
	base := os.TempDir()
	sweepTemps(base)
	dir, err := os.MkdirTemp(base, fmt.Sprintf("%s%d-", tempPrefix, os.Getpid()))
	if err != nil {
		return func() {}
	}
	old, had := os.LookupEnv("TMPDIR")
	os.Setenv("TMPDIR", dir)
	return func() {
		if had {
			os.Setenv("TMPDIR", old)
		} else {
			os.Unsetenv("TMPDIR")
		}
		os.RemoveAll(dir)
	}
}

// sweepTemps removes the directories of privateTemp in base whose process no longer exists.
func sweepTemps(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, tempPrefix+"*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), tempPrefix), "-", 2)[0])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		// A pid in use, even by another program since, keeps its directory: removing it then
		// waits for a later run.
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

// portableJob is the portable pipeline a job server would receive for p, with the environment
// the Beam flags choose, as JSON: what --dry_run prints on the runners other than Dataflow.
func portableJob(ctx context.Context, p *beam.Pipeline) (string, error) {
	edges, _, err := p.Build()
	if err != nil {
		return "", err
	}
	env, err := graphx.CreateEnvironment(ctx, jobopts.GetEnvironmentUrn(ctx), jobopts.GetEnvironmentConfig)
	if err != nil {
		return "", err
	}
	model, err := graphx.Marshal(edges, &graphx.Options{Environment: env, PipelineResourceHints: jobopts.GetPipelineResourceHints()})
	if err != nil {
		return "", err
	}
	js, err := protojson.MarshalOptions{Multiline: true}.Marshal(model)
	return string(js), err
}

// findJob returns the last captured log message that is a JSON object: the Dataflow job.
func findJob(msgs []string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := strings.TrimSpace(msgs[i])
		if strings.HasPrefix(m, "{") && json.Valid([]byte(m)) {
			return m
		}
	}
	return ""
}

// Counter returns the committed value of a counter of the job, or false when the runner did not
// report it. On prism (Beam v2.77) a counter can miss one bundle's increments: prism keeps one
// payload per metric short ID it has not yet resolved (jobservices.metricsStore.contributeMetrics),
// so when two bundles first report a counter before the ID's metadata arrives, the first one's
// value is overwritten (seen here as an occasional shortfall of one task in the unit tests). A
// count that must be exact comes from the evidence (RankEvidence.Steps), not from Beam metrics.
func (r Result) Counter(namespace, name string) (int64, bool) {
	if r.Metrics == nil {
		return 0, false
	}
	var (
		n     int64
		found bool
	)
	for _, c := range r.Metrics.AllMetrics().Counters() {
		if c.Key.Namespace == namespace && c.Key.Name == name {
			n += c.Result()
			found = true
		}
	}
	return n, found
}
