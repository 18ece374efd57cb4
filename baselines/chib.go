package baselines

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/stirank/stirank/rng"
)

// ChibConfig sets the run lengths of Chib's method. Lengths count Gibbs sweeps (one allocation of
// every count and one draw of every free factor entry).
type ChibConfig struct {
	// Starts prior draws are each run StartSweeps sweeps; the one with the highest log joint
	// p(X | θ) p(θ) starts the burn-in (a guard against a poor local mode). 1 uses a single draw.
	Starts      int `json:"starts"`
	StartSweeps int `json:"start_sweeps"`
	// Burnin sweeps precede the ordinate samples; θ* is the best sweep of its second half by
	// log joint, moved to the nearby mode of the log-factor posterior by at most ModeIters EM rounds.
	Burnin int `json:"burnin"`
	// Samples sweeps of the full run average the ordinate of the first block.
	Samples int `json:"samples"`
	// Every reduced run (one per block after the first) starts at θ*, runs ReducedBurnin sweeps
	// and then averages ReducedSamples sweeps.
	ReducedBurnin  int `json:"reduced_burnin"`
	ReducedSamples int `json:"reduced_samples"`
	// ModeIters bounds the EM rounds that move θ* to the mode of the log-factor posterior.
	ModeIters int `json:"mode_iters"`
	// BlockSize is the number of factor entries per block of the ordinate (rows of R entries,
	// at least one row); RowsPerBlock, when positive, sets the rows per block instead. See Chib.
	BlockSize    int `json:"block_size"`
	RowsPerBlock int `json:"rows_per_block,omitempty"`
	// A block whose log ordinate has a standard error above TargetSE after its sweeps gets as many
	// again, and again, up to MaxExtend times its sweeps in all (1: never extended).
	TargetSE  float64 `json:"target_se"`
	MaxExtend int     `json:"max_extend"`
	// Batches is the number of batches of the batch-means standard errors.
	Batches int `json:"batches"`
	// MaxPermRank is the largest rank whose ordinate is symmetrised exactly over the R!
	// relabelings (cost 2^R·R per sample); above it the identity term with + log R! is used,
	// which assumes the full run never switches labels.
	MaxPermRank int `json:"max_perm_rank"`
	// Seed roots the random streams.
	Seed uint64 `json:"seed"`
}

// DefaultChib is the default configuration: a start tournament of 4×50 sweeps, 1000 sweeps of
// burn-in, 2000 of the full run, blocks of about 4 entries (one row from rank 3 up) and reduced
// runs of 50 + 1000 sweeps.
func DefaultChib() ChibConfig {
	return ChibConfig{Starts: 4, StartSweeps: 50, Burnin: 1000, Samples: 2000, ReducedBurnin: 50,
		ReducedSamples: 1000, ModeIters: 500, BlockSize: 4, TargetSE: 0.25, MaxExtend: 8, Batches: 20, MaxPermRank: 14, Seed: 1}
}

// PaperChib is the ICASSP 2016 §4.1.2 recipe: two blocks (whole factors), 9000 Gibbs sweeps of
// which 7000 are burn-in, then 5000 sweeps of the reduced run. It is here for comparison: its
// whole-factor ordinates are biased by many nats beyond toy sizes (see Chib).
func PaperChib() ChibConfig {
	return ChibConfig{Starts: 1, Burnin: 7000, Samples: 2000, ReducedBurnin: 0, ReducedSamples: 5000,
		ModeIters: 500, RowsPerBlock: math.MaxInt32, MaxExtend: 1, Batches: 20, MaxPermRank: 14, Seed: 1}
}

