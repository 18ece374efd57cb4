package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/stirank/stirank/io/spectrogram"
	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/io/wav"
)

func init() {
	register(command{
		name:    "import",
		summary: "convert a CSV, FROSTT .tns, Matrix Market .mtx or WAV file into a dataset",
		run:     runImport,
	})
}

func runImport(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("import", "--in FILE --out DIR [flags]")
	in := fs.String("in", "", "input file: CSV with header i,j[,k],value or, for complex values, i,j[,k],re,im (0-based), FROSTT .tns or Matrix Market .mtx (1-based), or WAV audio")
	out := fs.String("out", "", "output dataset directory (must not exist, or be empty)")
	format := fs.String("format", "", "input format csv, tns, mtx or wav (default: from the file extension)")
	kindFlag := fs.String("kind", "", "value kind count, real or complex (default: complex for a CSV header ending in re,im, else count when every value is a non-negative integer, else real)")
	shapeFlag := fs.String("shape", "", "shape like 30x20 (default: the largest index of every mode; .mtx files declare theirs)")
	blocks := fs.Int("blocks", 0, "write the cells by block, cutting every mode into this many ranges (0: not blocked)")
	shardRows := fs.Int("shard-rows", 0, fmt.Sprintf("most rows per shard (0: %d)", tensorio.DefaultShardRows))
	windowLen := fs.Int("window", spectrogram.DefaultWindow, "WAV: samples per spectrogram frame (Hamming window)")
	overlap := fs.Float64("overlap", spectrogram.DefaultOverlap, "WAV: fraction of a window that consecutive frames share, in [0, 1)")
	scale := fs.Float64("scale", spectrogram.DefaultScale, "WAV: a cell is round(scale·|DFT|) of a windowed frame of samples in [-1, 1]")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *in == "" || *out == "" {
		return usagef("--in and --out are required")
	}
	if *blocks < 0 || *shardRows < 0 {
		return usagef("--blocks and --shard-rows must not be negative")
	}
	if *format == "wav" || *format == "" && strings.EqualFold(filepath.Ext(*in), ".wav") {
		if set["shape"] || set["kind"] {
			return usagef("--shape and --kind do not apply to WAV input: it becomes a count matrix of frequency bins × frames")
		}
		p, err := spectrogram.NewParams(*windowLen, *overlap, *scale)
		if err != nil {
			return usageError{err}
		}
		return importWAV(ctx, *in, *out, p, tensorio.WriteOptions{Kind: tensorio.Count, Blocks: *blocks, ShardRows: *shardRows}, stdout)
	}
	if set["window"] || set["overlap"] || set["scale"] {
		return usagef("--window, --overlap and --scale apply to WAV input only")
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

// importWAV writes the integer magnitude spectrogram of the WAV file in (package spectrogram) as
// a count dataset, and records in its manifest what a reader needs to relate cells to sound.
func importWAV(ctx context.Context, in, out string, p spectrogram.Params, opts tensorio.WriteOptions, stdout io.Writer) error {
	audio, err := wav.ReadFile(in)
	if err != nil {
		return err
	}
	t, err := spectrogram.Counts(audio.Samples, p)
	if err != nil {
		return fmt.Errorf("%s: %v", in, err)
	}
	if t.NNZ() == 0 {
		return fmt.Errorf("%s: every cell of the spectrogram rounds to zero at scale %g (silent audio?); raise --scale", in, p.Scale)
	}
	opts.Provenance = map[string]string{
		"from":            "wav",
		"file":            filepath.Base(in),
		"sample_rate":     strconv.Itoa(audio.SampleRate),
		"channels":        strconv.Itoa(audio.Channels),
		"bits_per_sample": strconv.Itoa(audio.BitsPerSample),
		"samples":         strconv.Itoa(len(audio.Samples)),
		"window":          strconv.Itoa(p.Window),
		"window_function": "symmetric Hamming",
		"hop":             strconv.Itoa(p.Hop),
		"scale":           strconv.FormatFloat(p.Scale, 'g', -1, 64),
		"cell":            "round(scale·|DFT of the windowed frame|) of the mean of the channels in [-1, 1]; row k is k·sample_rate/window Hz, column f starts at sample f·hop",
	}
	m, err := tensorio.Write(ctx, out, t, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "imported %s into %s: %s %s, %d stored cells in %d shards (%d Hz, %.2f s; window %d, hop %d, scale %g; largest count %g)\n",
		in, out, m.Kind, formatShape(m.Shape), m.Cells, len(m.Shards), audio.SampleRate,
		float64(len(audio.Samples))/float64(audio.SampleRate), p.Window, p.Hop, p.Scale, slices.Max(t.Values))
	return nil
}
