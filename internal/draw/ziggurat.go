package draw

import (
	"math"

	"github.com/stirank/stirank/rng"
)

// The ziggurats of math/rand/v2's NormFloat64 and ExpFloat64 (Marsaglia and Tsang 2000), built by
// the paper's zigset: in float64 and rounded to the tables' types they come out bit for bit the
// tables math/rand/v2 holds as literals, so the draws from them are what rand.Rand draws from the
// same stream (TestGammaCountDrawsRandsZiggurats) without its call through the generator's interface per
// number. Their first tries, taken more than 99 % of the time, are written in line where they are
// drawn.
const (
	normR = 3.442619855899 // the normal's base strip ends at normR
	expR  = 7.69711747013104972
)

var (
	normK        [128]uint32
	normW, normF [128]float32
	expK         [256]uint32
	expW, expF   [256]float32
)

func init() {
	const m1, vn = 1 << 31, 9.91256303526217e-3
	dn := normR
	tn := dn
	q := vn / math.Exp(-.5*dn*dn)
	normK[0] = uint32(dn / q * m1)
	normW[0] = float32(q / m1)
	normW[127] = float32(dn / m1)
	normF[0] = 1
	normF[127] = float32(math.Exp(-.5 * dn * dn))
	for i := 126; i >= 1; i-- {
		dn = math.Sqrt(-2 * math.Log(vn/dn+math.Exp(-.5*dn*dn)))
		normK[i+1] = uint32(dn / tn * m1)
		tn = dn
		normF[i] = float32(math.Exp(-.5 * dn * dn))
		normW[i] = float32(dn / m1)
	}
	// The paper's de, a few ulps from expR: math/rand/v2's tables were built from it.
	const m2, ve = 1 << 32, 3.949659822581572e-3
	de := 7.697117470131487
	te := de
	q = ve / math.Exp(-de)
	expK[0] = uint32(de / q * m2)
	expW[0] = float32(q / m2)
	expW[255] = float32(de / m2)
	expF[0] = 1
	expF[255] = float32(math.Exp(-de))
	for i := 254; i >= 1; i-- {
		de = -math.Log(ve/de + math.Exp(-de))
		expK[i+1] = uint32(de / te * m2)
		te = de
		expF[i] = float32(math.Exp(-de))
		expW[i] = float32(de / m2)
	}
}

// normalFrom finishes rand.Rand.NormFloat64 on s's stream from the layer i and the signed offset j
// of its first number, which fell outside the layer's rectangle (in fewer than 1 % of draws).
func normalFrom(s *rng.Stream, j int32, i uint64) float64 {
	for {
		x := float64(j) * float64(normW[i])
		if absInt32(j) < normK[i] {
			return x
		}
		if i == 0 {
			// The base strip's tail beyond normR.
			for {
				x = -math.Log(s.Float64()) * (1.0 / normR)
				y := -math.Log(s.Float64())
				if y+y >= x*x {
					break
				}
			}
			if j > 0 {
				return normR + x
			}
			return -normR - x
		}
		if normF[i]+float32(s.Float64())*(normF[i-1]-normF[i]) < float32(math.Exp(-.5*x*x)) {
			return x
		}
		u := s.PCG.Uint64()
		j, i = int32(u), u>>32&0x7f
	}
}

func absInt32(i int32) uint32 {
	if i < 0 {
		return uint32(-i)
	}
	return uint32(i)
}

// expFrom finishes rand.Rand.ExpFloat64 on s's stream from the layer i and the offset j of its
// first number, which fell outside the layer's rectangle.
func expFrom(s *rng.Stream, j uint32, i uint8) float64 {
	for {
		x := float64(j) * float64(expW[i])
		if j < expK[i] {
			return x
		}
		if i == 0 {
			return expR - math.Log(s.Float64())
		}
		if expF[i]+float32(s.Float64())*(expF[i-1]-expF[i]) < float32(math.Exp(-x)) {
			return x
		}
		u := s.PCG.Uint64()
		j, i = uint32(u), uint8(u>>32)
	}
}