// Validate checks the configuration.
func (c ChibConfig) Validate() error {
	switch {
	case c.Starts < 1:
		return fmt.Errorf("chib: starts %d must be at least 1", c.Starts)
	case c.Starts > 1 && c.StartSweeps < 1:
		return fmt.Errorf("chib: start sweeps %d must be at least 1 with %d starts", c.StartSweeps, c.Starts)
	case c.Burnin < 2:
		return fmt.Errorf("chib: burn-in %d must be at least 2 (θ* comes from its second half)", c.Burnin)
	case c.Samples < 2 || c.ReducedSamples < 2:
		return fmt.Errorf("chib: samples %d and reduced samples %d must be at least 2", c.Samples, c.ReducedSamples)
	case c.ReducedBurnin < 0 || c.StartSweeps < 0:
		return fmt.Errorf("chib: negative run length")
	case c.BlockSize < 1 && c.RowsPerBlock < 1:
		return fmt.Errorf("chib: block size %d must be at least 1", c.BlockSize)
	case c.MaxExtend < 1 || c.TargetSE < 0:
		return fmt.Errorf("chib: max extend %d must be at least 1 and target standard error %v not negative", c.MaxExtend, c.TargetSE)
	case c.ModeIters < 0:
		return fmt.Errorf("chib: mode iterations %d must not be negative", c.ModeIters)
	case c.Batches < 2:
		return fmt.Errorf("chib: batches %d must be at least 2", c.Batches)
	case c.MaxPermRank < 1 || c.MaxPermRank > 20:
		return fmt.Errorf("chib: max permanent rank %d must be in [1, 20]", c.MaxPermRank)
	}
	return nil
}

// ChibResult is one replica's estimate of log p(X | R) by Chib's method:
//
//	log p(X) = log p(X | θ*) + log p(θ*) − Σ_b log p(θ_b* | θ_1*, …, θ_{b−1}*, X),
//
// over the blocks b of θ (see Chib), each ordinate a Rao–Blackwellised average of Gamma full
// conditionals at θ_b*, over the full run (b = 1) or the b-th reduced run. The log of an average
// is biased low by about half its squared relative standard error; with tens of blocks these add
// up to nats, so every log ordinate gets the delta-method correction + se_b²/2.
type ChibResult struct {
	Rank, Replica int
	LogEvidence   float64
	// StdErr combines the batch-means standard errors of the ordinates in quadrature (the runs
	// are independent given θ*).
	StdErr           float64
	LogLik, LogPrior float64
	// LogOrdinate is Σ_b log p̂(θ_b* | θ_<b*, X); Blocks the number of blocks (and runs).
	LogOrdinate float64
	Blocks      int
	// BlockOrdinates and BlockSE are the log ordinate of every block and its standard error.
	BlockOrdinates, BlockSE []float64
	// Symmetrised reports that the ordinates account exactly for the R! relabelings (see Chib);
	// otherwise (rank above MaxPermRank) the first ordinate is the sampler's labelling − log R!.
	Symmetrised bool
	// LabelSwitching is the symmetrised first log ordinate minus the one in the sampler's labelling
	// (both with the 1/R! of the symmetrisation): 0 when the full run keeps to θ*'s labelling, about
	// log R! when it mixes over all of them, more when it moved to another labelling after θ* was
	// chosen. A diagnostic: the symmetrised ordinate is right in every case.
	LabelSwitching float64
	Sweeps         int
	CellEvals      int64
	// Divergence describes a non-finite value; LogEvidence is then NaN.
	Divergence string
}

// streamChib and streamAIS tag the random streams of the two methods.
const (
	streamChib = 0xc41b
	streamAIS  = 0xa15
)

// chibBlock is one block of θ: rows lo … hi−1 of the factor of mode m.
type chibBlock struct {
	m, lo, hi int
	last      bool
}

