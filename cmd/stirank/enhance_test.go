package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stirank/stirank/io/wav"
)

// twoPatterns is synthetic "speech" at 8 kHz: tones at 625 and 1281 Hz, and at 906 and
// 1969 Hz, each pair switched on at a random level or off every 100 ms.
func twoPatterns(n int, g *rand.Rand) []float64 {
	s := make([]float64, n)
	for _, hz := range [][]float64{{625, 1281.25}, {906.25, 1968.75}} {
		level := 0.0
		for i := range s {
			if i%800 == 0 {
				level = 0
				if g.Float64() < 0.6 {
					level = 0.1 + 0.2*g.Float64()
				}
			}
			for _, f := range hz {
				s[i] += level * math.Sin(2*math.Pi*f*float64(i)/8000)
			}
		}
	}
	return s
}

// TestEnhance runs the whole workflow on synthetic audio: import clean training audio, train a
// dictionary with factorize, enhance a 0 dB mixture of other audio and white noise.
func TestEnhance(t *testing.T) {
	dir := t.TempDir()
	g := rand.New(rand.NewPCG(7, 8))
	train := writeWAV(t, dir, "train.wav", twoPatterns(4*8000, g), 8000)
	clean := twoPatterns(2*8000, g)
	power := 0.0
	for _, x := range clean {
		power += x * x / float64(len(clean))
	}
	noisy := make([]float64, len(clean))
	for i, x := range clean {
		noisy[i] = x + math.Sqrt(power)*g.NormFloat64()
	}
	ref := writeWAV(t, dir, "clean.wav", clean, 8000)
	in := writeWAV(t, dir, "noisy.wav", noisy, 8000)
	spec, dict := filepath.Join(dir, "spec"), filepath.Join(dir, "dict")
	mustExec(t, "import", "--in", train, "--out", spec)
	mustExec(t, "factorize", "--data", spec, "--rank", "4", "--out", dict)
	out := filepath.Join(dir, "out.wav")
	stdout := mustExec(t, "enhance", "--in", in, "--dict", dict, "--out", out, "--reference", ref)
	var sdr, sdrIn, sisdr, sisdrIn float64
	line := stdout[strings.Index(stdout, "SDR "):]
	if _, err := fmt.Sscanf(line, "SDR %f dB (input %f dB), SI-SDR %f dB (input %f dB)", &sdr, &sdrIn, &sisdr, &sisdrIn); err != nil {
		t.Fatalf("output %q: %v", stdout, err)
	}
	t.Logf("%s", stdout)
	// At 8000 Hz a row is 15.625 Hz: the default 80 Hz cut is rows 0–5.
	if !strings.Contains(stdout, "(6 rows below 80 Hz cut)") {
		t.Errorf("output %q: want the default cut of 6 rows", stdout)
	}
	if math.Abs(sisdrIn) > 0.5 || sisdr-sisdrIn < 10 || sdr-sdrIn < 10 {
		t.Errorf("SDR %v → %v, SI-SDR %v → %v: want 10 dB better", sdrIn, sdr, sisdrIn, sisdr)
	}
	a, err := wav.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if a.SampleRate != 8000 || len(a.Samples) != len(noisy) || a.BitsPerSample != 16 {
		t.Errorf("output: %d Hz, %d samples of %d bits", a.SampleRate, len(a.Samples), a.BitsPerSample)
	}

	short := writeWAV(t, dir, "short.wav", clean[:400], 8000)
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--in", in, "--dict", dict}, 2, "--in, --dict and --out are required"},
		{[]string{"--in", in, "--dict", dict, "--out", out, "--noise-rank", "-1"}, 2, "--noise-rank -1 must not be negative"},
		{[]string{"--in", in, "--dict", dict, "--out", out, "--noise-hold", "-1"}, 2, "--noise-hold -1 must be a non-negative number of seconds"},
		{[]string{"--in", in, "--dict", dict, "--out", out, "--low-cut", "-1"}, 2, "--low-cut -1 must be a non-negative frequency in Hz"},
		{[]string{"--in", in, "--dict", dict, "--out", out, "--low-cut", "5000"}, 2, "--low-cut 5000 Hz leaves no frequency row at 8000 Hz"},
		{[]string{"--in", in, "--dict", dict, "--out", out, "--noise-start", "2"}, 2, "--noise-start 2 must be a fraction in [0, 1]"},
		{[]string{"--in", in, "--dict", dict, "--out", out, "--window", "256"}, 1, dict + ": the dictionary was trained with window 512, but the --window gives 256"},
		{[]string{"--in", in, "--dict", dict, "--out", out, "--overlap", "0.75"}, 1, dict + ": the dictionary was trained with hop 256, but the hop"},
		{[]string{"--in", in, "--dict", spec, "--out", out, "--window", "256"}, 1, spec + ": the dictionary has 257 rows but a window of 256 gives 129"},
		{[]string{"--in", in, "--dict", dict, "--out", out, "--reference", short}, 1, short + ": 400 samples at 8000 Hz, but " + in + " has 16000"},
		{[]string{"--in", short, "--dict", dict, "--out", out}, 1, short + ": 400 samples are shorter than one window of 512"},
	} {
		code, _, stderr := execData(t, append([]string{"enhance"}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("enhance %v: exit %d, stderr %q; want exit %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}
