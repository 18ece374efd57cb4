package isnmf

import (
	"fmt"
	"math"

	"github.com/stirank/stirank/tensor"
)

// Values says how a data matrix's values enter the model.
type Values string

const (
	// Amplitudes are real values x_f of any sign (u = ½).
	Amplitudes Values = "real"
	// Powers are powers v_f = |x_f|² of circular complex values (u = 1), such as a power
	// spectrogram: the exponential noise model v_f = v̂_f ε_f of eq. 2. The evidence is then the
	// density of the powers, log p(x) + F log π.
	Powers Values = "power"
	// Complex are circular complex values x_f (u = 1) held with their imaginary parts
	// (tensor.Sparse.Imag), such as a short-time Fourier transform. The evidence is the density
	// of x itself on C^F, so it is that of their powers less F log π.
	Complex Values = "complex"
)

// ParseValues reads "real", "power" or "complex".
func ParseValues(s string) (Values, error) {
	switch v := Values(s); v {
	case Amplitudes, Powers, Complex:
		return v, nil
	}
	return "", fmt.Errorf("isnmf: values %q: want real (amplitudes), power (|x|² of complex values) or complex", s)
}

// U is the model's u for these values.
func (v Values) U() float64 {
	if v == Amplitudes {
		return 0.5
	}
	return 1
}

// LogJacobian is what turns log p(x) of F complex values into log p(v) of their powers
// v = |x|²: the density of v_f is π times that of x_f. Zero for amplitudes and complex values,
// whose density is that of x.
func (v Values) LogJacobian(f int) float64 {
	if v == Powers {
		return float64(f) * math.Log(math.Pi)
	}
	return 0
}

// Columns returns the columns of an F×N matrix as the model reads them — powers |x_f|², column
// by column — with every stored value checked. Complex values need a complex matrix and are the
// only values a complex matrix holds. complete says whether a cell that is not stored is missing
// (an error naming it) or zero.
func Columns(t *tensor.Sparse, v Values, complete bool) ([][]float64, error) {
	if t.Order() != 2 {
		return nil, fmt.Errorf("data is a %d-way array; IS-NMF scores a matrix (features × columns)", t.Order())
	}
	switch {
	case v == Complex && !t.Complex():
		return nil, fmt.Errorf("values complex need complex data (value_kind complex); these are real")
	case v != Complex && t.Complex():
		return nil, fmt.Errorf("the data are complex: they enter as complex values, not as %s", v)
	}
	F, N := t.Shape[0], t.Shape[1]
	if F*N > 1<<28 {
		return nil, fmt.Errorf("data is %d×%d; the dictionary scorer holds the matrix in memory, at most 2^28 cells", F, N)
	}
	cols := make([][]float64, N)
	for n := range cols {
		cols[n] = make([]float64, F)
	}
	var seen []bool // F×N, column-major, when missing cells are errors
	if complete {
		seen = make([]bool, F*N)
	}
	for c, x := range t.Values {
		f, n := int(t.Coords[0][c]), int(t.Coords[1][c])
		var im float64
		if t.Complex() {
			im = t.Imag[c]
		}
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			return nil, fmt.Errorf("cell (%d, %d) is %v", f, n, x)
		case math.IsNaN(im) || math.IsInf(im, 0):
			return nil, fmt.Errorf("cell (%d, %d) has imaginary part %v", f, n, im)
		case v == Powers && x < 0:
			return nil, fmt.Errorf("cell (%d, %d) is %v, but powers are non-negative", f, n, x)
		}
		switch v {
		case Powers:
			cols[n][f] = x
		case Complex:
			// Each square rounded on its own (a conversion forbids a fused multiply-add), so
			// that |x|² is the power anyone computes from the two parts, bit for bit.
			cols[n][f] = float64(x*x) + float64(im*im)
		default:
			cols[n][f] = x * x
		}
		if complete {
			seen[n*F+f] = true
		}
	}
	if complete {
		for n := range N {
			for f := range F {
				if !seen[n*F+f] {
					return nil, fmt.Errorf("cell (%d, %d) is missing: every feature of every column must be stored", f, n)
				}
			}
		}
	}
	return cols, nil
}

// Dictionary returns an F×K dictionary, row-major, from a matrix whose unstored cells are zero,
// with every entry checked.
func Dictionary(t *tensor.Sparse) (w []float64, f, k int, err error) {
	if t.Order() != 2 {
		return nil, 0, 0, fmt.Errorf("a dictionary is a matrix (features × columns), not a %d-way array", t.Order())
	}
	f, k = t.Shape[0], t.Shape[1]
	if f*k > 1<<28 {
		return nil, 0, 0, fmt.Errorf("dictionary is %d×%d, more than 2^28 entries", f, k)
	}
	w = make([]float64, f*k)
	for c, x := range t.Values {
		i, j := int(t.Coords[0][c]), int(t.Coords[1][c])
		if !(x >= 0) || math.IsInf(x, 0) {
			return nil, 0, 0, fmt.Errorf("dictionary entry (%d, %d) is %v: entries must be finite and non-negative", i, j, x)
		}
		w[i*k+j] = x
	}
	return w, f, k, nil
}
