package logtab

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLog compares Log with math.Log over 3·10⁶ arguments spread over the float64 range and near
// 1, and at the special values; the difference allowed is 2 units in the last place of math.Log's
// result (measured: 1).
func TestLog(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	check := func(x float64) {
		got, want := Log(x), math.Log(x)
		if math.IsNaN(want) || math.IsInf(want, 0) || math.IsInf(x, 0) {
			if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("Log(%g) = %g, want %g", x, got, want)
			}
			return
		}
		ulp := math.Nextafter(math.Abs(want), math.Inf(1)) - math.Abs(want)
		if d := math.Abs(got-want) / ulp; d > worst {
			worst = d
			if d > 2 {
				t.Fatalf("Log(%v) = %v, math.Log gives %v: %.1f ulp apart", x, got, want, d)
			}
		}
	}
	for range 1000000 {
		check(math.Exp(r.Float64()*1400 - 700))
		check(1 + (r.Float64()-0.5)*0x1p-6)
		check(1 + (r.Float64()-0.5)*0x1p-30)
	}
	for _, x := range []float64{0, -1, math.Inf(1), math.Inf(-1), math.NaN(), 5e-324, 1e-310, math.MaxFloat64, 1, 2, 0.5, math.E, 1 - 0x1p-53, 1 + 0x1p-52} {
		check(x)
	}
	t.Logf("worst error %.2f ulp", worst)
}

var sink float64

// bench times f on 4096 arguments spread uniformly over (0, scale) (negative scale: (scale, 0)).
func bench(b *testing.B, f func(float64) float64, scale float64) {
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]float64, 4096)
	for i := range xs {
		xs[i] = r.Float64() * scale
	}
	s := 0.0
	for i := 0; b.Loop(); i++ {
		s += f(xs[i&4095])
	}
	sink = s
}

// BenchmarkLog and BenchmarkMathLog compare the two on the same arguments in one run.
func BenchmarkLog(b *testing.B)     { bench(b, Log, 30) }
func BenchmarkMathLog(b *testing.B) { bench(b, math.Log, 30) }

// TestExp compares Exp with math.Exp over 3·10⁶ arguments spread over (−745, 710), over the
// range of the sums over the reference's grid (−30 to 0) and near 0, and at the special values;
// the difference allowed is 2 units in the last place of math.Exp's result (measured: 2, at 0.1 %
// of the arguments, and 1 at 31 %).
func TestExp(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	worst := 0.0
	check := func(x float64) {
		got, want := Exp(x), math.Exp(x)
		if math.IsNaN(want) || math.IsInf(want, 0) || want == 0 {
			if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("Exp(%g) = %g, want %g", x, got, want)
			}
			return
		}
		ulp := math.Nextafter(want, math.Inf(1)) - want
		if d := math.Abs(got-want) / ulp; d > worst {
			worst = d
			if d > 2 {
				t.Fatalf("Exp(%v) = %v, math.Exp gives %v: %.1f ulp apart", x, got, want, d)
			}
		}
	}
	for range 1000000 {
		check(r.Float64()*1455 - 745)
		check(-30 * r.Float64())
		check((r.Float64() - 0.5) * 0x1p-20)
	}
	for _, x := range []float64{0, 1, -1, 699.99, -699.99, 700, -700, 709.7, 710, -745, -746, math.Inf(1), math.Inf(-1), math.NaN(), math.Ln2, 5e-324} {
		check(x)
	}
	t.Logf("worst error %.2f ulp", worst)
}

// BenchmarkExp and BenchmarkMathExp compare the two on the same arguments in one run.
func BenchmarkExp(b *testing.B)     { bench(b, Exp, -30) }
func BenchmarkMathExp(b *testing.B) { bench(b, math.Exp, -30) }

// TestLogs checks Logs against Log bit for bit, on every length up to 11 (the four-wide loop and
// its tail) and 10⁶ arguments spread over the float64 range and near 1, with the special values
// Log passes to math.Log among them.
func TestLogs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	xs := make([]float64, 1000000)
	for i := range xs {
		switch i % 3 {
		case 0:
			xs[i] = math.Exp(r.Float64()*1400 - 700)
		case 1:
			xs[i] = 1 + (r.Float64()-0.5)*0x1p-6
		default:
			xs[i] = r.Float64() * 30
		}
	}
	specials := []float64{0, -1, math.Inf(1), math.Inf(-1), math.NaN(), 5e-324, 1e-310, math.MaxFloat64, math.Copysign(0, -1), 0x1p-1022}
	for i, x := range specials {
		xs[1000*i+1] = x
	}
	same := func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
	}
	for n := range 12 {
		src := append([]float64(nil), xs[7*n:7*n+n]...)
		if n > 2 {
			src[n/2] = specials[n%len(specials)]
		}
		dst := make([]float64, n)
		Logs(dst, src)
		for i, x := range src {
			if !same(dst[i], Log(x)) {
				t.Fatalf("length %d: Logs gives %v at %v, Log %v", n, dst[i], x, Log(x))
			}
		}
	}
	dst := make([]float64, len(xs))
	Logs(dst, xs)
	for i, x := range xs {
		if !same(dst[i], Log(x)) {
			t.Fatalf("Logs gives %v at %v, Log %v", dst[i], x, Log(x))
		}
	}
}

// BenchmarkLogs times Logs per argument, on BenchmarkLog's arguments.
func BenchmarkLogs(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	xs, dst := make([]float64, 4096), make([]float64, 4096)
	for i := range xs {
		xs[i] = r.Float64() * 30
	}
	for b.Loop() {
		Logs(dst, xs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(xs)), "ns/log")
}
