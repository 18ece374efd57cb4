package sti

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/internal/par"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

func gaussData(t testing.TB, trueR int, seed uint64) *tensor.Sparse {
	t.Helper()
	return gaussDataN(t, 5000, trueR, seed)
}

// gaussDataN is n values drawn from the Gaussian model at rank trueR, in the ICASSP setting.
func gaussDataN(t testing.TB, n, trueR int, seed uint64) *tensor.Sparse {
	t.Helper()
	x, _ := models.GenerateGauss(rng.New(seed, 77), n, trueR, models.ICASSPGauss)
	d, err := tensor.New([]int{len(x)}, len(x))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range x {
		d.Append([]int{i}, v)
	}
	return d
}

func poissonData(t testing.TB, shape []int, R int, rate float64, seed uint64) (*tensor.Sparse, []float64) {
	t.Helper()
	rates := make([]float64, len(shape))
	for i := range rates {
		rates[i] = rate
	}
	d, _, err := models.GeneratePoisson(rng.New(seed, 0xda7a), shape, R, rates)
	if err != nil {
		t.Fatal(err)
	}
	return d, rates
}

func ranks(lo, hi int) []int {
	var r []int
	for i := lo; i <= hi; i++ {
		r = append(r, i)
	}
	return r
}

func sweep(t testing.TB, d *tensor.Sparse, spec models.Spec, cfg Config, rs []int) []evidence.RankEvidence {
	t.Helper()
	p, err := NewProblem(d, spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Sweep(context.Background(), rs, 0)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// With exact expectations the papers' uniform 10-rung ladder is off by hundreds of nats at the
// ICASSP setting, because f(t) falls like −1/(2t) near t = 0; the default power ladder is not.
func TestLadderBiasWithExactExpectations(t *testing.T) {
	d := gaussData(t, 10, 1)
	def := Default("gauss").Ladder
	for _, R := range []int{8, 10, 12} {
		m, _ := models.NewGauss(d.Values, R, models.ICASSPGauss)
		exact := m.LogEvidence()
		quad := func(l evidence.Ladder) float64 {
			f, v := make([]float64, len(l)), make([]float64, len(l))
			for i, tt := range l {
				f[i], v[i] = m.PowerPosterior(tt)
			}
			return evidence.Integrate(l, f, v)
		}
		uniform := evidence.Uniform(10)
		f := make([]float64, len(uniform))
		for i, tt := range uniform {
			f[i], _ = m.PowerPosterior(tt)
		}
		paper := evidence.Trapezoid(uniform, f) - exact
		ours := quad(def) - exact
		t.Logf("R=%d: uniform 10-rung trapezoid off by %.1f nats, default ladder by %.3f", R, paper, ours)
		if math.Abs(paper) < 100 {
			t.Errorf("R=%d: uniform ladder only %.1f nats off; expected hundreds", R, paper)
		}
		if math.Abs(ours) > 0.1 {
			t.Errorf("R=%d: default ladder %.3f nats off with exact expectations", R, ours)
		}
	}
}

// The ICASSP 2016 Gaussian experiment (μ=5, σθ²=3, σx²=5, N=5000, |S|=250): for data with true
// R ∈ {5, 10, 15, 20}, scanning R = 1…20 picks the argmax of the exact evidence (or a rank within
// 0.5 nat of it), and near the mode every estimate is within 1 nat and 3 standard errors of exact.
func TestGaussianICASSP(t *testing.T) {
	cfg := Default("gauss")
	spec := models.GaussSpec(models.ICASSPGauss)
	for _, trueR := range []int{5, 10, 15, 20} {
		d := gaussData(t, trueR, uint64(trueR))
		res := sweep(t, d, spec, cfg, ranks(1, 20))
		exact := make([]float64, len(res))
		mode, best := 0, 0
		for i, r := range res {
			m, _ := models.NewGauss(d.Values, r.Rank, models.ICASSPGauss)
			exact[i] = m.LogEvidence()
			if exact[i] > exact[mode] {
				mode = i
			}
			if r.LogEvidence > res[best].LogEvidence {
				best = i
			}
			if r.Steps > 30000 {
				t.Errorf("true R=%d, R=%d: %d steps, over the paper's 30000", trueR, r.Rank, r.Steps)
			}
		}
		if exact[mode]-exact[best] > 0.5 {
			t.Errorf("true R=%d: chose R=%d (exact %.2f), exact mode R=%d (%.2f)", trueR, res[best].Rank, exact[best], res[mode].Rank, exact[mode])
		}
		for i, r := range res {
			if abs(r.Rank-res[mode].Rank) > 2 {
				continue
			}
			err := r.LogEvidence - exact[i]
			t.Logf("true R=%d R=%2d: exact %.3f estimate %.3f error %+.3f se %.3f", trueR, r.Rank, exact[i], r.LogEvidence, err, r.StdErr)
			if math.Abs(err) > 1 || math.Abs(err) > 3*r.StdErr {
				t.Errorf("true R=%d R=%d: error %+.3f with standard error %.3f", trueR, r.Rank, err, r.StdErr)
			}
		}
	}
}

func abs(a int) int {
	if a < 0 {
		return -a
	}
	return a
}

// Rank-1 Poisson NMF has an exact evidence; the papers' recipe lost these chains entirely. The
// estimate must be within 3 standard errors (plus half a nat for the ladder) of it, with the
// chains on the SG-MCMC kernel and on the Gibbs kernel.
func TestPoissonRank1MatchesExact(t *testing.T) {
	for _, gibbs := range []bool{false, true} {
		cfg := Default("nmf")
		cfg.Gibbs = gibbs
		if gibbs {
			cfg.Steps, cfg.Burnin = 200, 40
		}
		t.Run(map[bool]string{false: "sgmcmc", true: "gibbs"}[gibbs], func(t *testing.T) { poissonRank1MatchesExact(t, cfg) })
	}
}

func poissonRank1MatchesExact(t *testing.T, cfg Config) {
	for _, c := range []struct {
		shape []int
		rate  float64
		seed  uint64
	}{{[]int{30, 20}, 0.3, 1}, {[]int{30, 20}, 0.7, 2}, {[]int{12, 9}, 2, 3}, {[]int{50, 8}, 0.1, 4}} {
		d, rates := poissonData(t, c.shape, 3, c.rate, c.seed)
		exact, err := models.Rank1LogEvidence(d, rates)
		if err != nil {
			t.Fatal(err)
		}
		r := sweep(t, d, models.PoissonSpec("nmf", rates, models.LogScale), cfg, []int{1})[0]
		t.Logf("%v rate %v: exact %.3f estimate %.3f ± %.3f", c.shape, c.rate, exact, r.LogEvidence, r.StdErr)
		if e := math.Abs(r.LogEvidence - exact); e > 3*r.StdErr+0.5 {
			t.Errorf("%v rate %v: rank-1 estimate %.3f ± %.3f, exact %.3f", c.shape, c.rate, r.LogEvidence, r.StdErr, exact)
		}
	}
}

// On data generated with rank 3 the argmax over R = 1…6 is 3, for several datasets of each model.
func TestPoissonRankRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("rank recovery sweeps take about a minute")
	}
	for _, c := range []struct {
		model string
		shape []int
		rate  float64
		seeds []uint64
	}{
		{"nmf", []int{30, 20}, 0.3, []uint64{1, 2, 3}},
		{"cp", []int{10, 15, 20}, 0.5, []uint64{1, 2}},
	} {
		for _, seed := range c.seeds {
			d, rates := poissonData(t, c.shape, 3, c.rate, seed)
			res := sweep(t, d, models.PoissonSpec(c.model, rates, models.LogScale), Default(c.model), ranks(1, 6))
			best := res[0]
			var line []string
			for _, r := range res {
				if len(r.Diverged) > 0 {
					t.Errorf("%s seed %d R=%d diverged: %v", c.model, seed, r.Rank, r.Diverged)
				}
				if r.LogEvidence > best.LogEvidence {
					best = r
				}
				line = append(line, fmt.Sprintf("R=%d %.1f±%.1f", r.Rank, r.LogEvidence, r.StdErr))
			}
			t.Logf("%s seed %d: %s", c.model, seed, strings.Join(line, " "))
			if best.Rank != 3 {
				t.Errorf("%s seed %d: chose rank %d", c.model, seed, best.Rank)
			}
		}
	}
}

