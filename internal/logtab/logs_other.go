//go:build !amd64

package logtab

// fast is false off amd64: Logs calls Log.
const fast = false

func logsAVX(dst, src []float64) bool { panic("logtab: no AVX2 off amd64") }
