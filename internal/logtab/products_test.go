package logtab

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Grouped sums equal the sums of the terms' logarithms, over values spread across 600 orders of
// magnitude (products fold long before they overflow), with counts in and out of the groups.
func TestProducts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var p Products
	for trial := range 200 {
		n := 1 + r.IntN(2000)
		want, wantOne := 0.0, 0.0
		direct := 0.0
		for range n {
			x := float64(1 + r.IntN(40))
			if trial%3 == 0 {
				x += 0.5 // not a count: the caller's own
			}
			v := math.Exp(r.NormFloat64() * 100)
			want += x * math.Log(v)
			if x == 1 {
				wantOne += math.Log(v)
			}
			if i, ok := Group(x); ok {
				p.Mul(i, v)
			} else {
				direct += x * math.Log(v)
			}
		}
		gotOne := p.Take(0)
		got := direct + gotOne
		prev := 0
		if trial%2 == 1 {
			got = p.Counted(got) // the other trials pop the groups one by one
		}
		for i, l, ok := p.Pop(); ok; i, l, ok = p.Pop() {
			if i <= prev {
				t.Fatalf("trial %d: group %d after %d", trial, i, prev)
			}
			prev = i
			got += float64(i+1) * l
		}
		if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) || math.Abs(gotOne-wantOne) > 1e-9*(1+math.Abs(wantOne)) {
			t.Fatalf("trial %d: grouped %v (count 1: %v), direct %v (%v)", trial, got, gotOne, want, wantOne)
		}
		if _, _, ok := p.Pop(); ok {
			t.Fatalf("trial %d: groups left after popping them all", trial)
		}
	}
	// A zero value makes its group's logarithm −Inf, as it makes the sum of logarithms.
	p.Mul(2, 2)
	p.Mul(2, 0)
	p.Mul(2, 5)
	if l := p.Take(2); !math.IsInf(l, -1) {
		t.Errorf("a zero in the group gave %v, want -Inf", l)
	}
	if p.Take(2) != 0 || p.Take(3) != 0 {
		t.Error("an empty group's logarithm is not 0")
	}
}
