package pipelines

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	core "github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/estimators"
	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
)

// Float is a float64 that encodes NaN and ±Inf as JSON null (a diverged rank has no evidence)
// and decodes null as NaN. Finite values round-trip exactly.
type Float float64

func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

// RankChoice is a chosen rank, or NoRank. evidence.json writes NoRank as null.
type RankChoice int

// NoRank is the RankChoice when no rank has an estimate. Rank 0 is a rank (ssnmf's dictionary
// alone, models.Info.ZeroRank), so it cannot mean none.
const NoRank RankChoice = -1

func (c RankChoice) MarshalJSON() ([]byte, error) {
	if c < 0 {
		return []byte("null"), nil
	}
	return json.Marshal(int(c))
}

func (c *RankChoice) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = NoRank
		return nil
	}
	var v int
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = RankChoice(v)
	return nil
}

// Result is the content of evidence.json: the log evidence of every rank, the posterior rank
// probabilities under a uniform prior over the ranks tried, the best rank, and what produced them.
type Result struct {
	Model string `json:"model"`
	// Method names the estimator (see estimators.Names).
	Method string `json:"method"`
	// BestRank is the rank of highest posterior probability, NoRank (null in evidence.json) when
	// no rank has an estimate. Files written before rank 0 existed have 0 for none; reading
	// (UnmarshalJSON) takes a best rank that names no rank of Ranks with an estimate for none.
	BestRank RankChoice   `json:"best_rank"`
	Ranks    []RankResult `json:"ranks"`
	Data     DataInfo     `json:"data"`
	// Prior holds the model's hyper-parameters by name (models.Hyper).
	Prior models.Params `json:"prior"`
	// Config is the estimator's configuration, as its tasks ran with it (estimators.Spec.Config):
	// sti.Config for STI.
	Config json.RawMessage `json:"config"`
	// LadderSpec says how an STI ladder (config.ladder) was given.
	LadderSpec string `json:"ladder_spec,omitempty"`
	// Seed repeats the configuration's seed.
	Seed uint64 `json:"seed"`
	// Steps is the number of sampler steps spent on all chains, burn-in included; CellEvals the
	// values of the data they read (models.Reads): the stored cells of each pass, or the margins
	// where the model reads those instead (Poisson at rank 1).
	Steps     int64 `json:"steps"`
	CellEvals int64 `json:"cell_evals"`
	// Divergences lists every chain that produced a non-finite value; its rank has no estimate.
	Divergences []string `json:"divergences"`
	// Unresolved lists, for a race (estimators.Racer), the ranks it still ran at its end beside
	// the best: those it could not tell from the best within its budget (evidence.RaceZ).
	Unresolved []int `json:"unresolved,omitempty"`
	// TimeUpAfterRound is, for a race that stopped because its next round would not have ended
	// within its time budget (select --time), the last round it ran; nil otherwise.
	TimeUpAfterRound *int `json:"time_up_after_round,omitempty"`
	// Command is the command line that produced the result and Version the stirank build that
	// ran it, so a report can say how to reproduce it.
	Command []string `json:"command,omitempty"`
	Version string   `json:"version,omitempty"`
}

