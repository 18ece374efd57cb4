package logtab

import "math"

// Exp returns e^x, as math.Exp does, for the sums of exponentials in the samplers' inner loops (the
// reference's sums over its grid, a third of a sweep of the path at high ranks): x = k·ln2/256 + r
// with k an integer and |r| ≤ ln2/512, so e^x = 2^⌊k/256⌋ · 2^((k mod 256)/256) · e^r, the middle
// factor from a table and e^r − 1 by its Taylor polynomial to r⁵ (the first omitted term, r⁶/720,
// is below 2⁻⁶⁷). About half math.Exp's time on amd64 (go test -bench . ./internal/logtab), within
// 2 units in the last place of it (TestExp). Arguments outside (−700, 700), where the result
// leaves the normal numbers or the scaling by 2^⌊k/256⌋ would, go to math.Exp, as do NaN and ±Inf.
func Exp(x float64) float64 {
	if !(x > -700 && x < 700) {
		return math.Exp(x)
	}
	// Adding and taking away 1.5·2⁵² rounds to the nearest integer: |x·256/ln2| < 2⁵¹.
	const shift = 0x1.8p52
	kf := x*(256/math.Ln2) + shift - shift
	r := (x - kf*(ln2Hi/256)) - kf*(ln2Lo/256)
	k := int64(kf)
	t := exp2[k&255]
	q := r + r*r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120))))
	return (t + t*q) * math.Float64frombits(uint64(1023+k>>8)<<52)
}

// exp2[i] is 2^(i/256).
var exp2 [256]float64

func init() {
	for i := range exp2 {
		exp2[i] = math.Exp2(float64(i) / 256)
	}
}
