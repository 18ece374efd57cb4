package runners

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/container/pool"
	"github.com/apache/beam/sdks/v2/go/container/tools"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/artifact"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// ServePool serves Beam's external worker pool service (BeamFnExternalWorkerPool, Beam's own
// implementation, container/pool) on port until ctx ends: every worker a runner asks for with
// --environment_type=EXTERNAL --environment_config=HOST:PORT is a new process of this program,
// started with the flags of Beam's container contract (--id, --provision_endpoint, …), which
// InitWorker turns into an SDK harness. Separate processes keep a worker's failure its own and
// let the runner see it die. lg says what of Beam's logs to show; ready, when not nil, is called
// with the address once the pool listens.
func ServePool(ctx context.Context, port int, lg Logging, ready func(addr string)) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("worker pool: cannot find this program to start workers from: %w", err)
	}
	setLogging(lg, nil)
	srv, err := pool.New(ctx, port, exe)
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	go reapWorkers(stop)
	go func() {
		select {
		case <-ctx.Done():
			srv.Stop(context.Background())
		case <-stop:
		}
	}()
	if ready != nil {
		ready(fmt.Sprintf(":%d", port))
	}
	if err := srv.ServeAndWait(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("worker pool: %w", err)
	}
	return nil
}

// reapWorkers waits for the pool's worker processes as they end, until stop is closed: Beam's
// pool starts them and kills them when the runner stops them, but never waits for them, so each
// would stay a zombie for the pool's lifetime.
func reapWorkers(stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid > 0 {
			continue
		}
		if err != nil && !errors.Is(err, syscall.EINTR) && !errors.Is(err, syscall.ECHILD) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// containerFlags are the flags of Beam's container contract (container/boot.go) with which a
// worker pool or a PROCESS environment starts a worker, rather than with --worker.
var containerFlags = []string{"id", "provision_endpoint", "control_endpoint", "logging_endpoint", "artifact_endpoint", "semi_persist_dir"}

// isContainerStart reports whether args are those of Beam's container contract: they start with
// one of its flags and name a provision endpoint.
func isContainerStart(args []string) bool {
	if len(args) == 0 || hasWorkerFlag(args) {
		return false
	}
	first := strings.TrimLeft(strings.SplitN(args[0], "=", 2)[0], "-")
	if !slices.Contains(containerFlags, first) {
		return false
	}
	for _, a := range args {
		if strings.HasPrefix(strings.TrimLeft(a, "-"), "provision_endpoint=") {
			return true
		}
	}
	return false
}

// bootWorker does what Beam's Go boot loader (container/boot.go) does for a worker started by
// a pool or a PROCESS environment: it asks the provision service for the job's options and
// endpoints and runs the job's worker binary as an SDK harness. When the binary the job staged is
// this program (the usual case: the launcher stages itself, see Run) the harness runs in this
// process; otherwise the staged binary is fetched and executed in its place, as Beam's boot
// loader would. It never returns.
func bootWorker(args []string) {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	vals := map[string]*string{}
	for _, name := range containerFlags {
		vals[name] = fs.String(name, "", "")
	}
	err := fs.Parse(args)
	// prism (v2.77) quotes the id it passes to a PROCESS command, without a shell to remove them.
	id := strings.Trim(*vals["id"], "'")
	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "stirank worker %d (%s): "+format+"\n", append([]any{os.Getpid(), id}, a...)...)
		os.Exit(1)
	}
	if err != nil {
		fail("%v", err)
	}
	ctx := grpcx.WriteWorkerID(context.Background(), id)
	info, err := tools.ProvisionInfo(ctx, *vals["provision_endpoint"])
	if err != nil {
		fail("%v", err)
	}
	endpoint := func(name string, d *pipepb.ApiServiceDescriptor) string {
		if d.GetUrl() != "" {
			return d.GetUrl()
		}
		return *vals[name]
	}
	control, logging := endpoint("control_endpoint", info.GetControlEndpoint()), endpoint("logging_endpoint", info.GetLoggingEndpoint())
	options, err := tools.ProtoToJSON(info.GetPipelineOptions())
	if err != nil {
		fail("pipeline options: %v", err)
	}
	if s := info.GetStatusEndpoint().GetUrl(); s != "" {
		os.Setenv("STATUS_ENDPOINT", s)
	}
	if caps := info.GetRunnerCapabilities(); len(caps) > 0 {
		os.Setenv("RUNNER_CAPABILITIES", strings.Join(caps, " "))
	}
	harness := []string{"--worker=true", "--id=" + id, "--logging_endpoint=" + logging, "--control_endpoint=" + control, "--options=" + options}
	staged, err := stagedWorker(info.GetDependencies())
	if err != nil {
		fail("%v", err)
	}
	self, err := executableSHA256()
	if err != nil {
		fail("%v", err)
	}
	if staged == nil || staged.sha256 == self {
		for _, a := range harness {
			name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if err := flag.Set(name, value); err != nil {
				fail("--%s: %v", name, err)
			}
		}
		beam.Init() // runs the harness and exits
		fail("the SDK harness returned")
	}
	fmt.Fprintf(os.Stderr, "stirank worker %d (%s): the job staged another binary (sha256 %.12s…, this one %.12s…): fetching it to run in this one's place\n", os.Getpid(), id, staged.sha256, self)
	bin, err := fetchWorker(ctx, endpoint("artifact_endpoint", info.GetArtifactEndpoint()), staged.dep, info.GetRetrievalToken())
	if err != nil {
		fail("fetching the job's worker binary: %v", err)
	}
	err = syscall.Exec("/proc/self/fd/"+strconv.Itoa(int(bin.Fd())), append([]string{os.Args[0]}, harness...), os.Environ())
	runtime.KeepAlive(bin) // its descriptor is the path executed
	fail("starting the job's worker binary: %v", err)
}

