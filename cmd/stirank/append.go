package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/tensor"
)

func init() {
	register(command{
		name:    "append",
		summary: "add the cells of a text file or dataset to a dataset as a new version",
		run:     runAppend,
	})
}

func runAppend(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("append", "--data DIR --in FILE|DATASET [flags]")
	data := fs.String("data", "", "dataset directory to append to (local or mounted; earlier versions stay readable)")
	in := fs.String("in", "", "cells to add: CSV with header i,j[,k],value (0-based), FROSTT .tns or Matrix Market .mtx (1-based), or a stirank dataset directory")
	format := fs.String("format", "", "input format csv, tns or mtx (default: from the file extension)")
	replace := fs.Bool("replace", false, "overwrite cells that are already stored (default: refuse them)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *in == "" || *data == "" {
		return usagef("--data and --in are required")
	}
	if strings.Contains(*data, "://") {
		return usagef("--data %s: appends need a local or mounted directory, since they publish a version by renaming manifest.json atomically", *data)
	}
	// The dataset's kind checks the input's values as they are read, naming their lines.
	m, err := tensorio.ReadManifest(ctx, *data)
	if err != nil {
		return err
	}
	add, origin, err := readAppended(ctx, *in, *format, m.Kind)
	if err != nil {
		return err
	}
	m, err = tensorio.Append(ctx, *data, add, tensorio.AppendOptions{Replace: *replace, Source: *in, Origin: origin})
	if errors.Is(err, tensorio.ErrAlreadyStored) {
		return fmt.Errorf("%w; pass --replace to overwrite it", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "appended %d cells to %s: version %d, shape %s, %d stored cells in %d shards (checksum %s)\n",
		add.NNZ(), *data, m.Version, formatShape(m.Shape), m.Cells, len(m.Shards), m.Checksum())
	return nil
}

// readAppended reads the cells to append from a text file or a dataset directory, and says where
// each came from for Append's errors.
func readAppended(ctx context.Context, in, format string, kind tensorio.ValueKind) (*tensor.Sparse, func(int) (string, int64, int), error) {
	if info, err := os.Stat(in); err == nil && info.IsDir() {
		if format != "" {
			return nil, nil, usagef("--format is for text files; %s is a directory", in)
		}
		d, err := tensorio.Read(ctx, in, tensorio.ReadOptions{Counts: kind == tensorio.Count})
		if err != nil {
			return nil, nil, err
		}
		return d.Tensor, func(pos int) (string, int64, int) {
			file, row := d.Origin(pos)
			return file, row, 0
		}, nil
	}
	f, err := tensorio.TextFormatOf(in)
	if format != "" {
		f, err = tensorio.ParseTextFormat(format)
	}
	if err != nil {
		return nil, nil, usageError{err}
	}
	file, err := os.Open(in)
	if err != nil {
		return nil, nil, err
	}
	defer file.Close()
	t, _, lines, err := tensorio.ReadTextLines(file, in, f, tensorio.TextOptions{Kind: kind})
	if err != nil {
		return nil, nil, err
	}
	return t, func(pos int) (string, int64, int) { return in, -1, lines[pos] }, nil
}
