package rng

import (
	"math"
	"testing"
)

// Streams are named by their tuple: the same tuple gives the same numbers, a different seed,
// value, order or length a different stream; Reset repositions a Stream exactly.
func TestStreamsAreNamedByTheirTuple(t *testing.T) {
	first := func(seed uint64, parts ...uint64) uint64 { return New(seed, parts...).Uint64() }
	base := first(1, 2, 3)
	if first(1, 2, 3) != base {
		t.Fatal("the same tuple gave different streams")
	}
	for _, other := range []uint64{first(2, 2, 3), first(1, 3, 2), first(1, 2, 3, 0), first(1, 2)} {
		if other == base {
			t.Errorf("a different tuple gave the same stream")
		}
	}
	s := NewStream(1, 2, 3)
	a := []uint64{s.Uint64(), s.Uint64()}
	s.Reset(9)
	s.Reset(1, 2, 3)
	if b := []uint64{s.Uint64(), s.Uint64()}; a[0] != b[0] || a[1] != b[1] || a[0] != base {
		t.Errorf("Reset does not reposition the stream: %v then %v (New gives %v)", a, b, base)
	}
}

// At reads a stream at any position: the same key and position give the same number, the numbers
// of a stream are uniform (their mean and the mean of their squares are those of U(0, 1) within
// 5 standard errors) and neighbouring positions and keys are uncorrelated.
func TestAtIsUniform(t *testing.T) {
	const n = 1 << 20
	if At(7, 3) != At(7, 3) || At(7, 3) == At(7, 4) || At(7, 3) == At(8, 3) {
		t.Fatal("At is not a function of key and position alone")
	}
	var m1, m2, lag, keys float64
	for i := range uint64(n) {
		u := At(7, i)
		m1 += u / n
		m2 += u * u / n
		lag += (u - 0.5) * (At(7, i+1) - 0.5) / n
		keys += (u - 0.5) * (At(8, i) - 0.5) / n
	}
	for _, c := range []struct {
		what      string
		got, want float64
		sd        float64
	}{{"mean", m1, 0.5, math.Sqrt(1.0 / 12 / n)}, {"mean square", m2, 1.0 / 3, math.Sqrt(4.0 / 45 / n)},
		{"lag-1 product", lag, 0, 1.0 / 12 / math.Sqrt(n)}, {"product across keys", keys, 0, 1.0 / 12 / math.Sqrt(n)}} {
		if math.Abs(c.got-c.want) > 5*c.sd {
			t.Errorf("%s %v, want %v ± %v", c.what, c.got, c.want, c.sd)
		}
	}
}

// Stream.Float64 draws what rand.Rand.Float64 draws from the same stream.
func TestStreamFloat64IsRands(t *testing.T) {
	s, r := NewStream(3, 4), New(3, 4)
	for range 1000 {
		if a, b := s.Float64(), r.Float64(); a != b {
			t.Fatalf("Stream.Float64 %v, rand.Rand.Float64 %v", a, b)
		}
	}
}
