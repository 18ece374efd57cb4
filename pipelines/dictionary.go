package pipelines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/transforms"
)

func init() {
	register.DoFn2x1[context.Context, []transforms.ColumnEvidence, error](&writeDictionaryFn{})
}

// DictionaryOptions configures the scoring of dictionaries under IS-NMF.
type DictionaryOptions struct {
	Work transforms.DictionaryWork
	// OutDir receives evidence.json and evidence.csv, as for a rank selection.
	OutDir  string
	Workers int
	// Meta is recorded in the result.
	Meta DictionaryMeta
}

// DictionaryMeta is what the result records about its inputs, beyond the work itself.
type DictionaryMeta struct {
	Data DataInfo
	// Command is the command line and Version the stirank build that ran.
	Command []string
	Version string
	// Dicts describes each dictionary, in the work's order.
	Dicts []DictionaryInfo
}

// DictionaryInfo describes a dictionary.
type DictionaryInfo struct {
	Source   string `json:"source"`
	Checksum string `json:"checksum"`
	K        int    `json:"k"`
	// LogPrior is a term added to the dictionary's total: log p(W) when W is itself data (the
	// interpolative decomposition's selected columns); 0 otherwise.
	LogPrior float64 `json:"log_prior,omitempty"`
}

// DictionaryScoring adds the scoring to the pipeline: every (dictionary, column, replica) runs,
// the replicas of each (dictionary, column) combine, and the last step sums the columns of each
// dictionary, computes the posterior probabilities and writes the result to o.OutDir.
func DictionaryScoring(s beam.Scope, o DictionaryOptions) {
	s = s.Scope("DictionaryScoring")
	cols := transforms.ScoreDictionaries(s, o.Work, o.Workers)
	beam.ParDo0(s, &writeDictionaryFn{OutDir: o.OutDir, Work: o.Work, Meta: o.Meta}, cols)
}

// NewDictionary validates the options and returns the scoring pipeline.
func NewDictionary(o DictionaryOptions) (*beam.Pipeline, error) {
	switch {
	case o.OutDir == "":
		return nil, errors.New("no output directory")
	case len(o.Work.Dicts) == 0:
		return nil, errors.New("no dictionary to score")
	case len(o.Meta.Dicts) != len(o.Work.Dicts):
		return nil, errors.New("dictionary descriptions do not match the dictionaries")
	case o.Work.Replicas < 1:
		return nil, fmt.Errorf("replicas %d must be at least 1", o.Work.Replicas)
	}
	p, s := beam.NewPipelineWithRoot()
	DictionaryScoring(s, o)
	return p, nil
}

type writeDictionaryFn struct {
	OutDir string
	Work   transforms.DictionaryWork
	Meta   DictionaryMeta
}

func (f *writeDictionaryFn) ProcessElement(ctx context.Context, cols []transforms.ColumnEvidence) error {
	r := NewDictionaryResult(f.Work, f.Meta, cols)
	if r.Best == "" {
		return fmt.Errorf("every dictionary has a diverged column; first: %s", r.Divergences[0])
	}
	return WriteDictionaryResult(ctx, f.OutDir, r)
}

// WriteDictionaryResult writes evidence.json and evidence.csv into dir, as WriteResult does.
func WriteDictionaryResult(ctx context.Context, dir string, r DictionaryResult) error {
	js, err := r.JSON()
	if err != nil {
		return err
	}
	return writeFiles(ctx, dir, []outFile{{EvidenceCSV, r.CSV()}, {EvidenceJSON, js}})
}

