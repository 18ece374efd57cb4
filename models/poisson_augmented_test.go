package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
	"weak"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stirank/stirank/internal/logtab"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// batchMean returns the mean of equal batches' means and its standard error.
func batchMean(means []float64) (float64, float64) {
	n := float64(len(means))
	mean, ss := 0.0, 0.0
	for _, v := range means {
		mean += v / n
	}
	for _, v := range means {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / (n - 1) / n)
}

// At rank 1 the power posterior's mean log-likelihood f(t) = d log Z(t)/dt is exact; a long run of
// the kernel at t must average to it, near the prior (t = 2⁻¹⁰, where almost every rounded count
// is zero) as near the posterior. The temperatures and the difference step are dyadic, so the
// scaled margins of every mode sum to the same total exactly. Without the Metropolis–Hastings
// correction (every proposal accepted) the run settles on the rounded counts' surrogate instead
// and misses f(t) by many standard errors (checked). Both kernels are checked: the split moves of
// every rank and the rank-1 draws from the exact conditional (drawRank1Row; with the margins' t
// left out of the Gamma's shape it misses by hundreds of standard errors, checked).
func TestAugmentedKernelKeepsThePowerPosterior(t *testing.T) {
	type kernelCase struct {
		name  string
		shape []int
		param Param
		rank1 bool
	}
	var cases []kernelCase
	for _, rank1 := range []bool{false, true} {
		cases = append(cases, kernelCase{"nmf", []int{6, 5}, LogScale, rank1}, kernelCase{"nmf", []int{6, 5}, Direct, rank1},
			kernelCase{"cp", []int{4, 3, 3}, LogScale, rank1})
	}
	for _, c := range cases {
		rates := make([]float64, len(c.shape))
		for m := range rates {
			rates[m] = 0.3
		}
		data, _, err := GeneratePoisson(rng.New(5, 1), c.shape, 1, rates)
		if err != nil {
			t.Fatal(err)
		}
		param := c.param
		m, err := NewPoisson(c.name, data, 1, rates, param)
		if err != nil {
			t.Fatal(err)
		}
		for _, temp := range []float64{1.0 / 1024, 1.0 / 128, 0.25, 0.75} {
			h := temp / 1024
			want := (rank1LogZ(t, data, rates, temp+h) - rank1LogZ(t, data, rates, temp-h)) / (2 * h)
			r := rng.New(5, 2, uint64(param))
			theta := make([]float64, m.Dim())
			m.SamplePrior(r, theta)
			k, e := m.newAugmented(c.rank1), m.NewEval()
			acc := make([]float64, len(c.shape))
			const burn, sweeps, batches = 500, 40000, 40
			means := make([]float64, batches)
			accepted := 0.0
			for s := range burn + sweeps {
				ll := k.Sweep(r, temp, theta, acc)
				if s%1000 == 0 {
					e.Prepare(theta)
					if want := LogLik(e, m); math.Abs(ll-want) > 1e-9*math.Abs(want) {
						t.Fatalf("%v %v rank-1 draws %v t=%v sweep %d: Sweep returned log-likelihood %v, the evaluator %v", c.shape, param, c.rank1, temp, s, ll, want)
					}
				}
				if s < burn {
					continue
				}
				means[(s-burn)*batches/sweeps] += ll * batches / sweeps
				for _, a := range acc {
					accepted += a / float64(len(acc)) / sweeps
				}
			}
			mean, se := batchMean(means)
			t.Logf("%v %v rank-1 draws %v t=%v: mean log-lik %.3f ± %.3f, exact %.3f; acceptance %.3f", c.shape, param, c.rank1, temp, mean, se, want, accepted)
			if math.Abs(mean-want) > 4*se || se > 0.005*math.Abs(want) {
				t.Errorf("%v %v rank-1 draws %v t=%v: mean log-likelihood %.3f ± %.3f, exact f(t) = %.3f", c.shape, param, c.rank1, temp, mean, se, want)
			}
		}
	}
}

