package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/stirank/stirank/runners"
	"github.com/stirank/stirank/transforms"
)

func init() {
	register(command{
		name:    "worker-pool",
		summary: "serve Beam's external worker pool: run the bundles of jobs submitted with --environment_type=EXTERNAL in worker processes here",
		run:     runWorkerPool,
	})
}

const workerPoolHelp = `Serves Beam's external worker pool (the BeamFnExternalWorkerPool service) on PORT, on every
interface, until interrupted. A job submitted with

  --environment_type=EXTERNAL --environment_config=HOST:PORT

(to prism in the launching process, a standalone prism job server or Flink's job server) asks the
pool for its workers: each is a new process of this program, which reads the dataset itself from
the job's path or URL (a local path must be the same on this machine), checks its checksum, and
runs the job's bundles. The launcher stages its own binary: a pool of the same build runs the
job at once, one of another build first fetches the launcher's binary and runs that. See
docs/runners.md.`

func runWorkerPool(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("worker-pool", "[--port 50000] [--verbose]\n\n"+workerPoolHelp)
	port := fs.Int("port", 50000, "TCP port to serve the worker pool on (Beam's convention: 50000)")
	verbose := fs.Bool("verbose", false, "show Beam's logs (workers started and stopped) on stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case *port < 1 || *port > 65535:
		return usagef("--port %d must be from 1 to 65535", *port)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runners.ServePool(ctx, *port, runners.Logging{Verbose: *verbose}, func(addr string) {
		fmt.Fprintf(stdout, "stirank worker pool (pid %d) listening on %s\n", os.Getpid(), addr)
	})
}

// printWorkerReads prints, after a run whose workers were not this process, how many datasets
// they read themselves (transforms.DatasetsReadMetric), when the runner reports it.
func printWorkerReads(w io.Writer, res runners.Result) {
	if runners.IsLocal() || res.Metrics == nil {
		return
	}
	n, _ := res.Counter(transforms.MetricsNamespace, transforms.DatasetsReadMetric)
	fmt.Fprintf(w, "datasets read by the workers themselves: %d (Beam counter %s/%s)\n", n, transforms.MetricsNamespace, transforms.DatasetsReadMetric)
}
