// Package klnmf fits non-negative matrix factorisations X ≈ W·H under the generalised
// Kullback–Leibler divergence, the maximum-likelihood fit of the Poisson model x ~ Poisson(WH),
// by expectation–maximisation (Cemgil 2009), which for this model is the Lee–Seung multiplicative
// update. Some columns of W can be held fixed, as a pre-trained dictionary is when a mixture is
// split into a known source and a free one.
//
// The data are the stored cells of a sparse matrix, every other cell being zero: one EM sweep
// costs two passes over the stored cells, each O(K) per cell, and the zero cells enter only
// through the column sums of W and the row sums of H.
package klnmf

import (
	"errors"
	"fmt"
	"math"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// initStream names the random stream the starting factors are drawn from.
const initStream = 0x6b6c6e6d66

// Options configures Fit.
type Options struct {
	// Rank is the number of free columns of W (rows of H that go with them).
	Rank int
	// Fixed, when FixedCols > 0, is an F × FixedCols row-major block of W that is not updated:
	// it makes up columns 0 … FixedCols−1 of W, and the free columns follow.
	Fixed     []float64
	FixedCols int
	// Hold, when above 1, ties the activations of the free columns over runs of Hold
	// consecutive columns of X (the last run may be shorter): a free column can then follow only
	// what changes slower than that, as stationary noise does and speech does not.
	Hold int
	// Start, when not nil, is an F × Rank row-major block the free columns start from instead
	// of random draws, each entry times a draw of U(0.9, 1.1) to keep equal columns apart, and
	// scaled so that a free column starts contributing about Start to every column of X: EM
	// keeps much of the split between the fixed and free columns that it starts from, so a
	// caller who knows what the free part looks like should say so.
	Start []float64
	// Iters bounds the EM sweeps; Tol stops them earlier, once a sweep lowers the divergence by
	// less than Tol times its value.
	Iters int
	Tol   float64
	// Seed names the random stream of the starting point (package rng): the fit is a
	// deterministic function of the data, the options and the seed.
	Seed uint64
	// Progress, when not nil, is called before every sweep with the number of sweeps done and
	// the divergence at that point, and once more at the end.
	Progress func(sweep int, kl float64)
}

// Result is a fitted factorisation.
type Result struct {
	// F, N are the data's shape and K = FixedCols + Rank the inner dimension.
	F, N, K int
	// W is F × K and H is K × N, both row-major.
	W, H []float64
	// KL is the divergence D(X ‖ WH) = Σ x log(x / v) − x + v at the end.
	KL float64
	// Sweeps is the number of EM sweeps run; Converged tells whether Tol stopped them.
	Sweeps    int
	Converged bool
}

// Check returns what makes x unfit for KL-NMF: not a matrix, or a value that is negative or not
// finite.
func Check(x *tensor.Sparse) error {
	if x.Order() != 2 {
		return fmt.Errorf("KL-NMF factorises a matrix, not a %d-way array", x.Order())
	}
	for c, v := range x.Values {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("cell (%d, %d) is %v: KL-NMF needs finite non-negative values", x.Coords[0][c], x.Coords[1][c], v)
		}
	}
	if x.Sum() == 0 {
		return errors.New("every cell is zero: there is nothing to factorise")
	}
	return nil
}

