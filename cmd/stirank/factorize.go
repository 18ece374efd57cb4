package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models/klnmf"
	"github.com/stirank/stirank/tensor"
)

func init() {
	register(command{
		name:    "factorize",
		summary: "fit a KL-NMF (Poisson NMF) of a matrix by EM and write W and H as datasets",
		run:     runFactorize,
	})
}

// progressEvery spaces the progress lines on stderr: a fit shorter than that prints none.
const progressEvery = 2 * time.Second

// spectrogramKeys are the provenance entries of an imported spectrogram that a dictionary
// trained on it carries over, so that whoever applies it can check their analysis matches.
var spectrogramKeys = []string{"from", "sample_rate", "window", "window_function", "hop", "scale"}

func runFactorize(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("factorize", "--data DIR --rank R --out W [--h-out H] [flags]")
	data := fs.String("data", "", "input dataset: a non-negative matrix (counts, or real with every cell stored)")
	rank := fs.Int("rank", 0, "number of columns of W")
	out := fs.String("out", "", "output dataset directory for W, features × rank (must not exist, or be empty)")
	hOut := fs.String("h-out", "", "output dataset directory for H, rank × columns (default: H is not written)")
	em := addEMFlags(fs, 500)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case *data == "" || *out == "":
		return usagef("--data and --out are required")
	case *rank < 1:
		return usagef("--rank %d must be at least 1", *rank)
	case *hOut == *out:
		return usagef("--out and --h-out must differ")
	}
	if err := em.check(); err != nil {
		return err
	}
	for _, dir := range []string{*out, *hOut} {
		if err := checkFresh(dir); err != nil {
			return err
		}
	}
	d, err := tensorio.Read(ctx, *data, tensorio.ReadOptions{})
	if err != nil {
		return err
	}
	x := d.Tensor
	if err := klnmf.Check(x); err != nil {
		return fmt.Errorf("%s: %v", *data, err)
	}
	if d.Manifest.Kind == tensorio.Real && float64(x.NNZ()) != x.Cells() {
		return fmt.Errorf("%s: a real dataset with cells not stored: KL-NMF needs every cell (store the zeros, or import the data as counts)", *data)
	}
	start := time.Now()
	r, err := klnmf.Fit(x, klnmf.Options{Rank: *rank, Iters: *em.iters, Tol: *em.tol, Seed: *em.seed, Progress: fitProgress("factorize")})
	if err != nil {
		return fmt.Errorf("%s: %v", *data, err)
	}
	prov := map[string]string{
		"made_by":   "stirank factorize (KL-NMF by EM)",
		"data":      *data,
		"rank":      strconv.Itoa(*rank),
		"seed":      strconv.FormatUint(*em.seed, 10),
		"sweeps":    strconv.Itoa(r.Sweeps),
		"converged": strconv.FormatBool(r.Converged),
		"kl":        strconv.FormatFloat(r.KL, 'g', -1, 64),
	}
	for _, k := range spectrogramKeys {
		if v, ok := d.Manifest.Provenance[k]; ok {
			prov["data_"+k] = v
		}
	}
	prov["factor"] = "W"
	if _, err := tensorio.Write(ctx, *out, dense(r.W, r.F, r.K), tensorio.WriteOptions{Kind: tensorio.Real, Provenance: prov}); err != nil {
		return err
	}
	if *hOut != "" {
		prov["factor"] = "H"
		if _, err := tensorio.Write(ctx, *hOut, dense(r.H, r.K, r.N), tensorio.WriteOptions{Kind: tensorio.Real, Provenance: prov}); err != nil {
			return err
		}
	}
	state := "converged"
	if !r.Converged {
		state = "did not converge"
	}
	fmt.Fprintf(stdout, "factorized %s (%dx%d) at rank %d: KL %.6g after %d sweeps (%s, tol %g) in %.1f s; W %dx%d in %s\n",
		*data, r.F, r.N, *rank, r.KL, r.Sweeps, state, *em.tol, time.Since(start).Seconds(), r.F, r.K, *out)
	return nil
}

// dense returns the rows × cols row-major matrix a as a tensor with every cell stored, zeros
// included, so that a real dataset of it has no missing cells.
func dense(a []float64, rows, cols int) *tensor.Sparse {
	t, _ := tensor.New([]int{rows, cols}, rows*cols)
	for i := range rows {
		for j := range cols {
			t.Append([]int{i, j}, a[i*cols+j])
		}
	}
	return t
}

// checkFresh fails when dir is a local directory that is not empty, before any work is done
// whose result could then not be written. Write checks again; this only fails early.
func checkFresh(dir string) error {
	if dir == "" || tensorio.IsURL(dir) {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err == nil && len(entries) > 0 {
		return fmt.Errorf("%s: output directory is not empty", dir)
	}
	return nil
}

// emFlags are the settings of a KL-NMF fit by EM that factorize and enhance share.
type emFlags struct {
	iters *int
	tol   *float64
	seed  *uint64
}

// addEMFlags defines --iters (default iters), --tol and --seed on fs.
func addEMFlags(fs *flag.FlagSet, iters int) emFlags {
	return emFlags{
		iters: fs.Int("iters", iters, "most EM sweeps"),
		tol:   fs.Float64("tol", 1e-6, "stop once a sweep lowers the KL divergence by less than this fraction of it"),
		seed:  fs.Uint64("seed", 1, "random seed of the starting point"),
	}
}

// check returns a usage error for settings the fit would refuse.
func (f emFlags) check() error {
	switch {
	case *f.iters < 1:
		return usagef("--iters %d must be at least 1", *f.iters)
	case !(*f.tol >= 0):
		return usagef("--tol %v must not be negative", *f.tol)
	}
	return nil
}

// fitProgress returns a progress function for a KL-NMF fit that prints a line on stderr, named
// after the command, at most every progressEvery.
func fitProgress(command string) func(sweep int, kl float64) {
	start := time.Now()
	last := start
	return func(sweep int, kl float64) {
		if now := time.Now(); now.Sub(last) >= progressEvery {
			last = now
			fmt.Fprintf(os.Stderr, "%s: sweep %d, KL %.6g (%.1f s)\n", command, sweep, kl, now.Sub(start).Seconds())
		}
	}
}