// Results are bit-identical for the same seed whatever the number of workers and whether the
// blocks of a part run on separate goroutines, and they change with the seed.
func TestDeterminism(t *testing.T) {
	d, rates := poissonData(t, []int{12, 10, 9}, 2, 0.5, 5)
	cfg := DefaultSGMCMC("cp")
	cfg.Ladder = evidence.Power(6, 4)
	cfg.Steps, cfg.Burnin, cfg.StartSteps = 80, 30, 10
	cfg.Blocks = 3
	spec := models.PoissonSpec("cp", rates, models.LogScale)
	p, err := NewProblem(d, spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	run := func(workers, cells int) []evidence.RankEvidence {
		old := parallelCells
		parallelCells = cells
		defer func() { parallelCells = old }()
		res, err := p.Sweep(context.Background(), []int{1, 2}, workers)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a := run(1, 1<<30)
	b := run(3, 0)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("results differ with workers and goroutines:\n%+v\n%+v", a[1], b[1])
	}
	cfg.Seed = 2
	p, _ = NewProblem(d, spec, cfg)
	c, _ := p.Sweep(context.Background(), []int{1, 2}, 0)
	if c[1].LogEvidence == a[1].LogEvidence {
		t.Errorf("a different seed gave the same evidence")
	}
}

// The parts schedule with control variates estimates the same evidence as full-data steps.
func TestPartsAgreeWithFullData(t *testing.T) {
	d, rates := poissonData(t, []int{30, 20}, 3, 0.3, 1)
	spec := models.PoissonSpec("nmf", rates, models.LogScale)
	full := sweep(t, d, spec, DefaultSGMCMC("nmf"), []int{1, 3})
	cfg := DefaultSGMCMC("nmf")
	cfg.Blocks = 2
	parts := sweep(t, d, spec, cfg, []int{1, 3})
	for i := range full {
		diff := parts[i].LogEvidence - full[i].LogEvidence
		se := math.Hypot(parts[i].StdErr, full[i].StdErr)
		t.Logf("R=%d: full %.2f ± %.2f, parts %.2f ± %.2f", full[i].Rank, full[i].LogEvidence, full[i].StdErr, parts[i].LogEvidence, parts[i].StdErr)
		if math.Abs(diff) > 3*se+1 {
			t.Errorf("R=%d: parts and full data differ by %.2f (combined se %.2f)", full[i].Rank, diff, se)
		}
	}
}

// A chain that blows up is reported with its rank, temperature and step, and its rank's evidence
// is not computed.
func TestDivergenceIsReported(t *testing.T) {
	d, rates := poissonData(t, []int{10, 8}, 2, 0.5, 1)
	cfg := DefaultSGMCMC("nmf")
	cfg.Sampler = "sgld"
	cfg.StepA, cfg.StepDecay = 1e6, 1
	cfg.Ladder = evidence.Power(4, 3)
	cfg.Steps, cfg.Burnin, cfg.Starts, cfg.StartSteps = 60, 20, 0, 0
	r := sweep(t, d, models.PoissonSpec("nmf", rates, models.Direct), cfg, []int{2})[0]
	if len(r.Diverged) == 0 || !math.IsNaN(r.LogEvidence) {
		t.Fatalf("no divergence reported: %+v", r)
	}
	if !strings.Contains(r.Diverged[0], "rank 2, t=") || !strings.Contains(r.Diverged[0], "step ") {
		t.Errorf("divergence message %q does not name rank, temperature and step", r.Diverged[0])
	}
}

// grownCP returns problems under cfg on a CP tensor (rank 2, 8×6×10) and on its first 6 slices,
// the data it grew from, with the final states of a cold sweep at rank 2 on the latter.
func grownCP(t *testing.T, cfg Config) (po, pf *Problem, states States) {
	t.Helper()
	full, rates := poissonData(t, []int{8, 6, 10}, 2, 0.5, 3)
	spec := models.PoissonSpec("cp", rates, models.LogScale)
	po, err := NewProblem(full.Slab(2, 0, 6), spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, states, err = po.SweepFrom(context.Background(), []int{2}, 0, nil); err != nil {
		t.Fatal(err)
	}
	if pf, err = NewProblem(full, spec, cfg); err != nil {
		t.Fatal(err)
	}
	return po, pf, states
}

// resumedTwice resumes rank 2 of pf from states on one worker and on three, checks that the two
// agree and that every chain resumed, and returns the evidence.
func resumedTwice(t *testing.T, pf *Problem, states States) []evidence.RankEvidence {
	t.Helper()
	a, _, err := pf.SweepFrom(context.Background(), []int{2}, 1, states)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := pf.SweepFrom(context.Background(), []int{2}, 3, states)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) || a[0].WarmChains != len(states) || len(a[0].Diverged) > 0 {
		t.Errorf("resumed sweeps differ, diverged or are not warm: %d and %d warm chains, evidence %v and %v", a[0].WarmChains, b[0].WarmChains, a[0].LogEvidence, b[0].LogEvidence)
	}
	return a
}

// Resuming on grown data keeps the saved rows, draws the new ones, runs the warm burn-in, and is
// bit-identical across reruns and worker counts; a state from larger data is refused.
func TestResumeOnGrownData(t *testing.T) {
	cfg := DefaultSGMCMC("cp")
	cfg.Ladder = evidence.Power(10, 4)
	cfg.Steps, cfg.Burnin, cfg.WarmBurnin, cfg.SettleSteps, cfg.Starts, cfg.StartSteps = 60, 30, 10, 7, 2, 15
	po, pf, states := grownCP(t, cfg)
	if len(states) != (len(cfg.Ladder)-1)*cfg.Chains || states[ChainID{Rank: 2, TIndex: 0}] != nil {
		t.Fatalf("%d final states (want one per chain above t = 0)", len(states))
	}
	id := ChainID{Rank: 2, TIndex: len(cfg.Ladder) - 1}
	s := states[id]
	w, err := pf.NewWalker(id)
	if err != nil {
		t.Fatal(err)
	}
	newRows, err := pf.warmStart(w, s)
	if err != nil {
		t.Fatal(err)
	}
	for k, f := range w.Model().Factors() {
		o := s.Factors[k]
		if !slices.Equal(w.Theta()[f.Offset:f.Offset+o.Rows*o.Cols], s.Theta[o.Offset:o.Offset+o.Rows*o.Cols]) {
			t.Errorf("mode %d: the saved rows were not kept", k)
		}
	}
	if len(newRows) != 1 || newRows[0][1]-newRows[0][0] != 4*2 {
		t.Errorf("new rows %v, want the 4 new slices of mode 2", newRows)
	}
	if w.burnin != cfg.WarmBurnin {
		t.Errorf("warm burn-in %d, want %d", w.burnin, cfg.WarmBurnin)
	}

	resumedTwice(t, pf, states)
	// Chains resume from the rung whose temperature, scaled by the growth, is nearest their own.
	g := pf.size / po.size
	moved := 0
	for ti := range cfg.Ladder {
		cid := ChainID{Rank: 2, TIndex: ti, Chain: 1}
		got, err := pf.ResumeFrom(func(_ context.Context, c ChainID) (*State, error) { return states[c], nil }).Start(context.Background(), cid)
		var want *State
		if ti > 0 {
			nt := cfg.Ladder.Nearest(min(1, cfg.Ladder[ti]*g))
			want = states[ChainID{Rank: 2, TIndex: nt, Chain: 1}]
			if nt != ti {
				moved++
			}
		}
		if err != nil || got != want {
			t.Errorf("rung %d (growth %.2f): resumed from the wrong state (%v)", ti, g, err)
		}
	}
	if !(g > 1.2) || moved == 0 {
		t.Errorf("growth %.2f moved %d chains to another rung", g, moved)
	}

	// (Chain 0 at t = 1 also accounts for the rank's basin check.)
	id1 := ChainID{Rank: 2, TIndex: len(cfg.Ladder) - 1, Chain: 1}
	sum, _, err := pf.Resume(context.Background(), id1, states[id1])
	if err != nil || !sum.Warm || sum.Steps != cfg.ChainSteps(id1, true, 3) || sum.Count != cfg.Steps-cfg.Burnin {
		t.Errorf("resumed chain: %+v, %v; want %d steps and %d records", sum, err, cfg.ChainSteps(id1, true, 3), cfg.Steps-cfg.Burnin)
	}

	// States whose basin is far worse than the grown data's best make their rank start cold: here
	// every factor entry e^−20 at t = 1, more e-folds from the data than the check's ascent climbs.
	bad := States{}
	for cid, st := range states {
		b := *st
		if cid.TIndex == len(cfg.Ladder)-1 {
			b.Theta = make([]float64, len(st.Theta))
			for i := range b.Theta {
				b.Theta[i] = -20
			}
		}
		bad[cid] = &b
	}
	if got, err := pf.ResumeFrom(func(_ context.Context, c ChainID) (*State, error) { return bad[c], nil }).Start(context.Background(), id1); err != nil || got != nil {
		t.Errorf("states in a poor basin were resumed (%v)", err)
	}
	if r, _, err := pf.SweepFrom(context.Background(), []int{2}, 0, bad); err != nil || r[0].WarmChains != 0 {
		t.Errorf("rank with states in a poor basin: %d warm chains, %v", r[0].WarmChains, err)
	}

	// Blocked problems resume too (new rows settle on all cells, then the parts take over).
	cfgB := cfg
	cfgB.Blocks = 2
	pb, err := NewProblem(pf.Data, pf.Spec, cfgB)
	if err != nil {
		t.Fatal(err)
	}
	if r, _, err := pb.SweepFrom(context.Background(), []int{2}, 0, states); err != nil || len(r[0].Diverged) > 0 || r[0].WarmChains != len(states) {
		t.Errorf("blocked resume: %v, %+v", err, r)
	}

	_, big, err := pf.SweepFrom(context.Background(), []int{2}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := po.Resume(context.Background(), id, big[id]); err == nil || !strings.Contains(err.Error(), "not a growth") {
		t.Errorf("a state of larger data was accepted: %v", err)
	}
}

// Gibbs chains resume from saved states too: the rows the data gained are drawn in the first
// sweep (no settling), the warm burn-in is counted in sweeps, the records carry the Stein variate
// about the grown data's mode, and the result does not depend on the number of workers.
func TestGibbsResumeOnGrownData(t *testing.T) {
	cfg := Default("cp")
	cfg.Ladder = evidence.Power(6, 4)
	cfg.Steps, cfg.Burnin, cfg.WarmBurnin, cfg.Starts, cfg.StartSteps = 20, 10, 4, 2, 15
	_, pf, states := grownCP(t, cfg)
	resumedTwice(t, pf, states)
	id := ChainID{Rank: 2, TIndex: 3, Chain: 1}
	sum, _, err := pf.Resume(context.Background(), id, states[id])
	if want := cfg.ChainSteps(id, true, 3); err != nil || !sum.Warm || sum.Steps != want || sum.Count != cfg.Steps-cfg.Burnin || len(sum.SteinM2) == 0 || !(sum.SteinM2[0] > 0) {
		t.Errorf("resumed chain: %+v, %v; want %d steps (passes), %d records and the variate", sum, err, want, cfg.Steps-cfg.Burnin)
	}
}

// listingZeros returns the matrix m (cells in row-major order) as a table that lists every cell,
// zeros included, as most people export a matrix.
func listingZeros(t testing.TB, m *tensor.Sparse) *tensor.Sparse {
	t.Helper()
	I, J := m.Shape[0], m.Shape[1]
	dense, err := tensor.New(m.Shape, I*J)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range I {
		for j := range J {
			v := 0.0
			if n < m.NNZ() && int(m.Coords[0][n]) == i && int(m.Coords[1][n]) == j {
				v = m.Values[n]
				n++
			}
			dense.Append([]int{i, j}, v)
		}
	}
	if n != m.NNZ() {
		t.Fatalf("%d of %d cells placed: not in row-major order", n, m.NNZ())
	}
	return dense
}

// A count table that lists its zeros is the same data as one that leaves them out: the sweep must
// give the same numbers, and its steps must not read the zeros.
func TestStoredZerosCostNothing(t *testing.T) {
	sparse, rates := poissonData(t, []int{12, 9}, 2, 1, 5)
	dense := listingZeros(t, sparse)
	if dense.NNZ() != 12*9 || dense.NNZ() == sparse.NNZ() {
		t.Fatalf("test data: %d cells listed, %d non-zeros", dense.NNZ(), sparse.NNZ())
	}
	spec := models.PoissonSpec("nmf", rates, models.LogScale)
	for _, blocks := range []int{1, 3} {
		cfg := DefaultSGMCMC("nmf")
		cfg.Blocks = blocks
		cfg.Ladder = evidence.Power(4, 4)
		cfg.Steps, cfg.Burnin = 40, 10
		want := sweep(t, sparse, spec, cfg, []int{2})[0]
		got := sweep(t, dense, spec, cfg, []int{2})[0]
		if got.LogEvidence != want.LogEvidence || got.CellEvals != want.CellEvals {
			t.Errorf("B=%d: with zeros listed %v (%d cell evaluations), without %v (%d)", blocks, got.LogEvidence, got.CellEvals, want.LogEvidence, want.CellEvals)
		}
	}
}

// A chain's cell evaluations count the values its passes read: every cell above rank 1, and the
// margins (a value per row of each mode) at rank 1, whose passes read nothing else.
func TestCellEvalsCountWhatIsRead(t *testing.T) {
	d, rates := poissonData(t, []int{12, 9}, 2, 1, 5)
	spec := models.PoissonSpec("nmf", rates, models.LogScale)
	cfg := Default("nmf")
	cfg.Ladder = evidence.Power(4, 4)
	cfg.Steps, cfg.Burnin, cfg.Starts, cfg.Relax, cfg.Descent = 20, 5, 0, 0, 0
	p, err := NewProblem(d, spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for R, reads := range map[int]int{1: 12 + 9, 2: d.NNZ()} {
		s, err := p.RunChain(context.Background(), ChainID{Rank: R, TIndex: 2})
		if err != nil {
			t.Fatal(err)
		}
		if s.Steps == 0 || s.CellEvals != int64(s.Steps*reads) {
			t.Errorf("rank %d: %d cell evaluations over %d passes, want %d per pass", R, s.CellEvals, s.Steps, reads)
		}
	}
}

// A model long enough for its parameter loops to be cut into chunks (more rows than par.MinChunk),
// and for the Gibbs kernel to move its rows in chunks, must give the same chain on one core as on
// four.
func TestLongModelDoesNotDependOnCores(t *testing.T) {
	d, rates := poissonData(t, []int{par.MinChunk + 500, 4}, 2, 2, 3)
	chainsDoNotDependOnCores(t, d, models.PoissonSpec("nmf", rates, models.LogScale))
}

// chainsDoNotDependOnCores runs a chain of the spec's model on data with more rows than a chunk
// with its SG-MCMC defaults, on blocks, and with its Gibbs defaults, on one core and on four,
// and wants the same bits.
func chainsDoNotDependOnCores(t *testing.T, d *tensor.Sparse, spec models.Spec) {
	t.Helper()
	sg := DefaultSGMCMC(spec.Name)
	blocked := sg
	blocked.Blocks = 2
	for name, cfg := range map[string]Config{"sgmcmc": sg, "sgmcmc B=2": blocked, "gibbs": Default(spec.Name)} {
		cfg.Ladder = evidence.Power(2, 4)
		cfg.Steps, cfg.Burnin, cfg.Starts, cfg.StartSteps = 12, 4, 1, 3
		p, err := NewProblem(d, spec, cfg)
		if err != nil {
			t.Fatal(err)
		}
		run := func(procs int) evidence.ChainSummary {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			s, err := p.RunChain(context.Background(), ChainID{Rank: 2, TIndex: 2, Chain: 0})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		one, four := run(1), run(4)
		if one.Mean != four.Mean || one.M2 != four.M2 || one.Mean == 0 {
			t.Errorf("%s: 1 core mean %v (M2 %v), 4 cores %v (M2 %v)", name, one.Mean, one.M2, four.Mean, four.M2)
		}
	}
}

// A Gibbs chain from far below its rung's typical set drops the records of that transient
// (Config.Truncate) and sweeps no more than it was planned to: its steps stay what ChainSteps
// counts, and the records it keeps lie above those of the same chain that keeps them all.
func TestTruncationDropsTheTransientAndSweepsNoMore(t *testing.T) {
	d, rates := poissonData(t, []int{20, 15}, 2, 0.5, 9)
	spec := models.PoissonSpec("nmf", rates, models.LogScale)
	cfg := Default("nmf")
	cfg.Steps, cfg.Burnin = 4*120, 0
	id := ChainID{Rank: 2, TIndex: 1, Chain: 0}
	start := make([]float64, 2*(20+15))
	for i := range start {
		start[i] = -4 // factors of e⁻⁴, whose λ are far below the counts
	}
	run := func(truncate bool) evidence.ChainSummary {
		c := cfg
		c.Truncate = truncate
		p, err := NewProblem(d, spec, c)
		if err != nil {
			t.Fatal(err)
		}
		s, err := p.RunFrom(context.Background(), id, 1, start)
		if err != nil || s.Divergence != "" {
			t.Fatalf("truncate %v: %v %s", truncate, err, s.Divergence)
		}
		return s
	}
	cut, all := run(true), run(false)
	if all.Count != 120 || cut.Count >= all.Count || cut.Count < all.Count/2 {
		t.Errorf("%d records kept of %d (without the cut %d): the cut keeps at least half and drops the transient", cut.Count, 120, all.Count)
	}
	if cut.Steps != all.Steps || cut.Steps != cfg.Steps {
		t.Errorf("%d steps with the cut, %d without, %d planned", cut.Steps, all.Steps, cfg.Steps)
	}
	if !(cut.Mean > all.Mean) {
		t.Errorf("kept records' mean %.2f not above all records' %.2f", cut.Mean, all.Mean)
	}
}
