package models

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stirank/stirank/internal/quad"
	"github.com/stirank/stirank/tensor"
)

// ssnmfName is the semi-supervised NMF model's name.
const ssnmfName = "ssnmf"

// The semi-supervised Poisson NMF of ICASSP 2016 §4.2: a fixed dictionary D (F × K_D, a speech
// dictionary trained on clean speech) and a free block of rank R (the noise),
//
//	X ~ Poisson(D H_D + W H),  H_D, H ~ Exp(rates[1]),  W ~ Exp(rates[0]),
//
// with H_D stored, like H, as its transpose beside it: the Poisson model with K_D fixed
// components (NewPoissonFixed). The rank STI chooses is R, the free block's; R = 0 is the
// dictionary alone. The Gibbs kernel and the SG-MCMC gradients are the Poisson model's, with the
// dictionary's entries held out of the parameters.
func init() {
	info := poissonInfo(ssnmfName, 2, "semi-supervised Poisson NMF X ~ Poisson(D H_D + W H) with the fixed dictionary D of --dict and a free block W H of rank R; W, H_D, H ~ Exp(rates) (ICASSP 2016 §4.2)")
	info.Dictionary, info.ZeroRank = true, true
	// The baselines enumerate allocations over free components only.
	info.ExpPoissonRates = nil
	gen := ratesHyper(Num(1), "rate of the exponential prior of W, H_D and H")
	gen.Auto = false
	info.Generate = &Generator{Hypers: []Hyper{gen}, Draw: drawSSNMF}
	info.Build = func(data *tensor.Sparse, R int, s Spec) (Model, error) {
		d := s.Dictionary
		if d == nil {
			return nil, errors.New("ssnmf: no dictionary (--dict)")
		}
		if err := d.CheckFor(data.Shape[0]); err != nil {
			return nil, fmt.Errorf("ssnmf: %w", err)
		}
		param, err := ParseParam(s.Params.Word("param"))
		if err != nil {
			return nil, err
		}
		prior, err := ssnmfPrior(data, R, s)
		if err != nil {
			return nil, err
		}
		return NewPoissonFixedPrior(ssnmfName, data, R, prior, param, d.Values, d.Cols)
	}
	info.Exact = func(data *tensor.Sparse, R int, s Spec) (float64, error) {
		d := s.Dictionary
		if R != 0 || d == nil || d.Cols != 1 {
			return 0, ErrNoExact
		}
		if err := d.CheckFor(data.Shape[0]); err != nil {
			return 0, fmt.Errorf("ssnmf: %w", err)
		}
		prior, err := ssnmfPrior(data, R, s)
		if err != nil {
			return 0, err
		}
		return ssnmfRank0LogZPrior(data, d.Values, prior, 1), nil
	}
	Register(info)
}

// ssnmfPrior is the prior of ssnmf's rates at free rank R: the spec's, or AutoPriorFixed under
// --rate auto.
func ssnmfPrior(data *tensor.Sparse, R int, s Spec) (RatePrior, error) {
	if s.Params.Auto("rates") {
		return AutoPriorFixed(data, R, s.Dictionary)
	}
	return RatePrior{Rates: s.Params.Nums("rates")}, nil
}

// SSNMFTruth is truth.json for ssnmf: the dictionary drawn with (by source and checksum) and the
// drawn factors, H_D[j][k] the activation of dictionary column k in column j of the data.
type SSNMFTruth struct {
	Truth
	Rates              []float64   `json:"rates"`
	Dictionary         string      `json:"dictionary"`
	DictionaryChecksum string      `json:"dictionary_checksum"`
	HD                 [][]float64 `json:"h_dict"`
	W                  [][]float64 `json:"w"`
	H                  [][]float64 `json:"h"`
}

// drawSSNMF draws H_D, W and H from their priors and every cell of X ~ Poisson(D H_D + W H), D the
// dictionary; cells drawn zero are not stored.
func drawSSNMF(r *rand.Rand, t Truth, p Params, d *Dictionary) (*tensor.Sparse, any, error) {
	if d == nil {
		return nil, nil, errors.New("ssnmf: no dictionary (--dict)")
	}
	if len(t.Shape) != 2 {
		return nil, nil, fmt.Errorf("ssnmf: the data are a matrix, not a %d-way array", len(t.Shape))
	}
	if err := d.CheckFor(t.Shape[0]); err != nil {
		return nil, nil, fmt.Errorf("ssnmf: %w", err)
	}
	rates := p.Nums("rates")
	F, N, R, K := t.Shape[0], t.Shape[1], t.Rank, d.Cols
	draw := func(rows, cols int, rate float64) [][]float64 {
		m := make([][]float64, rows)
		for i := range m {
			m[i] = make([]float64, cols)
			for c := range m[i] {
				m[i][c] = r.ExpFloat64() / rate
			}
		}
		return m
	}
	truth := SSNMFTruth{Truth: t, Rates: rates, Dictionary: d.Source, DictionaryChecksum: d.Checksum,
		HD: draw(N, K, rates[1]), W: draw(F, R, rates[0]), H: draw(N, R, rates[1])}
	x, err := tensor.New(t.Shape, 0)
	if err != nil {
		return nil, nil, err
	}
	for i := range F {
		for j := range N {
			lambda := 0.0
			for k := range K {
				lambda += d.Values[i*K+k] * truth.HD[j][k]
			}
			for c := range R {
				lambda += truth.W[i][c] * truth.H[j][c]
			}
			if lambda == 0 { // a dictionary row of zeros at rank 0
				continue
			}
			pois := distuv.Poisson{Lambda: lambda, Src: r}
			if v := pois.Rand(); v > 0 {
				x.Append([]int{i, j}, v)
			}
		}
	}
	return x, truth, nil
}