// RankResult is the evidence of one rank.
type RankResult struct {
	Rank        int   `json:"rank"`
	LogEvidence Float `json:"log_evidence"`
	StdErr      Float `json:"stderr"`
	// StartAllowance is how far from its value, either way, log_evidence may lie beyond stderr:
	// its chains hold too few records to show how far they still are from their posterior, or the
	// race let it go while they still moved (LetGo; evidence.RankEvidence.StartAllowance); 0
	// otherwise.
	StartAllowance Float `json:"start_allowance,omitempty"`
	// LetGo says the race stopped refining this rank, the best by far, while its chains still
	// moved: StartAllowance is then how far its number may still be off.
	LetGo         bool  `json:"let_go,omitempty"`
	StdErrWithin  Float `json:"stderr_within"`
	Trapezoid     Float `json:"trapezoid"`
	PosteriorProb Float `json:"posterior_prob"`
	Steps         int64 `json:"steps"`
	CellEvals     int64 `json:"cell_evals"`
	// WarmChains counts the chains that resumed from a saved state (stirank reanalyze).
	WarmChains int `json:"warm_chains,omitempty"`
	// Diverged lists the chains of this rank that diverged.
	Diverged []string `json:"diverged,omitempty"`
	// Annealed runs (the anneal start stage, sti.AnnealStage) have two estimates per rank: log_evidence, the
	// thermodynamic integral over the replicas' adaptive ladders, with ti_stderr its standard
	// error over the replicas, and smc, the annealing's normalising-constant estimate, with
	// smc_stderr. stderr adds what of their difference the two standard errors do not explain;
	// disagree flags a difference of more than three combined standard errors.
	Replicas  int   `json:"replicas,omitempty"`
	TIStdErr  Float `json:"ti_stderr,omitempty"`
	SMC       Float `json:"smc,omitempty"`
	SMCStdErr Float `json:"smc_stderr,omitempty"`
	Disagree  bool  `json:"disagree,omitempty"`
	// Apart lists, for a run on the paths from references (the path estimator), the estimates
	// of the replicas left out of log_evidence: more than three standard errors below the best,
	// their references were fitted in basins of less mass (evidence.CombineReferencePath).
	Apart []Float `json:"apart,omitempty"`
	// Uncovered says the posterior spreads where those references have almost no mass, and the
	// estimate may be far off (evidence.RankEvidence.Uncovered).
	Uncovered bool `json:"uncovered,omitempty"`
	// Rates is, under a hyperprior on the factors' prior rates (--rate auto), the posterior of
	// every factor's rate at t = 1, by mode, and RateProduct that of their product, which the
	// data pin where each rate trades scale with the others; empty at fixed rates.
	Rates       []RatePosterior `json:"rates,omitempty"`
	RateProduct *RatePosterior  `json:"rate_product,omitempty"`
	// Hysteresis is the area between the rungs' means and the phase check's walk back up the
	// ladder (sti.Config.Ascent) from t = 0.01, and phase says the two part beyond their noise
	// (f(t) changes phase, or the chains sit in a basin the walk did not reach): the estimate
	// may then be high, and stderr includes the area (evidence.PhaseCheck).
	// phase_unchecked says the walk parted from the chains at its first rungs, where it starts in
	// their state: it cannot keep up with the data, and the check says nothing.
	Hysteresis     Float `json:"hysteresis,omitempty"`
	Phase          bool  `json:"phase,omitempty"`
	PhaseUnchecked bool  `json:"phase_unchecked,omitempty"`
	// Ascent lists the phase check's walk: its mean log-likelihood at each rung it climbed.
	Ascent []AscentRung `json:"ascent,omitempty"`
	// Round is, in a race, the last round this rank's chains ran, Rounds its estimate after
	// each, and Left why the race left it behind (empty while it ran to the end). Drift is the
	// part of stderr the chains' records still drifting by add (evidence.RankEvidence.Drift).
	Round  int           `json:"round,omitempty"`
	Rounds []RoundResult `json:"rounds,omitempty"`
	Left   string        `json:"left,omitempty"`
	Drift  Float         `json:"drift,omitempty"`
	// Ladder lists the rungs, for an annealed run every temperature of every replica's ladder.
	Ladder []Rung `json:"ladder"`
}

// RoundResult is a racing rank's estimate after one round.
type RoundResult struct {
	Round       int   `json:"round"`
	LogEvidence Float `json:"log_evidence"`
	StdErr      Float `json:"stderr"`
	Steps       int64 `json:"steps"`
}

// AscentRung is the phase check's walk at one rung (RankResult.Ascent).
type AscentRung struct {
	T          float64 `json:"t"`
	MeanLogLik Float   `json:"mean_loglik"`
}

// Rung is the estimate at one temperature of a rank.
type Rung struct {
	T          float64 `json:"t"`
	MeanLogLik Float   `json:"mean_loglik"`
	StdErr     Float   `json:"stderr"`
	VarLogLik  Float   `json:"var_loglik"`
	ESS        Float   `json:"ess"`
	Chains     int     `json:"chains"`
}