// DictionaryResult is the evidence.json of a dictionary scoring.
type DictionaryResult struct {
	// Kind tells this result from a rank selection's: always "dictionary".
	Kind   string `json:"kind"`
	Method string `json:"method"`
	// Values is how the data entered the model: "real" amplitudes, "power"s or "complex" values.
	Values string   `json:"values"`
	Data   DataInfo `json:"data"`
	Prior  struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	} `json:"prior"`
	Particles int `json:"particles"`
	// Stages is the stages of an ais run; smc1 and smc2 take at least these and more where their
	// conditional ESS target, CESS, needs shorter steps (each column's stages says how many).
	Stages   int     `json:"stages"`
	CESS     float64 `json:"cess,omitempty"`
	Replicas int     `json:"replicas"`
	Seed     uint64  `json:"seed"`
	// Best names the dictionary of highest evidence; empty when every one diverged.
	Best         string            `json:"best"`
	Dictionaries []DictionaryScore `json:"dictionaries"`
	Divergences  []string          `json:"divergences"`
	Command      []string          `json:"command,omitempty"`
	Version      string            `json:"version,omitempty"`
}

// DictionaryScore is one dictionary's evidence: log p(X | W) = Σ_n log p(x_n | W) (plus
// log_prior when W is data), its standard error (the columns' added in quadrature) and its
// posterior probability among the dictionaries scored, under a uniform prior over them.
type DictionaryScore struct {
	Name string `json:"name"`
	DictionaryInfo
	LogEvidence   Float         `json:"log_evidence"`
	StdErr        Float         `json:"stderr"`
	PosteriorProb Float         `json:"posterior_prob"`
	Columns       []ColumnScore `json:"columns"`
}

// ColumnScore is log p(x_n | W) of one column, with the stages each replica took.
type ColumnScore struct {
	Column      int   `json:"column"`
	LogEvidence Float `json:"log_evidence"`
	StdErr      Float `json:"stderr"`
	Stages      []int `json:"stages,omitempty"`
}

// NewDictionaryResult assembles the result from the evidence of every (dictionary, column).
func NewDictionaryResult(w transforms.DictionaryWork, meta DictionaryMeta, cols []transforms.ColumnEvidence) DictionaryResult {
	r := DictionaryResult{Kind: "dictionary", Method: w.Method, Values: w.Values, Data: meta.Data,
		Particles: w.Particles, Stages: w.Stages, CESS: w.CESS, Replicas: w.Replicas, Seed: w.Seed, Divergences: []string{},
		Command: meta.Command, Version: meta.Version}
	r.Prior.A, r.Prior.B = w.A, w.B
	for d, dict := range w.Dicts {
		info := meta.Dicts[d]
		r.Dictionaries = append(r.Dictionaries, DictionaryScore{Name: dict.Name, DictionaryInfo: info,
			LogEvidence: Float(info.LogPrior), Columns: []ColumnScore{}})
	}
	variance := make([]float64, len(w.Dicts))
	for _, c := range cols {
		ds := &r.Dictionaries[c.Dict]
		ds.Columns = append(ds.Columns, ColumnScore{Column: c.Column, LogEvidence: Float(c.LogEvidence), StdErr: Float(c.Stderr), Stages: c.Stages})
		ds.LogEvidence += Float(c.LogEvidence)
		variance[c.Dict] += c.Stderr * c.Stderr
		r.Divergences = append(r.Divergences, c.Divergences...)
	}
	logEv := make([]float64, len(r.Dictionaries))
	for d := range r.Dictionaries {
		r.Dictionaries[d].StdErr = Float(math.Sqrt(variance[d]))
		logEv[d] = float64(r.Dictionaries[d].LogEvidence)
	}
	best := -1
	for d, p := range evidence.PosteriorProbs(logEv) {
		r.Dictionaries[d].PosteriorProb = Float(p)
		if !math.IsNaN(p) && (best < 0 || logEv[d] > logEv[best]) {
			best = d
		}
	}
	if best >= 0 {
		r.Best = r.Dictionaries[best].Name
	}
	return r
}

// JSON is the result as evidence.json holds it.
func (r DictionaryResult) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseDictionaryResult reads a dictionary scoring's evidence.json.
func ParseDictionaryResult(b []byte) (DictionaryResult, error) {
	var r DictionaryResult
	if err := json.Unmarshal(b, &r); err != nil {
		return r, err
	}
	if r.Kind != "dictionary" {
		return r, fmt.Errorf("not a dictionary scoring's result (kind %q)", r.Kind)
	}
	return r, nil
}

