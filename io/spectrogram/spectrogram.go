// Package spectrogram turns audio into an integer magnitude spectrogram, the count matrix that
// Poisson NMF models.
//
// Frame f covers samples [f·hop, f·hop+window) of the signal, multiplied by a symmetric Hamming
// window (w[n] = 0.54 − 0.46·cos(2πn/(window−1)), MATLAB's hamming(window) and gonum's
// dsp/window.Hamming). Frames start at the first sample and stop at the last one that fits
// whole: the signal is not padded, so a tail shorter than a hop is left out. Row k of the
// spectrogram is the frequency k·rate/window Hz, k = 0 … window/2, and column f is frame f.
//
// Cell (k, f) is round(scale · |X_f[k]|), where X_f is the unnormalised DFT of windowed frame f
// (X[k] = Σ_n w[n] x[n] e^(−2πikn/window)) of samples in [−1, 1]. A full-scale sinusoid thus
// peaks at about 0.27·window·scale, and the quiet bins of speech round to zero, so the matrix is
// sparse. The scale is a free choice that sets how much the Poisson model trusts the data: at a
// larger scale the same audio gives larger counts, whose relative noise is smaller.
package spectrogram

import (
	"fmt"
	"math"
	"math/cmplx"

	"gonum.org/v1/gonum/dsp/fourier"
	"gonum.org/v1/gonum/dsp/window"

	"github.com/stirank/stirank/tensor"
)

const (
	// DefaultWindow and DefaultOverlap are the ICASSP 2016 analysis: 512 samples, half shared.
	DefaultWindow  = 512
	DefaultOverlap = 0.5
	// DefaultScale gives speech that peaks near full scale counts up to about 500, with the
	// rounding floor some 50 dB below the peak; espeak-ng speech comes out about 40% non-zero.
	// Scale 1 keeps only about 35 dB (and 11% of the cells), quantising away much of the
	// spectrum that NMF should model.
	DefaultScale = 10
	// MaxWindow bounds the window so that a frame's FFT stays a small allocation.
	MaxWindow = 1 << 20
	// maxCount is the largest count a float64 holds exactly.
	maxCount = 1 << 53
)

// Params is a validated analysis: window length, hop between frame starts and count scale.
type Params struct {
	Window int
	Hop    int
	Scale  float64
}

// NewParams returns the analysis of the given window length, overlap (the fraction of a window
// that consecutive frames share, in [0, 1)) and scale. The hop is window − round(overlap·window),
// 256 for the defaults.
func NewParams(windowLen int, overlap, scale float64) (Params, error) {
	switch {
	case windowLen < 2 || windowLen > MaxWindow:
		return Params{}, fmt.Errorf("window %d outside [2, %d]", windowLen, MaxWindow)
	case !(overlap >= 0 && overlap < 1):
		return Params{}, fmt.Errorf("overlap %v outside [0, 1)", overlap)
	case !(scale > 0) || math.IsInf(scale, 0):
		return Params{}, fmt.Errorf("scale %v must be positive and finite", scale)
	}
	hop := windowLen - int(math.Round(overlap*float64(windowLen)))
	if hop < 1 {
		return Params{}, fmt.Errorf("overlap %v leaves no hop between frames of %d samples", overlap, windowLen)
	}
	return Params{Window: windowLen, Hop: hop, Scale: scale}, nil
}

// Bins is the number of frequency rows, window/2 + 1.
func (p Params) Bins() int { return p.Window/2 + 1 }

// Frames is the number of whole frames in a signal of n samples.
func (p Params) Frames(n int) int {
	if n < p.Window {
		return 0
	}
	return 1 + (n-p.Window)/p.Hop
}

// Samples is the signal length that gives exactly frames frames with nothing left over.
func (p Params) Samples(frames int) int { return (frames-1)*p.Hop + p.Window }

