package baselines

import (
	"math"
	"testing"

	"github.com/stirank/stirank/internal/quad"
	"github.com/stirank/stirank/rng"
)

// permutations calls f with every permutation of 0…n−1.
func permutations(n int, f func([]int)) {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			f(p)
			return
		}
		for i := k; i < n; i++ {
			p[k], p[i] = p[i], p[k]
			rec(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	rec(0)
}

func bruteLogPerm(L []float64, n int) float64 {
	acc := math.Inf(-1)
	permutations(n, func(p []int) {
		s := 0.0
		for r, c := range p {
			s += L[r*n+c]
		}
		acc = quad.LogAddExp(acc, s)
	})
	return acc
}

func TestLogPermMatchesBruteForce(t *testing.T) {
	r := rng.New(1)
	for n := 1; n <= 6; n++ {
		for _, spread := range []float64{0.1, 5, 300, 3000} {
			L := make([]float64, n*n)
			for i := range L {
				L[i] = spread*r.NormFloat64() - 1000
			}
			ps := newPermScratch(n)
			got, want := ps.logPerm(L), bruteLogPerm(L, n)
			if math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
				t.Errorf("n=%d spread %v: %v, brute force %v", n, spread, got, want)
			}
		}
	}
	// Every row's largest entry in the same column: the scaled table underflows and the log-space
	// recursion takes over.
	n := 4
	L := make([]float64, n*n)
	for i := range L {
		L[i] = -2000
	}
	for rr := range n {
		L[rr*n] = 0
	}
	ps := newPermScratch(n)
	if got, want := ps.logPerm(L), bruteLogPerm(L, n); math.Abs(got-want) > 1e-9*math.Abs(want) {
		t.Errorf("degenerate matrix: %v, brute force %v", got, want)
	}
}

// Every minor's log permanent from logMinors matches the brute-force sum over permutations, and
// so does the log-space recursion it falls back on where the scaled table leaves its range.
func TestLogMinorsMatchBruteForce(t *testing.T) {
	r := rng.New(2)
	for n := 2; n <= 6; n++ {
		for _, spread := range []float64{0.1, 30, 3000} {
			L := make([]float64, n*n)
			for i := range L {
				L[i] = spread*r.NormFloat64() - 500
			}
			out, ps := make([]float64, n), newPermScratch(n)
			for k := range n {
				ps.logMinors(L, k, out)
				lp := ps.logSubsets(L, k)
				for j := range n {
					var minor []float64
					for a := range n {
						for b := range n {
							if a != k && b != j {
								minor = append(minor, L[a*n+b])
							}
						}
					}
					want := bruteLogPerm(minor, n-1)
					for _, got := range []float64{out[j], lp[(1<<n-1)&^(1<<j)]} {
						if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
							t.Errorf("n=%d spread %v minor (%d, %d): %v, want %v", n, spread, k, j, got, want)
						}
					}
				}
			}
		}
	}
}

func TestSamplePermFrequencies(t *testing.T) {
	const n = 3
	r := rng.New(2)
	L := []float64{0, 1, -1, 0.5, 0, 2, -0.3, 0.2, 0}
	ps := newPermScratch(n)
	logZ := ps.logPerm(L)
	want := map[[n]int]float64{}
	permutations(n, func(p []int) {
		s := 0.0
		for rr, c := range p {
			s += L[rr*n+c]
		}
		want[[n]int{p[0], p[1], p[2]}] = math.Exp(s - logZ)
	})
	count := map[[n]int]int{}
	tau := make([]int, n)
	const draws = 200000
	for range draws {
		ps.samplePerm(r, L, tau)
		count[[n]int{tau[0], tau[1], tau[2]}]++
	}
	for k, p := range want {
		f := float64(count[k]) / draws
		if se := math.Sqrt(p * (1 - p) / draws); math.Abs(f-p) > 5*se {
			t.Errorf("permutation %v: frequency %.4f, probability %.4f", k, f, p)
		}
	}
	// The log-space sampler draws from the same distribution.
	count = map[[n]int]int{}
	for range draws {
		ps.samplePermLog(r, L, tau)
		count[[n]int{tau[0], tau[1], tau[2]}]++
	}
	for k, p := range want {
		f := float64(count[k]) / draws
		if se := math.Sqrt(p * (1 - p) / draws); math.Abs(f-p) > 5*se {
			t.Errorf("log space: permutation %v: frequency %.4f, probability %.4f", k, f, p)
		}
	}
}