// ssnmfRank0LogZ is log ∫ p(H_D) p(X | D H_D)^t dH_D for a one-column dictionary w (K_D = 1,
// R = 0) and H_D ~ Exp(rate), in closed form: given w the columns of X are independent, column
// j has the single activation h_j, and
//
//	∫ rate e^{−rate·h} Π_i [(w_i h)^{x_ij} e^{−w_i h} / x_ij!]^t dh
//	  = rate · Π_i w_i^{t·x_ij} / x_ij!^t · Γ(t·s_j + 1) / (rate + t·Σ_i w_i)^{t·s_j + 1}
//
// with s_j = Σ_i x_ij, a Gamma integral. At t = 1 it is the evidence of ssnmf at rank 0.
func ssnmfRank0LogZ(data *tensor.Sparse, w []float64, rate, t float64) float64 {
	var logZ sum
	W := 0.0
	for _, v := range w {
		W += v
	}
	s := make([]float64, data.Shape[1])
	for n, x := range data.Values {
		if x == 0 { // a stored zero, whose x log w would be NaN where w is 0
			continue
		}
		s[data.Coords[1][n]] += x
		logZ.add(t * (x*math.Log(w[data.Coords[0][n]]) - lgamma(x+1)))
	}
	for _, sj := range s {
		logZ.add(math.Log(rate) + lgamma(t*sj+1) - (t*sj+1)*math.Log(rate+t*W))
	}
	return logZ.value()
}

// ssnmfRank0LogZPrior is ssnmfRank0LogZ under prior: at its fixed rate of H_D, or under the
// hyperprior integrated over that rate in v = log λ, where the integrand, log Z at e^v plus
// the Gamma(a, b) log density of v, is concave. Mode 0's rate governs no entry at rank 0.
func ssnmfRank0LogZPrior(data *tensor.Sparse, w []float64, prior RatePrior, t float64) float64 {
	if !prior.Auto() {
		return ssnmfRank0LogZ(data, w, prior.Rates[1], t)
	}
	a, b := prior.Shape, prior.Rates[1]
	return a*math.Log(b) - lgamma(a) + quad.LogIntegral(func(v float64) float64 {
		return ssnmfRank0LogZ(data, w, math.Exp(v), t) + a*v - b*math.Exp(v)
	})
}

// Dictionary is a fixed dictionary: a non-negative Rows × Cols matrix, row-major, one row per
// index of the data's first mode (a frequency bin of a spectrogram), with where it came from.
type Dictionary struct {
	// Source names it in errors (its dataset's location); Checksum is its dataset's checksum.
	Source, Checksum string
	Rows, Cols       int
	Values           []float64
}

// Check returns the first thing that makes d no dictionary: a shape its values do not fill,
// an entry that is negative or not finite, or a column of zeros (a component no data can load).
func (d *Dictionary) Check() error {
	if d.Rows < 1 || d.Cols < 1 || len(d.Values) != d.Rows*d.Cols {
		return fmt.Errorf("dictionary %s: %d values for %d × %d", d.Source, len(d.Values), d.Rows, d.Cols)
	}
	colsum := make([]float64, d.Cols)
	for i, v := range d.Values {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("dictionary %s: entry (%d, %d) is %v: entries must be finite and non-negative", d.Source, i/d.Cols, i%d.Cols, v)
		}
		colsum[i%d.Cols] += v
	}
	for c, s := range colsum {
		if s == 0 {
			return fmt.Errorf("dictionary %s: column %d is all zeros", d.Source, c)
		}
	}
	return nil
}

// CheckFor is Check for data with rows indices in their first mode.
func (d *Dictionary) CheckFor(rows int) error {
	if err := d.Check(); err != nil {
		return err
	}
	if d.Rows != rows {
		return fmt.Errorf("dictionary %s has %d rows, the data %d", d.Source, d.Rows, rows)
	}
	return nil
}
