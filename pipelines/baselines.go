package pipelines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	core "github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/transforms"
	tb "github.com/stirank/stirank/transforms/baselines"
)

func init() {
	register.DoFn2x1[context.Context, []evidence.RankEvidence, error](&baselineWriteFn{})
}

// BaselineOptions configures a baseline estimation (Chib's method or AIS) of the evidence of
// every candidate rank: the same fan-out, per-rank combine and output as RankSelection, over
// (rank, replica) instead of (rank, temperature, chain).
type BaselineOptions struct {
	Work tb.Work
	// Model names a registered model the baselines estimate (models.Info.ExpPoissonRates).
	Model string
	// Prior holds the model's hyper-parameters as evidence.json records them; they give
	// Work.Rates.
	Prior models.Params
	Ranks []int
	// Replicas is the number of Chib replicas or AIS runs per rank.
	Replicas int
	// OutDir receives evidence.json and evidence.csv.
	OutDir string
	// Workers bounds the replicas that run at once per worker process; 0 means GOMAXPROCS.
	Workers int
	// Data describes the data in the result.
	Data DataInfo
}

// Validate checks the options without reading any data.
func (o BaselineOptions) Validate() error {
	if err := validateRanks(o.Ranks); err != nil {
		return err
	}
	if o.Replicas < 1 {
		return fmt.Errorf("replicas %d must be at least 1", o.Replicas)
	}
	info, err := models.Lookup(o.Model)
	if err != nil {
		return err
	}
	if info.ExpPoissonRates == nil {
		return fmt.Errorf("baselines need %s, not %s", models.Or(models.NamesOf(BaselineModels())), o.Model)
	}
	if len(o.Work.Rates) != info.Order {
		return fmt.Errorf("%s needs %d prior rates, got %d", o.Model, info.Order, len(o.Work.Rates))
	}
	if want := info.ExpPoissonRates(o.Prior); !slices.Equal(o.Work.Rates, want) {
		return fmt.Errorf("prior rates %v, but the prior %v has %v", o.Work.Rates, o.Prior, want)
	}
	return o.Work.Validate()
}

// BaselineModels are the registered models the baselines estimate: Poisson CP with exponential
// priors (models.Info.ExpPoissonRates).
func BaselineModels() []*models.Info {
	return models.Where(func(i *models.Info) bool { return i.ExpPoissonRates != nil })
}

// BaselineEvidence adds the estimation to the pipeline and returns its PCollection<KV<int,
// evidence.RankEvidence>>, one element per rank.
func BaselineEvidence(s beam.Scope, o BaselineOptions) beam.PCollection {
	s = s.Scope("BaselineEvidence")
	tasks := tb.FanOut(s, o.Ranks, o.Replicas)
	sums := tb.Run(s, &tb.RunFn{Work: o.Work, Workers: o.Workers}, tasks)
	return tb.CombinePerRank(s, o.Work.Method, sums)
}

// Baseline adds the whole estimation to the pipeline: the fan-out, then a last step that
// gathers every rank and writes evidence.json and evidence.csv to o.OutDir.
func Baseline(s beam.Scope, o BaselineOptions) {
	s = s.Scope("Baseline")
	ranks := BaselineEvidence(s, o)
	all := transforms.Gather(s, beam.DropKey(s, ranks))
	beam.ParDo0(s, &baselineWriteFn{OutDir: o.OutDir, Meta: o.meta()}, all)
}

// NewBaseline validates the options and returns the pipeline.
func NewBaseline(o BaselineOptions) (*beam.Pipeline, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.OutDir == "" {
		return nil, errors.New("no output directory")
	}
	p, s := beam.NewPipelineWithRoot()
	Baseline(s, o)
	return p, nil
}

// BaselineMeta is what a baseline result records besides the evidence.
type BaselineMeta struct {
	Model    string
	Method   string
	Ranks    []int
	Replicas int
	Prior    models.Params
	Chib     core.ChibConfig
	AIS      core.AISConfig
	Data     DataInfo
}

