package rng

import "testing"

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
