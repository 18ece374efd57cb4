package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/stirank/stirank/internal/memlimit"
	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

func init() {
	register(command{
		name:    "generate",
		summary: "draw a dataset from a model's generative process, with its true parameters",
		run:     runGenerate,
	})
}

// generateStream names the random stream datasets are drawn from, apart from every stream the
// samplers derive from the same seed.
const generateStream = 0xda7a

// numberList matches an indented JSON array of numbers.
var numberList = regexp.MustCompile(`\[[-+.eE\d,\s]+\]`)

// truthFile is the attachment holding the true parameters of a generated dataset.
const truthFile = "truth.json"

// generators are the registered models that have a generative process.
func generators() []*models.Info {
	return models.Where(func(i *models.Info) bool { return i.Generate != nil })
}

// shapeOf spells the shape of data of an order as --shape reads it: N, IxJ, IxJxK, ….
func shapeOf(order int) string {
	if order == 1 {
		return "N"
	}
	return strings.Join(strings.Split("IJKLMNOP"[:order], ""), "x")
}

func runGenerate(ctx context.Context, args []string, stdout io.Writer) error {
	gens := generators()
	var kinds, shapes []string
	for _, info := range gens {
		kinds = append(kinds, fmt.Sprintf("%s (%d-way)", info.Name, info.Order))
		shapes = append(shapes, shapeOf(info.Order)+" for "+info.Name)
	}
	fs := newFlagSet("generate", "--model "+strings.Join(models.NamesOf(gens), "|")+" --shape SHAPE --rank R --out DIR [flags]")
	model := fs.String("model", "", "generative model: "+models.Or(kinds))
	shapeFlag := fs.String("shape", "", "shape: "+strings.Join(shapes, ", ")+" (x or , separated)")
	rank := fs.Int("rank", 0, "true rank (of "+models.And(dictionaryModels())+": the free block's, 0 for the dictionary alone)")
	dict := fs.String("dict", "", dictHelp())
	seed := fs.Uint64("seed", 1, "random seed")
	hypers := addModelFlags(fs, gens, func(info *models.Info) []models.Hyper { return info.Generate.Hypers })
	blocks := fs.Int("blocks", 0, "write the cells by block, cutting every mode into this many ranges (0: not blocked)")
	shardRows := fs.Int("shard-rows", 0, fmt.Sprintf("most rows per shard (0: %d)", tensorio.DefaultShardRows))
	out := fs.String("out", "", "output dataset directory (must not exist, or be empty)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	set := setFlags(fs)
	if *out == "" {
		return usagef("--out is required")
	}
	if *rank < 0 {
		return usagef("--rank %d must not be negative", *rank)
	}
	if *blocks < 0 || *shardRows < 0 {
		return usagef("--blocks and --shard-rows must not be negative")
	}
	shape, err := parseShape(*shapeFlag)
	if err != nil {
		return usageError{err}
	}
	if *model == "" {
		return usagef("--model is required (%s)", models.Or(models.NamesOf(gens)))
	}
	info, err := models.Lookup(*model)
	if err != nil || info.Generate == nil {
		return usagef("unknown --model %q (%s)", *model, models.Or(models.NamesOf(gens)))
	}
	if *rank < info.MinRank() {
		return usagef("--rank %d must be at least %d for %s", *rank, info.MinRank(), info.Name)
	}
	p, err := hypers.params(info, set)
	if err != nil {
		return err
	}
	if len(shape) != info.Order {
		if info.Order == 1 {
			return usagef("%s needs --shape N (one mode), got %v", info.Name, shape)
		}
		return usagef("%s needs a shape of %d modes, got %v", info.Name, info.Order, shape)
	}
	if err := checkGenerateMemory(shape, *rank, p); err != nil {
		return err
	}
	spec, err := withDictionary(ctx, models.Spec{Name: info.Name, Params: p}, *dict, shape)
	if err != nil {
		return err
	}
	head := models.Truth{Model: info.Name, Rank: *rank, Seed: *seed, Shape: shape}
	t, truth, err := info.Generate.Draw(rng.New(*seed, generateStream), head, p, spec.Dictionary)
	if err != nil {
		return err
	}
	kind := tensorio.Real
	if info.Domain == models.Counts {
		kind = tensorio.Count
	}
	truthJSON, err := json.MarshalIndent(truth, "", "  ")
	if err != nil {
		return err
	}
	// One line per factor row, not per number.
	truthJSON = numberList.ReplaceAllFunc(truthJSON, func(list []byte) []byte {
		return bytes.ReplaceAll(bytes.Join(bytes.Fields(list), nil), []byte(","), []byte(", "))
	})
	m, err := tensorio.Write(ctx, *out, t, tensorio.WriteOptions{
		Kind:        kind,
		Blocks:      *blocks,
		ShardRows:   *shardRows,
		Attachments: map[string][]byte{truthFile: append(truthJSON, '\n')},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %s %s rank %d seed %d, %d stored cells in %d shards\n",
		*out, *model, formatShape(m.Shape), *rank, *seed, m.Cells, len(m.Shards))
	return nil
}

// setFlags returns the names of the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// parseShape reads a shape written 30x20x10 or 30,20,10.
func parseShape(s string) ([]int, error) {
	if s == "" {
		return nil, fmt.Errorf("--shape is required")
	}
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == 'x' || r == 'X' || r == ',' })
	if len(fields) < 1 || len(fields) > tensor.MaxOrder || strings.Count(s, "x")+strings.Count(s, "X")+strings.Count(s, ",") != len(fields)-1 {
		return nil, fmt.Errorf("--shape %q: want 1 to %d extents like 30x20 or 30,20", s, tensor.MaxOrder)
	}
	shape := make([]int, len(fields))
	for m, f := range fields {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1<<31-1 {
			return nil, fmt.Errorf("--shape %q: extent %q is not an integer from 1 to %d", s, f, 1<<31-1)
		}
		shape[m] = n
	}
	return shape, nil
}

// formatShape prints a shape the way --shape reads it.
func formatShape(shape []int) string {
	parts := make([]string, len(shape))
	for m, n := range shape {
		parts[m] = strconv.Itoa(n)
	}
	return strings.Join(parts, "x")
}

// generateBytes is the memory a generated number takes on its way to disk: a float64 in memory,
// about 25 bytes of truth.json text and its reformatted copy for a parameter; the map entry,
// sorted key, tensor cell and writer buffers for a stored cell.
const generateBytes = 100

// checkGenerateMemory refuses a draw whose parameters or expected stored cells would not fit in
// memory, before drawing anything. The Poisson models expect R·Π(n_m/rate_m) counts (a factor
// column of mode m sums to n_m/rate_m on average); a cell stores one or more of them.
func checkGenerateMemory(shape []int, rank int, p models.Params) error {
	params, cells, events := 0.0, 1.0, float64(rank)
	rates := p.Nums("rates")
	for m, n := range shape {
		params += float64(n) * float64(rank)
		cells *= float64(n)
		if m < len(rates) {
			events *= float64(n) / rates[m]
		}
	}
	if len(rates) == len(shape) {
		cells = min(cells, events)
	}
	return memlimit.Check(fmt.Sprintf("--shape %s --rank %d", formatShape(shape), rank), (params+cells)*generateBytes)
}