// blocks returns the blocks of θ in the order of the ordinates. Every mode but the one with the
// most rows is cut into groups of rows; that one comes last, as a single block. R is the free
// rank: beside a fixed dictionary a mode-0 row has R entries of θ, and at R = 0 mode 0 has no
// block.
func (p *Problem) chibBlocks(R int, cfg ChibConfig) ([]chibBlock, []int) {
	var modes []int
	for m := range p.order {
		if p.fixed+R > p.lead(m) {
			modes = append(modes, m)
		}
	}
	// Fewest rows first (stable), so the last, whole-mode block is the largest.
	for i := 1; i < len(modes); i++ {
		for j := i; j > 0 && p.shape[modes[j]] < p.shape[modes[j-1]]; j-- {
			modes[j], modes[j-1] = modes[j-1], modes[j]
		}
	}
	var bs []chibBlock
	for _, m := range modes[:len(modes)-1] {
		k := cfg.RowsPerBlock
		if k <= 0 {
			k = max(1, cfg.BlockSize/(p.fixed+R-p.lead(m)))
		}
		n := p.shape[m]
		for lo := 0; lo < n; lo += k {
			bs = append(bs, chibBlock{m: m, lo: lo, hi: min(lo+k, n)})
		}
	}
	last := modes[len(modes)-1]
	bs = append(bs, chibBlock{m: last, lo: 0, hi: p.shape[last], last: true})
	return bs, modes
}

// Chib runs one replica of Chib's method at rank R. Replicas differ only by their random streams,
// which are derived from (cfg.Seed, rank, replica). Beside a fixed dictionary (ssnmf, ForModel) R
// is the free block's rank and may be 0: the dictionary's entries are constants of every run and
// ordinate, its activations blocks of θ like the free factors, and only the free components are
// relabeled (see ordinates).
//
// θ*. The sweep of highest log joint in the second half of burn-in, moved by EM to the nearby mode
// of the posterior of the log-factors (LogModeRefine), where every entry sits at the mean of its
// Gamma full conditional. The posterior mean, the usual choice, is a low-density point when the
// burn-in crossed between labellings or along a curved ridge, and its ordinates are then far too
// noisy.
//
// Mixing. Besides the Gibbs updates every sweep rescales components along the scale ridge of the
// factorisation and, in reduced runs, between a partly fixed mode's free rows and a free mode
// (models.Blocked.Hold): the RB averages need runs that explore these
// directions, which plain Gibbs crosses only slowly.
//
// Blocks. The ordinate of a large block — a whole factor, as in the two-block recipe of the ICASSP
// paper — is an average of a product of hundreds of Gamma densities, whose logarithm fluctuates by
// many nats from sweep to sweep; the average is then dominated by sweeps that never come, and the
// estimate of log p(X) comes out tens of nats too high (on a 10×8 NMF at rank 3 already). So every
// mode except the largest is cut into blocks of about cfg.BlockSize entries (whole rows), each with
// its own reduced run, and the largest mode comes last: with every other factor held at θ*, its
// rows are independent, and its ordinate is the product over rows of per-row averages.
//
// Labels. The posterior is invariant under the R! relabelings of the components, and a Gibbs run
// rarely crosses between them when the components are well separated. For the first block (the
// full run) the ordinate is averaged over the relabelings of θ_1* — the permanent of the matrix
// exp L[s, r] = p(θ_1*[·, r] | component s of the sweep), over R! — which is exact whether the run
// switches labels or not (Berkhof, van Mechelen and Gelman 2003). In the reduced runs θ_<b* is
// fixed, and the labellings of the free components are weighted by how well they match it; when it
// does not tell two components apart (two small entries), a run that keeps to θ*'s labelling would
// overstate the ordinate. So every reduced sweep also draws a relabeling τ of the free part from its
// exact conditional p(τ | Z, free factors) ∝ exp Σ_s L_fix[s, τ(s)] (a Gibbs step over the
// permutations, O(2^R·R)), and the ordinate is Rao–Blackwellised over τ: a ratio of two
// permanents. The last block needs neither: given every other factor its conditional posterior is
// log-concave. Above cfg.MaxPermRank the first ordinate uses the sampler's labelling + log R! and
// the reduced runs do not relabel.
//
// Errors. Each block's log ordinate gets its batch-means standard error and the bias correction
// + se²/2 (see ChibResult); the blocks' runs are independent given θ*, so their variances add.
//
// Limits. Relabelings aside, the method needs a Gibbs run that moves over the whole posterior. At
// over-fitted ranks with large counts the posterior has modes that are not relabelings of one
// another (ways of splitting a component), the runs stay in the mode of their θ*, and a replica
// estimates the evidence of that mode alone: too low, by a different amount in each replica
// (replicas spread by about 7 nats, against within-replica errors of 1.5, at rank 4 of the
// embedded cp10x15x20r3 data). CombineRank's standard error takes the replicas' spread into
// account; run more replicas where they disagree, and compare with AIS.
func (p *Problem) Chib(ctx context.Context, R, replica int, cfg ChibConfig) (ChibResult, error) {
	return p.chib(ctx, R, replica, cfg, nil)
}

