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
		} else {
			cfg.Start = ModesStart // the walk down the ladder sweeps by the Gibbs kernel
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

// Results are bit-identical for the same seed whatever the number of cores and whether the
// blocks of a part run on separate goroutines, and they change with the seed.
func TestDeterminism(t *testing.T) {
	d, rates := poissonData(t, []int{12, 10, 9}, 2, 0.5, 5)
	cfg := DefaultSGMCMC("cp")
	cfg.Ladder = evidence.Power(6, 4)
	cfg.Steps, cfg.Burnin, cfg.StartSteps = 80, 30, 10
	cfg.Blocks = 3
	spec := models.PoissonSpec("cp", rates, models.LogScale)
	run := func(procs, cells int) []evidence.RankEvidence {
		old := parallelCells
		parallelCells = cells
		defer func() { parallelCells = old }()
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		return sweep(t, d, spec, cfg, []int{1, 2})
	}
	a := run(1, 1<<30)
	b := run(3, 0)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("results differ with cores and goroutines:\n%+v\n%+v", a[1], b[1])
	}
	cfg.Seed = 2
	if c := sweep(t, d, spec, cfg, []int{1, 2}); c[1].LogEvidence == a[1].LogEvidence {
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
	cfg.Steps, cfg.Burnin, cfg.Start, cfg.StartSteps = 60, 20, PriorStart, 0
	r := sweep(t, d, models.PoissonSpec("nmf", rates, models.Direct), cfg, []int{2})[0]
	if len(r.Diverged) == 0 || !math.IsNaN(r.LogEvidence) {
		t.Fatalf("no divergence reported: %+v", r)
	}
	if !strings.Contains(r.Diverged[0], "rank 2, t=") || !strings.Contains(r.Diverged[0], "step ") {
		t.Errorf("divergence message %q does not name rank, temperature and step", r.Diverged[0])
	}
}

// grownCP returns problems under cfg on a CP tensor (rank 2, 8×6×10) and on its first 6 slices,
// the data it grew from.
func grownCP(t *testing.T, cfg Config) (po, pf *Problem) {
	t.Helper()
	full, rates := poissonData(t, []int{8, 6, 10}, 2, 0.5, 3)
	spec := models.PoissonSpec("cp", rates, models.LogScale)
	po, err := NewProblem(full.Slab(2, 0, 6), spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if pf, err = NewProblem(full, spec, cfg); err != nil {
		t.Fatal(err)
	}
	return po, pf
}

// finalStates runs every SG-MCMC chain of rank on p cold, from the rank's start stage, and
// returns their final states.
func finalStates(t *testing.T, p *Problem, rank int) map[ChainID]*models.State {
	t.Helper()
	st, err := p.StartRank(context.Background(), rank)
	if err != nil {
		t.Fatal(err)
	}
	states := map[ChainID]*models.State{}
	for q, rungs := range st.States {
		for i, s := range rungs {
			id := ChainID{Rank: rank, TIndex: i, Chain: q}
			_, final, err := p.RunChain(context.Background(), id, s.Theta)
			if err != nil {
				t.Fatal(err)
			}
			if final != nil {
				states[id] = final
			}
		}
	}
	return states
}

// An SG-MCMC chain resumed on grown data keeps the saved rows, draws the new ones, settles them,
// runs the warm burn-in and is bit-identical across the number of cores; blocked problems resume
// too; a state from larger data is refused.
func TestResumeOnGrownData(t *testing.T) {
	cfg := DefaultSGMCMC("cp")
	cfg.Ladder = evidence.Power(10, 4)
	cfg.Steps, cfg.Burnin, cfg.WarmBurnin, cfg.SettleSteps, cfg.Starts, cfg.StartSteps = 60, 30, 10, 7, 2, 15
	po, pf := grownCP(t, cfg)
	states := finalStates(t, po, 2)
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
	resume := func(p *Problem, procs int) evidence.ChainSummary {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		sum, _, err := p.Resume(context.Background(), id, s)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	one, three := resume(pf, 1), resume(pf, 3)
	if !reflect.DeepEqual(one, three) || !one.Warm || one.Divergence != "" || one.Steps != cfg.ChainSteps(id, true) || one.Count != cfg.Steps-cfg.Burnin {
		t.Errorf("resumed chain %+v on one core, %+v on three; want %d steps and %d records", one, three, cfg.ChainSteps(id, true), cfg.Steps-cfg.Burnin)
	}
	// Blocked problems resume too (new rows settle on all cells, then the parts take over).
	cfgB := cfg
	cfgB.Blocks = 2
	pb, err := NewProblem(pf.Data, pf.Spec, cfgB)
	if err != nil {
		t.Fatal(err)
	}
	if sum := resume(pb, 2); sum.Divergence != "" || !sum.Warm {
		t.Errorf("blocked resume: %+v", sum)
	}
	big := finalStates(t, pf, 2)
	if _, _, err := po.Resume(context.Background(), id, big[id]); err == nil || !strings.Contains(err.Error(), "not a growth") {
		t.Errorf("a state of larger data was accepted: %v", err)
	}
}

// A racing rank resumes on grown data from the final states of the run before
// (StartRankFrom): each chain from its replica's state at the rung its temperature maps to under
// the growth, warm; the same on any number of cores; and a replica whose saved states lie in a
// basin far worse than the grown data's best starts cold instead. The run before is short (24
// sweeps, 2 starts), and at seeds 1 and 2 of 1–4 the basin check sends a replica cold: the test
// runs at seed 3, where both resume.
func TestGibbsResumeOnGrownData(t *testing.T) {
	cfg := Default("cp")
	cfg.Ladder = evidence.Power(10, 4)
	cfg.Steps, cfg.Burnin, cfg.WarmBurnin, cfg.Starts, cfg.StartEM, cfg.Relax, cfg.Descent, cfg.Ascent, cfg.Seed = 24, 8, 4, 2, 20, 20, 2, 2, 3
	po, pf := grownCP(t, cfg)
	st, err := po.StartRank(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	states := map[ChainID]*models.State{}
	for q, rungs := range st.States {
		for i, s := range rungs {
			id := ChainID{Rank: 2, TIndex: i, Chain: q}
			state := &s
			for round := 0; round <= po.Doublings(2); round++ {
				if _, state, err = po.Extend(context.Background(), id, round, state); err != nil || state == nil {
					t.Fatalf("%+v: %v", id, err)
				}
			}
			if state.Theta != nil {
				if states[id], err = po.StateOf(2, state.Theta); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	load := func(states map[ChainID]*models.State) func(context.Context, ChainID) (*models.State, error) {
		return func(_ context.Context, id ChainID) (*models.State, error) { return states[id], nil }
	}
	start := func(procs int, states map[ChainID]*models.State) (*RankStart, bool) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		rs, warm, err := pf.StartRankFrom(context.Background(), 2, load(states))
		if err != nil {
			t.Fatal(err)
		}
		return rs, warm
	}
	warm1, ok1 := start(1, states)
	warm3, ok3 := start(3, states)
	if !ok1 || !ok3 || !reflect.DeepEqual(warm1, warm3) {
		t.Fatalf("warm starts: resumed %v on one core, %v on three, equal %v", ok1, ok3, reflect.DeepEqual(warm1, warm3))
	}
	g := pf.size / po.size
	moved := 0
	for i, tt := range cfg.Ladder[1:] {
		i++
		j := cfg.Ladder.Nearest(min(1, tt*g))
		saved := states[ChainID{Rank: 2, TIndex: j, Chain: 1}]
		got := warm1.States[1][i]
		if !got.Warm || !slices.Equal(got.Theta[:len(saved.Theta)-4*2], saved.Theta[:len(saved.Theta)-4*2]) {
			t.Errorf("rung %d (growth %.2f): not resumed from rung %d's state", i, g, j)
		}
		if j != i {
			moved++
		}
	}
	if !(g > 1.2) || moved == 0 {
		t.Errorf("growth %.2f moved %d chains to another rung", g, moved)
	}
	id := ChainID{Rank: 2, TIndex: len(cfg.Ladder) - 1, Chain: 1}
	sum, _, err := pf.Extend(context.Background(), id, 0, &warm1.States[1][len(cfg.Ladder)-1])
	if err != nil || !sum.Warm || sum.Divergence != "" {
		t.Errorf("warm chain: %+v, %v", sum, err)
	}
	// States whose basin is far worse than the grown data's best start cold: here every factor
	// entry e^−20 at t = 1, more e-folds from the data than the check's EM climbs.
	bad := map[ChainID]*models.State{}
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
	if rs, warm := start(2, bad); warm || rs.States[0][1].Warm || rs.Check == nil {
		t.Errorf("states in a poor basin were resumed (warm %v)", warm)
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
	cfg.Steps, cfg.Burnin, cfg.Rank1 = 20, 5, nil
	cfg = cfg.With(SteinName, false)
	p, err := NewProblem(d, spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for R, reads := range map[int]int{1: 12 + 9, 2: d.NNZ()} {
		m, err := p.model(R)
		if err != nil {
			t.Fatal(err)
		}
		theta := make([]float64, m.Dim())
		m.SamplePrior(rng.New(1, uint64(R)), theta)
		s, _, err := p.Extend(context.Background(), ChainID{Rank: R, TIndex: 2}, p.Doublings(R), &ChainState{Theta: theta})
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
// with its SG-MCMC defaults, on blocks, and with its Gibbs defaults (a round of the race), from its
// rank's start stage, on one core and on four, and wants the same bits.
func chainsDoNotDependOnCores(t *testing.T, d *tensor.Sparse, spec models.Spec) {
	t.Helper()
	sg := DefaultSGMCMC(spec.Name)
	blocked := sg
	blocked.Blocks = 2
	gibbs := Default(spec.Name)
	gibbs.Relax, gibbs.Descent, gibbs.StartEM = 3, 2, 3
	for name, cfg := range map[string]Config{"sgmcmc": sg, "sgmcmc B=2": blocked, "gibbs": gibbs} {
		cfg.Ladder = evidence.Power(2, 4)
		cfg.Steps, cfg.Burnin, cfg.Starts, cfg.StartSteps = 12, 4, 1, 3
		p, err := NewProblem(d, spec, cfg)
		if err != nil {
			t.Fatal(err)
		}
		run := func(procs int) evidence.ChainSummary {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			id := ChainID{Rank: 2, TIndex: 2, Chain: 0}
			st, err := p.StartRank(context.Background(), 2)
			if err != nil {
				t.Fatal(err)
			}
			var s evidence.ChainSummary
			if cfg.Gibbs {
				s, _, err = p.Extend(context.Background(), id, 0, &st.States[0][2])
			} else {
				s, _, err = p.RunChain(context.Background(), id, st.States[0][2].Theta)
			}
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
// (Truncation) and sweeps no more than it was planned to: its steps stay what ChainSteps
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
		c := cfg.With(TruncateName, truncate)
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
