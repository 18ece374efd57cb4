package logtab

import (
	"math"
	"math/bits"
)

// Groups is the number of groups a Products keeps: terms of counts 1 to Groups.
const Groups = 32

// Products accumulates the logarithms of products of positive values grouped by a count x, so
// that a sum Σ_j w(x_j) log v_j whose weights depend on a term only through its count is
// Σ_x w(x) log Π_{j: x_j = x} v_j: one logarithm per count present instead of one per term. Most
// cells of sparse count data hold 1, 2 or 3, so a Poisson row's Σ x log λ takes a few logarithms
// instead of one per cell. A group's product is folded into its logarithm before it leaves about
// [1e-150, 1e150], so the sum is that of the terms' logarithms to a few units in the last place
// whatever the values. The zero value is empty.
type Products struct {
	prod [Groups]float64 // the product not yet folded, 0 when the group is empty
	log  [Groups]float64 // the logarithms folded so far
	used uint64          // bit i is set when group i holds a term
}

// Group returns the group of a count x (group i holds the terms of count i + 1) and false where x
// is not a count 1…Groups, whose terms the caller takes the logarithms of itself.
func Group(x float64) (int, bool) {
	i := int(x) - 1
	return i, float64(i+1) == x && uint(i) < Groups
}

// Mul multiplies v into group i (Group).
func (p *Products) Mul(i int, v float64) {
	if !p.TryMul(i, v) {
		p.fold(i, v)
	}
}

// TryMul is Mul where the product stays in range, small enough to be inlined into the loops over
// cells that call it, and reports whether it did; where it did not, the caller calls Mul.
func (p *Products) TryMul(i int, v float64) bool {
	if q := p.prod[i] * v; InRange(q) {
		p.prod[i] = q
		return true
	}
	return false
}

// Spill multiplies run and v into group i and returns 1, for a loop that keeps a run of products
// for group i in a register (one multiplication a term, where a group's product in memory waits
// on its last store): it multiplies on while the product stays in range (InRange) and spills the
// run and the term that would take it out; it ends with Mul(i, run). The group's logarithm is the
// one Mul gives term by term.
func (p *Products) Spill(i int, run, v float64) float64 {
	p.Mul(i, run)
	p.Mul(i, v)
	return 1
}

// InRange reports whether q is a positive number in [2⁻⁴⁹⁸, 2⁴⁹⁸) (about 1e±150), with one
// comparison of its sign and exponent bits: not 0, a subnormal, ±Inf, NaN or negative.
func InRange(q float64) bool {
	return math.Float64bits(q)>>52-(1023-498) < 2*498
}

// fold is Mul where the product leaves about [1e-150, 1e150] (an empty group's product is 0): it
// starts the group, or folds the product and v into its logarithm (each factor's logarithm apart,
// so a product that underflowed loses nothing; NaN, 0 and ±Inf go there too).
func (p *Products) fold(i int, v float64) {
	if p.used&(1<<i) == 0 {
		p.used |= 1 << i
		p.prod[i], p.log[i] = 1, 0
	}
	if q := p.prod[i] * v; InRange(q) {
		p.prod[i] = q
		return
	}
	p.log[i] += Log(p.prod[i]) + Log(v)
	p.prod[i] = 1
}

// Pop removes a group and returns it (Group) and the logarithm of its product; ok is false when
// no group is left. Groups come out in increasing count.
func (p *Products) Pop() (i int, log float64, ok bool) {
	if p.used == 0 {
		return 0, 0, false
	}
	i = bits.TrailingZeros64(p.used)
	return i, p.Take(i), true
}

// Take removes group i and returns the logarithm of its product, 0 when it is empty.
func (p *Products) Take(i int) float64 {
	if p.used&(1<<i) == 0 {
		return 0
	}
	p.used &^= 1 << i
	l := p.log[i] + Log(p.prod[i])
	p.prod[i] = 0
	return l
}

// Counted empties p and returns v plus Σ_x x·log Π_{j: x_j = x} v_j over its groups, added in
// increasing count: v and a Poisson row's Σ x log λ over the cells p holds.
func (p *Products) Counted(v float64) float64 {
	for i, lg, ok := p.Pop(); ok; i, lg, ok = p.Pop() {
		v += float64(i+1) * lg
	}
	return v
}
