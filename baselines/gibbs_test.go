package baselines

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// drawData draws X ~ p(X | θ) cell by cell (tiny shapes only).
func drawData(r *rand.Rand, shape []int, f Factors) *tensor.Sparse {
	t, _ := tensor.New(shape, 0)
	R := f.R
	idx := make([]int, len(shape))
	var rec func(m int)
	rec = func(m int) {
		if m == len(shape) {
			lam := 0.0
			for k := range R {
				v := 1.0
				for mm, i := range idx {
					v *= f.F[mm][i*R+k]
				}
				lam += v
			}
			if x := (distuv.Poisson{Lambda: lam, Src: r}).Rand(); x > 0 {
				t.Append(idx, x)
			}
			return
		}
		for i := range shape[m] {
			idx[m] = i
			rec(m + 1)
		}
	}
	rec(0)
	return t
}

// geweke runs the successive-conditional simulator of Geweke (2004): X ~ p(X | θ), then one
// transition of θ that leaves p(θ | X) invariant. If the transition is right, θ keeps its prior
// distribution; the test compares the first two moments of every free factor entry, pooled per
// mode, with the exponential prior's (1/λ, 2/λ²), with batch-means standard errors. Beside a
// dictionary (ssnmf: dict not nil, a matrix) the factors have its columns first, R counts them,
// and the problems hold it fixed.
func geweke(t *testing.T, name string, shape []int, R int, rates []float64, fixed []int, dict *models.Dictionary, iters int,
	step func(r *rand.Rand, p *Problem, f Factors)) {
	t.Helper()
	r := rng.New(11, uint64(len(name)))
	lead := make([]int, len(shape))
	if dict != nil {
		lead[0] = dict.Cols
	}
	f := Factors{R: R, F: make([][]float64, len(shape))}
	for m, n := range shape {
		f.F[m] = make([]float64, n*R)
		for i := range f.F[m] {
			if c := i % R; c < lead[m] {
				f.F[m][i] = dict.Values[i/R*dict.Cols+c]
			} else {
				f.F[m][i] = r.ExpFloat64() / rates[m]
			}
		}
	}
	const batches = 50
	m1 := make([][]float64, len(shape)) // per mode, per batch
	m2 := make([][]float64, len(shape))
	for m := range shape {
		m1[m] = make([]float64, batches)
		m2[m] = make([]float64, batches)
	}
	for it := range iters {
		x := drawData(r, shape, f)
		p, err := NewProblem(x, rates)
		if dict != nil {
			p, err = ForModel(x, models.Spec{Name: "ssnmf", Params: models.Params{"rates": models.Nums(rates...), "param": models.Word("log")}, Dictionary: dict})
		}
		if err != nil {
			t.Fatal(err)
		}
		step(r, p, f)
		b := it * batches / iters
		for m := range shape {
			for i := fixed[m] * R; i < len(f.F[m]); i++ {
				if i%R < lead[m] {
					continue
				}
				v := f.F[m][i]
				m1[m][b] += v
				m2[m][b] += v * v
			}
		}
	}
	for m := range shape {
		n := float64((shape[m]-fixed[m])*(R-lead[m])) * float64(iters) / batches
		if n == 0 {
			continue
		}
		for k, want := range []float64{1 / rates[m], 2 / (rates[m] * rates[m])} {
			bm := [][]float64{m1[m], m2[m]}[k]
			mean, ss := 0.0, 0.0
			for _, v := range bm {
				mean += v / n
			}
			mean /= batches
			for _, v := range bm {
				ss += (v/n - mean) * (v/n - mean)
			}
			se := math.Sqrt(ss / (batches - 1) / batches)
			if math.Abs(mean-want) > 4.5*se {
				t.Errorf("%s: mode %d moment %d: %.4f ± %.4f, prior %.4f", name, m, k+1, mean, se, want)
			}
		}
	}
}