// ChibFrom is Chib with its burn-in started at from instead of at the best of cfg.Starts short
// runs from prior draws. A replica estimates the evidence of the basin its run stays in (Chib,
// Limits), so started where another sampler's chains are (stirank select's at t = 1:
// bench/chibstart) it shows whether they hold a basin Chib's own start misses: the estimate is
// then higher.
func (p *Problem) ChibFrom(ctx context.Context, R, replica int, cfg ChibConfig, from Factors) (ChibResult, error) {
	if p.fixed > 0 {
		return ChibResult{}, errFixed("chib from a start")
	}
	if from.R != R || len(from.F) != p.order {
		return ChibResult{}, fmt.Errorf("chib: a start of rank %d with %d factors for rank %d with %d", from.R, len(from.F), R, p.order)
	}
	for m, f := range from.F {
		if len(f) != p.shape[m]*R {
			return ChibResult{}, fmt.Errorf("chib: the start's factor %d has %d entries, not %d×%d", m, len(f), p.shape[m], R)
		}
		for i, v := range f {
			if !(v > 0) || math.IsInf(v, 0) {
				return ChibResult{}, fmt.Errorf("chib: the start's factor %d, row %d, component %d is %v, not positive and finite", m, i/R, i%R, v)
			}
		}
	}
	from = from.Clone()
	return p.chib(ctx, R, replica, cfg, &from)
}

