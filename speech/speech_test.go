package speech

import (
	"math"
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
