package logtab

// Logs sets dst[i] = Log(src[i]) for the entries of src (dst at least as long), bit for bit what
// Log gives: the same operations in the same order, four arguments at a time in AVX2 where the
// processor has it, for the rows of logarithms a sampler writes into θ at every sweep.
func Logs(dst, src []float64) {
	dst = dst[:len(src)]
	n := 0
	if fast {
		n = len(src) &^ 3
		if logsAVX(dst[:n], src[:n]) {
			// Zero, negative, subnormal, infinite or NaN arguments: Log hands them to math.Log.
			for i, x := range src[:n] {
				if special(x) {
					dst[i] = Log(x)
				}
			}
		}
	}
	for i := n; i < len(src); i++ {
		dst[i] = Log(src[i])
	}
}
