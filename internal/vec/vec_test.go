package vec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The loops that run (AVX2 where the processor has it) and the Go ones give the same bits, and
// both the sums of the products to rounding, at every length up to 70 (every path through the
// blocks and the last entries).
func TestLoopsAgree(t *testing.T) {
	t.Logf("AVX2: %v", fast)
	r := rand.New(rand.NewPCG(1, 2))
	vector := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = r.NormFloat64() * math.Exp(2*r.NormFloat64())
		}
		return v
	}
	near := func(got, want, scale float64) bool { return math.Abs(got-want) <= 1e-13*scale }
	for n := range 71 {
		for range 20 {
			x, y, o := vector(n), vector(n), vector(n)
			scaleX, scaleY, want, wantY := 0.0, 0.0, 0.0, 0.0
			for i := range x {
				want += x[i] * o[i]
				wantY += y[i] * o[i]
				scaleX += math.Abs(x[i] * o[i])
				scaleY += math.Abs(y[i] * o[i])
			}
			if a, g := Dot(x, o), goDot(x, o); a != g || !near(g, want, scaleX) {
				t.Fatalf("n=%d: Dot %v (run) and %v (Go), the sum %v", n, a, g, want)
			}
			a1, a2 := Dot2(x, y, o)
			g1, g2 := dot2Go(x, y, o, nil)
			if a1 != g1 || a2 != g2 || !near(g1, want, scaleX) || !near(g2, wantY, scaleY) {
				t.Fatalf("n=%d: Dot2 %v %v (run) and %v %v (Go), the sums %v %v", n, a1, a2, g1, g2, want, wantY)
			}
			pa, pg := make([]float64, n), make([]float64, n)
			mul(pa, x, o)
			mulGo(pg, x, o)
			full := n / Block
			sa, sg := make([]float64, (n+Block-1)/Block), make([]float64, full)
			qa, qg := make([]float64, n), make([]float64, n)
			ta := MulBlocks(qa, sa, x, o, nil)
			tg := mulBlocksGo(qg[:full*Block], sg, x, o, nil)
			if full > 0 && (sa[full-1] != sg[full-1] || full*Block == n && ta != tg) {
				t.Fatalf("n=%d: MulBlocks' sum of its whole blocks %v (run) %v (Go)", n, sa[full-1], sg[full-1])
			}
			copy(qg[full*Block:], qa[full*Block:])
			for i := range pa {
				if pa[i] != pg[i] || pa[i] != x[i]*o[i] || qa[i] != pa[i] || qg[i] != pa[i] {
					t.Fatalf("n=%d: product %d: Mul %v (run) %v (Go), MulBlocks %v (run) %v (Go), want %v", n, i, pa[i], pg[i], qa[i], qg[i], x[i]*o[i])
				}
			}
			for b := range sa {
				part := 0.0
				for i := range min(n, (b+1)*Block) {
					part += x[i] * o[i]
				}
				if !near(sa[b], part, scaleX) {
					t.Fatalf("n=%d: block sum %d %v, want %v", n, b, sa[b], part)
				}
			}
			if !near(ta, want, scaleX) {
				t.Fatalf("n=%d: MulBlocks total %v, want %v", n, ta, want)
			}
		}
	}
}

// Pick finds what pickGo finds, and pickGo the first index whose running sum exceeds v, on
// weights with zeros (components no draw may pick), at draws spread over the total, at the
// blocks' sums and beyond the total.
func TestPickFindsTheFirstSumAbove(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		n := 1 + r.IntN(70)
		w, one := make([]float64, n), make([]float64, n)
		for i := range w {
			one[i] = 1
			if r.IntN(4) > 0 {
				w[i] = r.ExpFloat64()
			}
		}
		p, sums := make([]float64, n), make([]float64, (n+Block-1)/Block)
		total := MulBlocks(p, sums, w, one, nil)
		vs := []float64{r.Float64() * total, sums[r.IntN(len(sums))], total, 2 * total}
		for _, v := range vs {
			got, goGot := Pick(v, p, sums), pickGo(v, p, sums)
			// The running sums as the pick adds them: from the sum of the blocks before.
			want := n - 1
			for b := range sums {
				acc := 0.0
				if b > 0 {
					acc = sums[b-1]
				}
				if b < len(sums)-1 && sums[b] <= v {
					continue
				}
				want = min(n, (b+1)*Block) - 1
				for i := b * Block; i < want; i++ {
					if acc += p[i]; v < acc {
						want = i
						break
					}
				}
				break
			}
			if got != goGot || got != want {
				t.Fatalf("Pick(%v) over %v: %d, pickGo %d, want %d", v, p, got, goGot, want)
			}
			if v < total && p[got] == 0 {
				t.Fatalf("Pick(%v) over %v picked %d, of no weight", v, p, got)
			}
		}
	}
}

// Gram gives gramGo's bits, and both the sums of the products to rounding in the upper triangle
// (nothing below it), for ranks 1 to 20.
func TestGram(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for k := 1; k <= 20; k++ {
		f := make([]float64, 37*k)
		for i := range f {
			f[i] = r.ExpFloat64()
		}
		got, want := make([]float64, k*k), make([]float64, k*k)
		Gram(got, f, k)
		gramGo(want, f, k)
		for a := range k {
			for c := range k {
				if c < a {
					if got[a*k+c] != 0 {
						t.Fatalf("k=%d: entry (%d, %d) below the diagonal is %v", k, a, c, got[a*k+c])
					}
					continue
				}
				sum := 0.0
				for i := 0; i < len(f); i += k {
					sum += f[i+a] * f[i+c]
				}
				if g := got[a*k+c]; g != want[a*k+c] || math.Abs(g-sum) > 1e-13*sum {
					t.Fatalf("k=%d: entry (%d, %d) %v, gramGo %v, the sum %v", k, a, c, g, want[a*k+c], sum)
				}
			}
		}
	}
}

