// Package transforms holds stirank's Beam DoFns and CombineFns and the composite transforms built
// from them, one set for every estimator (package estimators: STI, Chib, AIS): the fan-out of an
// estimator's tasks, the DoFn that runs one task per element on the worker's prepared problem,
// and the CombineFn that reduces a rank's task results into its evidence. It is a thin layer:
// every number comes from the Beam-free packages behind the estimators.
package transforms

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"sync/atomic"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/tensor"
)

// Source says where a worker finds the dataset. Exactly one of URL, Embedded and Inline is set.
// All fields are exported: a Source travels inside DoFns between pipeline stages and processes.
type Source struct {
	// URL is a dataset directory: a local path or a Beam filesystem URL (gs://…). A remote
	// worker must be able to read it, so a job on Dataflow needs gs:// data.
	URL string `json:"url,omitempty"`
	// Embedded names a dataset compiled into the binary (RegisterEmbedded), which every worker
	// runs too.
	Embedded string `json:"embedded,omitempty"`
	// Inline carries the cells inside the pipeline itself: for tests and small data only, since
	// the whole tensor is serialised into the job.
	Inline *tensor.Sparse `json:"inline,omitempty"`
	// Checksum identifies the data: the manifest checksum (tensorio.Manifest.Checksum) the
	// launcher saw for URL and Embedded data, InlineChecksum for Inline data. Workers refuse data
	// whose checksum differs, so a dataset rewritten while a job runs cannot mix into it. Empty
	// skips the check.
	Checksum string `json:"checksum,omitempty"`
	// Version is the version of URL data the launcher saw; workers read that version
	// (tensorio.ReadVersion), so an append while a job runs does not stop it. Zero reads the
	// current version.
	Version int `json:"version,omitempty"`
}

// embedded holds the datasets compiled into the binary, one directory each (RegisterEmbedded).
var embedded fs.FS

// RegisterEmbedded makes the datasets of fsys, one directory each, the ones Source.Embedded
// names: the command that builds pipelines registers them in its init, so that its workers, the
// same binary, find them too.
func RegisterEmbedded(fsys fs.FS) { embedded = fsys }

// Validate checks that exactly one location is set.
func (s Source) Validate() error {
	n := 0
	if s.URL != "" {
		n++
	}
	if s.Embedded != "" {
		n++
	}
	if s.Inline != nil {
		n++
	}
	if n != 1 {
		return errors.New("a data source needs exactly one of a URL, an embedded dataset name and inline cells")
	}
	return nil
}

// String names the source for messages and results.
func (s Source) String() string {
	switch {
	case s.URL != "":
		return s.URL
	case s.Embedded != "":
		return "embedded:" + s.Embedded
	case s.Inline != nil:
		return fmt.Sprintf("inline:%v", s.Inline.Shape)
	}
	return "(no data)"
}

// Load reads the data with opts and returns them with their checksum: opts.Counts asks for every
// value to be checked as a non-negative integer (the Poisson models), opts.Complex lets complex
// data through. When s.Checksum is set, data with a different checksum are an error.
func (s Source) Load(ctx context.Context, opts tensorio.ReadOptions) (*tensor.Sparse, string, error) {
	if err := s.Validate(); err != nil {
		return nil, "", err
	}
	var (
		t   *tensor.Sparse
		sum string
	)
	switch {
	case s.URL != "":
		var ds *tensorio.Dataset
		var err error
		if s.Version > 0 {
			ds, err = tensorio.ReadVersion(ctx, s.URL, s.Version, opts)
		} else {
			ds, err = tensorio.Read(ctx, s.URL, opts)
		}
		if err != nil {
			return nil, "", err
		}
		t, sum = ds.Tensor, ds.Manifest.Checksum()
	case s.Embedded != "":
		if embedded == nil {
			return nil, "", fmt.Errorf("embedded dataset %q: this binary embeds none", s.Embedded)
		}
		ds, err := tensorio.ReadFS(embedded, s.Embedded, opts)
		if err != nil {
			return nil, "", fmt.Errorf("embedded dataset %q: %w", s.Embedded, err)
		}
		t, sum = ds.Tensor, ds.Manifest.Checksum()
	default:
		if s.Inline.Complex() && !opts.Complex {
			return nil, "", fmt.Errorf("data at %s are complex; this reader takes real values only", s)
		}
		t, sum = s.Inline, InlineChecksum(s.Inline)
	}
	if s.Checksum != "" && sum != s.Checksum {
		return nil, "", fmt.Errorf("data at %s changed since the job was built (checksum %.12s…, expected %.12s…)", s, sum, s.Checksum)
	}
	if s.Inline == nil && isWorkerProcess() {
		unreportedReads.Add(1)
		// The worker's log (a pool's output, Dataflow's worker logs) says which process read what.
		fmt.Fprintf(os.Stderr, "stirank worker %d: read %s (checksum %.12s…)\n", os.Getpid(), s, sum)
	}
	return t, sum, nil
}

// DatasetsReadMetric names the counter of the datasets worker processes read from their source
// (a path, a URL or the binary's embedded sets). Only processes started as Beam workers
// (--worker: by a worker pool, a PROCESS or DOCKER environment, Flink, Dataflow) count, so a job
// whose workers are the launching process, which hands them the data it read, counts none, and
// neither do data the launcher put inside the job (Inline): a job run elsewhere that counts none
// did not read its data where it ran.
const DatasetsReadMetric = "datasets_read_by_workers"

var datasetsRead = beam.NewCounter(MetricsNamespace, DatasetsReadMetric)

// unreportedReads counts the datasets this process has read and no bundle has counted yet: the
// data are read in a DoFn's Setup, whose context carries no metrics.
var unreportedReads atomic.Int64

// reportReads adds the reads not yet counted to the counter of the bundle of ctx.
func reportReads(ctx context.Context) {
	if n := unreportedReads.Swap(0); n > 0 {
		datasetsRead.Inc(ctx, n)
	}
}

// isWorkerProcess reports whether this process was started as a Beam worker (its --worker flag,
// Beam's harness flag, is set).
func isWorkerProcess() bool {
	f := flag.Lookup("worker")
	return f != nil && f.Value.String() == "true"
}

// InlineChecksum is the hex SHA-256 of a tensor's shape, coordinates and values, and of their
// imaginary parts when the tensor is complex.
func InlineChecksum(t *tensor.Sparse) string {
	h := sha256.New()
	var b [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	put(uint64(len(t.Shape)))
	for _, n := range t.Shape {
		put(uint64(n))
	}
	put(uint64(len(t.Values)))
	for _, c := range t.Coords {
		for _, i := range c {
			put(uint64(uint32(i)))
		}
	}
	for _, v := range t.Values {
		put(math.Float64bits(v))
	}
	for _, v := range t.Imag {
		put(math.Float64bits(v))
	}
	return hex.EncodeToString(h.Sum(nil))
}
