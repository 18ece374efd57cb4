// Package speech enhances noisy speech with a fixed KL-NMF speech dictionary (the
// semi-supervised NMF of Smaragdis et al. 2007, the application of ICASSP 2016 §4.2) and scores
// the result with SDR and SI-SDR.
//
// The magnitude spectrogram X of the mixture is modelled as X ≈ W^sp H^sp + W^no H^no, with the
// speech dictionary W^sp fixed and the activations H^sp, the noise dictionary W^no (of a small
// rank) and its activations H^no fitted by EM (package klnmf), H^no held constant over runs of
// frames and the noise columns started from the quietest frames. Rows below a low cut are left
// out of the fit and masked to zero. The speech estimate is the mixture's complex STFT times the
// Wiener-style mask M = W^sp H^sp / (W^sp H^sp + W^no H^no), inverted by overlap-add
// (spectrogram.ISTFT). The mask keeps the mixture's phase.
package speech

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"slices"

	"github.com/stirank/stirank/io/spectrogram"
	"github.com/stirank/stirank/models/klnmf"
	"github.com/stirank/stirank/tensor"
)

// DefaultNoiseHold is stirank enhance's noise hold in seconds: longer than a syllable, shorter
// than the changes of the stationary noises enhance is meant for. docs/speech.md measures it on
// voices the dictionary has not heard.
const DefaultNoiseHold = 0.5

// DefaultLowCut is stirank enhance's low cut in Hz: below the lowest pitch of a voice, where a
// dictionary row models only its recordings' offset and rumble (a common speech high-pass).
const DefaultLowCut = 80

// DefaultNoiseStart is stirank enhance's fraction of quietest frames the noise starts from: a
// tenth, fewer than the pauses of read speech.
const DefaultNoiseStart = 0.1

// Options configures Enhance.
type Options struct {
	// Params is the analysis the dictionary was trained with.
	Params spectrogram.Params
	// Dict is the F × DictCols row-major speech dictionary, F = Params.Bins().
	Dict     []float64
	DictCols int
	// NoiseRank is the number of free noise columns.
	NoiseRank int
	// NoiseHold is the number of consecutive frames over which the noise activations are held
	// constant (klnmf.Options.Hold): noise that changes slower than speech cannot then take
	// over the speech that the dictionary explains poorly, as a voice it was not trained on.
	NoiseHold int
	// LowCut is the number of lowest frequency rows taken to hold no speech: they are left out
	// of the fit and masked to zero, since below the lowest voice pitch a dictionary row models
	// only the training recordings' offset and rumble, and a speech atom there absorbs the
	// low-frequency noise (pink noise, mains hum) frame by frame, which no held noise can.
	LowCut int
	// NoiseStart, when above 0, is the fraction of the mixture's frames, the quietest, whose
	// mean spectrum every noise column starts from (0: a random start): the frames between
	// words hold noise alone, and EM keeps much of the split it starts from, so noise columns
	// started at random leave the speech columns to explain the noise.
	NoiseStart float64
	// Iters, Tol, Seed and Progress are klnmf.Options'.
	Iters    int
	Tol      float64
	Seed     uint64
	Progress func(sweep int, kl float64)
}

// Result is an enhanced signal and the fit it came from.
type Result struct {
	// Speech has the length of the mixture.
	Speech []float64
	Fit    *klnmf.Result
}

// Enhance separates the speech in mixture.
func Enhance(mixture []float64, o Options) (*Result, error) {
	p := o.Params
	if F := p.Bins(); o.DictCols < 1 || len(o.Dict) != F*o.DictCols {
		return nil, fmt.Errorf("the dictionary has %d entries in %d columns, want %d rows (window %d) per column", len(o.Dict), o.DictCols, F, p.Window)
	}
	// Zeros after the end make the last frame whole, so that the tail is enhanced too; a
	// mixture shorter than one window is still refused by STFT.
	padded := mixture
	if n := len(mixture); n > p.Window && (n-p.Window)%p.Hop != 0 {
		padded = append(slices.Clone(mixture), make([]float64, p.Samples(p.Frames(n)+1)-n)...)
	}
	spec, err := spectrogram.STFT(padded, p)
	if err != nil {
		return nil, err
	}
	F, cut := p.Bins(), o.LowCut
	if cut < 0 || cut >= F {
		return nil, fmt.Errorf("low cut of %d rows outside [0, %d)", cut, F)
	}
	bands := make([][]complex128, len(spec))
	for f, coeffs := range spec {
		bands[f] = coeffs[cut:]
	}
	x := Magnitudes(bands, p.Scale)
	if x.Sum() == 0 {
		return nil, errors.New("the mixture is silent above the low cut")
	}
	if !(o.NoiseStart >= 0 && o.NoiseStart <= 1) {
		return nil, fmt.Errorf("noise start %v outside [0, 1]", o.NoiseStart)
	}
	var start []float64
	if o.NoiseStart > 0 && o.NoiseRank > 0 {
		start = quietSpectrum(bands, p.Scale, o.NoiseStart, o.NoiseRank)
	}
	fit, err := klnmf.Fit(x, klnmf.Options{Rank: o.NoiseRank, Fixed: o.Dict[cut*o.DictCols:], FixedCols: o.DictCols,
		Start: start, Hold: o.NoiseHold, Iters: o.Iters, Tol: o.Tol, Seed: o.Seed, Progress: o.Progress})
	if err != nil {
		return nil, err
	}
	K, N := fit.K, fit.N
	for f, coeffs := range spec {
		for k := range coeffs[:cut] {
			coeffs[k] = 0
		}
		for k := range bands[f] {
			sp, all := 0.0, 0.0
			for r := range K {
				v := fit.W[k*K+r] * fit.H[r*N+f]
				all += v
				if r < o.DictCols {
					sp += v
				}
			}
			mask := 0.0
			if all > 0 {
				mask = sp / all
			}
			bands[f][k] *= complex(mask, 0)
		}
	}
	speech, err := spectrogram.ISTFT(spec, p, len(padded))
	if err != nil {
		return nil, err
	}
	return &Result{Speech: speech[:len(mixture)], Fit: fit}, nil
}