// chib is Chib and ChibFrom: from the best of cfg.Starts prior runs, or from from where it is set.
func (p *Problem) chib(ctx context.Context, R, replica int, cfg ChibConfig, from *Factors) (ChibResult, error) {
	if p.Auto {
		return p.chibAuto(ctx, R, replica, cfg, from)
	}
	if err := cfg.Validate(); err != nil {
		return ChibResult{}, err
	}
	if err := p.checkRank("chib", R); err != nil {
		return ChibResult{}, err
	}
	res := ChibResult{Rank: R, Replica: replica}
	r := rng.New(cfg.Seed, streamChib, uint64(R), uint64(replica))
	check := func(done int) error {
		if done%64 == 0 {
			return ctx.Err()
		}
		return nil
	}

	// Start: from, or the best of Starts short runs from prior draws.
	var g *gibbs
	if from != nil {
		var err error
		if g, err = p.newGibbs(R); err != nil {
			return res, err
		}
		g.SetState(*from)
	} else {
		var (
			sweeps int
			err    error
		)
		g, sweeps, err = p.bestStart(ctx, r, R, cfg.Starts, cfg.StartSweeps)
		if err != nil {
			return res, err
		}
		res.Sweeps += sweeps
	}

	// Burn-in; θ* is the point of highest log joint among the sweeps of its second half, moved
	// uphill to the nearby mode of the posterior of the log-factors (see LogModeRefine). The
	// first half's sweeps end with the moves along the directions the likelihood leaves flat
	// (sliceState.crossFlats), as a reference's fit's burn-in does (FitReference): at an
	// over-fitted rank with large counts the plain sweeps leave a component split in two where
	// the start put its halves, and θ* and the ordinates were read in whichever basin that was.
	// Over seeds 1–4 on Glass (ranks 2–5), a 10×8 matrix with counts in the hundreds (2–4), a
	// 12×10 matrix with counts up to 1.4·10⁵ (2–3) and an 8×6×5 tensor with counts in the tens
	// of thousands (2–3), the 44 estimates' mean distance from long AIS went from 9.65 nats to
	// 2.22, those within 3 of their standard errors from 35 to 41, and the rank chosen was the
	// references' in 16 runs of 16 instead of 11 (README at fb09484). With the moves in every burn-in
	// sweep, rank 3 of the tensor came out 7.1 nats high at seed 1 instead of 2.6.
	//
	// Beside a fixed dictionary the kernel's own moves along those lines (Blocked.SetFlat) make
	// them instead, in the sweeps of the first half: the slice moves know no fixed entries.
	star := g.State.Clone()
	bestLJ := math.Inf(-1)
	var flat *sliceState
	if p.fixed == 0 {
		flat = newSliceState(p, R, 1)
	}
	for k := range cfg.Burnin {
		first := k < cfg.Burnin/2
		g.k.SetFlat(first && flat == nil)
		g.Sweep(r)
		switch {
		case first && flat != nil:
			flat.crossFlats(r, g)
		case !first:
			if lj := g.LogJoint(); lj > bestLJ {
				bestLJ = lj
				star.CopyFrom(g.State)
			}
		}
		if err := check(k); err != nil {
			return res, err
		}
	}
	res.Sweeps += cfg.Burnin
	p.LogModeRefine(star, cfg.ModeIters, 1e-9)
	res.LogLik = p.LogLik(star)
	res.LogPrior = p.LogPrior(star)

	blocks, order := p.chibBlocks(R, cfg)
	res.Blocks = len(blocks)
	res.Symmetrised = R <= cfg.MaxPermRank
	o := newOrdinates(p, star, R, res.Symmetrised)
	variance := 0.0
	for bi, b := range blocks {
		// Fix the modes before b's in the order, and b's rows before b.lo.
		fixed := make([]int, p.order)
		for _, m := range order {
			if m == b.m {
				fixed[m] = b.lo
				break
			}
			fixed[m] = p.shape[m]
		}
		n := cfg.ReducedSamples
		if bi == 0 {
			n = cfg.Samples
		} else {
			g.Hold(fixed)
			g.SetState(star)
			g.k.OnSplit(nil)
			for s := range cfg.ReducedBurnin {
				g.Sweep(r)
				if err := check(s); err != nil {
					return res, err
				}
			}
			res.Sweeps += cfg.ReducedBurnin
		}
		var terms, naive []float64
		var rowTerms [][]float64
		if b.last {
			rowTerms = make([][]float64, b.hi-b.lo)
		}
		g.k.OnSplit(func(r *rand.Rand) {
			if b.last {
				o.rowTerms(g, b, rowTerms)
				return
			}
			t, id := o.blockTerm(r, g, b, bi > 0)
			terms = append(terms, t)
			naive = append(naive, id)
		})
		// The block's log ordinate, its bias correction and its variance from the sweeps so far.
		estimate := func() (lm, v float64) {
			if b.last {
				for _, tr := range rowTerms {
					l, se := batchLogMeanExp(tr, cfg.Batches)
					lm += l + se*se/2
					v += se * se
				}
				return lm, v
			}
			l, se := batchLogMeanExp(terms, cfg.Batches)
			return l + se*se/2, se * se
		}
		// Run n sweeps, then n more at a time while the standard error is above TargetSE, up to
		// MaxExtend·n: the few blocks whose terms are heavy-tailed get the sweeps they need.
		var lm, v float64
		for done := 0; ; {
			for s := range n {
				g.Sweep(r)
				if err := check(s); err != nil {
					return res, err
				}
			}
			res.Sweeps += n
			done += n
			lm, v = estimate()
			if !(math.Sqrt(v) > cfg.TargetSE) || done >= cfg.MaxExtend*n {
				break
			}
		}
		if bi == 0 && !b.last {
			l, _ := batchLogMeanExp(terms, cfg.Batches)
			nv, _ := logMeanExp(naive)
			res.LabelSwitching = l - nv
		}
		res.LogOrdinate += lm
		variance += v
		res.BlockOrdinates = append(res.BlockOrdinates, lm)
		res.BlockSE = append(res.BlockSE, math.Sqrt(v))
	}
	g.k.OnSplit(nil)
	res.CellEvals = g.cellEvals
	if flat != nil {
		res.CellEvals += flat.cellEvals
	}
	res.LogEvidence = res.LogLik + res.LogPrior - res.LogOrdinate
	res.StdErr = math.Sqrt(variance)
	if math.IsNaN(res.LogEvidence) || math.IsInf(res.LogEvidence, 0) {
		res.Divergence = fmt.Sprintf("rank %d, replica %d: non-finite Chib estimate (log-lik %v, log-prior %v, ordinate %v)",
			R, replica, res.LogLik, res.LogPrior, res.LogOrdinate)
		res.LogEvidence = math.NaN()
	}
	return res, nil
}

