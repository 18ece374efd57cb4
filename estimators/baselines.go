package estimators

import (
	"context"
	"fmt"

	"github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/tensor"
)

func init() {
	Register(baselines.MethodChib, func(model models.Spec, config []byte) (Estimator, error) {
		cfg, err := decodeConfig[ChibConfig](config)
		return Chib{Model: model, Config: cfg}, err
	})
	Register(baselines.MethodAIS, func(model models.Spec, config []byte) (Estimator, error) {
		cfg, err := decodeConfig[AISConfig](config)
		return AIS{Model: model, Config: cfg}, err
	})
}

// ChibConfig is the configuration of the chib estimator: Replicas independent replicas of
// Chib's method per rank, each configured by baselines.ChibConfig.
type ChibConfig struct {
	Replicas int `json:"replicas"`
	baselines.ChibConfig
}

// AISConfig is the configuration of the ais estimator: Replicas annealing runs per rank, each
// configured by baselines.AISConfig.
type AISConfig struct {
	Replicas int `json:"replicas"`
	baselines.AISConfig
}

// Chib is Chib's method on a Gibbs sampler (baselines.Problem.Chib): one task per (rank,
// replica), combined by baselines.CombineRank.
type Chib struct {
	Model  models.Spec
	Config ChibConfig
}

// AIS is annealed importance sampling (baselines.Problem.AIS): one task per (rank, run),
// combined by baselines.CombineRank.
type AIS struct {
	Model  models.Spec
	Config AISConfig
}

var (
	_ Estimator = Chib{}
	_ Estimator = AIS{}
)

func (e Chib) Validate() error {
	if err := validateBaseline(e.Model, e.Config.Replicas); err != nil {
		return err
	}
	return e.Config.ChibConfig.Validate()
}

func (e AIS) Validate() error {
	if err := validateBaseline(e.Model, e.Config.Replicas); err != nil {
		return err
	}
	return e.Config.AISConfig.Validate()
}

// BaselineModels are the registered models the baselines estimate (baselines.Models).
func BaselineModels() []*models.Info { return baselines.Models() }

// ChibAISModels are the registered models the chib and ais estimators take
// (baselines.ChibAISModels): the baselines' and those with a fixed dictionary.
func ChibAISModels() []*models.Info { return baselines.ChibAISModels() }

// validateBaseline checks what the baselines need of the model: a Poisson model with
// exponential priors, and its hyper-parameters.
func validateBaseline(model models.Spec, replicas int) error {
	if _, err := baselines.Rates(model); err != nil {
		return err
	}
	if err := model.ValidatePrior(); err != nil {
		return err
	}
	if replicas < 1 {
		return fmt.Errorf("replicas %d must be at least 1", replicas)
	}
	return nil
}

func (e Chib) Tasks(rank int) []Task { return replicaTasks(rank, e.Config.Replicas) }
func (e AIS) Tasks(rank int) []Task  { return replicaTasks(rank, e.Config.Replicas) }

func replicaTasks(rank, replicas int) []Task {
	ts := make([]Task, replicas)
	for k := range ts {
		ts[k] = Task{Rank: rank, Replica: k}
	}
	return ts
}

func (e Chib) Prepare(data *tensor.Sparse) (Problem, error) {
	p, err := baselines.ForModel(data, e.Model)
	return replicaProblem{p: p, method: baselines.MethodChib, chib: e.Config.ChibConfig}, err
}

func (e AIS) Prepare(data *tensor.Sparse) (Problem, error) {
	p, err := baselines.ForModel(data, e.Model)
	return replicaProblem{p: p, method: baselines.MethodAIS, ais: e.Config.AISConfig}, err
}

func (e Chib) Combine(rank int, results []Result) (evidence.RankEvidence, error) {
	return combineReplicas(baselines.MethodChib, results)
}

func (e AIS) Combine(rank int, results []Result) (evidence.RankEvidence, error) {
	return combineReplicas(baselines.MethodAIS, results)
}

func combineReplicas(method string, results []Result) (evidence.RankEvidence, error) {
	sums, err := unpackAll[baselines.Summary](results)
	if err != nil {
		return evidence.RankEvidence{}, err
	}
	return baselines.CombineRank(method, sums)
}

// replicaProblem runs the replicas of a baseline method.
type replicaProblem struct {
	p      *baselines.Problem
	method string
	chib   baselines.ChibConfig
	ais    baselines.AISConfig
}

func (p replicaProblem) Run(ctx context.Context, t Task) (Result, error) {
	sum, err := p.p.Run(ctx, p.method, t.Rank, t.Replica, p.chib, p.ais)
	if err != nil {
		return Result{}, fmt.Errorf("%s rank %d, replica %d: %w", p.method, t.Rank, t.Replica, err)
	}
	return Result{Task: t, Steps: sum.Sweeps, CellEvals: sum.CellEvals, Divergence: sum.Divergence, Summary: Pack(sum)}, nil
}