// The kernel's allocation over components, checked at t = 1 and R = 2 by Geweke's (2004)
// successive-conditional test: alternating X ~ p(X | θ) with a sweep on θ given X leaves θ
// distributed as its prior, Exp(1) in every entry, only if the sweep leaves p(θ | X) invariant.
func TestAugmentedKernelGeweke(t *testing.T) {
	const R, iters, batches = 2, 40000, 40
	shape := []int{3, 2}
	rates := []float64{1, 1}
	r := rng.New(5, 3)
	theta := make([]float64, (shape[0]+shape[1])*R)
	for i := range theta {
		theta[i] = r.ExpFloat64()
	}
	means := make([]float64, batches)
	for it := range iters {
		data := matrixCounts(t, r, shape, R, theta)
		m, err := NewPoisson("nmf", data, R, rates, Direct)
		if err != nil {
			t.Fatal(err)
		}
		m.NewAugmented().Sweep(r, 1, theta, make([]float64, 2))
		// The first factor's entries of component 0 only: a wrong split shows there first.
		s := 0.0
		for i := range shape[0] {
			s += theta[i*R]
		}
		means[it*batches/iters] += s / float64(shape[0]) * batches / iters
	}
	mean, se := batchMean(means)
	t.Logf("mean of W[:, 0] %.4f ± %.4f; prior mean 1", mean, se)
	if math.Abs(mean-1) > 4*se || se > 0.05 {
		t.Errorf("mean of W[:, 0] %.4f ± %.4f, prior mean 1", mean, se)
	}
}

// transferSweep makes transferRow's moves alone on every row of every factor at t.
func transferSweep(a *poissonAugmented, r *rand.Rand, t float64, theta []float64) {
	a.load(theta)
	a.current = false
	a.transfer(r.Uint64(), t)
	a.store(theta)
}

// The transfer moves alone keep the posterior: θ drawn from the prior and X from p(X | θ) make θ a
// draw of p(θ | X), which moves that keep p(θ | X) leave one, so after them θ is still distributed
// as its prior, Exp(0.3) in every entry (t = 1: a wrong likelihood ratio shows; the cells' means
// are about 30, so the likelihood bends the lines); at t = 0 they must
// keep the prior itself (a wrong prior ratio or Jacobian shows). The moves keep Σλ and never leave
// the lines they move on, so a single chain could not test them: every replica starts afresh. The
// pairs are those of the default rule and, for a test of the move alone, every pair; a matrix and
// a 3-way tensor, whose cells read two other factors' rows.
func TestTransferKeepsThePosterior(t *testing.T) {
	const R, replicas, batches, moves = 3, 40000, 40, 4
	defer func(c float64) { transferCos = c }(transferCos)
	for _, shape := range [][]int{{3, 2}, {3, 2, 2}} {
		info, err := ForOrder(len(shape))
		if err != nil {
			t.Fatal(err)
		}
		rates := make([]float64, len(shape))
		offsets := make([]int, len(shape)+1)
		for m := range shape {
			rates[m] = 0.3
			offsets[m+1] = offsets[m] + shape[m]*R
		}
		cells := 1
		for _, n := range shape {
			cells *= n
		}
		for _, c := range []struct{ temp, cos, moved float64 }{{1, 0, 0.5}, {0, 0, 0.5}, {1, transferCos, 0.1}} {
			temp := c.temp
			transferCos = c.cos
			r := rng.New(5, 4)
			theta := make([]float64, offsets[len(shape)])
			first, second := make([]float64, batches), make([]float64, batches)
			moved := 0
			idx := make([]int, len(shape))
			for rep := range replicas {
				for i := range theta {
					theta[i] = r.ExpFloat64() / rates[0]
				}
				data, err := tensor.New(shape, cells)
				if err != nil {
					t.Fatal(err)
				}
				for n := range cells {
					for m, rest := len(shape)-1, n; m >= 0; m-- {
						idx[m], rest = rest%shape[m], rest/shape[m]
					}
					lam := 0.0
					for c := range R {
						p := 1.0
						for m, i := range idx {
							p *= theta[offsets[m]+i*R+c]
						}
						lam += p
					}
					if x := (distuv.Poisson{Lambda: lam, Src: r}).Rand(); x > 0 {
						data.Append(idx, x)
					}
				}
				m, err := NewPoisson(info.Name, data, R, rates, Direct)
				if err != nil {
					t.Fatal(err)
				}
				a := m.newAugmented(false)
				before := theta[0]
				for range moves {
					transferSweep(a, r, temp, theta)
				}
				if theta[0] != before {
					moved++
				}
				for _, v := range theta {
					v *= rates[0]
					first[rep*batches/replicas] += v / float64(len(theta)) * batches / replicas
					second[rep*batches/replicas] += v * v / float64(len(theta)) * batches / replicas
				}
			}
			m1, se1 := batchMean(first)
			m2, se2 := batchMean(second)
			t.Logf("%s %v, t = %g, pairs of cosine ≥ %g: mean %.4f ± %.4f (1), mean square %.4f ± %.4f (2); θ[0] moved in %d of %d replicas", info.Name, shape, temp, c.cos, m1, se1, m2, se2, moved, replicas)
			if math.Abs(m1-1) > 4*se1 || math.Abs(m2-2) > 4*se2 || se1 > 0.01 {
				t.Errorf("%s, t = %g: mean %.4f ± %.4f, mean square %.4f ± %.4f; rate·θ, Exp(1), has 1 and 2", info.Name, temp, m1, se1, m2, se2)
			}
			if float64(moved) < c.moved*replicas {
				t.Errorf("%s, t = %g: θ[0] moved in %d of %d replicas", info.Name, temp, moved, replicas)
			}
		}
	}
}

