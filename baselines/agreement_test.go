package baselines

import (
	"context"
	"math"
	"testing"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/sti"
)

// STI (sti.Default), Chib and AIS on small NMF (10×8) and CP (6×5×4) datasets of true rank 3:
// near the mode (ranks within 15 nats of the best) Chib and AIS agree within their standard errors
// (plus half a nat), STI agrees with both within a few nats, and all three pick the same rank.
// About 10 s on two cores; skipped with -short.
func TestAgreementWithSTI(t *testing.T) {
	if testing.Short() {
		t.Skip("STI, Chib and AIS on two small datasets")
	}
	for _, tc := range []struct {
		name  string
		shape []int
	}{{"nmf", []int{10, 8}}, {"cp", []int{6, 5, 4}}} {
		rates := make([]float64, len(tc.shape))
		for m := range rates {
			rates[m] = 0.5
		}
		d := tiny(t, 1, tc.shape, 3, 0.5)
		ranks := []int{1, 2, 3, 4, 5}
		sp, err := sti.NewProblem(d, models.PoissonSpec(tc.name, rates, models.LogScale), sti.Default(tc.name))
		if err != nil {
			t.Fatal(err)
		}
		st, err := sp.Sweep(context.Background(), ranks, 0)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewProblem(d, rates)
		if err != nil {
			t.Fatal(err)
		}
		best := map[string]int{}
		bestV := map[string]float64{"sti": math.Inf(-1), "chib": math.Inf(-1), "ais": math.Inf(-1)}
		type row struct{ s, ss, c, cs, a, as float64 }
		rows := map[int]row{}
		for i, R := range ranks {
			c, cs, _ := estimate(t, p, MethodChib, R, 2, DefaultChib(), DefaultAIS())
			a, as, _ := estimate(t, p, MethodAIS, R, 8, DefaultChib(), DefaultAIS())
			rows[R] = row{st[i].LogEvidence, st[i].StdErr, c, cs, a, as}
			t.Logf("%s R=%d  sti %9.2f ± %.2f   chib %9.2f ± %.2f   ais %9.2f ± %.2f", tc.name, R, st[i].LogEvidence, st[i].StdErr, c, cs, a, as)
			for name, v := range map[string]float64{"sti": st[i].LogEvidence, "chib": c, "ais": a} {
				if v > bestV[name] {
					best[name], bestV[name] = R, v
				}
			}
		}
		if best["sti"] != best["chib"] || best["chib"] != best["ais"] {
			t.Errorf("%s: best ranks differ: %v", tc.name, best)
		}
		for R, r := range rows {
			if r.c < bestV["chib"]-15 {
				continue
			}
			if d := math.Abs(r.c - r.a); d > 3*math.Hypot(r.cs, r.as)+0.5 {
				t.Errorf("%s R=%d: chib %.2f ± %.2f and ais %.2f ± %.2f differ by %.2f", tc.name, R, r.c, r.cs, r.a, r.as, d)
			}
			ref := (r.c + r.a) / 2
			if d := math.Abs(r.s - ref); d > 3*r.ss+3 {
				t.Errorf("%s R=%d: sti %.2f ± %.2f is %.2f from the baselines' %.2f", tc.name, R, r.s, r.ss, d, ref)
			}
		}
	}
}
