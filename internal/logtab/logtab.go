// Package logtab is a natural logarithm and exponential for the samplers' inner loops, which take
// one or two logarithms per cell of the data at every sweep: a table of 256 logarithms and a
// polynomial of degree 7 (no division, where math.Log divides), about half math.Log's time on
// amd64 (go test -bench . ./internal/logtab), within 2 units in the last place of it
// (logtab_test.go; measured: 1). Exp is its counterpart.
package logtab

import "math"

// A float64 x = 2^e·m, m in [1, 2), is written 2^k·y with y = m (k = e) for m < 1.5 and y = m/2
// (k = e + 1) above, so that y lies in [0.75, 1.5) and no cancellation between k·log 2 and log y
// occurs near x = 1. The top 8 bits i of m's fraction pick the table entry: y lies in [c_i, c_i +
// 2⁻⁸) below 1.5 and [c_i, c_i + 2⁻⁹) above, with c_i of 9 significant bits, so y − c_i is exact
// and log y = log c_i + log1p((y − c_i)/c_i), the argument of log1p in [0, 2⁻⁸) and computed
// with a relative error of an ulp (inv[i] is 1/c_i rounded). The entry whose y lies just below 1
// has c = 1: there the argument is in [−2⁻⁹, 0).
var c, inv, lg [256]float64

func init() {
	for i := range inv {
		c[i] = 1 + float64(i)/256
		if i >= 128 {
			c[i] /= 2
		}
		if i == 255 {
			c[i] = 1
		}
		inv[i] = 1 / c[i]
		lg[i] = math.Log(c[i])
	}
}

// ln2Hi has trailing zero bits, so k·ln2Hi is exact for every exponent k of a float64.
const (
	ln2Hi = 6.93147180369123816490e-01
	ln2Lo = 1.90821492927058770002e-10
)

// Log returns the natural logarithm of x, as math.Log does (including at 0, below 0, at +Inf, NaN
// and subnormal x, which it passes to math.Log).
func Log(x float64) float64 {
	if special(x) {
		return math.Log(x)
	}
	b := math.Float64bits(x)
	e := b >> 52
	i := (b >> 44) & 0xff
	half := i >> 7
	y := math.Float64frombits(b&(1<<52-1) | (0x3ff-half)<<52)
	r := (y - c[i]) * inv[i]
	// log1p(r) to r⁷; the first omitted term, r⁸/8, is below 2⁻⁵⁶·|r|/8.
	p := r - r*r*(1.0/2-r*(1.0/3-r*(1.0/4-r*(1.0/5-r*(1.0/6-r*(1.0/7))))))
	k := float64(int64(e+half) - 1023)
	return k*ln2Hi + (lg[i] + p + k*ln2Lo)
}

// special reports whether x is negative, zero, subnormal, infinite or NaN: its sign bit is set or
// its exponent field is all zeros or all ones.
func special(x float64) bool { return math.Float64bits(x)>>52-1 >= 0x7fe }