// A sweep of the kernel on the embedded default's shape at rank 5, against a full-data gradient
// pass of the same model (what an SG-MCMC step on full data costs): compare the two ns/op.
func BenchmarkAugmentedSweep(b *testing.B) {
	rates := []float64{0.3, 0.3}
	data, _, err := GeneratePoisson(rng.New(3, 0xda7a), []int{30, 20}, 3, rates)
	if err != nil {
		b.Fatal(err)
	}
	m, err := NewPoisson("nmf", data, 5, rates, LogScale)
	if err != nil {
		b.Fatal(err)
	}
	r := rng.New(3, 1)
	theta := make([]float64, m.Dim())
	m.SamplePrior(r, theta)
	b.Run("sweep", func(b *testing.B) {
		k := m.NewAugmented()
		acc := make([]float64, 2)
		for b.Loop() {
			k.Sweep(r, 0.5, theta, acc)
		}
	})
	b.Run("gradient", func(b *testing.B) {
		e := m.NewEval()
		grad := make([]float64, m.Dim())
		for b.Loop() {
			e.Prepare(theta)
			LogLikGrad(e, m, 1, grad)
		}
	})
}

// A sweep of the kernel on a sparse CP tensor of 10⁵ non-zeros with heavy-tailed rows (a tenth of
// the SPL 2018 Facebook tensor in each of its first two modes), at ranks 1 and 5: on more than one
// core the rows of a factor are swept concurrently.
func BenchmarkAugmentedSweepSparse(b *testing.B) {
	shape := []int{4239, 3999, 151}
	rate := math.Cbrt(5 * 4239 * 3999 * 151 / 1e5)
	rates := []float64{rate, rate, rate}
	data, _, _, err := GeneratePoissonActive(rng.New(3, 0xda7a), shape, 5, rates, 0.3)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d non-zeros", data.NNZ())
	for _, R := range []int{1, 5} {
		m, err := NewPoisson("cp", data, R, rates, LogScale)
		if err != nil {
			b.Fatal(err)
		}
		// Every timed sweep starts from the same point, 20 sweeps from a prior draw.
		r := rng.New(3, 2)
		start := make([]float64, m.Dim())
		m.SamplePrior(r, start)
		k := m.NewAugmented()
		acc := make([]float64, 3)
		for range 20 {
			k.Sweep(r, 0.5, start, acc)
		}
		theta := make([]float64, m.Dim())
		b.Run(fmt.Sprintf("R=%d", R), func(b *testing.B) {
			for b.Loop() {
				copy(theta, start)
				k.Sweep(r, 0.5, theta, acc)
			}
		})
	}
}

