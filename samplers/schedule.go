package samplers

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// StepSchedule is the step size ε_k = (A/(k + Offset))^B of the papers for steps k = 1…Burnin,
// held at ε_Burnin afterwards. Offset = 0 is exactly the papers' (a/k)^b; a positive offset
// bounds the first steps.
type StepSchedule struct {
	A, B, Offset float64
	Burnin       int
}

// At returns the step size of step k (1-based).
func (s StepSchedule) At(k int) float64 {
	if k > s.Burnin {
		k = s.Burnin
	}
	if k < 1 {
		k = 1
	}
	return math.Pow(s.A/(float64(k)+s.Offset), s.B)
}

// DecayTo returns the schedule of exponent b that starts at start·final and reaches final at the
// end of burn-in; start = 1 is the constant step final.
func DecayTo(final, start, b float64, burnin int) (StepSchedule, error) {
	if !(final > 0) || math.IsInf(final, 0) {
		return StepSchedule{}, fmt.Errorf("step size %v must be positive and finite", final)
	}
	if !(b > 0) {
		return StepSchedule{}, fmt.Errorf("step decay exponent %v must be positive", b)
	}
	if start < 1 {
		return StepSchedule{}, fmt.Errorf("initial step ratio %v must be at least 1", start)
	}
	if start == 1 {
		return StepSchedule{A: final, B: 1}, nil
	}
	if burnin < 1 {
		burnin = 1
	}
	// (K + o)/(1 + o) = start^(1/b) fixes the offset o.
	q := math.Pow(start, 1/b)
	off := 0.0
	if q > 1 {
		off = (float64(burnin) - q) / (q - 1)
		if off < 0 {
			off = 0
		}
	}
	a := math.Pow(final, 1/b) * (float64(burnin) + off)
	return StepSchedule{A: a, B: b, Offset: off, Burnin: burnin}, nil
}

// Validate rejects schedules that give non-positive or non-finite steps.
func (s StepSchedule) Validate() error {
	e1, eK := s.At(1), s.At(s.Burnin)
	if !(e1 > 0) || math.IsInf(e1, 0) || !(eK > 0) || math.IsInf(eK, 0) {
		return fmt.Errorf("step schedule gives step sizes %v … %v", e1, eK)
	}
	return nil
}

// Subsample cuts positions 0…N-1 into batches of near-equal size that a random permutation
// assigns anew every epoch, so every datum is used once per epoch (Stratified) — or, without
// Stratified, draws an independent uniformly random batch at every step.
type Subsample struct {
	N, Size    int
	Stratified bool
}

// Batches is the number of batches per epoch, ceil(N/Size).
func (s Subsample) Batches() int { return (s.N + s.Size - 1) / s.Size }

// Batch returns the positions of batch b of the epoch whose permutation perm is (Stratified), or
// a fresh uniform subsample of Size positions drawn from r by a partial Fisher–Yates shuffle of
// perm, which must hold a permutation of 0…N-1 and is left holding one. It returns the scale N/|S|.
// The returned slice aliases perm.
func (s Subsample) Batch(perm []int32, b int, r *rand.Rand) ([]int32, float64) {
	if s.Stratified {
		nb := s.Batches()
		lo, hi := b*s.N/nb, (b+1)*s.N/nb
		return perm[lo:hi], float64(s.N) / float64(hi-lo)
	}
	for i := range s.Size {
		j := i + r.IntN(s.N-i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	return perm[:s.Size], float64(s.N) / float64(s.Size)
}

// Permute refills perm with a uniformly random permutation of 0…N-1.
func (s Subsample) Permute(r *rand.Rand, perm []int32) {
	for i := range perm {
		perm[i] = int32(i)
	}
	r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
}

// Parts enumerates the disjoint parts of a tensor of the given order cut into B ranges per mode:
// B^(order−1) parts of B blocks each. Block b of part p has range b in mode 0 and range
// (b + p_m) mod B in mode m, where p_1, p_2 are the base-B digits of p. No two blocks of a part
// share a range in any mode, and every block lies in exactly one part.
type Parts struct {
	B, Order int
}

// Count is the number of parts, B^(order−1).
func (p Parts) Count() int {
	n := 1
	for m := 1; m < p.Order; m++ {
		n *= p.B
	}
	return n
}

// Block writes the per-mode ranges of block b of part pt into dst.
func (p Parts) Block(pt, b int, dst []int) []int {
	dst = dst[:p.Order]
	dst[0] = b
	shift := pt
	for m := 1; m < p.Order; m++ {
		dst[m] = (b + shift%p.B) % p.B
		shift /= p.B
	}
	return dst
}