// ReadDictionaryResult reads dir/evidence.json of a dictionary scoring.
func ReadDictionaryResult(ctx context.Context, dir string) (DictionaryResult, error) {
	js, err := readEvidenceJSON(ctx, dir)
	if err != nil {
		return DictionaryResult{}, err
	}
	return ParseDictionaryResult(js)
}

// CSV is evidence.csv: one row per (dictionary, column), then one per dictionary with column
// "all".
func (r DictionaryResult) CSV() []byte {
	var b strings.Builder
	b.WriteString("dictionary,k,column,log_evidence,stderr\n")
	for _, d := range r.Dictionaries {
		for _, c := range d.Columns {
			fmt.Fprintf(&b, "%s,%d,%d,%s,%s\n", csvName(d.Name), d.K, c.Column, csvFloat(c.LogEvidence), csvFloat(c.StdErr))
		}
		fmt.Fprintf(&b, "%s,%d,all,%s,%s\n", csvName(d.Name), d.K, csvFloat(d.LogEvidence), csvFloat(d.StdErr))
	}
	return []byte(b.String())
}

// csvName quotes a name that holds a comma or a quote.
func csvName(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return strconv.Quote(s)
	}
	return s
}

// Table is the summary printed on a terminal, ending with "best dictionary: NAME".
func (r DictionaryResult) Table() string {
	var b strings.Builder
	width := len("dictionary")
	for _, d := range r.Dictionaries {
		width = max(width, len(d.Name))
	}
	fmt.Fprintf(&b, "%-*s %4s %14s %9s %9s\n", width, "dictionary", "K", "log p(X|W)", "± stderr", "p(W|X)")
	for _, d := range r.Dictionaries {
		ev, se, p := "diverged", "", ""
		if !math.IsNaN(float64(d.LogEvidence)) {
			ev = strconv.FormatFloat(float64(d.LogEvidence), 'f', 2, 64)
			se = strconv.FormatFloat(float64(d.StdErr), 'f', 2, 64)
			p = strconv.FormatFloat(float64(d.PosteriorProb), 'f', 3, 64)
		}
		fmt.Fprintf(&b, "%-*s %4d %14s %9s %9s\n", width, d.Name, d.K, ev, se, p)
	}
	if n := len(r.Divergences); n > 0 {
		fmt.Fprintf(&b, "%d runs diverged (see evidence.json); first: %s\n", n, r.Divergences[0])
	}
	if r.Best != "" {
		fmt.Fprintf(&b, "best dictionary: %s\n", r.Best)
	}
	return b.String()
}

// Classify lists, for every data column, the dictionary under which it has the highest evidence:
// one line per column, "column N: NAME (log p = …, next NAME2 by …)".
func (r DictionaryResult) Classify() string {
	type best struct {
		name        string
		first, next float64
		second      string
	}
	byColumn := map[int]*best{}
	var order []int
	for _, d := range r.Dictionaries {
		for _, c := range d.Columns {
			l := float64(c.LogEvidence)
			if math.IsNaN(l) {
				continue
			}
			b := byColumn[c.Column]
			if b == nil {
				b = &best{first: math.Inf(-1), next: math.Inf(-1)}
				byColumn[c.Column] = b
				order = append(order, c.Column)
			}
			switch {
			case l > b.first:
				b.next, b.second = b.first, b.name
				b.first, b.name = l, d.Name
			case l > b.next:
				b.next, b.second = l, d.Name
			}
		}
	}
	sort.Ints(order)
	var s strings.Builder
	for _, n := range order {
		b := byColumn[n]
		fmt.Fprintf(&s, "column %d: %s (log p = %.2f", n, b.name, b.first)
		if b.second != "" {
			fmt.Fprintf(&s, "; %s %.2f lower", b.second, b.first-b.next)
		}
		s.WriteString(")\n")
	}
	return s.String()
}
