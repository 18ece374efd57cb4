package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

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

// gaussTruth is truth.json for the Gaussian additive model.
type gaussTruth struct {
	Model    string    `json:"model"`
	Rank     int       `json:"rank"`
	Seed     uint64    `json:"seed"`
	Shape    []int     `json:"shape"`
	Mu       float64   `json:"mu"`
	VarTheta float64   `json:"var_theta"`
	VarX     float64   `json:"var_x"`
	Theta    []float64 `json:"theta"`
	// LogEvidence is the exact log p(x | rank) under the generating priors.
	LogEvidence float64 `json:"log_evidence"`
}

// poissonTruth is truth.json for Poisson NMF and CP.
type poissonTruth struct {
	Model string    `json:"model"`
	Rank  int       `json:"rank"`
	Seed  uint64    `json:"seed"`
	Shape []int     `json:"shape"`
	Rates []float64 `json:"rates"`
	// Factors[m][i][r] is entry (i, r) of the factor of mode m.
	Factors [][][]float64 `json:"factors"`
}

func runGenerate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("generate", "--model gauss|nmf|cp --shape SHAPE --rank R --out DIR [flags]")
	model := fs.String("model", "", "generative model: gauss, nmf (matrices) or cp (3-way tensors)")
	shapeFlag := fs.String("shape", "", "shape: N for gauss, IxJ for nmf, IxJxK for cp (x or , separated)")
	rank := fs.Int("rank", 0, "true rank")
	seed := fs.Uint64("seed", 1, "random seed")
	mu := fs.Float64("mu", models.ICASSPGauss.Mu, "gauss: prior mean of every θ_r")
	varTheta := fs.Float64("var-theta", models.ICASSPGauss.VarTheta, "gauss: prior variance of every θ_r")
	varX := fs.Float64("var-x", models.ICASSPGauss.VarX, "gauss: observation noise variance")
	rate := fs.Float64("rate", 1, "nmf, cp: rate of the exponential prior of every factor")
	rates := fs.String("rates", "", "nmf, cp: per-factor rates a,b[,c] (instead of --rate)")
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
	if *rank < 1 {
		return usagef("--rank %d must be at least 1", *rank)
	}
	if *blocks < 0 || *shardRows < 0 {
		return usagef("--blocks and --shard-rows must not be negative")
	}
	shape, err := parseShape(*shapeFlag)
	if err != nil {
		return usageError{err}
	}
	var (
		t     *tensor.Sparse
		kind  tensorio.ValueKind
		truth any
	)
	switch *model {
	case "gauss":
		for _, name := range []string{"rate", "rates"} {
			if set[name] {
				return usagef("--%s applies to nmf and cp, not gauss", name)
			}
		}
		if len(shape) != 1 {
			return usagef("gauss needs --shape N (one mode), got %v", shape)
		}
		prior := models.GaussPrior{Mu: *mu, VarTheta: *varTheta, VarX: *varX}
		if err := prior.Validate(); err != nil {
			return usageError{err}
		}
		t, truth, err = generateGauss(shape[0], *rank, *seed, prior)
		if err != nil {
			return err
		}
		kind = tensorio.Real
	case "nmf", "cp":
		for _, name := range []string{"mu", "var-theta", "var-x"} {
			if set[name] {
				return usagef("--%s applies to gauss, not %s", name, *model)
			}
		}
		order := map[string]int{"nmf": 2, "cp": 3}[*model]
		if len(shape) != order {
			return usagef("%s needs a shape of %d modes, got %v", *model, order, shape)
		}
		r, err := factorRates(order, *rate, *rates, set)
		if err != nil {
			return err
		}
		t, truth, err = generatePoisson(*model, shape, *rank, *seed, r)
		if err != nil {
			return err
		}
		kind = tensorio.Count
	case "":
		return usagef("--model is required (gauss, nmf or cp)")
	default:
		return usagef("unknown --model %q (gauss, nmf or cp)", *model)
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

func generateGauss(n, rank int, seed uint64, prior models.GaussPrior) (*tensor.Sparse, gaussTruth, error) {
	x, theta := models.GenerateGauss(rng.New(seed, generateStream), n, rank, prior)
	g, err := models.NewGauss(x, rank, prior)
	if err != nil {
		return nil, gaussTruth{}, err
	}
	t, err := tensor.New([]int{n}, n)
	if err != nil {
		return nil, gaussTruth{}, err
	}
	for i, v := range x {
		t.Append([]int{i}, v)
	}
	return t, gaussTruth{
		Model: "gauss", Rank: rank, Seed: seed, Shape: []int{n},
		Mu: prior.Mu, VarTheta: prior.VarTheta, VarX: prior.VarX,
		Theta: theta, LogEvidence: g.LogEvidence(),
	}, nil
}

func generatePoisson(model string, shape []int, rank int, seed uint64, rates []float64) (*tensor.Sparse, poissonTruth, error) {
	t, factors, err := models.GeneratePoisson(rng.New(seed, generateStream), shape, rank, rates)
	if err != nil {
		return nil, poissonTruth{}, err
	}
	truth := poissonTruth{Model: model, Rank: rank, Seed: seed, Shape: shape, Rates: rates, Factors: make([][][]float64, len(factors))}
	for m, f := range factors {
		for i := range shape[m] {
			truth.Factors[m] = append(truth.Factors[m], f[i*rank:(i+1)*rank])
		}
	}
	return t, truth, nil
}

// factorRates returns the exponential-prior rate of every factor from --rate or --rates.
func factorRates(order int, rate float64, rates string, set map[string]bool) ([]float64, error) {
	if set["rate"] && set["rates"] {
		return nil, usagef("give --rate or --rates, not both")
	}
	r := make([]float64, order)
	if set["rates"] {
		fields := strings.Split(rates, ",")
		if len(fields) != order {
			return nil, usagef("--rates %q: want %d comma-separated rates, one per factor", rates, order)
		}
		for m, f := range fields {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return nil, usagef("--rates %q: %q is not a number", rates, f)
			}
			r[m] = v
		}
	} else {
		for m := range r {
			r[m] = rate
		}
	}
	for _, v := range r {
		if !(v > 0) || math.IsInf(v, 1) {
			return nil, usagef("rate %v must be positive and finite", v)
		}
	}
	return r, nil
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