// DataInfo says which data the evidence is about.
type DataInfo struct {
	Source   string `json:"source"`
	Checksum string `json:"checksum"`
	Shape    []int  `json:"shape"`
	Cells    int    `json:"stored_cells"`
}

// Meta is what a result records besides the evidence: it travels to the step that writes the
// results, so it holds plain exported values only.
type Meta struct {
	Model     models.Spec
	Estimator estimators.Spec
	// LadderSpec says how an STI ladder was given (e.g. "power:6 with 30 temperatures").
	LadderSpec string
	Data       DataInfo
	Ranks      []int
	// Command and Version are recorded as Result.Command and Result.Version.
	Command []string
	Version string
}

// NewResult assembles the result of an estimation from the evidence of every rank of meta.Ranks.
func NewResult(meta Meta, ranks []evidence.RankEvidence) (Result, error) {
	return NewRaceResult(meta, ranks, nil)
}

// NewRaceResult is NewResult for a race that ended in standing (nil for an estimation that does
// not race): every rank says why the race left it behind, if it did, and the result which ranks
// it left unresolved.
func NewRaceResult(meta Meta, ranks []evidence.RankEvidence, standing *evidence.Standing) (Result, error) {
	r := Result{
		Model:       meta.Model.Name,
		Method:      meta.Estimator.Name,
		Data:        meta.Data,
		Config:      meta.Estimator.Config,
		LadderSpec:  meta.LadderSpec,
		Divergences: []string{},
		Command:     meta.Command,
		Version:     meta.Version,
	}
	// Every estimator's configuration keeps its seed under "seed".
	var seed struct {
		Seed uint64 `json:"seed"`
	}
	if err := json.Unmarshal(meta.Estimator.Config, &seed); err != nil {
		return r, fmt.Errorf("%s configuration: %w", meta.Estimator.Name, err)
	}
	r.Seed = seed.Seed
	r.Prior = maps.Clone(meta.Model.Params)
	if standing != nil {
		ranks = standing.Final(ranks)
	}
	if err := r.addRanks(meta.Ranks, ranks); err != nil {
		return r, err
	}
	if standing != nil {
		for i := range r.Ranks {
			r.Ranks[i].Left = standing.Why(r.Ranks[i].Rank)
		}
		r.Unresolved = standing.Unresolved(meta.Ranks)
		if standing.TimeUp {
			round := standing.Round
			r.TimeUpAfterRound = &round
		}
	}
	return r, nil
}

