package spectrogram

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestNewParams(t *testing.T) {
	p, err := NewParams(DefaultWindow, DefaultOverlap, DefaultScale)
	if err != nil {
		t.Fatal(err)
	}
	if p.Hop != 256 || p.Bins() != 257 || p.Samples(1661) != 425472 || p.Frames(425472) != 1661 || p.Frames(425471) != 1660 || p.Frames(511) != 0 {
		t.Errorf("params %+v: bins %d, samples(1661) %d", p, p.Bins(), p.Samples(1661))
	}
	if p, err := NewParams(400, 0, 1); err != nil || p.Hop != 400 {
		t.Errorf("no overlap: %+v, %v", p, err)
	}
	for _, c := range []struct {
		window         int
		overlap, scale float64
		want           string
	}{
		{1, 0.5, 1, "window 1 outside"},
		{512, 1, 1, "overlap 1 outside"},
		{512, -0.1, 1, "overlap -0.1 outside"},
		{512, math.NaN(), 1, "overlap NaN outside"},
		{512, 0.5, 0, "scale 0 must be positive"},
		{512, 0.5, math.Inf(1), "scale +Inf must be"},
		{4, 0.9, 1, "leaves no hop"},
	} {
		if _, err := NewParams(c.window, c.overlap, c.scale); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewParams(%d, %v, %v): %v, want %q", c.window, c.overlap, c.scale, err, c.want)
		}
	}
}

// TestAgainstDFT compares every cell with a direct evaluation of the definition in the package
// comment, on noise whose frames overlap.
func TestAgainstDFT(t *testing.T) {
	p, err := NewParams(64, 0.5, 50)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, p.Samples(5)+p.Hop-1) // a tail shorter than a hop is left out
	for n := range x {
		x[n] = 2*rnd.Float64() - 1
	}
	got, err := Counts(x, p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Shape[0] != 33 || got.Shape[1] != 5 {
		t.Fatalf("shape %v, want [33 5]", got.Shape)
	}
	cells := map[[2]int32]float64{}
	for n, v := range got.Values {
		cells[[2]int32{got.Coords[0][n], got.Coords[1][n]}] = v
	}
	for f := range 5 {
		for k := range 33 {
			var sum complex128
			for n := range p.Window {
				w := 0.54 - 0.46*math.Cos(2*math.Pi*float64(n)/float64(p.Window-1))
				sum += complex(w*x[f*p.Hop+n], 0) * cmplx.Exp(complex(0, -2*math.Pi*float64(k*n)/float64(p.Window)))
			}
			if want := math.Round(p.Scale * cmplx.Abs(sum)); cells[[2]int32{int32(k), int32(f)}] != want {
				t.Errorf("cell (%d, %d) is %v, want %v", k, f, cells[[2]int32{int32(k), int32(f)}], want)
			}
		}
	}
}

// TestSinusoid checks the frequency axis and the documented peak of a full-scale sinusoid.
func TestSinusoid(t *testing.T) {
	p, err := NewParams(DefaultWindow, DefaultOverlap, 1)
	if err != nil {
		t.Fatal(err)
	}
	const bin = 40
	x := make([]float64, p.Samples(8))
	for n := range x {
		x[n] = math.Sin(2 * math.Pi * bin * float64(n) / float64(p.Window))
	}
	s, err := Counts(x, p)
	if err != nil {
		t.Fatal(err)
	}
	peak := make([]float64, 8)
	peakBin := make([]int32, 8)
	for n, v := range s.Values {
		if f := s.Coords[1][n]; v > peak[f] {
			peak[f], peakBin[f] = v, s.Coords[0][n]
		}
	}
	for f, v := range peak {
		if peakBin[f] != bin {
			t.Errorf("frame %d peaks at bin %d, want %d", f, peakBin[f], bin)
		}
		if math.Abs(v-0.27*float64(p.Window)) > 2 {
			t.Errorf("frame %d peak %v, want about 0.27·%d", f, v, p.Window)
		}
	}
}

func TestCountsErrors(t *testing.T) {
	p, err := NewParams(DefaultWindow, DefaultOverlap, DefaultScale)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Counts(make([]float64, 511), p); err == nil || !strings.Contains(err.Error(), "511 samples are shorter than one window of 512") {
		t.Errorf("short signal: %v", err)
	}
	if s, err := Counts(make([]float64, 1000), p); err != nil || s.NNZ() != 0 || s.Shape[1] != 2 {
		t.Errorf("silence: %v, %v", s, err)
	}
	huge, err := NewParams(DefaultWindow, DefaultOverlap, 1e300)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float64, 512)
	x[0] = 1
	if _, err := Counts(x, huge); err == nil || !strings.Contains(err.Error(), "beyond 2^53") {
		t.Errorf("huge scale: %v", err)
	}
}

// TestInverseSTFT takes the STFT of white noise and inverts it, at the default analysis and at
// others: every sample a frame covers comes back to within 1e-9 (−180 dB), and the tail no
// frame covers is zero.
func TestInverseSTFT(t *testing.T) {
	g := rand.New(rand.NewPCG(3, 4))
	x := make([]float64, 5000)
	for i := range x {
		x[i] = 2*g.Float64() - 1
	}
	for _, tt := range []struct {
		window  int
		overlap float64
	}{{512, 0.5}, {256, 0.75}, {100, 0}, {64, 0.3}} {
		p, err := NewParams(tt.window, tt.overlap, 1)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := STFT(x, p)
		if err != nil {
			t.Fatal(err)
		}
		y, err := ISTFT(spec, p, len(x))
		if err != nil {
			t.Fatal(err)
		}
		covered := p.Samples(len(spec))
		worst := 0.0
		for i := range covered {
			worst = max(worst, math.Abs(y[i]-x[i]))
		}
		if worst > 1e-9 {
			t.Errorf("window %d overlap %v: worst error %v", tt.window, tt.overlap, worst)
		}
		for i := covered; i < len(x); i++ {
			if y[i] != 0 {
				t.Fatalf("window %d overlap %v: sample %d past the last frame is %v", tt.window, tt.overlap, i, y[i])
			}
		}
	}
	p, _ := NewParams(64, 0.5, 1)
	if _, err := ISTFT(make([][]complex128, 3), p, 127); err == nil || !strings.Contains(err.Error(), "3 frames of window 64 and hop 32 do not fit in 127 samples") {
		t.Errorf("too few samples: %v", err)
	}
	if _, err := ISTFT([][]complex128{make([]complex128, 5)}, p, 64); err == nil || !strings.Contains(err.Error(), "frame 0 has 5 coefficients, want 33") {
		t.Errorf("short frame: %v", err)
	}
}