func TestGibbsGeweke(t *testing.T) {
	iters := 40000
	if testing.Short() {
		iters = 10000
	}
	// A one-column dictionary beside the two free components (ssnmf), with rows of the
	// activations or of the free block held.
	dict := &models.Dictionary{Source: "test", Rows: 3, Cols: 1, Values: []float64{0.8, 0.3, 1.5}}
	for _, tc := range []struct {
		name  string
		shape []int
		rates []float64
		fixed []int
		dict  *models.Dictionary
	}{
		{"nmf", []int{3, 2}, []float64{1, 2}, []int{0, 0}, nil},
		{"cp", []int{2, 2, 2}, []float64{1, 1.5, 0.7}, []int{0, 0, 0}, nil},
		{"nmf-reduced", []int{3, 3}, []float64{1, 2}, []int{0, 1}, nil},
		{"cp-reduced", []int{2, 3, 2}, []float64{1, 1.5, 0.7}, []int{2, 1, 0}, nil},
		{"ssnmf-reduced-activations", []int{3, 3}, []float64{1, 2}, []int{3, 1}, dict},
		{"ssnmf-reduced-free", []int{3, 3}, []float64{1, 2}, []int{1, 0}, dict},
	} {
		R := 2
		K := R
		if tc.dict != nil {
			K += tc.dict.Cols
		}
		geweke(t, tc.name, tc.shape, K, tc.rates, tc.fixed, tc.dict, iters, func(r *rand.Rand, p *Problem, f Factors) {
			g, err := p.newGibbs(R)
			if err != nil {
				t.Fatal(err)
			}
			g.SetState(f)
			g.Hold(tc.fixed)
			// The relabeling move of Chib's reduced runs, on a block of the first free rows; the
			// fixed rows' values stand for θ*, the rest only needs to be positive.
			o := newOrdinates(p, f.Clone(), R, true)
			b := chibBlock{}
			for m := range tc.shape {
				if tc.fixed[m] < tc.shape[m] {
					b = chibBlock{m: m, lo: tc.fixed[m], hi: tc.fixed[m] + 1}
					break
				}
			}
			g.k.OnSplit(func(r *rand.Rand) { o.blockTerm(r, g, b, true) })
			g.Sweep(r)
			// The moves keep the dictionary's entries where they are (a scale move of its
			// components would leave θ and the kernel's values apart).
			for i := range tc.shape[0] {
				for c := range K - R {
					if v := g.State.F[0][i*K+c]; v != tc.dict.Values[i*tc.dict.Cols+c] {
						t.Fatalf("%s: dictionary entry (%d, %d) moved to %v", tc.name, i, c, v)
					}
				}
			}
			f.CopyFrom(g.State)
		})
	}
}

// The slice sweep of the path from a reference (AIS from a reference, RunPath) leaves the posterior
// invariant at t = 1.
func TestSliceGeweke(t *testing.T) {
	iters := 20000
	if testing.Short() {
		iters = 5000
	}
	for _, tc := range []struct {
		name  string
		shape []int
		rates []float64
	}{
		{"nmf", []int{3, 2}, []float64{1, 2}},
		{"cp", []int{2, 2, 2}, []float64{1, 1.5, 0.7}},
	} {
		// At t = 1 the path's target is the posterior whatever the reference, so any reference
		// serves: one of unit Gammas with no spread along the orbits.
		const R = 2
		fit := ReferenceFit{Rank: R}
		for _, n := range tc.shape {
			fit.Alpha, fit.Beta = append(fit.Alpha, ones(n*R)), append(fit.Beta, ones(n*R))
		}
		d := len(tc.shape) - 1
		for range R {
			cov := make([]float64, d*d)
			for a := range d {
				cov[a*d+a] = 1
			}
			fit.OrbitMean, fit.OrbitCov = append(fit.OrbitMean, make([]float64, d)), append(fit.OrbitCov, cov)
		}
		geweke(t, tc.name, tc.shape, R, tc.rates, make([]int, len(tc.shape)), nil, iters, func(r *rand.Rand, p *Problem, f Factors) {
			s, err := p.newPathState(fit, 1)
			if err != nil {
				t.Fatal(err)
			}
			s.f.CopyFrom(f)
			s.refresh()
			s.ref.refresh(s.f)
			s.sweep(r, 1)
			f.CopyFrom(s.f)
		})
	}
}

// ones returns n ones.
func ones(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}