// ordinates evaluates the Gamma full conditionals of blocks of θ at θ*. Beside a fixed dictionary
// the factors have K = F0 + R columns, the dictionary's F0 first (Factors): its components are
// not relabeled, as no other component shares its fixed column, and only the R free ones are.
type ordinates struct {
	p     *Problem
	R     int // free components
	K, F0 int // columns, fixed components
	sym   bool
	star  Factors
	logF  [][]float64 // log θ*
	L, Lf []float64   // R×R: block terms, fixed-part terms
	beta  []float64   // K: rowTerms' Gamma rates, and their logarithms
	lb    []float64
	fix   [][]float64 // column sums of the fixed rows of every mode (θ*)
	free  [][]float64 // column sums of the free rows (current state)
	ps    *permScratch
	tau   []int // R free components' relabeling, and the K columns' (identity on the dictionary's)
	tauK  []int
}

func newOrdinates(p *Problem, star Factors, R int, sym bool) *ordinates {
	K := star.R
	o := &ordinates{p: p, R: R, K: K, F0: K - R, sym: sym && R > 1, star: star, L: make([]float64, R*R), Lf: make([]float64, R*R),
		beta: make([]float64, K), lb: make([]float64, K),
		tau: make([]int, R), tauK: make([]int, K)}
	for m := range p.order {
		lf := make([]float64, len(star.F[m]))
		for i, v := range star.F[m] {
			lf[i] = math.Log(v)
		}
		o.logF = append(o.logF, lf)
		o.fix = append(o.fix, make([]float64, K))
		o.free = append(o.free, make([]float64, K))
	}
	for c := range K {
		o.tauK[c] = c
	}
	if o.sym {
		o.ps = newPermScratch(R)
	}
	return o
}

// gammaTerm is log Gamma(θ*; 1 + c, β) in a row of block b, less log c!: the term of a Gamma full
// conditional at θ* entry e (column r of θ*) given its split count c.
func (o *ordinates) gammaTerm(m, e int, c, lb, beta float64) float64 {
	return (1+c)*lb - o.p.logFact[int(c)] + c*o.logF[m][e] - beta*o.star.F[m][e]
}

