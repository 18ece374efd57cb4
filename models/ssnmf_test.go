package models

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// ssnmfSpec is the ssnmf spec with the dictionary d (F × K row-major) and prior rates.
func ssnmfSpec(d []float64, F, K int, rates []float64, param Param) Spec {
	s := PoissonSpec(ssnmfName, rates, param)
	s.Dictionary = &Dictionary{Source: "test", Rows: F, Cols: K, Values: d}
	return s
}

// drawDictionary draws an F × K dictionary with Exp(1) entries.
func drawDictionary(r *rand.Rand, F, K int) []float64 {
	d := make([]float64, F*K)
	for i := range d {
		d[i] = r.ExpFloat64()
	}
	return d
}

// ssnmfData draws counts from D H_D + W H: a fixed dictionary D (F × K_D) and a free block of
// rank R, every other factor Exp(rate).
func ssnmfData(t *testing.T, r *rand.Rand, F, N, KD, R int, rate float64) (*tensor.Sparse, []float64) {
	t.Helper()
	d := drawDictionary(r, F, KD)
	K := KD + R
	w := make([]float64, F*K) // [D | W]
	for i := range F {
		copy(w[i*K:], d[i*KD:(i+1)*KD])
		for c := KD; c < K; c++ {
			w[i*K+c] = r.ExpFloat64() / rate
		}
	}
	h := make([]float64, N*K)
	for i := range h {
		h[i] = r.ExpFloat64() / rate
	}
	data, err := tensor.New([]int{F, N}, F*N)
	if err != nil {
		t.Fatal(err)
	}
	for i := range F {
		for j := range N {
			lam := 0.0
			for c := range K {
				lam += w[i*K+c] * h[j*K+c]
			}
			if x := (distuv.Poisson{Lambda: lam, Src: r}).Rand(); x > 0 {
				data.Append([]int{i, j}, x)
			}
		}
	}
	return data, d
}

