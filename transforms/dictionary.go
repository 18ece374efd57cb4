package transforms

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models/isnmf"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/samplers/smc"
)

func init() {
	register.DoFn2x0[[]byte, func(DictTask)](&dictFanOutFn{})
	register.Emitter1[DictTask]()
	register.DoFn3x1[context.Context, DictTask, func(int, DictRun), error](&dictRunFn{})
	register.Emitter2[int, DictRun]()
	register.Combiner3[dictRuns, DictRun, ColumnEvidence](&columnEvidenceFn{})
	register.Combiner3[columnList, ColumnEvidence, []ColumnEvidence](&gatherColumnsFn{})
}

// Dictionary is one dictionary to score: an F×K non-negative matrix (cells not stored are zero)
// and the data columns it scores.
type Dictionary struct {
	Name   string
	Source Source
	// Columns lists the data columns to score.
	Columns []int
}

// DictionaryWork is what every task of a dictionary scoring shares: the data, the dictionaries
// and the estimator.
type DictionaryWork struct {
	Data Source
	// Values says how the data's values enter the model (isnmf.Values).
	Values string
	// Complete says that every cell must be stored (a real or complex dataset, whose unstored
	// cells are missing); otherwise unstored cells are zeros (a count dataset).
	Complete bool
	Dicts    []Dictionary
	// Method is an isnmf method name; Particles, Stages and CESS its budget per run.
	Method            string
	Particles, Stages int
	CESS              float64
	Replicas          int
	// A and B are the shape and scale of every excitation's inverse-gamma prior.
	A, B float64
	Seed uint64
}

// DictTask is one run: a replica of the estimate of one column under one dictionary.
type DictTask struct {
	Dict, Column, Replica int
}

// DictRun is a run's result.
type DictRun struct {
	Task        DictTask
	LogZ        float64
	Resamplings int
	MinESS      float64
	// Stages counts the run's stages: Budget.Stages for ais, as many as it took for smc1 and smc2.
	Stages     int
	Divergence string
}

// ColumnEvidence is log p(x_n | W_d) of one column under one dictionary, from its replicas.
type ColumnEvidence struct {
	Dict, Column int
	LogEvidence  float64
	Stderr       float64
	// Runs are the replicas' estimates, by replica, and Stages the stages each took.
	Runs   []float64
	Stages []int
	// Divergences describe the runs that met a non-finite weight; their estimates are left out.
	Divergences []string
}

// dictProblem is the data and the dictionaries as the model reads them.
type dictProblem struct {
	cols   [][]float64
	models []*isnmf.Model
	method isnmf.Method
	values isnmf.Values
}

