package baselines

import (
	"context"
	"math"
	"sync"
	"testing"

	"github.com/stirank/stirank/models"
)

// estimate runs n replicas of method at rank R on both cores and combines them.
func estimate(t testing.TB, p *Problem, method string, R, n int, chib ChibConfig, ais AISConfig) (float64, float64, []Summary) {
	t.Helper()
	sums := make([]Summary, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			sums[k], errs[k] = p.Run(context.Background(), method, R, k, chib, ais)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	re, err := CombineRank(method, sums)
	if err != nil {
		t.Fatal(err)
	}
	return re.LogEvidence, re.StdErr, sums
}

// On tiny NMF and CP data the evidence is known exactly (forTinyExact), and the test exercises the relabeling symmetrisation of Chib's ordinates (a naive run would be off by up to
// log R!, 1.8 nats at rank 3) and AIS's tempered slice transitions.
func TestTinyExact(t *testing.T) {
	forTinyExact(t, func(name string, p *Problem, R int, exact float64) {
		chib, chibSE, sums := estimate(t, p, MethodChib, R, 8, DefaultChib(), DefaultAIS())
		ais, aisSE, _ := estimate(t, p, MethodAIS, R, 16, DefaultChib(), DefaultAIS())
		t.Logf("%s R=%d exact %.4f | chib %.4f ± %.4f (label switching %.2f of log R! = %.2f) | ais %.4f ± %.4f",
			name, R, exact, chib, chibSE, sums[0].LabelSwitching, logFactorial(R), ais, aisSE)
		if math.Abs(chib-exact) > 3.5*chibSE+0.01 {
			t.Errorf("%s R=%d: chib %.4f ± %.4f, exact %.4f", name, R, chib, chibSE, exact)
		}
		if math.Abs(ais-exact) > 3.5*aisSE+0.01 {
			t.Errorf("%s R=%d: ais %.4f ± %.4f, exact %.4f", name, R, ais, aisSE, exact)
		}
	})
}

// Rank 1 NMF of any size has an exact evidence (models.Rank1LogEvidence); on the ICASSP-like
// sparse setting Chib's method is exact to a few hundredths of a nat, and AIS from a reference
// fitted to that informative posterior (about 36 000 counts) reaches it too.
func TestRank1Oracle(t *testing.T) {
	for _, tc := range []struct {
		shape []int
		rate  float64
		R     int
	}{{[]int{20, 15}, 0.5, 2}, {[]int{100, 75}, 5, 3}} {
		d := tiny(t, 3, tc.shape, tc.R, tc.rate)
		want, err := models.Rank1LogEvidence(d, []float64{tc.rate, tc.rate})
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewProblem(d, []float64{tc.rate, tc.rate})
		if err != nil {
			t.Fatal(err)
		}
		chib, chibSE, _ := estimate(t, p, MethodChib, 1, 2, DefaultChib(), DefaultAIS())
		ais, aisSE, _ := estimate(t, p, MethodAIS, 1, 8, DefaultChib(), DefaultAIS())
		ref, refSE, _ := estimate(t, p, MethodAIS, 1, 8, DefaultChib(), referenceAIS())
		t.Logf("%v: exact %.3f | chib %.3f ± %.3f | ais %.3f ± %.3f | reference AIS %.3f ± %.3f", tc.shape, want, chib, chibSE, ais, aisSE, ref, refSE)
		if math.Abs(chib-want) > 3.5*chibSE+0.02 {
			t.Errorf("%v: chib %.3f ± %.3f, exact %.3f", tc.shape, chib, chibSE, want)
		}
		if math.Abs(ais-want) > 3.5*aisSE+0.05 {
			t.Errorf("%v: ais %.3f ± %.3f, exact %.3f", tc.shape, ais, aisSE, want)
		}
		if math.Abs(ref-want) > 3.5*refSE+0.05 {
			t.Errorf("%v: reference AIS %.3f ± %.3f, exact %.3f", tc.shape, ref, refSE, want)
		}
	}
}

// Reruns from a seed are bit-identical; replicas and seeds differ.
func TestDeterminism(t *testing.T) {
	d := tiny(t, 2, []int{8, 6}, 2, 0.7)
	p, err := NewProblem(d, []float64{0.7, 0.7})
	if err != nil {
		t.Fatal(err)
	}
	chib := DefaultChib()
	chib.Burnin, chib.Samples, chib.ReducedSamples = 200, 300, 200
	ais := DefaultAIS()
	ais.Temperatures = 200
	for _, method := range []string{MethodChib, MethodAIS} {
		a, err := p.Run(context.Background(), method, 3, 1, chib, ais)
		if err != nil {
			t.Fatal(err)
		}
		p2, _ := NewProblem(d, []float64{0.7, 0.7})
		b, _ := p2.Run(context.Background(), method, 3, 1, chib, ais)
		if a != b && !(math.IsNaN(a.StdErr) && math.IsNaN(b.StdErr) && a.LogEvidence == b.LogEvidence) {
			t.Errorf("%s: rerun differs: %+v vs %+v", method, a, b)
		}
		c, _ := p.Run(context.Background(), method, 3, 2, chib, ais)
		if c.LogEvidence == a.LogEvidence {
			t.Errorf("%s: replicas 1 and 2 gave the same estimate", method)
		}
		chib2, ais2 := chib, ais
		chib2.Seed, ais2.Seed = 2, 2
		e, _ := p.Run(context.Background(), method, 3, 1, chib2, ais2)
		if e.LogEvidence == a.LogEvidence {
			t.Errorf("%s: seeds 1 and 2 gave the same estimate", method)
		}
	}
}

func TestCombineRank(t *testing.T) {
	sums := []Summary{
		{Method: MethodChib, Rank: 2, Replica: 1, LogEvidence: -10, StdErr: 0.1, Sweeps: 5},
		{Method: MethodChib, Rank: 2, Replica: 0, LogEvidence: -12, StdErr: 0.2, Sweeps: 7},
	}
	re, err := CombineRank(MethodChib, sums)
	if err != nil {
		t.Fatal(err)
	}
	if re.LogEvidence != -11 || re.Steps != 12 || math.Abs(re.StdErr-1) > 1e-12 ||
		math.Abs(re.StdErrWithin-math.Sqrt(0.05)/2) > 1e-12 || !math.IsNaN(re.Trapezoid) {
		t.Errorf("chib combine: %+v", re)
	}
	rev, _ := CombineRank(MethodChib, []Summary{sums[1], sums[0]})
	if rev.LogEvidence != re.LogEvidence || rev.StdErr != re.StdErr {
		t.Error("combine depends on the order of the replicas")
	}
	ais := []Summary{{Method: MethodAIS, Rank: 1, Replica: 0, LogEvidence: math.Log(1)}, {Method: MethodAIS, Rank: 1, Replica: 1, LogEvidence: math.Log(3)}}
	ra, _ := CombineRank(MethodAIS, ais)
	if math.Abs(ra.LogEvidence-math.Log(2)) > 1e-12 || math.Abs(ra.StdErr-0.5) > 1e-12 {
		t.Errorf("ais combine: %+v", ra)
	}
	if _, err := CombineRank(MethodChib, []Summary{sums[0], sums[0]}); err == nil {
		t.Error("a replica reported twice was accepted")
	}
	if _, err := CombineRank(MethodAIS, sums); err == nil {
		t.Error("chib summaries accepted as ais")
	}
	div := append([]Summary{{Method: MethodChib, Rank: 2, Replica: 2, Divergence: "boom"}}, sums...)
	rd, err := CombineRank(MethodChib, div)
	if err != nil || !math.IsNaN(rd.LogEvidence) || len(rd.Diverged) != 1 {
		t.Errorf("divergence: %+v, %v", rd, err)
	}
}

// ChibFrom started far from the posterior (every entry 20 times the prior mean) still burns in to
// it and gives the exact evidence of a tiny NMF, and it refuses a start that is not a point of the
// rank's factors.
func TestChibFromAStart(t *testing.T) {
	rates := []float64{1, 2}
	d := tiny(t, 11, []int{4, 3}, 2, 1)
	p, err := NewProblem(d, rates)
	if err != nil {
		t.Fatal(err)
	}
	const R = 2
	exact, err := ExactLogEvidence(d, R, rates, 1e6)
	if err != nil {
		t.Fatal(err)
	}
	from := p.NewFactors(R)
	for m, f := range from.F {
		for i := range f {
			f[i] = 20 / rates[m]
		}
	}
	sums := make([]Summary, 8)
	for k := range sums {
		res, err := p.ChibFrom(context.Background(), R, k, DefaultChib(), from)
		if err != nil {
			t.Fatal(err)
		}
		sums[k] = res.Summary()
	}
	re, err := CombineRank(MethodChib, sums)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exact %.4f | chib from the start %.4f ± %.4f", exact, re.LogEvidence, re.StdErr)
	if math.Abs(re.LogEvidence-exact) > 3.5*re.StdErr+0.01 {
		t.Errorf("chib from the start %.4f ± %.4f, exact %.4f", re.LogEvidence, re.StdErr, exact)
	}
	if from.F[0][0] != 20 {
		t.Errorf("ChibFrom changed its start: %v", from.F[0][0])
	}
	own, err := p.Chib(context.Background(), R, 0, DefaultChib())
	if err != nil {
		t.Fatal(err)
	}
	if own.LogEvidence == sums[0].LogEvidence {
		t.Errorf("ChibFrom's replica 0 is Chib's (%.6f): the start was not used", own.LogEvidence)
	}
	bad := from.Clone()
	bad.F[1][4] = 0
	if _, err := p.ChibFrom(context.Background(), R, 0, DefaultChib(), bad); err == nil {
		t.Error("a start with a zero entry was accepted")
	}
	if _, err := p.ChibFrom(context.Background(), R+1, 0, DefaultChib(), from); err == nil {
		t.Error("a start of rank 2 was accepted at rank 3")
	}
}
