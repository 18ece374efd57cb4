package logtab

import "golang.org/x/sys/cpu"

// fast: the processor has AVX2, whose gathers logsAVX reads the tables with.
var fast = cpu.X86.HasAVX2

// logsConst are the constants of Log's polynomial and scaling, as the Go compiler rounds them,
// for logsAVX to broadcast: 1/7, 1/6, 1/5, 1/4, 1/3, 1/2, ln2Hi, ln2Lo, and 1.5·2⁵², whose
// bits plus a small integer are that integer plus 1.5·2⁵² (an exact conversion to float64).
var logsConst = [9]float64{1.0 / 7, 1.0 / 6, 1.0 / 5, 1.0 / 4, 1.0 / 3, 1.0 / 2, ln2Hi, ln2Lo, 0x1.8p52}

// logsAVX sets dst[i] = Log(src[i]) for len(src), a multiple of 4, arguments, and reports whether
// any of them is one Log hands to math.Log (its entry of dst is then not Log's).
//
//go:noescape
func logsAVX(dst, src []float64) bool

// logsBits are logsAVX's integer constants: 1 and 0x7fd (the exponents Log passes on are those
// e with e − 1 above 0x7fd or below 0), 0xff (the table index), the bits of 1.5·2⁵² less the
// exponent bias, the exponent field of 1, and the fraction's mask.
var logsBits = [6]uint64{1, 0x7fd, 0xff, 0x4338000000000000 - 1023, 0x3ff << 52, 1<<52 - 1}