func (o BaselineOptions) meta() BaselineMeta {
	m := BaselineMeta{Model: o.Model, Method: o.Work.Method, Ranks: append([]int(nil), o.Ranks...), Replicas: o.Replicas,
		Prior: maps.Clone(o.Prior), Chib: o.Work.Chib, AIS: o.Work.AIS, Data: o.Data}
	sort.Ints(m.Ranks)
	return m
}

// BaselineResult is evidence.json for a baseline: exactly the fields of Result (so ParseResult,
// ReadResult and Table read it like stirank select's), plus the method and its configuration.
// Result.Config describes the run in STI's terms: Sampler is "gibbs" (chib) or "slice" (ais),
// Chains the replicas per rank, Burnin the Gibbs burn-in; for AIS, Ladder is the annealing
// schedule and Temperatures its length; Steps (per rank and in total) counts sweeps.
type BaselineResult struct {
	Result
	Method string           `json:"method"`
	Chib   *core.ChibConfig `json:"chib,omitempty"`
	AIS    *core.AISConfig  `json:"ais,omitempty"`
}

// NewBaselineResult assembles the result from the evidence of every rank of meta.Ranks.
func NewBaselineResult(meta BaselineMeta, ranks []evidence.RankEvidence) (BaselineResult, error) {
	br := BaselineResult{Method: meta.Method}
	r := Result{Model: meta.Model, Data: meta.Data, Divergences: []string{},
		Prior: maps.Clone(meta.Prior)}
	r.Config = ConfigInfo{Chains: meta.Replicas, Ladder: []float64{}, Starts: 1}
	switch meta.Method {
	case core.MethodChib:
		c := meta.Chib
		br.Chib = &c
		r.Seed = c.Seed
		r.Config.Sampler = "gibbs"
		r.Config.Burnin = c.Burnin
		r.Config.Starts, r.Config.StartSteps = c.Starts, c.StartSweeps
		if c.Starts <= 1 {
			r.Config.StartSteps = 0
		}
	case core.MethodAIS:
		a := meta.AIS
		br.AIS = &a
		r.Seed = a.Seed
		r.Config.Sampler = "slice"
		r.Config.Ladder = a.Ladder()
		r.Config.Temperatures = a.Temperatures
		r.Config.Steps = a.Temperatures * a.Sweeps
		if a.Schedule == "sigmoid" {
			r.Config.LadderSpec = fmt.Sprintf("sigmoid:%g with %d temperatures", a.Scale, a.Temperatures)
		} else {
			r.Config.LadderSpec = fmt.Sprintf("power:%g with %d temperatures", a.Power, a.Temperatures)
		}
	default:
		return br, fmt.Errorf("unknown method %q", meta.Method)
	}
	if err := r.addRanks(meta.Ranks, ranks, func(re evidence.RankEvidence) RankResult {
		// A baseline has no ladder and no trapezoid.
		return RankResult{Trapezoid: Float(math.NaN()), Ladder: []Rung{}}
	}); err != nil {
		return br, err
	}
	br.Result = r
	return br, nil
}

// JSON encodes the result as evidence.json.
func (r BaselineResult) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseBaselineResult decodes a baseline's evidence.json.
func ParseBaselineResult(b []byte) (BaselineResult, error) {
	var r BaselineResult
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("evidence.json: %w", err)
	}
	if r.Model == "" || len(r.Ranks) == 0 || r.Method == "" {
		return r, errors.New("evidence.json: no model, method or ranks")
	}
	return r, nil
}

// baselineWriteFn writes the result of the gathered ranks.
type baselineWriteFn struct {
	OutDir string
	Meta   BaselineMeta
}

func (f *baselineWriteFn) ProcessElement(ctx context.Context, ranks []evidence.RankEvidence) error {
	r, err := NewBaselineResult(f.Meta, ranks)
	if err != nil {
		return err
	}
	if r.BestRank == 0 {
		return fmt.Errorf("every rank diverged; first: %s", r.Divergences[0])
	}
	return WriteResult(ctx, f.OutDir, r)
}

// ReadBaselineResult reads dir/evidence.json of a baseline (dir a local path or a URL).
func ReadBaselineResult(ctx context.Context, dir string) (BaselineResult, error) {
	js, err := readEvidenceJSON(ctx, dir)
	if err != nil {
		return BaselineResult{}, err
	}
	return ParseBaselineResult(js)
}
