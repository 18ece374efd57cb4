package models

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// The O(N) evidence must equal the dense multivariate normal density of x ~ N(Rμ1, σx²I + Rσθ²11ᵀ).
func TestGaussLogEvidenceMatchesDenseNormal(t *testing.T) {
	for _, R := range []int{1, 3, 7} {
		x, _ := GenerateGauss(rng.New(3, uint64(R)), 40, 4, ICASSPGauss)
		m, err := NewGauss(x, R, ICASSPGauss)
		if err != nil {
			t.Fatal(err)
		}
		n := len(x)
		cov := mat.NewSymDense(n, nil)
		for i := range n {
			for j := i; j < n; j++ {
				v := float64(R) * ICASSPGauss.VarTheta
				if i == j {
					v += ICASSPGauss.VarX
				}
				cov.SetSym(i, j, v)
			}
		}
		var chol mat.Cholesky
		if !chol.Factorize(cov) {
			t.Fatal("covariance not positive definite")
		}
		d := mat.NewVecDense(n, nil)
		for i, v := range x {
			d.SetVec(i, v-float64(R)*ICASSPGauss.Mu)
		}
		sol := mat.NewVecDense(n, nil)
		if err := chol.SolveVecTo(sol, d); err != nil {
			t.Fatal(err)
		}
		dense := -0.5 * (float64(n)*math.Log(2*math.Pi) + chol.LogDet() + mat.Dot(d, sol))
		if got := m.LogEvidence(); math.Abs(got-dense) > 1e-8*math.Abs(dense) {
			t.Errorf("R=%d: O(N) evidence %.10f, dense %.10f", R, got, dense)
		}
	}
}

// Thermodynamic integration of the exact f(t) on a very fine ladder recovers the exact evidence,
// and v(t) is the derivative of f(t): checks PowerPosterior against LogEvidence.
func TestGaussPowerPosteriorIntegratesToEvidence(t *testing.T) {
	x, _ := GenerateGauss(rng.New(5), 5000, 10, ICASSPGauss)
	for _, R := range []int{1, 10, 20} {
		m, _ := NewGauss(x, R, ICASSPGauss)
		const T = 20000
		ti := 0.0
		prev, _ := m.PowerPosterior(0)
		tprev := 0.0
		for i := 1; i <= T; i++ {
			tt := math.Pow(float64(i)/T, 6)
			f, _ := m.PowerPosterior(tt)
			ti += (tt - tprev) * (f + prev) / 2
			prev, tprev = f, tt
		}
		if ex := m.LogEvidence(); math.Abs(ti-ex) > 0.01 {
			t.Errorf("R=%d: ∫f = %.4f, exact evidence %.4f", R, ti, ex)
		}
		for _, tt := range []float64{1e-4, 0.01, 0.5, 1} {
			h := tt * 1e-5
			f1, _ := m.PowerPosterior(tt - h)
			f2, _ := m.PowerPosterior(tt + h)
			_, v := m.PowerPosterior(tt)
			if fd := (f2 - f1) / (2 * h); math.Abs(fd-v) > 1e-4*math.Abs(v)+1e-6 {
				t.Errorf("R=%d t=%g: f'(t) = %.6g by differences, v(t) = %.6g", R, tt, fd, v)
			}
		}
	}
}

func checkGradient(t *testing.T, name string, m Model, r *rand.Rand) {
	t.Helper()
	dim := m.Dim()
	theta := make([]float64, dim)
	m.SamplePrior(r, theta)
	if m.Positive() {
		for i := range theta {
			theta[i] = math.Abs(theta[i]) + 0.05
		}
	}
	const w = 0.7
	e := m.NewEval()
	grad := make([]float64, dim)
	// The value each method returns is unweighted; only gradients carry w. Build w·loglik + logprior.
	value := func(th []float64, g []float64) float64 {
		e.Prepare(th)
		return e.LogPrior(g) + w*(e.Dense(w, g)+e.Cells(Cells{Lo: 0, Hi: m.NumCells()}, w, g))
	}
	value(theta, grad)
	for i := range dim {
		h := 1e-6 * math.Max(1, math.Abs(theta[i]))
		tp := append([]float64(nil), theta...)
		tm := append([]float64(nil), theta...)
		tp[i] += h
		tm[i] -= h
		fd := (value(tp, nil) - value(tm, nil)) / (2 * h)
		if math.Abs(fd-grad[i]) > 1e-5*math.Max(1, math.Abs(fd)) {
			t.Errorf("%s: ∂/∂θ[%d] analytic %.8g, finite difference %.8g", name, i, grad[i], fd)
			return
		}
	}
	// The metric's divergence term is the derivative of the metric along its own coordinate.
	g, gamma := make([]float64, dim), make([]float64, dim)
	gp, gm, tmp := make([]float64, dim), make([]float64, dim), make([]float64, dim)
	e.Prepare(theta)
	e.Metric(w, g, gamma)
	for i := range dim {
		h := 1e-6
		tp := append([]float64(nil), theta...)
		tm := append([]float64(nil), theta...)
		tp[i] += h
		tm[i] -= h
		e.Prepare(tp)
		e.Metric(w, gp, tmp)
		e.Prepare(tm)
		e.Metric(w, gm, tmp)
		if fd := (gp[i] - gm[i]) / (2 * h); math.Abs(fd-gamma[i]) > 1e-5*math.Max(1e-3, math.Abs(fd)) {
			t.Errorf("%s: metric divergence at %d analytic %.8g, finite difference %.8g", name, i, gamma[i], fd)
			return
		}
	}
}