// The closed form of the zero-rank evidence agrees with plain Monte Carlo over H_D's prior.
func TestSSNMFZeroRankClosedFormMatchesPriorMonteCarlo(t *testing.T) {
	r := rng.New(21)
	data, w := ssnmfData(t, r, 3, 2, 1, 0, 1)
	const rate = 0.8
	spec := ssnmfSpec(w, 3, 1, []float64{1.3, rate}, LogScale)
	info, _ := Lookup(ssnmfName)
	exact, err := info.Exact(data, 0, spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := info.Exact(data, 1, spec); err != ErrNoExact {
		t.Errorf("exact evidence at rank 1: %v", err)
	}
	m, err := spec.Build(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	e := m.NewEval()
	theta := make([]float64, m.Dim())
	const n = 400000
	var s, s2 float64
	for range n {
		m.SamplePrior(r, theta)
		e.Prepare(theta)
		v := math.Exp(LogLik(e, m) - exact)
		s += v
		s2 += v * v
	}
	mean := s / n
	se := math.Sqrt((s2/n - mean*mean) / n)
	t.Logf("prior Monte Carlo / closed form = %.4f ± %.4f", mean, se)
	if math.Abs(mean-1) > 4*se || se > 0.05 {
		t.Errorf("prior Monte Carlo / closed form = %.4f ± %.4f, want 1", mean, se)
	}
}

// ssnmf at rank R with dictionary D is Poisson NMF at rank K_D + R with D in the first columns
// of W: the same log-likelihood at every point, and the same prior on every parameter but D's.
func TestSSNMFIsNMFWithFixedColumns(t *testing.T) {
	r := rng.New(22)
	const F, N, KD = 6, 5, 3
	data, d := ssnmfData(t, r, F, N, KD, 2, 1)
	rates := []float64{0.7, 1.1}
	for _, R := range []int{0, 2} {
		for _, param := range []Param{LogScale, Direct} {
			ss, err := ssnmfSpec(d, F, KD, rates, param).Build(data, R)
			if err != nil {
				t.Fatal(err)
			}
			K := KD + R
			nmf, err := NewPoisson("nmf", data, K, rates, param)
			if err != nil {
				t.Fatal(err)
			}
			if ss.Dim() != F*R+N*K || ss.Rank() != R || len(ss.Factors()) != 2 || ss.Factors()[0].Cols != R || ss.Factors()[1].Cols != K {
				t.Fatalf("R=%d: dimension %d, factors %v", R, ss.Dim(), ss.Factors())
			}
			theta := make([]float64, ss.Dim())
			ss.SamplePrior(r, theta)
			full := make([]float64, nmf.Dim())
			for i := range F {
				for c := range K {
					v := 0.0
					switch {
					case c >= KD:
						v = theta[i*R+c-KD]
					case param == LogScale:
						v = math.Log(d[i*KD+c])
					default:
						v = d[i*KD+c]
					}
					full[i*K+c] = v
				}
			}
			copy(full[F*K:], theta[F*R:])
			es, en := ss.NewEval(), nmf.NewEval()
			es.Prepare(theta)
			en.Prepare(full)
			if a, b := LogLik(es, ss), LogLik(en, nmf); math.Abs(a-b) > 1e-10*math.Abs(b) {
				t.Errorf("R=%d %v: ssnmf log-likelihood %v, nmf with D in W %v", R, param, a, b)
			}
		}
	}
}

func TestSSNMFGradientsMatchFiniteDifferences(t *testing.T) {
	r := rng.New(23)
	const F, N, KD = 7, 5, 3
	data, d := ssnmfData(t, r, F, N, KD, 2, 0.8)
	for _, R := range []int{0, 2} {
		for _, param := range []Param{LogScale, Direct} {
			m, err := ssnmfSpec(d, F, KD, []float64{0.8, 0.6}, param).Build(data, R)
			if err != nil {
				t.Fatal(err)
			}
			checkGradient(t, "ssnmf/"+param.String(), m, r)
		}
	}
}

// At rank 0 with a one-column dictionary the power posterior's mean log-likelihood f(t) =
// d log Z(t)/dt is exact (ssnmfRank0LogZPrior): a long run of the Gibbs kernel, which moves H_D
// alone and never D (and under --rate auto H_D's rate), must average to it near the prior and
// near the posterior, at a fixed rate and under the hyperprior.
func TestSSNMFKernelKeepsThePowerPosterior(t *testing.T) {
	data, w := ssnmfData(t, rng.New(24), 6, 5, 1, 0, 0.5)
	fixed := ssnmfSpec(w, 6, 1, []float64{1, 0.5}, LogScale)
	auto := fixed.With("rates", Word(AutoWord))
	for _, s := range []Spec{fixed, auto} {
		prior, err := ssnmfPrior(data, 0, s)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(s.Params["rates"].String(), func(t *testing.T) {
			checkSSNMFPowerPosterior(t, data, s, func(temp float64) float64 { return ssnmfRank0LogZPrior(data, w, prior, temp) })
		})
	}
}

// checkSSNMFPowerPosterior holds the Gibbs kernel of spec's model at rank 0 to the exact f(t)
// of logZ at three temperatures.
func checkSSNMFPowerPosterior(t *testing.T, data *tensor.Sparse, spec Spec, logZ func(t float64) float64) {
	m, err := spec.Build(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, temp := range []float64{1.0 / 1024, 0.25, 1} {
		h := temp / 1024
		want := (logZ(temp+h) - logZ(temp-h)) / (2 * h)
		r := rng.New(24, 2)
		theta := make([]float64, m.Dim())
		m.SamplePrior(r, theta)
		k, e := m.(Augmentable).NewAugmented(), m.NewEval()
		acc := make([]float64, 2)
		const burn, sweeps, batches = 200, 20000, 40
		means := make([]float64, batches)
		for s := range burn + sweeps {
			ll := k.Sweep(r, temp, theta, acc)
			if acc[0] != 1 {
				t.Fatalf("t=%v: the factor without parameters reports acceptance %v", temp, acc[0])
			}
			if s%1000 == 0 {
				e.Prepare(theta)
				if want := LogLik(e, m); math.Abs(ll-want) > 1e-9*math.Abs(want) {
					t.Fatalf("t=%v sweep %d: Sweep returned log-likelihood %v, the evaluator %v", temp, s, ll, want)
				}
			}
			if s >= burn {
				means[(s-burn)*batches/sweeps] += ll * batches / sweeps
			}
		}
		mean, se := batchMean(means)
		t.Logf("t=%v: mean log-lik %.3f ± %.3f, exact %.3f", temp, mean, se, want)
		if math.Abs(mean-want) > 4*se || se > 0.01*math.Abs(want) {
			t.Errorf("t=%v: mean log-likelihood %.3f ± %.3f, exact f(t) = %.3f", temp, mean, se, want)
		}
	}
}

// With a free block the allocation over fixed and free components, the fixed rows and the
// rescaling of the free components only, checked by Geweke's successive-conditional test at
// t = 1 (see TestAugmentedKernelGeweke): X ~ p(X | θ) alternated with a sweep leaves θ
// distributed as its prior, Exp(1) in every entry.
func TestSSNMFKernelGeweke(t *testing.T) {
	const R, KD, iters, batches = 1, 1, 40000, 40
	shape := []int{3, 2}
	K := KD + R
	d := []float64{0.5, 1.5, 1}
	r := rng.New(25)
	theta := make([]float64, shape[0]*R+shape[1]*K)
	for i := range theta {
		theta[i] = r.ExpFloat64()
	}
	// W (the free column) is θ[0:3]; H is 2 × K after it, H_D in column 0.
	wMeans, hdMeans := make([]float64, batches), make([]float64, batches)
	for it := range iters {
		data, err := tensor.New(shape, 6)
		if err != nil {
			t.Fatal(err)
		}
		for i := range shape[0] {
			for j := range shape[1] {
				lam := d[i]*theta[3+j*K] + theta[i]*theta[3+j*K+1]
				if x := (distuv.Poisson{Lambda: lam, Src: r}).Rand(); x > 0 {
					data.Append([]int{i, j}, x)
				}
			}
		}
		m, err := ssnmfSpec(d, 3, KD, []float64{1, 1}, Direct).Build(data, R)
		if err != nil {
			t.Fatal(err)
		}
		m.(Augmentable).NewAugmented().Sweep(r, 1, theta, make([]float64, 2))
		wMeans[it*batches/iters] += (theta[0] + theta[1] + theta[2]) / 3 * batches / iters
		hdMeans[it*batches/iters] += (theta[3] + theta[3+K]) / 2 * batches / iters
	}
	for name, means := range map[string][]float64{"W[:, 0]": wMeans, "H_D[:, 0]": hdMeans} {
		mean, se := batchMean(means)
		t.Logf("mean of %s %.4f ± %.4f; prior mean 1", name, mean, se)
		if math.Abs(mean-1) > 4*se || se > 0.05 {
			t.Errorf("mean of %s %.4f ± %.4f, prior mean 1", name, mean, se)
		}
	}
}

func TestSSNMFBuildAndDictionaryChecks(t *testing.T) {
	data, d := ssnmfData(t, rng.New(26), 4, 3, 2, 1, 1)
	spec := ssnmfSpec(d, 4, 2, []float64{1, 1}, LogScale)
	m, err := spec.Build(data, 3)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := Lookup(ssnmfName)
	if _, ok := m.(Augmentable); !ok || !info.Gibbs || !info.Factored || !info.Dictionary || !info.ZeroRank || info.MinRank() != 0 || info.DefaultForOrder {
		t.Errorf("ssnmf: Augmentable %v, registered %+v", ok, info)
	}
	if m0, err := spec.Build(data, 0); err != nil || m0.Rank() != 0 {
		t.Errorf("rank 0 (the dictionary alone): %v", err)
	}
	// The spec carries the dictionary through JSON unchanged; a spec without one encodes as before.
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var back Spec
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, spec) {
		t.Errorf("spec %s does not round-trip: %+v, %v", b, back, err)
	}
	if b, _ := json.Marshal(PoissonSpec("nmf", []float64{1, 2}, LogScale)); string(b) != `{"Name":"nmf","Params":{"param":"log","rates":[1,2]}}` {
		t.Errorf("nmf spec encodes as %s", b)
	}
	if spec.With("rates", Nums(2, 2)).Dictionary != spec.Dictionary {
		t.Error("With drops the dictionary")
	}
	bad := func(values []float64, rows, cols int) Spec {
		s := spec
		s.Dictionary = &Dictionary{Source: "W", Rows: rows, Cols: cols, Values: values}
		return s
	}
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{PoissonSpec(ssnmfName, []float64{1, 1}, LogScale), "no dictionary"},
		{bad(d[:6], 3, 2), "dictionary W has 3 rows, the data 4"},
		{bad([]float64{1, 0, 2, 0, 1, 0, 3, 0}, 4, 2), "dictionary W: column 1 is all zeros"},
		{bad([]float64{1, 0, 2, -1, 1, 0, 3, 0}, 4, 2), "dictionary W: entry (1, 1) is -1"},
		{bad([]float64{1, 0, 2, math.NaN(), 1, 0, 3, 0}, 4, 2), "entry (1, 1) is NaN"},
		{bad(d[:7], 4, 2), "7 values for 4 × 2"},
	} {
		if _, err := c.spec.Build(data, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Build: %v, want %q", err, c.want)
		}
	}
	if _, err := spec.Build(data, -1); err == nil {
		t.Error("rank -1 built")
	}
}
