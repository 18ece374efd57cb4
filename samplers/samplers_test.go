package samplers

import (
	"math"
	"testing"

	"github.com/stirank/stirank/rng"
)

// Every block of a B-way grid lies in exactly one part, and no two blocks of a part share a
// range in any mode.
func TestPartsCoverBlocksOnceAndAreDisjoint(t *testing.T) {
	for _, order := range []int{2, 3} {
		for _, B := range []int{1, 2, 3, 5, 12} {
			p := Parts{B: B, Order: order}
			seen := map[[3]int]int{}
			bc := make([]int, order)
			for pt := range p.Count() {
				used := make([]map[int]bool, order)
				for m := range used {
					used[m] = map[int]bool{}
				}
				for b := range B {
					p.Block(pt, b, bc)
					var key [3]int
					for m, r := range bc {
						if used[m][r] {
							t.Fatalf("order %d B=%d part %d: two blocks share range %d of mode %d", order, B, pt, r, m)
						}
						used[m][r] = true
						key[m] = r
					}
					seen[key]++
				}
			}
			want := 1
			for range order {
				want *= B
			}
			if len(seen) != want {
				t.Fatalf("order %d B=%d: parts cover %d blocks, want %d", order, B, len(seen), want)
			}
			for k, n := range seen {
				if n != 1 {
					t.Fatalf("order %d B=%d: block %v in %d parts", order, B, k, n)
				}
			}
		}
	}
}

func TestSubsample(t *testing.T) {
	r := rng.New(1)
	s := Subsample{N: 103, Size: 10, Stratified: true}
	perm := make([]int32, s.N)
	s.Permute(r, perm)
	count := make([]int, s.N)
	total := 0.0
	for b := range s.Batches() {
		idx, scale := s.Batch(perm, b, r)
		for _, i := range idx {
			count[i]++
		}
		total += float64(len(idx)) * scale / float64(s.N)
	}
	for i, c := range count {
		if c != 1 {
			t.Fatalf("index %d used %d times in an epoch", i, c)
		}
	}
	if math.Abs(total/float64(s.Batches())-1) > 1e-12 {
		t.Errorf("scales do not reweight batches to N")
	}
	s.Stratified = false
	idx, scale := s.Batch(perm, 0, r)
	seen := map[int32]bool{}
	for _, i := range idx {
		if seen[i] || i < 0 || int(i) >= s.N {
			t.Fatalf("bad subsample %v", idx)
		}
		seen[i] = true
	}
	if len(idx) != 10 || scale != 10.3 {
		t.Errorf("subsample of %d with scale %v", len(idx), scale)
	}
}

func TestDecayTo(t *testing.T) {
	s, err := DecayTo(0.1, 8, 0.51, 200)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(s.At(1)/0.8-1) > 1e-9 || math.Abs(s.At(200)/0.1-1) > 1e-9 || s.At(5000) != s.At(200) {
		t.Errorf("steps %v … %v … %v", s.At(1), s.At(200), s.At(5000))
	}
	if s.At(50) <= s.At(100) {
		t.Errorf("schedule does not decrease")
	}
	constant, _ := DecayTo(0.3, 1, 0.51, 200)
	if constant.At(1) != 0.3 || constant.At(200) != 0.3 || constant.At(201) != 0.3 {
		t.Errorf("start 1 is not constant: %v %v %v", constant.At(1), constant.At(200), constant.At(201))
	}
	paper := StepSchedule{A: 1e-8, B: 0.51, Burnin: 1000}
	if math.Abs(paper.At(10)-math.Pow(1e-9, 0.51)) > 1e-15 {
		t.Errorf("(a/k)^b: %v", paper.At(10))
	}
}

// stationaryVariance runs a kernel on the 1-D target N(0, 1/λ) with the given metric and returns
// the sample variance.
func stationaryVariance(k Kernel, lambda, metric, eps float64, n int) float64 {
	st := k.NewState(1)
	th, g := []float64{0}, []float64{0}
	m, gm := []float64{metric}, []float64{0}
	r := rng.New(42)
	s2 := 0.0
	for i := range n {
		g[0] = -lambda * th[0]
		k.Update(st, Input{Theta: th, Grad: g, Metric: m, Gamma: gm, Lo: 0, Hi: 1, Eps: eps, Rand: r})
		k.EndStep(st, i == 0, r)
		s2 += th[0] * th[0]
	}
	return s2 / float64(n)
}

// On a Gaussian target the Euler scheme inflates the variance to 1/(λ(1 − ελ/2)); the
// Leimkuhler–Matthews noise removes that bias entirely, even at ελ = 1.
func TestLangevinStationaryVariance(t *testing.T) {
	const lambda, n = 4.0, 400000
	lm := stationaryVariance(LMSGLD{}, lambda, 1/lambda, 1, n)
	if math.Abs(lm*lambda-1) > 0.02 {
		t.Errorf("LM at ελ=1: variance %.4f, want %.4f", lm, 1/lambda)
	}
	eps := 0.2
	sgld := stationaryVariance(SGLD{}, lambda, 0, eps, n)
	want := 1 / (lambda * (1 - eps*lambda/2))
	if math.Abs(sgld/want-1) > 0.03 {
		t.Errorf("SGLD at ελ=%.1f: variance %.4f, want %.4f", eps*lambda, sgld, want)
	}
	rs := stationaryVariance(MetricSGLD{}, lambda, 1/lambda, eps, n)
	if want := 1 / (lambda * (1 - eps/2)); math.Abs(rs/want-1) > 0.03 {
		t.Errorf("metric SGLD at ε=%.1f: variance %.4f, want %.4f", eps, rs, want)
	}
}

// MALA with a position-dependent metric samples exactly: on the log-gamma density
// p(φ) ∝ exp(φ − λe^φ) (an Exp(λ) variable in log space) E[e^φ] = 1/λ at any step size.
func TestMALAIsExactWithPositionDependentMetric(t *testing.T) {
	const lambda = 0.7
	eval := func(p *Point) {
		f := math.Exp(p.Theta[0])
		p.Grad[0] = 1 - lambda*f
		p.LogPost = p.Theta[0] - lambda*f
		d := lambda*f + 1
		p.Metric[0] = 1 / d
		p.Gamma[0] = -lambda * f / (d * d)
	}
	newPoint := func() *Point {
		return &Point{Theta: []float64{0}, Grad: []float64{0}, Metric: []float64{0}, Gamma: []float64{0}}
	}
	for _, eps := range []float64{0.5, 2} {
		cur, prop := newPoint(), newPoint()
		eval(cur)
		r := rng.New(5)
		const n = 400000
		sum, sum2 := 0.0, 0.0
		mala := MALA{Accept: 0.574}
		for range n {
			copy(prop.Theta, cur.Theta)
			mala.Update(nil, Input{Theta: prop.Theta, Grad: cur.Grad, Metric: cur.Metric, Gamma: cur.Gamma, Lo: 0, Hi: 1, Eps: eps, Rand: r})
			eval(prop)
			if math.Log(r.Float64()) < mala.LogAccept(cur, prop, eps) {
				cur, prop = prop, cur
			}
			f := math.Exp(cur.Theta[0])
			sum += f
			sum2 += f * f
		}
		mean := sum / n
		// Generous: autocorrelation inflates the error of the mean several times over iid.
		se := 10 * math.Sqrt((sum2/n-mean*mean)/n)
		if math.Abs(mean-1/lambda) > se {
			t.Errorf("ε=%v: E[e^φ] = %.4f, want %.4f (±%.4f)", eps, mean, 1/lambda, se)
		}
	}
}