func TestGradientsMatchFiniteDifferences(t *testing.T) {
	r := rng.New(11)
	x, _ := GenerateGauss(r, 50, 3, ICASSPGauss)
	g, _ := NewGauss(x, 4, ICASSPGauss)
	checkGradient(t, "gauss", g, r)
	nmf, _, _ := GeneratePoisson(r, []int{7, 5}, 2, []float64{0.8, 0.6})
	cp, _, _ := GeneratePoisson(r, []int{4, 5, 3}, 2, []float64{0.7, 0.9, 0.5})
	for _, p := range []Param{LogScale, Direct} {
		m, _ := NewPoisson("nmf", nmf, 3, []float64{0.8, 0.6}, p)
		checkGradient(t, "nmf/"+p.String(), m, r)
		m, _ = NewPoisson("cp", cp, 2, []float64{0.7, 0.9, 0.5}, p)
		checkGradient(t, "cp/"+p.String(), m, r)
	}
	for _, values := range []string{"real", "power"} {
		prior := isPriorOf(Params{"values": Word(values), "w-shape": Num(2), "w-rate": Num(1.5), "h-shape": Num(1.2), "h-scale": Num(0.8)})
		data, _, err := drawItakuraSaito(r, Truth{Rank: 2, Shape: []int{6, 5}}, prior.Params(), nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewItakuraSaito(data, 3, prior)
		if err != nil {
			t.Fatal(err)
		}
		checkGradient(t, "isnmf/"+values, m, r)
	}
}

// The sparse generator draws the superposition of R Poisson processes: the total count is Poisson
// with mean Σ_r Π_m colsum_m[r], and a single cell's mean is Σ_r Π_m F_m[i_m, r].
func TestGeneratePoissonMoments(t *testing.T) {
	shape := []int{6, 5, 4}
	rates := []float64{0.5, 0.6, 0.7}
	var zs []float64
	for seed := range uint64(200) {
		data, factors, err := GeneratePoisson(rng.New(seed), shape, 2, rates)
		if err != nil {
			t.Fatal(err)
		}
		if err := data.Validate(true); err != nil {
			t.Fatal(err)
		}
		mean := 0.0
		for r := range 2 {
			p := 1.0
			for m, n := range shape {
				s := 0.0
				for i := range n {
					s += factors[m][i*2+r]
				}
				p *= s
			}
			mean += p
		}
		zs = append(zs, (data.Sum()-mean)/math.Sqrt(mean))
	}
	var m1, m2 float64
	for _, z := range zs {
		m1 += z
		m2 += z * z
	}
	m1 /= float64(len(zs))
	m2 = m2/float64(len(zs)) - m1*m1
	if math.Abs(m1) > 0.3 || math.Abs(m2-1) > 0.35 {
		t.Errorf("standardised totals have mean %.3f and variance %.3f, want 0 and 1", m1, m2)
	}
}

// The closed form of the rank-1 evidence agrees with plain Monte Carlo over the prior on a tiny matrix.
func TestRank1LogEvidenceMatchesPriorMonteCarlo(t *testing.T) {
	d, _ := tensor.New([]int{3, 2}, 4)
	d.Append([]int{0, 0}, 1)
	d.Append([]int{1, 0}, 2)
	d.Append([]int{1, 1}, 1)
	d.Append([]int{2, 1}, 3)
	exact, err := Rank1LogEvidence(d, []float64{0.7, 1.3})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := NewPoisson("nmf", d, 1, []float64{0.7, 1.3}, LogScale)
	e := m.NewEval()
	r := rng.New(3)
	theta := make([]float64, m.Dim())
	const n = 400000
	ws := make([]float64, n)
	for k := range ws {
		m.SamplePrior(r, theta)
		e.Prepare(theta)
		ws[k] = math.Exp(LogLik(e, m) - exact)
	}
	var s, s2 float64
	for _, w := range ws {
		s += w
		s2 += w * w
	}
	mean := s / n
	se := math.Sqrt((s2/n - mean*mean) / n)
	if math.Abs(mean-1) > 4*se {
		t.Errorf("prior Monte Carlo / exact = %.4f ± %.4f, want 1", mean, se)
	}
}

// Heavy-tailed row activity concentrates the counts on a few rows; without it (row-shape 0) the
// generator draws exactly what GeneratePoisson draws.
func TestGeneratePoissonRowActivity(t *testing.T) {
	shape, rates := []int{3000, 2000}, []float64{13, 13}
	plain, plainF, err := GeneratePoisson(rng.New(5), shape, 3, rates)
	if err != nil {
		t.Fatal(err)
	}
	off, offF, offS, err := GeneratePoissonActive(rng.New(5), shape, 3, rates, 0)
	if err != nil || offS != nil {
		t.Fatalf("row-shape 0: activities %v, %v", offS, err)
	}
	if !reflect.DeepEqual(off, plain) || !reflect.DeepEqual(offF, plainF) {
		t.Error("row-shape 0 does not reproduce GeneratePoisson")
	}
	heavy, heavyF, act, err := GeneratePoissonActive(rng.New(5), shape, 3, rates, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	if len(act) != 2 || len(act[0]) != 3000 || len(act[1]) != 2000 || len(heavyF[0]) != 3000*3 {
		t.Fatalf("activities of %d modes", len(act))
	}
	// Activities have mean 1: over 3000 rows the standard error is √(1/(0.3·3000)) ≈ 0.033.
	mean := 0.0
	for _, s := range act[0] {
		mean += s / 3000
	}
	if math.Abs(mean-1) > 0.15 {
		t.Errorf("activities have mean %.3f, want 1", mean)
	}
	// topShare is the share of the counts in the busiest 1% of the rows of mode 0.
	topShare := func(d *tensor.Sparse) float64 {
		rows := make([]float64, d.Shape[0])
		for n, x := range d.Values {
			rows[d.Coords[0][n]] += x
		}
		slices.Sort(rows)
		top := 0.0
		for _, x := range rows[len(rows)-len(rows)/100:] {
			top += x
		}
		return top / d.Sum()
	}
	p, h := topShare(plain), topShare(heavy)
	t.Logf("top 1%% of rows hold %.3f of %v counts without activities, %.3f of %v with row-shape 0.3", p, plain.Sum(), h, heavy.Sum())
	if h < 3*p || h < 0.1 {
		t.Errorf("top 1%% of rows hold %.3f with row-shape 0.3, %.3f without", h, p)
	}
	for _, k := range []float64{-0.5, math.NaN(), math.Inf(1)} {
		if _, _, _, err := GeneratePoissonActive(rng.New(5), shape, 3, rates, k); err == nil {
			t.Errorf("row-shape %v accepted", k)
		}
	}
}

// FactorValues lays out θ as factor entries: the Poisson log-likelihood computed from them cell by
// cell, Σ x log λ − Σ_all λ − Σ log x!, is the model's own, in both parameterisations and with a
// fixed dictionary's columns first.
func TestFactorValuesGiveTheModelsLogLikelihood(t *testing.T) {
	r := rng.New(13)
	nmf, _, _ := GeneratePoisson(r, []int{7, 5}, 2, []float64{0.8, 0.6})
	cp, _, _ := GeneratePoisson(r, []int{4, 5, 3}, 2, []float64{0.7, 0.9, 0.5})
	dict := make([]float64, 7*2)
	for i := range dict {
		dict[i] = 0.5 + r.Float64()
	}
	type model struct {
		name string
		data *tensor.Sparse
		m    *Poisson
	}
	var ms []model
	for _, p := range []Param{LogScale, Direct} {
		a, _ := NewPoisson("nmf", nmf, 3, []float64{0.8, 0.6}, p)
		b, _ := NewPoisson("cp", cp, 2, []float64{0.7, 0.9, 0.5}, p)
		c, err := NewPoissonFixed("nmf", nmf, 1, []float64{0.8, 0.6}, p, dict, 2)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, model{"nmf/" + p.String(), nmf, a}, model{"cp/" + p.String(), cp, b}, model{"nmf+dictionary/" + p.String(), nmf, c})
	}
	for _, tc := range ms {
		theta := make([]float64, tc.m.Dim())
		tc.m.SamplePrior(r, theta)
		f := tc.m.FactorValues(theta)
		K := len(f[0]) / tc.data.Shape[0]
		// λ of every cell of the shape, from the entries alone.
		want, idx := 0.0, make([]int, tc.data.Order())
		cells := 1
		for _, n := range tc.data.Shape {
			cells *= n
		}
		lambda := func(at []int) float64 {
			s := 0.0
			for c := range K {
				p := 1.0
				for k, i := range at {
					p *= f[k][i*K+c]
				}
				s += p
			}
			return s
		}
		for n := range cells {
			rest := n
			for k := len(idx) - 1; k >= 0; k-- {
				idx[k] = rest % tc.data.Shape[k]
				rest /= tc.data.Shape[k]
			}
			want -= lambda(idx)
		}
		for n, x := range tc.data.Values {
			lg, _ := math.Lgamma(x + 1)
			want += x*math.Log(lambda(tc.data.Index(n, idx))) - lg
		}
		e := tc.m.NewEval()
		e.Prepare(theta)
		if got := LogLik(e, tc.m); !(math.Abs(got-want) <= 1e-9*math.Abs(got)) {
			t.Errorf("%s: log-likelihood from FactorValues %.10g, the model's %.10g", tc.name, want, got)
		}
	}
}
