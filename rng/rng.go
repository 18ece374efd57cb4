// Package rng derives every random stream stirank uses from a user seed and the coordinates of
// the computation that consumes it — (rank, temperature index, chain index) and, inside a chain,
// the step and the unit of work — so that a retried bundle, or the same chain run with a different
// number of goroutines, draws exactly the same numbers.
package rng

import "math/rand/v2"

// mix is the SplitMix64 finaliser: a bijection of uint64 with full avalanche.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Key hashes seed and a tuple of integers into one 64-bit key. Different tuples (including
// tuples of different lengths) give unrelated keys.
func Key(seed uint64, parts ...uint64) uint64 {
	h := mix(seed + 0x9e3779b97f4a7c15)
	for _, p := range parts {
		h = mix(h ^ mix(p+0x632be59bd9b4e019))
	}
	return mix(h + uint64(len(parts)))
}

// New returns a generator for the stream named by seed and parts.
func New(seed uint64, parts ...uint64) *rand.Rand {
	k := Key(seed, parts...)
	return rand.New(rand.NewPCG(k, mix(k^0xd1b54a32d192ed03)))
}

// Stream is a generator that can be repositioned onto another named stream without allocating,
// for the per-step, per-block streams of a chain.
type Stream struct {
	// PCG is the stream's generator, which the variates of package draw call directly: through
	// rand.Rand every number costs a call through its interface.
	PCG rand.PCG
	*rand.Rand
}

// NewStream returns a Stream positioned on the stream named by seed and parts.
func NewStream(seed uint64, parts ...uint64) *Stream {
	s := &Stream{}
	s.Init(seed, parts...)
	return s
}

// Init makes a zero Stream in place, a field of a larger value, positioned on the stream named by
// seed and parts. Streams that goroutines draw from concurrently should be fields of their own
// padded scratch: each draw writes the generator's state, and two streams on one cache line
// serialise their goroutines.
func (s *Stream) Init(seed uint64, parts ...uint64) {
	s.Rand = rand.New(&s.PCG)
	s.Reset(seed, parts...)
}

// Reset repositions s onto the stream named by seed and parts.
func (s *Stream) Reset(seed uint64, parts ...uint64) {
	k := Key(seed, parts...)
	s.PCG.Seed(k, mix(k^0xd1b54a32d192ed03))
}

// At returns number i of the stream of key as a float64 in [0, 1), without drawing the numbers
// before it (SplitMix64's sequence, whose numbers are the finaliser of key + (i+1)·γ), for draws
// that passes over the data in different orders must agree on.
func At(key, i uint64) float64 {
	return float64(mix(key+(i+1)*0x9e3779b97f4a7c15)>>11) / (1 << 53)
}

// Float64 is rand.Rand.Float64 of the stream (the same numbers), without the call through the
// generator's interface that the inner loops of the Gibbs kernels would pay at every draw.
func (s *Stream) Float64() float64 { return float64(s.PCG.Uint64()<<11>>11) / (1 << 53) }
