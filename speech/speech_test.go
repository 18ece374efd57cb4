package speech

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stirank/stirank/io/spectrogram"
	"github.com/stirank/stirank/models/klnmf"
)

func TestMetrics(t *testing.T) {
	for _, tt := range []struct {
		s, est     []float64
		sdr, sisdr float64
	}{
		// |s|² = 25, |s − est|² = 16; α = 9/25, |αs|² = 3.24, |αs − est|² = 1.92² + 1.44² = 5.76.
		{[]float64{3, 4}, []float64{3, 0}, 10 * math.Log10(25.0/16), 10 * math.Log10(3.24/5.76)},
		// A gain of 2 is 0 dB of SDR and no SI-SDR distortion at all.
		{[]float64{1, 2}, []float64{2, 4}, 0, math.Inf(1)},
		// Orthogonal noise of the signal's power: 0 dB either way.
		{[]float64{1, 0}, []float64{1, 1}, 0, 0},
	} {
		sdr, err := SDR(tt.s, tt.est)
		if err != nil || math.Abs(sdr-tt.sdr) > 1e-12 {
			t.Errorf("SDR(%v, %v) = %v, %v; want %v", tt.s, tt.est, sdr, err, tt.sdr)
		}
		sisdr, err := SISDR(tt.s, tt.est)
		if err != nil || !(math.Abs(sisdr-tt.sisdr) < 1e-12 || sisdr == tt.sisdr) {
			t.Errorf("SISDR(%v, %v) = %v, %v; want %v", tt.s, tt.est, sisdr, err, tt.sisdr)
		}
	}
	if _, err := SDR([]float64{1}, []float64{1, 2}); err == nil || !strings.Contains(err.Error(), "reference has 1 samples and the estimate 2") {
		t.Errorf("lengths: %v", err)
	}
	if _, err := SISDR([]float64{0, 0}, []float64{1, 2}); err == nil || !strings.Contains(err.Error(), "reference is silent") {
		t.Errorf("silence: %v", err)
	}
}

// rate and window of the synthetic test signals: bin k is 15.625·k Hz.
const (
	rate   = 8000
	window = 512
)

// synthSpeech makes n samples of synthetic "speech": two spectral patterns, tones at bins 40 and 82
// and at bins 58 and 126, each switched on and off at random every 100 ms with a random level.
func synthSpeech(n int, g *rand.Rand) []float64 {
	return synthVoice(n, [][]float64{{40, 82}, {58, 126}}, g)
}

// synthVoice is synthSpeech with other tones.
func synthVoice(n int, patterns [][]float64, g *rand.Rand) []float64 {
	s := make([]float64, n)
	for _, bins := range patterns {
		level := 0.0
		for i := range s {
			if i%800 == 0 {
				level = 0
				if g.Float64() < 0.6 {
					level = 0.1 + 0.2*g.Float64()
				}
			}
			for _, k := range bins {
				s[i] += level * math.Sin(2*math.Pi*k*float64(i)/window)
			}
		}
	}
	return s
}