// Fit runs EM from a random starting point drawn from Seed.
func Fit(x *tensor.Sparse, o Options) (*Result, error) {
	if err := Check(x); err != nil {
		return nil, err
	}
	F, N := x.Shape[0], x.Shape[1]
	K := o.FixedCols + o.Rank
	switch {
	case o.Rank < 0 || o.FixedCols < 0 || K < 1:
		return nil, fmt.Errorf("rank %d with %d fixed columns: need at least one column", o.Rank, o.FixedCols)
	case o.Hold < 0:
		return nil, fmt.Errorf("hold %d must not be negative", o.Hold)
	case len(o.Fixed) != F*o.FixedCols:
		return nil, fmt.Errorf("fixed block has %d entries, want %d × %d", len(o.Fixed), F, o.FixedCols)
	case o.Start != nil && len(o.Start) != F*o.Rank:
		return nil, fmt.Errorf("start block has %d entries, want %d × %d", len(o.Start), F, o.Rank)
	case o.Iters < 0 || !(o.Tol >= 0):
		return nil, fmt.Errorf("iterations %d and tolerance %v must not be negative", o.Iters, o.Tol)
	case float64(F)*float64(K) > 1<<28 || float64(N)*float64(K) > 1<<28:
		return nil, fmt.Errorf("%d × %d data at inner dimension %d: factors of more than 2^28 entries", F, N, K)
	}
	for i, v := range o.Fixed {
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("fixed entry (%d, %d) is %v: must be finite and non-negative", i/o.FixedCols, i%o.FixedCols, v)
		}
	}
	for i, v := range o.Start {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("start entry (%d, %d) is %v: must be finite and positive, as EM never moves a zero", i/o.Rank, i%o.Rank, v)
		}
	}
	s := newState(x, o)
	r := &Result{F: F, N: N, K: K}
	prev := s.ratios()
	if c := s.unexplained; c >= 0 {
		return nil, fmt.Errorf("cell (%d, %d) is %v but row %d of the fixed columns is zero and there is no free column to explain it",
			x.Coords[0][c], x.Coords[1][c], x.Values[c], x.Coords[0][c])
	}
	for r.Sweeps < o.Iters {
		if o.Progress != nil {
			o.Progress(r.Sweeps, prev)
		}
		s.updateH()
		s.ratios()
		s.updateW()
		r.Sweeps++
		cur := s.ratios()
		if prev-cur <= o.Tol*prev {
			prev, r.Converged = cur, true
			break
		}
		prev = cur
	}
	if o.Progress != nil {
		o.Progress(r.Sweeps, prev)
	}
	r.KL = prev
	r.W = s.w
	r.H = make([]float64, K*N)
	for j := range N {
		for k := range K {
			r.H[k*N+j] = s.ht[j*K+k]
		}
	}
	return r, nil
}

// state is the factorisation being fitted. H is kept transposed (N × K) so that the model value
// of a cell is a dot product of two contiguous rows.
type state struct {
	x          *tensor.Sparse
	K, fixed   int
	hold       int
	w, ht      []float64
	q          []float64 // q[c] = x_c / v_c for stored cell c
	num        []float64 // numerator of the current multiplicative update
	sumW, sumH []float64 // column sums of W and of Hᵀ
	constant   float64   // Σ x log x − x over the stored cells
	// unexplained is a stored non-zero cell the model gives zero (−1: none). From a positive
	// start that happens only where the fixed columns have a zero row and there are no free
	// ones; EM cannot move such a cell, so Fit refuses it.
	unexplained int
}

func newState(x *tensor.Sparse, o Options) *state {
	F, N := x.Shape[0], x.Shape[1]
	K := o.FixedCols + o.Rank
	s := &state{x: x, K: K, fixed: o.FixedCols, w: make([]float64, F*K), ht: make([]float64, N*K),
		q: make([]float64, x.NNZ()), num: make([]float64, max(F, N)*K), sumW: make([]float64, K), sumH: make([]float64, K),
		unexplained: -1}
	for _, v := range x.Values {
		if v > 0 {
			s.constant += v*math.Log(v) - v
		}
	}
	// Entries c·U(0.5, 1.5) make the mean of WH the mean of X, so the first sweeps rescale
	// nothing; spreading them keeps the columns apart.
	c := math.Sqrt(x.Sum() / (float64(F) * float64(N) * float64(K)))
	g := rng.New(o.Seed, initStream)
	for f := range F {
		copy(s.w[f*K:f*K+o.FixedCols], o.Fixed[f*o.FixedCols:(f+1)*o.FixedCols])
		for k := o.FixedCols; k < K; k++ {
			if o.Start != nil {
				// Activations start near c, so a column of Start/c contributes about Start.
				s.w[f*K+k] = o.Start[f*o.Rank+k-o.FixedCols] / c * (0.9 + 0.2*g.Float64())
			} else {
				s.w[f*K+k] = c * (0.5 + g.Float64())
			}
		}
	}
	for i := range s.ht {
		s.ht[i] = c * (0.5 + g.Float64())
	}
	s.hold = max(o.Hold, 1)
	s.tie(s.ht)
	return s
}

