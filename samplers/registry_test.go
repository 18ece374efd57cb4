package samplers_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stirank/stirank/samplers"
	st "github.com/stirank/stirank/samplers/samplertest"
)

// Every registered kernel is made from its defaults, declares a correction it implements, and
// refuses parameters it does not have or values outside their domain; a kernel that moves by its
// stochastic gradient alone samples a correlated 2-D Gaussian at a small step (the
// Metropolis–Hastings kernels are checked by the chain that drives them, in sti).
func TestRegisteredKernels(t *testing.T) {
	names := samplers.Names()
	if len(names) < 9 {
		t.Fatalf("registered kernels %v", names)
	}
	for _, name := range names {
		s, err := samplers.New(name, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, _ := samplers.Lookup(name)
		if s.Name != name || len(s.Params) != len(r.Params) || (s.MH != nil) != r.Caps.MetropolisHastings {
			t.Errorf("%s: made as %q with %d parameters, correction %v", name, s.Name, len(s.Params), s.MH != nil)
		}
		if _, err := samplers.New(name, map[string]float64{"no-such-parameter": 1}); err == nil || !strings.Contains(err.Error(), "no parameter") {
			t.Errorf("%s: unknown parameter: %v", name, err)
		}
		for _, p := range r.Params {
			if _, err := samplers.New(name, map[string]float64{p.Name: math.NaN()}); err == nil {
				t.Errorf("%s: %s=NaN accepted", name, p.Name)
			}
		}
		if s.Caps.MetropolisHastings {
			continue
		}
		g := st.Correlated2D()
		eps := 0.1
		if !s.Caps.UsesMetric {
			eps = 0.003 // no metric: the step is in the units of θ; Euler's variance bias is about ελ/2
		}
		res := st.Run{Kernel: s.Kernel, Target: g, Steps: 200000, Burnin: 2000, Eps: eps, Ranges: 2, Seed: 9}.Do()
		for i := range 2 {
			sd := math.Sqrt(g.Cov()[i*2+i])
			if dm := math.Abs(res.Mean[i]-g.Mean()[i]) / sd; dm > 5*res.SEMean[i]/sd+0.05 {
				t.Errorf("%s θ%d: mean off by %.3f sd (standard error %.3f)", name, i, dm, res.SEMean[i]/sd)
			}
			if rv := math.Abs(res.Cov[i*2+i]/g.Cov()[i*2+i] - 1); rv > 5*res.SEVar[i]/g.Cov()[i*2+i]+0.05 {
				t.Errorf("%s θ%d: variance off by %.3f relative (standard error %.3f)", name, i, rv, res.SEVar[i]/g.Cov()[i*2+i])
			}
		}
	}
	for _, alias := range []string{"lm", "riemann", "LMSGLD"} {
		if _, err := samplers.Lookup(alias); err != nil {
			t.Errorf("alias %s: %v", alias, err)
		}
	}
	_, err := samplers.New("no-such-kernel", nil)
	if err == nil || !strings.Contains(err.Error(), strings.Join(names, ", ")) {
		t.Errorf("unknown kernel: %v (want the registered names listed)", err)
	}
}

func TestParseParams(t *testing.T) {
	p, err := samplers.ParseParams("friction=0.3, em=1,")
	if err != nil || len(p) != 2 || p["friction"] != 0.3 || p["em"] != 1 {
		t.Errorf("ParseParams: %v, %v", p, err)
	}
	for _, bad := range []string{"friction", "=1", "friction=x"} {
		if _, err := samplers.ParseParams(bad); err == nil {
			t.Errorf("ParseParams(%q) accepted", bad)
		}
	}
}