// Counts returns the integer magnitude spectrogram of samples as a Bins() × Frames(len(samples))
// count matrix. Zero cells are not stored: for count data an unstored cell is zero.
func Counts(samples []float64, p Params) (*tensor.Sparse, error) {
	frames := p.Frames(len(samples))
	if frames == 0 {
		return nil, fmt.Errorf("%d samples are shorter than one window of %d", len(samples), p.Window)
	}
	if frames > math.MaxInt32 {
		return nil, fmt.Errorf("%d frames are more than a dataset mode holds", frames)
	}
	ham := window.Hamming(ones(p.Window))
	fft := fourier.NewFFT(p.Window)
	frame := make([]float64, p.Window)
	coeffs := make([]complex128, p.Bins())
	t := &tensor.Sparse{Shape: []int{p.Bins(), frames}, Coords: make([][]int32, 2)}
	for f := range frames {
		for n, x := range samples[f*p.Hop : f*p.Hop+p.Window] {
			frame[n] = ham[n] * x
		}
		fft.Coefficients(coeffs, frame)
		for k, c := range coeffs {
			count := math.Round(p.Scale * cmplx.Abs(c))
			if count == 0 {
				continue
			}
			if !(count <= maxCount) {
				return nil, fmt.Errorf("frame %d bin %d: count %v is beyond 2^53 (or not a number); lower the scale", f, k, count)
			}
			t.Coords[0] = append(t.Coords[0], int32(k))
			t.Coords[1] = append(t.Coords[1], int32(f))
			t.Values = append(t.Values, count)
		}
	}
	return t, nil
}

func ones(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

// STFT returns the complex spectra of the frames of samples, the values Counts rounds the
// magnitudes of: frame f has Bins() coefficients X_f[k], unscaled.
func STFT(samples []float64, p Params) ([][]complex128, error) {
	frames := p.Frames(len(samples))
	if frames == 0 {
		return nil, fmt.Errorf("%d samples are shorter than one window of %d", len(samples), p.Window)
	}
	ham := window.Hamming(ones(p.Window))
	fft := fourier.NewFFT(p.Window)
	frame := make([]float64, p.Window)
	spec := make([][]complex128, frames)
	for f := range spec {
		for n, x := range samples[f*p.Hop : f*p.Hop+p.Window] {
			frame[n] = ham[n] * x
		}
		spec[f] = fft.Coefficients(nil, frame)
	}
	return spec, nil
}

// ISTFT inverts STFT by weighted overlap-add: every frame's inverse DFT is windowed again and
// the sum is divided by Σ_f w²(n − f·hop), the least-squares inverse of Griffin & Lim (1984). It
// gives back exactly the samples an unmodified STFT was taken of, whatever the overlap, since the
// Hamming window is nowhere zero; and for a modified spectrum (a masked one) it is the signal
// whose STFT is closest to it. It returns n samples: those past the last frame are zero.
func ISTFT(spec [][]complex128, p Params, n int) ([]float64, error) {
	if len(spec) == 0 || p.Samples(len(spec)) > n {
		return nil, fmt.Errorf("%d frames of window %d and hop %d do not fit in %d samples", len(spec), p.Window, p.Hop, n)
	}
	ham := window.Hamming(ones(p.Window))
	fft := fourier.NewFFT(p.Window)
	frame := make([]float64, p.Window)
	out := make([]float64, n)
	norm := make([]float64, n)
	for f, coeffs := range spec {
		if len(coeffs) != p.Bins() {
			return nil, fmt.Errorf("frame %d has %d coefficients, want %d", f, len(coeffs), p.Bins())
		}
		// gonum's inverse is unnormalised: it returns window × the frame.
		fft.Sequence(frame, coeffs)
		start := f * p.Hop
		for i, w := range ham {
			out[start+i] += w * frame[i] / float64(p.Window)
			norm[start+i] += w * w
		}
	}
	for i, d := range norm {
		if d > 0 {
			out[i] /= d
		}
	}
	return out, nil
}