// addRanks fills r.Ranks in the order of want from the estimates, one per rank, with the totals,
// the posterior rank probabilities and the best rank.
func (r *Result) addRanks(want []int, ests []evidence.RankEvidence) error {
	byRank := map[int]evidence.RankEvidence{}
	for _, re := range ests {
		if _, dup := byRank[re.Rank]; dup {
			return fmt.Errorf("rank %d estimated twice", re.Rank)
		}
		byRank[re.Rank] = re
	}
	if len(byRank) != len(want) {
		return fmt.Errorf("estimates for %d ranks, %d requested", len(byRank), len(want))
	}
	for _, rank := range want {
		re, ok := byRank[rank]
		if !ok {
			return fmt.Errorf("no estimate for rank %d", rank)
		}
		// Estimators without a ladder leave Rungs empty and Trapezoid NaN.
		rr := RankResult{Trapezoid: Float(re.Trapezoid), Ladder: []Rung{}}
		for _, g := range re.Rungs {
			rr.Ladder = append(rr.Ladder, Rung{T: g.T, MeanLogLik: Float(g.MeanLogLik), StdErr: Float(g.StdErr),
				VarLogLik: Float(g.VarLogLik), ESS: Float(g.ESS), Chains: g.Chains})
		}
		rr.Rank, rr.LogEvidence, rr.StdErr, rr.StdErrWithin = rank, Float(re.LogEvidence), Float(re.StdErr), Float(re.StdErrWithin)
		if !math.IsNaN(re.LogEvidence) {
			rr.StartAllowance, rr.LetGo = Float(re.StartAllowance()), re.LetGo
		}
		rr.Steps, rr.CellEvals, rr.Diverged, rr.WarmChains = int64(re.Steps), re.CellEvals, re.Diverged, re.WarmChains
		rr.Hysteresis, rr.Phase, rr.PhaseUnchecked = Float(re.Hysteresis), re.Phase, re.PhaseUnchecked
		for k, m := range re.Ascent {
			if i := re.AscentFrom + k; i < len(re.Rungs) {
				rr.Ascent = append(rr.Ascent, AscentRung{T: re.Rungs[i].T, MeanLogLik: Float(m)})
			}
		}
		rr.Uncovered = re.Uncovered
		for k, m := range re.RateMean {
			rr.Rates = append(rr.Rates, RatePosterior{Mean: Float(m), SD: Float(re.RateSD[k])})
		}
		if n := len(rr.Rates); n > 0 {
			rr.Rates, rr.RateProduct = rr.Rates[:n-1], &rr.Rates[n-1]
		}
		rr.Round, rr.Drift = re.Round, Float(re.Drift)
		for _, k := range re.Rounds {
			rr.Rounds = append(rr.Rounds, RoundResult{Round: k.Round, LogEvidence: Float(k.LogEvidence), StdErr: Float(k.StdErr), Steps: int64(k.Steps)})
		}
		for _, v := range re.Apart {
			rr.Apart = append(rr.Apart, Float(v))
		}
		if re.Replicas > 0 {
			rr.Replicas, rr.TIStdErr, rr.SMC, rr.SMCStdErr, rr.Disagree = re.Replicas, Float(re.TIStdErr), Float(re.SMC), Float(re.SMCStdErr), re.Disagree
		}
		r.Ranks = append(r.Ranks, rr)
	}
	r.summarise()
	return nil
}

// summarise sets the totals, the divergences, the posterior rank probabilities and the best rank
// from r.Ranks.
func (r *Result) summarise() {
	r.Steps, r.CellEvals, r.Divergences, r.BestRank = 0, 0, []string{}, NoRank
	logEv := make([]float64, len(r.Ranks))
	for i, rr := range r.Ranks {
		logEv[i] = float64(rr.LogEvidence)
		r.Steps += rr.Steps
		r.CellEvals += rr.CellEvals
		r.Divergences = append(r.Divergences, rr.Diverged...)
	}
	best := -1
	for i, p := range evidence.PosteriorProbs(logEv) {
		r.Ranks[i].PosteriorProb = Float(p)
		if !math.IsNaN(p) && (best < 0 || p > float64(r.Ranks[best].PosteriorProb)) {
			best = i
		}
	}
	if best >= 0 {
		r.BestRank = RankChoice(r.Ranks[best].Rank)
	}
}

// Best returns the chosen rank's estimate; false when no rank has an estimate.
func (r Result) Best() (RankResult, bool) {
	if r.BestRank < 0 {
		return RankResult{}, false
	}
	for _, rr := range r.Ranks {
		if RankChoice(rr.Rank) == r.BestRank && !math.IsNaN(float64(rr.LogEvidence)) {
			return rr, true
		}
	}
	return RankResult{}, false
}

// UnmarshalJSON decodes evidence.json, of this version or an older one: a best rank that is
// absent, null, or names no rank with an estimate (older files wrote 0 for none) reads as NoRank.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result // without this method
	p := plain{BestRank: NoRank}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = Result(p)
	if _, ok := r.Best(); !ok {
		r.BestRank = NoRank
	}
	return nil
}