// stagedBinary is the Go worker binary a job staged: the artifact and its SHA-256.
type stagedBinary struct {
	dep    *pipepb.ArtifactInformation
	sha256 string
}

// stagedWorker finds the Go worker binary among a job's artifacts; nil when the job staged none
// with a checksum (a loopback job).
func stagedWorker(deps []*pipepb.ArtifactInformation) (*stagedBinary, error) {
	for _, d := range deps {
		if d.GetRoleUrn() != artifact.URNGoWorkerBinaryRole || d.GetTypeUrn() != artifact.URNFileArtifact {
			continue
		}
		var p pipepb.ArtifactFilePayload
		if err := proto.Unmarshal(d.GetTypePayload(), &p); err != nil {
			return nil, fmt.Errorf("the job's worker binary artifact: %w", err)
		}
		if p.GetSha256() == "" {
			return nil, nil
		}
		return &stagedBinary{dep: d, sha256: p.GetSha256()}, nil
	}
	return nil, nil
}

// executableSHA256 is the hex SHA-256 of this program's file.
func executableSHA256() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// fetchWorker downloads the artifact dep (checking its SHA-256) and returns it open, already
// removed: executed as /proc/self/fd/N, the copy disappears with the process instead of piling up
// in the temporary directory. The exec resolves that path before it closes the process's
// close-on-exec descriptors.
func fetchWorker(ctx context.Context, endpoint string, dep *pipepb.ArtifactInformation, token string) (*os.File, error) {
	dir, err := os.MkdirTemp("", "stirank-worker-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	got, err := artifact.Materialize(artifact.WithArtifactValidation(ctx, true), endpoint, []*pipepb.ArtifactInformation{dep}, token, dir)
	if err != nil {
		return nil, err
	}
	if len(got) != 1 {
		return nil, fmt.Errorf("%d artifacts fetched for one", len(got))
	}
	name, _ := artifact.MustExtractFilePayload(got[0])
	return os.Open(filepath.Join(dir, name))
}

// checkPool fails unless addr serves Beam's external worker pool: it asks the pool to stop a
// worker that does not exist, which a pool answers (with an error in the response) and anything
// else does not. prism (v2.77) panics when a pool does not start its worker.
func checkPool(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot reach the worker pool at --environment_config=%s: %v", addr, err)
	}
	c.Close()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("--environment_config=%s: %v", addr, err)
	}
	defer conn.Close()
	if _, err := fnpb.NewBeamFnExternalWorkerPoolClient(conn).StopWorker(ctx, &fnpb.StopWorkerRequest{WorkerId: "stirank-check"}); err != nil {
		return fmt.Errorf("--environment_config=%s is not a Beam worker pool (start one with stirank worker-pool): %v", addr, err)
	}
	return nil
}
