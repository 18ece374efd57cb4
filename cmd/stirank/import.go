package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/stirank/stirank/io/tensorio"
)

func init() {
	register(command{
		name:    "import",
		summary: "convert a CSV, FROSTT .tns or Matrix Market .mtx file into a dataset",
		run:     runImport,
	})
}

func runImport(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("import", "--in FILE --out DIR [flags]")
	in := fs.String("in", "", "input file: CSV with header i,j[,k],value (0-based), FROSTT .tns or Matrix Market .mtx (1-based)")
	out := fs.String("out", "", "output dataset directory (must not exist, or be empty)")
	format := fs.String("format", "", "input format csv, tns or mtx (default: from the file extension)")
	kindFlag := fs.String("kind", "", "value kind count or real (default: count when every value is a non-negative integer)")
	shapeFlag := fs.String("shape", "", "shape like 30x20 (default: the largest index of every mode; .mtx files declare theirs)")
	blocks := fs.Int("blocks", 0, "write the cells by block, cutting every mode into this many ranges (0: not blocked)")
	shardRows := fs.Int("shard-rows", 0, fmt.Sprintf("most rows per shard (0: %d)", tensorio.DefaultShardRows))
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *in == "" || *out == "" {
		return usagef("--in and --out are required")
	}
	if *blocks < 0 || *shardRows < 0 {
		return usagef("--blocks and --shard-rows must not be negative")
	}
	var opts tensorio.TextOptions
	var err error
	if *shapeFlag != "" {
		if opts.Shape, err = parseShape(*shapeFlag); err != nil {
			return usageError{err}
		}
	}
	if *kindFlag != "" {
		if opts.Kind, err = tensorio.ParseValueKind(*kindFlag); err != nil {
			return usageError{err}
		}
	}
	f, err := tensorio.TextFormatOf(*in)
	if *format != "" {
		f, err = tensorio.ParseTextFormat(*format)
	}
	if err != nil {
		return usageError{err}
	}
	file, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer file.Close()
	t, kind, err := tensorio.ReadText(file, *in, f, opts)
	if err != nil {
		return err
	}
	m, err := tensorio.Write(ctx, *out, t, tensorio.WriteOptions{Kind: kind, Blocks: *blocks, ShardRows: *shardRows})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "imported %s into %s: %s %s, %d stored cells in %d shards\n",
		*in, *out, kind, formatShape(m.Shape), m.Cells, len(m.Shards))
	return nil
}