// Merge returns r with the ranks of more added: one result over the ranks of both, as if one
// sweep had run them all (ranks are estimated independently), with the posterior probabilities
// and the best rank recomputed. The runs must share the model, data, configuration and seed.
func (r Result) Merge(more Result) (Result, error) {
	if r.Model != more.Model || r.Data.Checksum != more.Data.Checksum || r.Seed != more.Seed {
		return r, fmt.Errorf("cannot merge results of different runs (%s on %s, seed %d; %s on %s, seed %d)",
			r.Model, r.Data.Checksum, r.Seed, more.Model, more.Data.Checksum, more.Seed)
	}
	have := map[int]bool{}
	for _, rr := range r.Ranks {
		have[rr.Rank] = true
	}
	out := r
	out.Ranks = append([]RankResult(nil), r.Ranks...)
	for _, rr := range more.Ranks {
		if have[rr.Rank] {
			return r, fmt.Errorf("rank %d estimated twice", rr.Rank)
		}
		out.Ranks = append(out.Ranks, rr)
	}
	sort.Slice(out.Ranks, func(a, b int) bool { return out.Ranks[a].Rank < out.Ranks[b].Rank })
	out.summarise()
	return out, nil
}

// DecodeConfig decodes the estimator's configuration (Config) into v, such as an sti.Config.
func (r Result) DecodeConfig(v any) error { return json.Unmarshal(r.Config, v) }

// JSON encodes the result as evidence.json.
func (r Result) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// CSV encodes one row per rank as evidence.csv. Values without an estimate are empty.
func (r Result) CSV() []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"rank", "log_evidence", "stderr", "posterior_prob", "trapezoid", "steps", "diverged_chains"})
	for _, rr := range r.Ranks {
		w.Write([]string{
			strconv.Itoa(rr.Rank), csvFloat(rr.LogEvidence), csvFloat(rr.StdErr), csvFloat(rr.PosteriorProb),
			csvFloat(rr.Trapezoid), strconv.FormatInt(rr.Steps, 10), strconv.Itoa(len(rr.Diverged)),
		})
	}
	w.Flush()
	return buf.Bytes()
}

func csvFloat(f Float) string {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// RatePosterior is the posterior mean and standard deviation of one factor's prior rate.
type RatePosterior struct {
	Mean Float `json:"mean"`
	SD   Float `json:"sd"`
}

// ParseResult decodes evidence.json.
func ParseResult(b []byte) (Result, error) {
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("evidence.json: %w", err)
	}
	if r.Model == "" || len(r.Ranks) == 0 {
		return r, errors.New("evidence.json: no model or no ranks")
	}
	return r, nil
}

// Table is the short summary printed on a terminal, ending with the verdict (Verdict). An annealed run
// adds its second estimate, a run with start allowances (RankResult.StartAllowance) a column of them
// and a note on what they mean, and a '!' marks a rank whose diagnostics (Diagnose) raise an issue,
// explained in one footnote line per such rank.
func (r Result) Table() string {
	var b strings.Builder
	annealed := len(r.Ranks) > 0 && r.Ranks[0].Replicas > 0
	allowed := slices.ContainsFunc(r.Ranks, func(rr RankResult) bool { return rr.StartAllowance > 0 })
	fmt.Fprintf(&b, "%5s %14s %9s", "rank", "log p(X|R)", "± stderr")
	if allowed {
		fmt.Fprintf(&b, " %9s", "± start")
	}
	fmt.Fprintf(&b, " %9s", "p(R|X)")
	if annealed {
		fmt.Fprintf(&b, " %14s %9s", "SMC", "± stderr")
	}
	b.WriteString("\n")
	var notes []string
	for _, rr := range r.Ranks {
		ev, se, p, start := "diverged", "", "", ""
		if !math.IsNaN(float64(rr.LogEvidence)) {
			ev = strconv.FormatFloat(float64(rr.LogEvidence), 'f', 2, 64)
			se = strconv.FormatFloat(float64(rr.StdErr), 'f', 2, 64)
			p = strconv.FormatFloat(float64(rr.PosteriorProb), 'f', 3, 64)
		}
		if rr.StartAllowance > 0 {
			start = strconv.FormatFloat(float64(rr.StartAllowance), 'f', 0, 64)
		}
		fmt.Fprintf(&b, "%5d %14s %9s", rr.Rank, ev, se)
		if allowed {
			fmt.Fprintf(&b, " %9s", start)
		}
		fmt.Fprintf(&b, " %9s", p)
		if annealed && !math.IsNaN(float64(rr.SMC)) {
			fmt.Fprintf(&b, " %14.2f %9.2f", float64(rr.SMC), float64(rr.SMCStdErr))
		}
		if issues := rr.Diagnose().Issues; len(issues) > 0 {
			b.WriteString(" !")
			details := make([]string, len(issues))
			for i, is := range issues {
				details[i] = is.Detail
			}
			notes = append(notes, fmt.Sprintf("! rank %d: %s", rr.Rank, strings.Join(details, " ")))
		}
		b.WriteString("\n")
	}
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	if allowed {
		b.WriteString("± start: these estimates' chains hold too few records to show how far they still are from their posterior, either way; half the number of parameters is the scale allowed (Laplace), beyond the standard error.\n")
	}
	if i := slices.IndexFunc(r.Ranks, func(rr RankResult) bool { return rr.LetGo }); i >= 0 {
		fmt.Fprintf(&b, "rank %d lies so far above the rest that the race stopped refining it while its chains still moved: its ± start is how far its number may still be off; to refine it, run it alone (--ranks %d).\n", r.Ranks[i].Rank, r.Ranks[i].Rank)
	}
	if best, ok := r.Best(); ok && len(best.Rates) > 0 {
		b.WriteString(best.RatesLine() + "\n")
	}
	if n := len(r.Divergences); n > 0 {
		fmt.Fprintf(&b, "%d chains diverged (see evidence.json); first: %s\n", n, r.Divergences[0])
	}
	b.WriteString(r.Verdict() + "\n")
	return b.String()
}