// ratios sets q from the current factors and returns the divergence D(X ‖ WH).
func (s *state) ratios() float64 {
	K := s.K
	rows, cols := s.x.Coords[0], s.x.Coords[1]
	kl := s.constant
	for c, x := range s.x.Values {
		if x == 0 {
			s.q[c] = 0
			continue
		}
		w := s.w[int(rows[c])*K : int(rows[c])*K+K]
		h := s.ht[int(cols[c])*K : int(cols[c])*K+K]
		v := 0.0
		for k, wk := range w {
			v += wk * h[k]
		}
		if v == 0 {
			if s.unexplained < 0 {
				s.unexplained = c
			}
			s.q[c] = 0
			continue
		}
		s.q[c] = x / v
		kl -= x * math.Log(v)
	}
	models.ColSums(s.w, K, s.sumW)
	models.ColSums(s.ht, K, s.sumH)
	for k := range K {
		kl += s.sumW[k] * s.sumH[k]
	}
	return kl
}

// updateH is the M-step for H given the E-step in q: h_kj ← h_kj Σ_f q_fj w_fk / Σ_f w_fk.
func (s *state) updateH() {
	K := s.K
	num := s.num[:len(s.ht)]
	clear(num)
	rows, cols := s.x.Coords[0], s.x.Coords[1]
	for c, q := range s.q {
		if q == 0 {
			continue
		}
		w := s.w[int(rows[c])*K : int(rows[c])*K+K]
		n := num[int(cols[c])*K : int(cols[c])*K+K]
		for k, wk := range w {
			n[k] += q * wk
		}
	}
	s.tie(num)
	multiply(s.ht, num, s.sumW, K, 0)
}

// tie sets the free columns of a (N × K, like Hᵀ) to their mean over each run of hold rows. On
// the update's numerators that is the M-step of an activation shared by the run, since its
// denominator, the column sum of W, is the same for every row of the run.
func (s *state) tie(a []float64) {
	if s.hold == 1 || s.fixed == s.K {
		return
	}
	K := s.K
	N := len(a) / K
	for from := 0; from < N; from += s.hold {
		to := min(from+s.hold, N)
		for k := s.fixed; k < K; k++ {
			sum := 0.0
			for j := from; j < to; j++ {
				sum += a[j*K+k]
			}
			for j := from; j < to; j++ {
				a[j*K+k] = sum / float64(to-from)
			}
		}
	}
}

// updateW is the M-step for the free columns of W: w_fk ← w_fk Σ_j q_fj h_kj / Σ_j h_kj.
func (s *state) updateW() {
	K := s.K
	if s.fixed == K {
		return
	}
	num := s.num[:len(s.w)]
	clear(num)
	rows, cols := s.x.Coords[0], s.x.Coords[1]
	for c, q := range s.q {
		if q == 0 {
			continue
		}
		h := s.ht[int(cols[c])*K : int(cols[c])*K+K]
		n := num[int(rows[c])*K : int(rows[c])*K+K]
		for k := s.fixed; k < K; k++ {
			n[k] += q * h[k]
		}
	}
	multiply(s.w, num, s.sumH, K, s.fixed)
}

// multiply sets a[i, k] ← a[i, k]·num[i, k]/den[k] for columns k ≥ from. A column whose
// denominator is zero is zero in the other factor, so it does not enter the model: it is kept.
func multiply(a, num, den []float64, K, from int) {
	for i := 0; i < len(a); i += K {
		for k := from; k < K; k++ {
			if den[k] > 0 {
				a[i+k] *= num[i+k] / den[k]
			}
		}
	}
}