// quietSpectrum returns the mean scaled magnitude spectrum of the given fraction of the frames
// of spec, the quietest (by their summed magnitude, silent frames left out; at least one frame),
// repeated in each of rank columns as a bins × rank block. An entry is at least a thousandth of
// the spectrum's mean, since EM never moves a zero start.
func quietSpectrum(spec [][]complex128, scale, fraction float64, rank int) []float64 {
	type frame struct {
		i   int
		sum float64
	}
	var frames []frame
	for i, coeffs := range spec {
		sum := 0.0
		for _, c := range coeffs {
			sum += cmplx.Abs(c)
		}
		if sum > 0 {
			frames = append(frames, frame{i, sum})
		}
	}
	slices.SortFunc(frames, func(a, b frame) int { return cmp.Compare(a.sum, b.sum) })
	frames = frames[:max(1, int(fraction*float64(len(frames))))]
	bins := len(spec[0])
	mean := make([]float64, bins)
	total := 0.0
	for _, fr := range frames {
		for k, c := range spec[fr.i] {
			v := scale * cmplx.Abs(c) / float64(len(frames))
			mean[k] += v
			total += v
		}
	}
	start := make([]float64, bins*rank)
	for k, v := range mean {
		for r := range rank {
			start[k*rank+r] = max(v, total/float64(bins)/1000)
		}
	}
	return start
}

// Magnitudes returns scale·|X| of a complex spectrogram (frames of bins) as a bins × frames
// matrix with every cell stored, zeros included: the values are real magnitudes, not the counts
// import rounds them to, which Poisson NMF's EM fits as well. The scale does not change the
// mask: scaling X scales the fitted H^sp and H^no alike, and the noise block with them.
func Magnitudes(spec [][]complex128, scale float64) *tensor.Sparse {
	bins, n := len(spec[0]), len(spec[0])*len(spec)
	x := &tensor.Sparse{Shape: []int{bins, len(spec)}, Coords: [][]int32{make([]int32, 0, n), make([]int32, 0, n)}, Values: make([]float64, 0, n)}
	for f, coeffs := range spec {
		for k, c := range coeffs {
			x.Append([]int{k, f}, scale*cmplx.Abs(c))
		}
	}
	return x
}

// SDR is the signal-to-distortion ratio of estimate est of reference s in dB,
// 10 log10(|s|² / |s − est|²): every difference counts as distortion, a gain error too.
func SDR(s, est []float64) (float64, error) {
	if err := checkPair(s, est); err != nil {
		return 0, err
	}
	var ss, ee float64
	for i, x := range s {
		ss += x * x
		ee += (x - est[i]) * (x - est[i])
	}
	return 10 * math.Log10(ss/ee), nil
}

// SISDR is the scale-invariant SDR of Le Roux et al. (2019) in dB: the reference is first scaled
// to the projection of the estimate on it, αs with α = ⟨est, s⟩/|s|², and
// SI-SDR = 10 log10(|αs|² / |αs − est|²), so a gain error costs nothing.
func SISDR(s, est []float64) (float64, error) {
	if err := checkPair(s, est); err != nil {
		return 0, err
	}
	var ss, es float64
	for i, x := range s {
		ss += x * x
		es += est[i] * x
	}
	alpha := es / ss
	var tt, ee float64
	for i, x := range s {
		t := alpha * x
		tt += t * t
		ee += (t - est[i]) * (t - est[i])
	}
	return 10 * math.Log10(tt/ee), nil
}

func checkPair(s, est []float64) error {
	if len(s) != len(est) {
		return fmt.Errorf("the reference has %d samples and the estimate %d", len(s), len(est))
	}
	for _, x := range s {
		if x != 0 {
			return nil
		}
	}
	return errors.New("the reference is silent")
}