// RatesLine is one line of the posterior of the rank's prior rates at t = 1, e.g. "prior rates
// at rank 3 (posterior at t = 1): mode 0 2.31 ± 0.12, mode 1 4.05 ± 0.30; product 9.35 ± 0.41".
func (rr RankResult) RatesLine() string {
	parts := make([]string, len(rr.Rates))
	for k, p := range rr.Rates {
		parts[k] = fmt.Sprintf("mode %d %s", k, p)
	}
	return fmt.Sprintf("prior rates at rank %d (posterior at t = 1): %s; product %s", rr.Rank, strings.Join(parts, ", "), rr.RateProduct)
}

// String is "mean ± sd" to the digits the deviation leaves meaningful.
func (p RatePosterior) String() string {
	return fmt.Sprintf("%.3g ± %.2g", float64(p.Mean), float64(p.SD))
}

// Verdict is one sentence for a person: the rank chosen, how sure the estimates make it (its
// p(R | X); the ranks within evidence.RaceZ combined standard errors of it and both their start
// allowances, or that the race could not leave behind; flags on those ranks) and what to do next when it is not sure. It begins
// "best rank: R".
func (r Result) Verdict() string {
	best, ok := r.Best()
	if !ok {
		return "best rank: none (every rank diverged)"
	}
	var near, flagged, tried []int
	allowed := best.StartAllowance > 0
	for _, rr := range r.Ranks {
		if math.IsNaN(float64(rr.LogEvidence)) {
			continue
		}
		tried = append(tried, rr.Rank)
		gap, sigma := float64(best.LogEvidence-rr.LogEvidence), math.Hypot(float64(best.StdErr), float64(rr.StdErr))
		isNear := rr.Rank != best.Rank && (gap <= evidence.RaceZ*sigma+float64(best.StartAllowance+rr.StartAllowance) || slices.Contains(r.Unresolved, rr.Rank))
		if isNear {
			near = append(near, rr.Rank)
			allowed = allowed || rr.StartAllowance > 0
		}
		if (isNear || rr.Rank == best.Rank) && len(rr.Diagnose().Issues) > 0 {
			flagged = append(flagged, rr.Rank)
		}
	}
	p := fmt.Sprintf("p(R|X) = %.3f", float64(best.PosteriorProb))
	if best.PosteriorProb > 0.9995 {
		p = "p(R|X) > 0.999"
	}
	var s string
	switch {
	case len(tried) == 1:
		s = fmt.Sprintf("best rank: %d, the only rank estimated: give --ranks several ranks to choose among", best.Rank)
	case len(near) == 0:
		s = fmt.Sprintf("best rank: %d, %s: every other rank lies more than %d standard errors below it", best.Rank, p, evidence.RaceZ)
	default:
		within := fmt.Sprintf("%d standard errors", evidence.RaceZ)
		if allowed {
			within += " and their start allowances (± start)"
		}
		s = fmt.Sprintf("best rank: %d, but not settled: %s %s within %s of it (%s takes the estimates as exact); to tell them apart, %s",
			best.Rank, ranksText(near), plural(len(near), "lies", "lie"), within, p, r.moreWork(near))
	}
	if len(flagged) > 0 {
		s += fmt.Sprintf("; %s %s flagged (!, above): read the note before trusting the choice", ranksText(flagged), plural(len(flagged), "is", "are"))
	}
	if len(tried) > 1 && best.Rank == slices.Max(tried) {
		s += "; it is the highest rank tried: add higher ranks to --ranks"
	}
	return s + "."
}