// TestAugmentedLayoutShared: the models of every rank on one dataset share its layout, and
// another dataset gets its own.
func TestAugmentedLayoutShared(t *testing.T) {
	data, _, err := GeneratePoisson(rng.New(1, 1), []int{6, 5, 4}, 2, []float64{1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := GeneratePoisson(rng.New(1, 2), []int{6, 5, 4}, 2, []float64{1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	var lays []*augmentedLayout
	for i, d := range []*tensor.Sparse{data, data, other} {
		m, err := NewPoisson("cp", d, i+1, []float64{1, 1, 1}, LogScale)
		if err != nil {
			t.Fatal(err)
		}
		lays = append(lays, m.augmentedLayout())
	}
	if lays[0] != lays[1] || lays[0] == lays[2] {
		t.Errorf("layouts of ranks 1 and 2 of one dataset shared: %v; of two datasets: %v", lays[0] == lays[1], lays[0] == lays[2])
	}
}

// TestAugmentedLayoutReleased: a dataset's layout goes when the dataset is collected.
func TestAugmentedLayoutReleased(t *testing.T) {
	held := func(key weak.Pointer[tensor.Sparse]) bool {
		layouts.Lock()
		defer layouts.Unlock()
		return layouts.m[key] != nil
	}
	var key weak.Pointer[tensor.Sparse]
	func() {
		data, _, err := GeneratePoisson(rng.New(1, 3), []int{6, 5}, 2, []float64{1, 1})
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewPoisson("nmf", data, 2, []float64{1, 1}, LogScale)
		if err != nil {
			t.Fatal(err)
		}
		m.NewAugmented()
		key = weak.Make(data)
	}()
	if !held(key) {
		t.Fatal("no layout for the dataset")
	}
	for range 100 {
		runtime.GC()
		if !held(key) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Error("the layout of a collected dataset is still held")
}

// Ascend is EM for the log-space mode of the power posterior: no sweep may lower the tempered log
// posterior t·log p(X | θ) + log p(θ) (log parameterisation, Jacobian included), and where the
// sweeps stop moving its gradient must vanish — a step that updated an entry towards anything
// other than its conditional mode stops somewhere else and fails the second check. NMF, CP and
// NMF with a fixed block are checked at two temperatures; the evaluator's λ holds the fixed
// entries, so a sweep that moved them would stop where its gradient does not vanish.
func TestAugmentedAscendFindsTheMode(t *testing.T) {
	build := smallPoissonModels(t, 8)
	for _, name := range []string{"nmf", "cp", "ssnmf"} {
		m, err := build[name]()
		if err != nil {
			t.Fatal(err)
		}
		for _, temp := range []float64{0.3, 1} {
			theta := make([]float64, m.Dim())
			m.SamplePrior(rng.New(8, 3), theta)
			k, e := m.NewAugmented(), m.NewEval()
			objective := func(grad []float64) float64 {
				e.Prepare(theta)
				return e.LogPrior(grad) + LogLikGrad(e, m, temp, grad)
			}
			prev := objective(nil)
			for s := range 20000 {
				k.Ascend(temp, theta)
				cur := objective(nil)
				if cur < prev-1e-9*math.Abs(prev) {
					t.Fatalf("%s t=%v: sweep %d lowered the tempered log posterior from %.9g to %.9g", name, temp, s, prev, cur)
				}
				prev = cur
			}
			grad := make([]float64, m.Dim())
			objective(grad)
			worst := 0.0
			for _, g := range grad {
				worst = max(worst, math.Abs(g))
			}
			t.Logf("%s t=%v: tempered log posterior %.6f, largest gradient entry %.2g", name, temp, prev, worst)
			if worst > 1e-3 {
				t.Errorf("%s t=%v: EM stopped where the gradient has an entry of %.3g", name, temp, worst)
			}
		}
	}
}

// At rank 1 the evaluator reads the data's margins instead of its cells (Poisson.rank1): its
// log-likelihood, gradient and Stein variates must be what the cells give, cell by cell, and EM
// from the margins must climb to the mode EM from the cells reaches.
func TestRank1EvaluatorReadsTheMargins(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape []int
		param Param
	}{{"nmf", []int{12, 9}, LogScale}, {"nmf", []int{12, 9}, Direct}, {"cp", []int{6, 5, 4}, LogScale}, {"cp", []int{6, 5, 4}, Direct}} {
		rates := []float64{0.5, 0.5, 0.5}[:len(c.shape)]
		data, _, err := GeneratePoisson(rng.New(4, 1), c.shape, 2, rates)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewPoisson(c.name, data, 1, rates, c.param)
		if err != nil {
			t.Fatal(err)
		}
		r := rng.New(4, 2)
		theta, center := make([]float64, m.Dim()), make([]float64, m.Dim())
		m.SamplePrior(r, theta)
		m.SamplePrior(r, center)
		e := m.newEval()
		e.Prepare(theta)
		all := make([]int32, m.NumCells())
		for i := range all {
			all[i] = int32(i)
		}
		gGot, gWant := make([]float64, m.Dim()), make([]float64, m.Dim())
		got, want := e.Cells(Cells{Lo: 0, Hi: m.NumCells()}, 0.7, gGot), e.Cells(Cells{Lo: 0, Hi: m.NumCells(), Index: all}, 0.7, gWant)
		if math.Abs(got-want) > 1e-12*math.Abs(want) {
			t.Errorf("%s %v: Σ x log λ from the margins %v, from the cells %v", c.name, c.param, got, want)
		}
		for i := range gWant {
			if math.Abs(gGot[i]-gWant[i]) > 1e-10*(1+math.Abs(gWant[i])) {
				t.Errorf("%s %v: gradient entry %d from the margins %v, from the cells %v", c.name, c.param, i, gGot[i], gWant[i])
				break
			}
		}
		if c.param != LogScale {
			continue // the Stein variates are of the log parameterisation
		}
		var fromMargins, fromCells [tensor.MaxOrder + 1]float64
		e.steinMargins(center, &fromMargins)
		e.steinDeltas(center)
		e.steinCells(0, m.NumCells(), &fromCells)
		for k := range fromCells {
			if math.Abs(fromMargins[k]-fromCells[k]) > 1e-10*(1+math.Abs(fromCells[k])) {
				t.Errorf("%s: Stein terms from the margins %v, from the cells %v", c.name, fromMargins, fromCells)
				break
			}
		}
		fast, split := slices.Clone(theta), slices.Clone(theta)
		kf, ks := m.newAugmented(true), m.newAugmented(false)
		for range 200 {
			kf.Ascend(0.5, fast)
			ks.Ascend(0.5, split)
		}
		for i := range fast {
			if math.Abs(fast[i]-split[i]) > 1e-9*(1+math.Abs(split[i])) {
				t.Errorf("%s: EM from the margins reached %v, from the cells %v (entry %d)", c.name, fast[i], split[i], i)
				break
			}
		}
	}
}

// rank1LogZ is Rank1LogPowerEvidence, failing the test on an error.
func rank1LogZ(t *testing.T, data *tensor.Sparse, rates []float64, temp float64) float64 {
	v, err := Rank1LogPowerEvidence(data, rates, temp)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// smallPoissonModels builds, from data drawn with seed, Poisson NMF of rank 3 on a 12×9 matrix,
// CP of rank 2 on a 6×5×4 tensor, and NMF of free rank 2 with a fixed block of 2 on the matrix, all
// in the log parameterisation.
func smallPoissonModels(t *testing.T, seed uint64) map[string]func() (*Poisson, error) {
	t.Helper()
	rates := []float64{0.5, 0.5, 0.5}
	nmf, _, err := GeneratePoisson(rng.New(seed, 1), []int{12, 9}, 3, rates[:2])
	if err != nil {
		t.Fatal(err)
	}
	cp, _, err := GeneratePoisson(rng.New(seed, 2), []int{6, 5, 4}, 2, rates)
	if err != nil {
		t.Fatal(err)
	}
	fixed := make([]float64, 12*2)
	for i := range fixed {
		fixed[i] = 0.2 + float64(i%5)
	}
	return map[string]func() (*Poisson, error){
		"nmf":   func() (*Poisson, error) { return NewPoisson("nmf", nmf, 3, rates[:2], LogScale) },
		"cp":    func() (*Poisson, error) { return NewPoisson("cp", cp, 2, rates, LogScale) },
		"ssnmf": func() (*Poisson, error) { return NewPoissonFixed("ssnmf", nmf, 2, rates[:2], LogScale, fixed, 2) },
	}
}

// The kernel's evaluator, prepared at the θ the kernel's last sweep left, takes the kernel's
// values (bit for bit) and gives the log-likelihood and Stein variates a fresh evaluator derives
// from θ (to the last digits); prepared at any other θ it derives them as a fresh one does.
func TestKernelEvalTakesTheSweepsValues(t *testing.T) {
	for name, build := range smallPoissonModels(t, 11) {
		m, err := build()
		if err != nil {
			t.Fatal(err)
		}
		r := rng.New(11, 1)
		theta, center := make([]float64, m.Dim()), make([]float64, m.Dim())
		m.SamplePrior(r, theta)
		m.SamplePrior(r, center)
		k := m.NewAugmented()
		e, fresh := k.NewEval(), m.NewEval()
		for range 3 {
			k.Sweep(r, 0.3, theta, make([]float64, len(m.Factors())))
		}
		p := len(m.Factors()) + 1
		compare := func(what string) {
			e.Prepare(theta)
			fresh.Prepare(theta)
			got, want := make([]float64, p+1), make([]float64, p+1)
			got[p], want[p] = LogLik(e, m), LogLik(fresh, m)
			e.(SteinVariates).SteinVariates(center, 0.3, got[:p])
			fresh.(SteinVariates).SteinVariates(center, 0.3, want[:p])
			for i := range got {
				if math.Abs(got[i]-want[i]) > 1e-10*(1+math.Abs(want[i])) {
					t.Errorf("%s %s: the kernel's evaluator gives %v, a fresh one %v", name, what, got, want)
					break
				}
			}
		}
		compare("after a sweep")
		if kf := k.(*poissonAugmented).f; !slices.Equal(e.(*poissonEval).f, kf) {
			t.Errorf("%s: the evaluator did not take the kernel's values", name)
		}
		theta[len(theta)-1] += 0.25
		compare("at another θ")
		if !slices.Equal(e.(*poissonEval).f, fresh.(*poissonEval).f) {
			t.Errorf("%s: at another θ the evaluator's values are not θ's", name)
		}
	}
}

// Move makes Sweep's moves from the same draws, and Sweep's log-likelihood, whose logarithms are
// taken of products over the cells of each count, is the evaluator's, on data with counts within
// and beyond logtab.Groups.
func TestMoveMakesTheSweepsMoves(t *testing.T) {
	for name, build := range smallPoissonModels(t, 13) {
		m, err := build()
		if err != nil {
			t.Fatal(err)
		}
		if top := slices.Max(m.Data.Values); top <= logtab.Groups {
			t.Fatalf("%s: the largest count %v leaves the counts beyond the groups untested", name, top)
		}
		for _, temp := range []float64{0.3, 1} {
			theta := make([]float64, m.Dim())
			m.SamplePrior(rng.New(13, 1), theta)
			moved := slices.Clone(theta)
			rs, rm := rng.New(13, 2), rng.New(13, 2)
			ks, km := m.NewAugmented(), m.NewAugmented()
			e := m.NewEval()
			acc := make([]float64, len(m.Factors()))
			for s := range 5 {
				ll := ks.Sweep(rs, temp, theta, acc)
				km.Move(rm, temp, moved, acc)
				if !slices.Equal(theta, moved) {
					t.Fatalf("%s t=%v sweep %d: Move and Sweep left different θ", name, temp, s)
				}
				e.Prepare(theta)
				if want := LogLik(e, m); math.Abs(ll-want) > 1e-10*math.Abs(want) {
					t.Fatalf("%s t=%v sweep %d: Sweep returned log-likelihood %v, the evaluator %v", name, temp, s, ll, want)
				}
			}
		}
	}
}

// leastRatio finds the least ratio f[i+x]/f[i+y] over the rows with f[i+y] > 0 that dividing row
// by row finds, to the bit (rows of 4, zeros in both columns, and a column of zeros, whose bound
// is infinite).
func TestLeastRatioIsTheLeastQuotient(t *testing.T) {
	const K = 4
	r := rng.New(62, 4)
	for trial := range 2000 {
		f := make([]float64, K*(1+trial%9))
		for i := range f {
			if r.IntN(5) > 0 {
				f[i] = r.ExpFloat64() * math.Exp(8*r.NormFloat64())
			}
		}
		x, y := r.IntN(K), r.IntN(K-1)
		if y >= x {
			y++
		}
		want := math.Inf(1)
		for i := 0; i < len(f); i += K {
			if v := f[i+y]; v > 0 {
				want = min(want, f[i+x]/v)
			}
		}
		if n, d := leastRatio(f, K, x, y); n/d != want {
			t.Fatalf("trial %d: least ratio %v/%v = %v, dividing row by row %v", trial, n, d, n/d, want)
		}
	}
}

// The shear moves leave the posterior invariant: with θ drawn from the prior and X from
// p(X | θ), θ after the moves is still a prior draw, the first two moments of each factor's
// entries those of Exp(λ) (1 and 2 in units of 1/λ). Without the prior's term in ε's
// conditional, or with its sign turned, the entries drift from them.
func TestShearKeepsThePosterior(t *testing.T) {
	const R, replicas, batches, moves = 3, 40000, 40, 4
	shape := []int{3, 2}
	rates := []float64{0.3, 0.3}
	r := rng.New(5, 7)
	var first, second [2][]float64
	for k := range 2 {
		first[k], second[k] = make([]float64, batches), make([]float64, batches)
	}
	moved := 0
	for rep := range replicas {
		theta := make([]float64, (shape[0]+shape[1])*R)
		for i := range theta {
			theta[i] = r.ExpFloat64() / rates[0]
		}
		// The model refuses data without a count; such draws have the prior as posterior and
		// stay.
		if data := matrixCounts(t, r, shape, R, theta); data.NNZ() > 0 {
			m, err := NewPoisson("nmf", data, R, rates, Direct)
			if err != nil {
				t.Fatal(err)
			}
			f := m.newValues()
			colsum := [][]float64{make([]float64, R), make([]float64, R)}
			for k, fac := range m.factors {
				m.loadRows(theta, f, k, 0, fac.Rows, colsum[k])
			}
			before := theta[0]
			for range moves {
				m.shear(r, f, colsum, m.Rates)
			}
			for k, fac := range m.factors {
				m.storeRows(theta, f[m.values[k]:], k, 0, fac.Rows)
			}
			if theta[0] != before {
				moved++
			}
		}
		// θ holds the factors row-major one after the other (matrixCounts).
		for k, n := range shape {
			for _, v := range theta[k*shape[0]*R : k*shape[0]*R+n*R] {
				v *= rates[k]
				first[k][rep*batches/replicas] += v / float64(n*R) * batches / replicas
				second[k][rep*batches/replicas] += v * v / float64(n*R) * batches / replicas
			}
		}
	}
	for k := range 2 {
		m1, se1 := batchMean(first[k])
		m2, se2 := batchMean(second[k])
		t.Logf("factor %d: mean %.4f ± %.4f (1), mean square %.4f ± %.4f (2); θ[0] moved in %d of %d replicas", k, m1, se1, m2, se2, moved, replicas)
		if math.Abs(m1-1) > 4*se1 || math.Abs(m2-2) > 4*se2 {
			t.Errorf("factor %d: the moves changed the prior's moments: mean %.4f ± %.4f, mean square %.4f ± %.4f", k, m1, se1, m2, se2)
		}
	}
	if moved < replicas/4 {
		t.Errorf("θ[0] moved in %d of %d replicas", moved, replicas)
	}
}

// matrixCounts draws a count matrix of that shape from p(X | θ) with r, θ holding the two factors
// of rank R row-major one after the other, and keeps its non-zero cells.
func matrixCounts(t *testing.T, r *rand.Rand, shape []int, R int, theta []float64) *tensor.Sparse {
	t.Helper()
	data, err := tensor.New(shape, shape[0]*shape[1])
	if err != nil {
		t.Fatal(err)
	}
	for i := range shape[0] {
		for j := range shape[1] {
			lam := 0.0
			for c := range R {
				lam += theta[i*R+c] * theta[(shape[0]+j)*R+c]
			}
			if x := (distuv.Poisson{Lambda: lam, Src: r}).Rand(); x > 0 {
				data.Append([]int{i, j}, x)
			}
		}
	}
	return data
}

// At rank 2 and below t = 1, where counts are rounded, split once per sweep and every row's
// move is corrected by Metropolis–Hastings, a long run of the kernel (every move of Sweep) must
// average to the power posterior's mean log-likelihood f(t), which importance sampling from the
// prior gives on data this small: weights p(X | θ)^t over 10⁶ prior draws. Matrices (with their
// shear moves) and 3-way tensors, split in mode 0's order and in mode 1's (the mode with the most
// rows goes first); without the correction (every proposal accepted) the run settles on the
// rounded counts' surrogate and misses f(t) by many standard errors (checked).
func TestAugmentedKernelMatchesImportanceSampling(t *testing.T) {
	const R, draws = 2, 1000000
	for _, c := range []struct {
		shape []int
		temp  float64
	}{{[]int{3, 2}, 0.3}, {[]int{3, 2}, 0.7}, {[]int{2, 3}, 0.5}, {[]int{2, 2, 2}, 0.5}, {[]int{2, 3, 2}, 0.4}} {
		rates := make([]float64, len(c.shape))
		for m := range rates {
			rates[m] = 1
		}
		data, _, err := GeneratePoisson(rng.New(62, 3, uint64(len(c.shape))), c.shape, R, rates)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewPoisson([]string{"", "", "nmf", "cp"}[len(c.shape)], data, R, rates, LogScale)
		if err != nil {
			t.Fatal(err)
		}
		e := m.NewEval()
		loglik := func(theta []float64) float64 {
			e.Prepare(theta)
			return LogLik(e, m)
		}
		// Self-normalised importance sampling, with the delta method's standard error.
		r := rng.New(62, 4)
		theta := make([]float64, m.Dim())
		lls, logw := make([]float64, draws), make([]float64, draws)
		top := math.Inf(-1)
		for i := range draws {
			m.SamplePrior(r, theta)
			lls[i] = loglik(theta)
			logw[i] = c.temp * lls[i]
			top = max(top, logw[i])
		}
		var sw, swl float64
		for i := range draws {
			w := math.Exp(logw[i] - top)
			sw += w
			swl += w * lls[i]
		}
		want := swl / sw
		var v, sw2 float64
		for i := range draws {
			w := math.Exp(logw[i] - top)
			v += w * w * (lls[i] - want) * (lls[i] - want)
			sw2 += w * w
		}
		seIS := math.Sqrt(v) / sw
		// The kernel's run.
		const burn, sweeps, batches = 1000, 200000, 40
		m.SamplePrior(r, theta)
		k := m.NewAugmented()
		acc := make([]float64, len(c.shape))
		means := make([]float64, batches)
		for s := range burn + sweeps {
			ll := k.Sweep(r, c.temp, theta, acc)
			if s >= burn {
				means[(s-burn)*batches/sweeps] += ll * batches / sweeps
			}
		}
		mean, se := batchMean(means)
		t.Logf("%v t=%v: kernel %.4f ± %.4f, importance sampling %.4f ± %.4f (effective sample %.0f)", c.shape, c.temp, mean, se, want, seIS, sw*sw/sw2)
		if d := math.Abs(mean - want); d > 4*math.Hypot(se, seIS) || math.Hypot(se, seIS) > 0.01*math.Abs(want) {
			t.Errorf("%v t=%v: the kernel's mean log-likelihood %.4f ± %.4f, importance sampling's %.4f ± %.4f", c.shape, c.temp, mean, se, want, seIS)
		}
	}
}

// A sweep is the same bits on any number of cores: the cells and rows are cut into chunks by the
// data alone, every chunk draws from a stream of its own, the first pass's counts are integers
// whose sums do not depend on which worker added them, and every other sum is added in chunk
// order. A matrix and a 3-way tensor with several chunks in every mode, Sweep and Move, at a
// temperature that rounds counts and at t = 1, on 1, 2 and 8 cores.
func TestSweepDoesNotDependOnCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct {
		shape []int
		rate  float64
	}{{[]int{200, 300}, 0.15}, {[]int{60, 50, 40}, 0.25}} {
		rates := make([]float64, len(c.shape))
		for m := range rates {
			rates[m] = c.rate
		}
		data, _, err := GeneratePoisson(rng.New(62, 5), c.shape, 3, rates)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewPoisson([]string{"", "", "nmf", "cp"}[len(c.shape)], data, 4, rates, LogScale)
		if err != nil {
			t.Fatal(err)
		}
		for k, cuts := range m.augmentedLayout().chunks {
			if len(cuts) < 4 {
				t.Fatalf("%v: mode %d has %d chunks of %d non-zeros; the test needs several", c.shape, k, len(cuts)-1, data.NNZ())
			}
		}
		run := func(cores int) ([]float64, []float64) {
			runtime.GOMAXPROCS(cores)
			r := rng.New(62, 6)
			theta := make([]float64, m.Dim())
			m.SamplePrior(r, theta)
			k := m.NewAugmented()
			acc := make([]float64, len(c.shape))
			var out []float64
			for s := range 6 {
				temp := []float64{0.37, 1}[s%2]
				if s%3 == 2 {
					k.Move(r, temp, theta, acc)
				} else {
					out = append(out, k.Sweep(r, temp, theta, acc))
				}
				out = append(out, acc...)
			}
			return theta, out
		}
		theta1, out1 := run(1)
		for _, cores := range []int{2, 8} {
			theta, out := run(cores)
			if !slices.Equal(theta, theta1) || !slices.Equal(out, out1) {
				t.Errorf("%v: the sweeps on %d cores differ from those on one", c.shape, cores)
			}
		}
	}
}