// trainedDictionary is a rank-4 dictionary trained on 4 s of the synthetic speech, with the
// spectrogram's parameters and the generator, to draw the test's own signals from.
func trainedDictionary(t *testing.T) (*rand.Rand, spectrogram.Params, *klnmf.Result) {
	t.Helper()
	g := rand.New(rand.NewPCG(1, 2))
	p, err := spectrogram.NewParams(window, 0.5, spectrogram.DefaultScale)
	if err != nil {
		t.Fatal(err)
	}
	train, err := spectrogram.STFT(synthSpeech(4*rate, g), p)
	if err != nil {
		t.Fatal(err)
	}
	dict, err := klnmf.Fit(Magnitudes(train, p.Scale), klnmf.Options{Rank: 4, Iters: 200, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return g, p, dict
}

// withWhiteNoise is clean with white Gaussian noise at snr dB.
func withWhiteNoise(clean []float64, snr float64, g *rand.Rand) []float64 {
	power := 0.0
	for _, x := range clean {
		power += x * x / float64(len(clean))
	}
	mix := make([]float64, len(clean))
	for i, x := range clean {
		mix[i] = x + math.Sqrt(power/math.Pow(10, snr/10))*g.NormFloat64()
	}
	return mix
}

// TestEnhance trains a dictionary on 4 s of the synthetic speech, mixes another 2 s with white
// noise at 0 dB SNR, and enhances it: SI-SDR must rise by at least 10 dB.
func TestEnhance(t *testing.T) {
	g, p, dict := trainedDictionary(t)
	clean := synthSpeech(2*rate, g)
	mix := withWhiteNoise(clean, 0, g)
	r, err := Enhance(mix, Options{Params: p, Dict: dict.W, DictCols: dict.K, NoiseRank: 5, Iters: 200, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := SISDR(clean, mix)
	after, _ := SISDR(clean, r.Speech)
	t.Logf("SI-SDR %.2f dB → %.2f dB", before, after)
	if math.Abs(before) > 0.5 || !(after-before >= 10) {
		t.Errorf("SI-SDR %.2f dB → %.2f dB, want a 0 dB mixture improved by 10 dB or more", before, after)
	}
	// The last 128 samples are past the last whole frame: zeros after the end make one for them.
	tail := len(mix) - 128
	before, _ = SDR(clean[tail:], mix[tail:])
	after, _ = SDR(clean[tail:], r.Speech[tail:])
	t.Logf("tail SDR %.2f dB → %.2f dB", before, after)
	if len(r.Speech) != len(mix) || !(after-before >= 5) {
		t.Errorf("%d samples for %d; tail SDR %.2f dB → %.2f dB", len(r.Speech), len(mix), before, after)
	}
	if _, err := Enhance(mix, Options{Params: p, Dict: dict.W[:10], DictCols: 1}); err == nil || !strings.Contains(err.Error(), "want 257 rows (window 512)") {
		t.Errorf("bad dictionary: %v", err)
	}
}

// TestEnhanceHoldsNoiseOffAnUnseenVoice enhances a voice the dictionary was not trained on (its
// tones a bin higher) in white noise at 5 dB: noise columns free in every frame take the voice the
// dictionary explains poorly, and held over half a second they cannot, which must gain 3 dB.
func TestEnhanceHoldsNoiseOffAnUnseenVoice(t *testing.T) {
	g, p, dict := trainedDictionary(t)
	clean := synthVoice(2*rate, [][]float64{{41, 84}, {59, 128}}, g)
	mix := withWhiteNoise(clean, 5, g)
	var sisdr [2]float64
	for i, hold := range []int{0, int(math.Round(DefaultNoiseHold * rate / float64(p.Hop)))} {
		r, err := Enhance(mix, Options{Params: p, Dict: dict.W, DictCols: dict.K, NoiseRank: 5, NoiseHold: hold, Iters: 200, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		sisdr[i], _ = SISDR(clean, r.Speech)
	}
	before, _ := SISDR(clean, mix)
	t.Logf("SI-SDR %.2f dB → %.2f dB with the noise free in every frame, %.2f dB held", before, sisdr[0], sisdr[1])
	if !(sisdr[1] >= sisdr[0]+3) {
		t.Errorf("SI-SDR %.2f dB held, %.2f dB free: want 3 dB more held", sisdr[1], sisdr[0])
	}
}

// lowNoise is n samples of noise below 40 Hz at 8 kHz, white noise through two one-pole
// low-passes, at the given power: it fluctuates from frame to frame, as pink noise does there.
func lowNoise(n int, power float64, g *rand.Rand) []float64 {
	a := math.Exp(-2 * math.Pi * 40 / rate)
	out := make([]float64, n)
	var y1, y2, sum float64
	for i := range out {
		y1 = a*y1 + (1-a)*g.NormFloat64()
		y2 = a*y2 + (1-a)*y1
		out[i] = y2
		sum += y2 * y2
	}
	for i := range out {
		out[i] *= math.Sqrt(power * float64(n) / sum)
	}
	return out
}

// TestEnhanceLowCut gives the dictionary a column that models only the rows below 47 Hz, as a
// real dictionary's does its recordings' offset, and mixes the speech with low noise at 0 dB:
// that column takes the noise frame by frame, and cutting the rows below 47 Hz (LowCut 4) must
// gain 10 dB and leave nothing below 47 Hz.
func TestEnhanceLowCut(t *testing.T) {
	g, p, dict := trainedDictionary(t)
	K := dict.K + 1
	w := make([]float64, p.Bins()*K)
	for k := range p.Bins() {
		copy(w[k*K:], dict.W[k*dict.K:(k+1)*dict.K])
		if k < 4 {
			w[k*K+dict.K] = 1
		}
	}
	clean := synthSpeech(2*rate, g)
	power := 0.0
	for _, x := range clean {
		power += x * x / float64(len(clean))
	}
	noise := lowNoise(len(clean), power, g)
	mix := make([]float64, len(clean))
	for i := range mix {
		mix[i] = clean[i] + noise[i]
	}
	var sisdr [2]float64
	for i, cut := range []int{0, 4} {
		r, err := Enhance(mix, Options{Params: p, Dict: w, DictCols: K, NoiseRank: 2, LowCut: cut, Iters: 200, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		sisdr[i], _ = SISDR(clean, r.Speech)
		if cut > 0 {
			spec, _ := spectrogram.STFT(r.Speech, p)
			low, all := 0.0, 0.0
			for _, c := range spec {
				for k, v := range c {
					all += cmplx.Abs(v)
					if k < 2 {
						low += cmplx.Abs(v)
					}
				}
			}
			if low > 1e-3*all {
				t.Errorf("LowCut %d: %.3g of the estimate's magnitude in rows 0 and 1", cut, low/all)
			}
		}
	}
	before, _ := SISDR(clean, mix)
	t.Logf("SI-SDR %.2f dB → %.2f dB uncut, %.2f dB cut below 47 Hz", before, sisdr[0], sisdr[1])
	if !(sisdr[1] >= sisdr[0]+10) {
		t.Errorf("SI-SDR %.2f dB cut, %.2f dB uncut: want 10 dB more cut", sisdr[1], sisdr[0])
	}
	if _, err := Enhance(mix, Options{Params: p, Dict: w, DictCols: K, LowCut: p.Bins()}); err == nil || !strings.Contains(err.Error(), "low cut of 257 rows outside [0, 257)") {
		t.Errorf("cut above the top row: %v", err)
	}
}

// TestEnhanceNoiseStart enhances the synthetic speech in white noise at 0 dB with the noise
// columns started at random and from the quietest tenth of the frames (where both patterns
// are off, about a sixth of them): the quiet start must gain half a dB (it gains 0.9).
func TestEnhanceNoiseStart(t *testing.T) {
	g, p, dict := trainedDictionary(t)
	clean := synthSpeech(2*rate, g)
	mix := withWhiteNoise(clean, 0, g)
	var sisdr [2]float64
	for i, start := range []float64{0, DefaultNoiseStart} {
		r, err := Enhance(mix, Options{Params: p, Dict: dict.W, DictCols: dict.K, NoiseRank: 5, NoiseStart: start,
			NoiseHold: int(math.Round(DefaultNoiseHold * rate / float64(p.Hop))), Iters: 200, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		sisdr[i], _ = SISDR(clean, r.Speech)
	}
	before, _ := SISDR(clean, mix)
	t.Logf("SI-SDR %.2f dB → %.2f dB from a random start, %.2f dB from the quiet frames", before, sisdr[0], sisdr[1])
	if !(sisdr[1] >= sisdr[0]+0.5) {
		t.Errorf("SI-SDR %.2f dB from the quiet frames, %.2f dB at random: want 0.5 dB more", sisdr[1], sisdr[0])
	}
}

// TestQuietSpectrum checks the noise start on four frames of two bins: the quietest 70% of the
// three that are not silent (frame 2 is left out) is frames 1 and 3, and the second bin's mean, zero, is raised
// to a thousandth of the mean.
func TestQuietSpectrum(t *testing.T) {
	spec := [][]complex128{{5, 0}, {2, 0}, {0, 0}, {complex(0, 4), 0}}
	got := quietSpectrum(spec, 10, 0.7, 2)
	want := []float64{30, 30, 0.015, 0.015}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("quietSpectrum = %v, want %v", got, want)
		}
	}
	// A fraction below one frame still takes the quietest frame.
	if got := quietSpectrum(spec, 1, 0.01, 1); got[0] != 2 {
		t.Errorf("quietSpectrum at 1%%: %v, want the quietest frame's 2", got)
	}
}