// moreWork says how to run again with more work to tell the ranks near the best apart: for a race
// whose time ran out (--time) while it still ran near ranks, a longer time; for a race
// (a result with rounds) whose near ranks it still ran at its end, a larger --budget than the
// command line's; for one that left a near rank behind on earlier estimates, which no budget
// runs again, those ranks on their own where their chains could not yet show their transient
// (a lone rank runs on while its chains are unsteady), or else twice the replicas, which narrow
// the best's error bar where their spread sets it; otherwise longer chains or more replicas.
func (r Result) moreWork(near []int) string {
	if !slices.ContainsFunc(r.Ranks, func(rr RankResult) bool { return len(rr.Rounds) > 0 }) {
		if r.Method == core.MethodChib || r.Method == core.MethodAIS {
			return "run again with more --replicas"
		}
		return "run again with longer chains (--steps) or more of them (--chains)"
	}
	if r.TimeUpAfterRound != nil && slices.ContainsFunc(near, func(n int) bool { return slices.Contains(r.Unresolved, n) }) {
		return fmt.Sprintf("run again with a longer --time (this run's time was up after round %d)", *r.TimeUpAfterRound)
	}
	var unsettled []int
	for _, rr := range r.Ranks {
		if slices.Contains(near, rr.Rank) && rr.StartAllowance > 0 && !slices.Contains(r.Unresolved, rr.Rank) {
			unsettled = append(unsettled, rr.Rank)
		}
	}
	if len(unsettled) > 0 {
		list := make([]string, len(unsettled))
		for i, n := range unsettled {
			list[i] = strconv.Itoa(n)
		}
		return fmt.Sprintf("run again with --ranks %s (the race left %s behind before %s chains could show their transient)",
			strings.Join(list, ","), ranksText(unsettled), plural(len(unsettled), "its", "their"))
	}
	if slices.ContainsFunc(near, func(n int) bool { return !slices.Contains(r.Unresolved, n) }) {
		var c struct{ Chains int }
		if json.Unmarshal(r.Config, &c) != nil || c.Chains < 1 {
			c.Chains = 1
		}
		return fmt.Sprintf("run again with --chains %d (the race left %s behind on earlier estimates)", 2*r.commandInt("chains", c.Chains), ranksText(near))
	}
	return fmt.Sprintf("run again with --budget %d", 2*r.commandInt("budget", 1))
}

// commandInt is the positive value of the command line's --name, or def when it gives none.
func (r Result) commandInt(name string, def int) int {
	for i, a := range r.Command {
		v, ok := strings.CutPrefix(strings.TrimLeft(a, "-"), name)
		switch {
		case ok && v == "" && i+1 < len(r.Command):
			v = r.Command[i+1]
		case ok && strings.HasPrefix(v, "="):
			v = v[1:]
		default:
			continue
		}
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			def = n
		}
	}
	return def
}

// ranksText spells out ranks: "rank 4", "ranks 4 and 5", "ranks 2, 4 and 5".
func ranksText(ranks []int) string {
	words := make([]string, len(ranks))
	for i, r := range ranks {
		words[i] = strconv.Itoa(r)
	}
	if len(words) == 1 {
		return "rank " + words[0]
	}
	return "ranks " + strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
