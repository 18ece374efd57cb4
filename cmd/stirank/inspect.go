package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"github.com/stirank/stirank/io/tensorio"
)

func init() {
	register(command{
		name:    "inspect",
		summary: "describe a dataset and validate every shard",
		run:     runInspect,
	})
}

func runInspect(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("inspect", "[--counts] [--version N] DIR")
	counts := fs.Bool("counts", false, "also require non-negative integer values, as the Poisson models do")
	version := fs.Int("version", 0, "inspect this version of a dataset that stirank append has grown (default: the current one)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want exactly one dataset directory or URL, got %d arguments", fs.NArg())
	}
	if *version < 0 {
		return usagef("--version %d must be at least 1", *version)
	}
	dir := fs.Arg(0)
	var m *tensorio.Manifest
	var err error
	if *version > 0 {
		m, err = tensorio.ReadManifestVersion(ctx, dir, *version)
	} else {
		m, err = tensorio.ReadManifest(ctx, dir)
	}
	if err != nil {
		fmt.Fprintf(stdout, "verdict      invalid\n")
		return err
	}
	w := stdout
	fmt.Fprintf(w, "dataset      %s\n", dir)
	fmt.Fprintf(w, "version      %d\n", m.Version)
	fmt.Fprintf(w, "checksum     %s\n", m.Checksum())
	fmt.Fprintf(w, "order        %d\n", m.Order)
	fmt.Fprintf(w, "shape        %s\n", formatShape(m.Shape))
	fmt.Fprintf(w, "value kind   %s\n", m.Kind)
	cells := 1.0
	for _, n := range m.Shape {
		cells *= float64(n)
	}
	fmt.Fprintf(w, "stored cells %d (density %.4g)\n", m.Cells, float64(m.Cells)/cells)
	fmt.Fprintf(w, "zeros stored %t\n", m.ZerosStored)
	var bytes int64
	for _, sh := range m.Shards {
		bytes += sh.Bytes
	}
	fmt.Fprintf(w, "shards       %d (%d bytes)\n", len(m.Shards), bytes)
	if g, ok := m.Grid(); ok {
		fmt.Fprintf(w, "blocks       %d per mode, %d blocks; bounds", g.B, g.NumBlocks())
		for mode, b := range g.Bounds {
			fmt.Fprintf(w, " mode-%d %v", mode, b)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "blocks       none\n")
	}
	for _, k := range slices.Sorted(maps.Keys(m.Provenance)) {
		fmt.Fprintf(w, "provenance   %s: %s\n", k, m.Provenance[k])
	}
	// By number, so that an append meanwhile does not change what is read.
	d, err := tensorio.ReadVersion(ctx, dir, m.Version, tensorio.ReadOptions{Counts: *counts, Complex: true})
	if err != nil {
		fmt.Fprintf(stdout, "verdict      invalid\n")
		return err
	}
	span := func(values []float64) (lo, hi float64) {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, v := range values {
			lo, hi = min(lo, v), max(hi, v)
		}
		return lo, hi
	}
	lo, hi := span(d.Tensor.Values)
	if d.Tensor.Complex() {
		ilo, ihi := span(d.Tensor.Imag)
		var largest float64
		for n, re := range d.Tensor.Values {
			largest = max(largest, math.Hypot(re, d.Tensor.Imag[n]))
		}
		fmt.Fprintf(stdout, "values       real parts min %g, max %g; imaginary parts min %g, max %g; largest |x| %g\n", lo, hi, ilo, ihi, largest)
	} else {
		fmt.Fprintf(stdout, "values       min %g, max %g, sum %g\n", lo, hi, d.Tensor.Sum())
	}
	fmt.Fprintf(stdout, "verdict      valid\n")
	return nil
}