// Load reads and checks the data and every dictionary.
func (w DictionaryWork) Load(ctx context.Context) (*dictProblem, error) {
	values, err := isnmf.ParseValues(w.Values)
	if err != nil {
		return nil, err
	}
	method, err := isnmf.NewMethod(w.Method, isnmf.Budget{Particles: w.Particles, Stages: w.Stages, CESS: w.CESS})
	if err != nil {
		return nil, err
	}
	data, _, err := w.Data.Load(ctx, tensorio.ReadOptions{Complex: values == isnmf.Complex})
	if err != nil {
		return nil, err
	}
	cols, err := isnmf.Columns(data, values, w.Complete)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.Data, err)
	}
	p := &dictProblem{cols: cols, method: method, values: values}
	for _, d := range w.Dicts {
		t, _, err := d.Source.Load(ctx, tensorio.ReadOptions{})
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("dictionary %s (%s)", d.Name, d.Source)
		wt, f, k, err := isnmf.Dictionary(t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if f != data.Shape[0] {
			return nil, fmt.Errorf("%s has %d rows (features) but the data %s have %d", name, f, w.Data, data.Shape[0])
		}
		m, err := isnmf.New(f, k, wt, w.A, w.B, values.U() == 1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, n := range d.Columns {
			if n < 0 || n >= len(cols) {
				return nil, fmt.Errorf("%s: column %d out of range (the data have %d)", name, n, len(cols))
			}
		}
		p.models = append(p.models, m)
	}
	return p, nil
}

// Tasks lists every run: for each dictionary, each of its columns, each replica.
func (w DictionaryWork) Tasks() []DictTask {
	var tasks []DictTask
	for d, dict := range w.Dicts {
		for _, n := range dict.Columns {
			for r := range w.Replicas {
				tasks = append(tasks, DictTask{Dict: d, Column: n, Replica: r})
			}
		}
	}
	return tasks
}

// run is one task: the stream is named by (seed, dictionary, column, replica) alone.
func (p *dictProblem) run(seed uint64, t DictTask) DictRun {
	m := p.models[t.Dict]
	res := p.method.Estimate(m, p.cols[t.Column], rng.New(seed, uint64(t.Dict), uint64(t.Column), uint64(t.Replica)))
	out := DictRun{Task: t, LogZ: res.LogZ + p.values.LogJacobian(m.F), Resamplings: res.Resamplings, MinESS: res.MinESS, Stages: res.Stages}
	if res.Divergence != "" {
		out.Divergence = fmt.Sprintf("dictionary %d, column %d, replica %d: %s", t.Dict, t.Column, t.Replica, res.Divergence)
	}
	return out
}

// ScoreDictionaries runs every task of w and returns the evidence of every (dictionary, column):
// a PCollection<[]ColumnEvidence> of one element, sorted by dictionary and column.
func ScoreDictionaries(s beam.Scope, w DictionaryWork, workers int) beam.PCollection {
	s = s.Scope("ScoreDictionaries")
	tasks := beam.Reshuffle(s, beam.ParDo(s, &dictFanOutFn{Tasks: w.Tasks()}, beam.Impulse(s)))
	runs := beam.ParDo(s, &dictRunFn{Work: w, Workers: workers}, tasks)
	perColumn := beam.DropKey(s, beam.CombinePerKey(s, &columnEvidenceFn{}, runs))
	return beam.Combine(s, &gatherColumnsFn{}, perColumn)
}

type dictFanOutFn struct {
	Tasks []DictTask
}

func (f *dictFanOutFn) ProcessElement(_ []byte, emit func(DictTask)) {
	for _, t := range f.Tasks {
		emit(t)
	}
}

// dictRunFn runs one task per element, concurrently within a bundle (see Concurrent), keyed by
// (dictionary, column) for the combine.
type dictRunFn struct {
	Work    DictionaryWork
	Workers int

	problem *dictProblem
	tasks   Concurrent[DictRun]
}

func (f *dictRunFn) Setup(ctx context.Context) error {
	p, err := f.Work.Load(ctx)
	if err != nil {
		return err
	}
	f.problem = p
	f.tasks.Start()
	return nil
}

func (f *dictRunFn) Teardown() { f.tasks.Stop() }

func (f *dictRunFn) ProcessElement(ctx context.Context, t DictTask, emit func(int, DictRun)) error {
	reportReads(ctx)
	if err := f.flush(emit); err != nil {
		return err
	}
	err := f.tasks.Go(f.Workers, func(context.Context) (DictRun, error) { return f.problem.run(f.Work.Seed, t), nil })
	if err != nil {
		return err
	}
	return f.flush(emit)
}

func (f *dictRunFn) FinishBundle(emit func(int, DictRun)) error {
	f.tasks.Wait()
	return f.flush(emit)
}

func (f *dictRunFn) flush(emit func(int, DictRun)) error {
	done, err := f.tasks.Take()
	if err != nil {
		return err
	}
	for _, r := range done {
		emit(r.Task.Dict*len(f.problem.cols)+r.Task.Column, r)
	}
	return nil
}

// dictRuns is the accumulator of columnEvidenceFn.
type dictRuns struct {
	Runs []DictRun
}

// columnEvidenceFn combines the replicas of one (dictionary, column), sorted by replica so the
// result does not depend on the order they arrive in.
type columnEvidenceFn struct{}

func (columnEvidenceFn) CreateAccumulator() dictRuns { return dictRuns{} }

func (columnEvidenceFn) AddInput(a dictRuns, r DictRun) dictRuns {
	a.Runs = append(a.Runs, r)
	return a
}

func (columnEvidenceFn) MergeAccumulators(a, b dictRuns) dictRuns {
	a.Runs = append(a.Runs, b.Runs...)
	return a
}

func (columnEvidenceFn) ExtractOutput(a dictRuns) ColumnEvidence {
	runs := append([]DictRun(nil), a.Runs...)
	sort.Slice(runs, func(i, j int) bool { return runs[i].Task.Replica < runs[j].Task.Replica })
	c := ColumnEvidence{Dict: runs[0].Task.Dict, Column: runs[0].Task.Column}
	var logZ []float64
	for _, r := range runs {
		if r.Divergence != "" {
			c.Divergences = append(c.Divergences, r.Divergence)
			continue
		}
		c.Runs = append(c.Runs, r.LogZ)
		c.Stages = append(c.Stages, r.Stages)
		logZ = append(logZ, r.LogZ)
	}
	c.LogEvidence, c.Stderr = math.NaN(), math.NaN()
	if len(logZ) > 0 {
		c.LogEvidence, c.Stderr = smc.Combine(logZ)
	}
	return c
}

type columnList struct {
	Columns []ColumnEvidence
}

type gatherColumnsFn struct{}

func (gatherColumnsFn) CreateAccumulator() columnList { return columnList{} }

func (gatherColumnsFn) AddInput(a columnList, c ColumnEvidence) columnList {
	a.Columns = append(a.Columns, c)
	return a
}

func (gatherColumnsFn) MergeAccumulators(a, b columnList) columnList {
	a.Columns = append(a.Columns, b.Columns...)
	return a
}

func (gatherColumnsFn) ExtractOutput(a columnList) []ColumnEvidence {
	out := append([]ColumnEvidence(nil), a.Columns...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Dict != out[j].Dict {
			return out[i].Dict < out[j].Dict
		}
		return out[i].Column < out[j].Column
	})
	return out
}