// DotRows and Dot2Rows give the bits of their Go loops and of Dot and Dot2 of each gathered row
// (and of Mul of two gathered rows), for ranks up to 70.
func TestRowsAreTheirDots(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for k := 1; k <= 70; k++ {
		const rows, cells = 9, 23
		f, fb := make([]float64, rows*k), make([]float64, rows*k)
		for i := range f {
			f[i], fb[i] = r.NormFloat64(), r.ExpFloat64()
		}
		x, y := make([]float64, k), make([]float64, k)
		for i := range x {
			x[i], y[i] = r.NormFloat64(), r.NormFloat64()
		}
		ia, ib := make([]int32, cells), make([]int32, cells)
		for q := range ia {
			ia[q], ib[q] = int32(r.IntN(rows)), int32(r.IntN(rows))
		}
		o := make([]float64, k)
		for _, three := range []bool{false, true} {
			var g []float64
			var gi []int32
			if three {
				g, gi = fb, ib
			}
			out, outX, outY := make([]float64, cells), make([]float64, cells), make([]float64, cells)
			DotRows(out, x, f, ia, g, gi)
			Dot2Rows(outX, outY, x, y, f, ia, g, gi)
			goOut, goX, goY := make([]float64, cells), make([]float64, cells), make([]float64, cells)
			dot2RowsGo(goOut, make([]float64, cells), x, x, f, ia, g, gi)
			dot2RowsGo(goX, goY, x, y, f, ia, g, gi)
			if !slices.Equal(out, goOut) || !slices.Equal(outX, goX) || !slices.Equal(outY, goY) {
				t.Fatalf("k=%d, two rows %v: the rows' loops that run and the Go ones differ", k, three)
			}
			for q := range cells {
				row := f[int(ia[q])*k : int(ia[q])*k+k]
				if three {
					Mul(o, row, fb[int(ib[q])*k:int(ib[q])*k+k])
					row = o
				}
				wx, wy := Dot2(x, y, row)
				if d := Dot(x, row); out[q] != d || outX[q] != wx || outY[q] != wy {
					t.Fatalf("k=%d, two rows %v, cell %d: DotRows %v, Dot %v; Dot2Rows %v %v, Dot2 %v %v", k, three, q, out[q], d, outX[q], outY[q], wx, wy)
				}
			}
		}
	}
}

// MulPick gives MulBlocks' products, sums and total and Pick's index at u·total, and the Go loop's
// bits, with the products of two vectors and of three, at every length up to 70.
func TestMulPickIsMulBlocksAndPick(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for n := 1; n <= 70; n++ {
		for range 50 {
			w, a, b := make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range w {
				w[i], a[i], b[i] = r.ExpFloat64(), r.ExpFloat64(), r.ExpFloat64()
				if r.IntN(5) == 0 {
					w[i] = 0
				}
			}
			for _, three := range [][]float64{nil, b} {
				u := r.Float64()
				nb := (n + Block - 1) / Block
				p, sums, pg, sumsGo := make([]float64, n), make([]float64, nb), make([]float64, n), make([]float64, nb)
				pw, sw := make([]float64, n), make([]float64, nb)
				total, index := MulPick(p, sums, w, a, three, u)
				totalGo, indexGo := mulPickGo(pg, sumsGo, w, a, three, u)
				want := MulBlocks(pw, sw, w, a, three)
				if total != totalGo || index != indexGo || total != want || index != Pick(u*want, pw, sw) ||
					!slices.Equal(p, pg) || !slices.Equal(p, pw) || !slices.Equal(sums, sumsGo) || !slices.Equal(sums, sw) {
					t.Fatalf("n=%d three %v: MulPick %v %d, Go %v %d, MulBlocks and Pick %v %d", n, three != nil, total, index, totalGo, indexGo, want, Pick(u*want, pw, sw))
				}
				for i := range p {
					o := a[i]
					if three != nil {
						o *= b[i]
					}
					if p[i] != w[i]*o {
						t.Fatalf("n=%d: product %d %v, want %v", n, i, p[i], w[i]*o)
					}
				}
			}
		}
	}
}

// goDot is Dot by the Go loop.
func goDot(x, o []float64) float64 {
	d, _ := dot2Go(x, x, o, nil)
	return d
}

var sink float64

// BenchmarkDot compares the loops at the ranks of the benchmarks' workloads.
func BenchmarkDot(b *testing.B) {
	for _, n := range []int{10, 64} {
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], y[i] = float64(i), 1/float64(i+1)
		}
		b.Run(fmt.Sprintf("run/%d", n), func(b *testing.B) {
			s := 0.0
			for b.Loop() {
				s += Dot(x, y)
			}
			sink = s
		})
		b.Run(fmt.Sprintf("go/%d", n), func(b *testing.B) {
			s := 0.0
			for b.Loop() {
				s += goDot(x, y)
			}
			sink = s
		})
	}
}