// blockTerm returns the log ordinate term of block b at the current sweep and the sampler's-labelling
// (identity) term − log R! for diagnosis. With labels symmetrised:
//
//	log perm exp(L_fix + L_b) − log perm exp(L_fix),
//
// L_b[s, r] = Σ_{i in b} log Gamma(θ*_i,r; 1 + S_i,s, β_{s,r}) pairing free component s with θ*'s
// component r, and L_fix[s, r] the terms of log p(θ_fixed*, Z, free part) that depend on the pairing:
// Σ over fixed rows of S_i,s·log θ*_i,r, minus Π_m (fixed + free column sums). A dictionary's
// components pair only with themselves: their terms add to both. With relabel set it then draws
// τ ∝ exp Σ_s L_fix[s, τ(s)] and relabels the free part of g. It runs in g's hook
// (models.Blocked.OnSplit).
func (o *ordinates) blockTerm(r *rand.Rand, g *gibbs, b chibBlock, relabel bool) (float64, float64) {
	p, R, K, F0 := o.p, o.R, o.K, o.F0
	full := o.sym
	F, S := g.Split()
	for m := range p.order {
		fr := g.heldRows(m)
		fix, free := o.fix[m], o.free[m]
		clear(fix)
		clear(free)
		fm := F.F[m]
		for i := 0; i < len(fm); i += K {
			dst := free
			if i < fr*K {
				dst = fix
			}
			for k := range K {
				dst[k] += fm[i+k]
			}
		}
	}
	// pair is mode m's column sum of θ*'s column rr in the fixed rows and the sweep's s in the free.
	pair := func(m, s, rr int) float64 { return o.fix[m][rr] + o.free[m][s] }
	lam := p.Rates[b.m]
	// term is the block's terms of β at columns (s, rr), θ*'s rr.
	term := func(s, rr int) float64 {
		beta := 1.0
		for m := range p.order {
			if m != b.m {
				beta *= pair(m, s, rr)
			}
		}
		beta += lam
		lb := math.Log(beta)
		v := 0.0
		for i := b.lo; i < b.hi; i++ {
			v += o.gammaTerm(b.m, i*K+rr, S[b.m][i*K+s], lb, beta)
		}
		return v
	}
	dict := 0.0
	for c := p.lead(b.m); c < F0; c++ {
		dict += term(c, c)
	}
	// Block terms of the free components.
	L := o.L
	clear(L)
	for s := range R {
		for rr := range R {
			if full || rr == s {
				L[s*R+rr] = term(F0+s, F0+rr)
			}
		}
	}
	id := 0.0
	for s := range R {
		id += L[s*R+s]
	}
	id += dict - logFactorial(R)
	if !full {
		return id, id
	}
	// Fixed-part terms.
	Lf := o.Lf
	anyFixed := false
	for s := range R {
		for rr := range R {
			v := 1.0
			for m := range p.order {
				v *= pair(m, F0+s, F0+rr)
			}
			Lf[s*R+rr] = -v
		}
	}
	for m := range p.order {
		fr := g.heldRows(m)
		if fr == 0 {
			continue
		}
		anyFixed = true
		sm, lg := S[m], o.logF[m]
		for i := 0; i < fr; i++ {
			srow := sm[i*K+F0 : i*K+K]
			lrow := lg[i*K+F0 : i*K+K]
			for s, c := range srow {
				if c == 0 {
					continue
				}
				dst := Lf[s*R : s*R+R]
				for rr, v := range lrow {
					dst[rr] += c * v
				}
			}
		}
	}
	base := o.ps.logPerm(Lf)
	for i := range L {
		L[i] += Lf[i]
	}
	t := o.ps.logPerm(L) - base + dict
	if relabel && anyFixed {
		o.ps.samplePerm(r, Lf, o.tau)
		identity := true
		for s, t := range o.tau {
			o.tauK[F0+s] = F0 + t
			identity = identity && s == t
		}
		if !identity {
			g.k.Relabel(o.tauK)
		}
	}
	return t, id
}

// rowTerms appends, for every row i of the last block, log p(θ*_i | Z, everything else) =
// Σ_r log Gamma(θ*_i,r; 1 + S_i,r, β_r) over the row's entries of θ: with every other factor fixed
// at θ*, the rows are independent and their ordinates multiply. It runs in g's hook
// (models.Blocked.OnSplit).
func (o *ordinates) rowTerms(g *gibbs, b chibBlock, rows [][]float64) {
	p, K := o.p, o.K
	_, S := g.Split()
	lam := p.Rates[b.m]
	beta, lb := o.beta, o.lb
	for k := range K {
		v := 1.0
		for m := range p.order {
			if m != b.m {
				v *= g.k.ColSums(m)[k]
			}
		}
		beta[k] = lam + v
		lb[k] = math.Log(beta[k])
	}
	for i := b.lo; i < b.hi; i++ {
		v := 0.0
		for k := p.lead(b.m); k < K; k++ {
			v += o.gammaTerm(b.m, i*K+k, S[b.m][i*K+k], lb[k], beta[k])
		}
		rows[i-b.lo] = append(rows[i-b.lo], v)
	}
}
