package models

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/internal/quad"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

func TestLookupUnknownListsRegistered(t *testing.T) {
	_, err := Lookup("pca")
	if err == nil {
		t.Fatal("no error for an unknown model")
	}
	want := `unknown model "pca" (` + Or(Names()) + ")"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	for _, name := range []string{"gauss", "nmf", "cp"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not list %s", err, name)
		}
	}
	if err := (Spec{Name: "pca"}).Validate(); err == nil || err.Error() != want {
		t.Errorf("Spec.Validate: %v, want %q", err, want)
	}
}

// Names lists by order, then name; ForOrder picks the model flagged as its order's default.
func TestNamesAndForOrder(t *testing.T) {
	names := Names()
	for i := 1; i < len(names); i++ {
		a, _ := Lookup(names[i-1])
		b, _ := Lookup(names[i])
		if a.Order > b.Order || (a.Order == b.Order && a.Name >= b.Name) {
			t.Errorf("names not sorted by order, then name: %v", names)
		}
	}
	for order, want := range map[int]string{1: "gauss", 2: "nmf", 3: "cp"} {
		info, err := ForOrder(order)
		if err != nil || info.Name != want {
			t.Errorf("ForOrder(%d) = %v, %v; want %s", order, info, err, want)
		}
	}
	if _, err := ForOrder(4); err == nil || !strings.Contains(err.Error(), "1 gauss, 2 nmf, 3 cp") {
		t.Errorf("ForOrder(4): %v", err)
	}
}

// Every registered model: a sane declaration, valid defaults, a spec that survives JSON, a
// generator whose data have the declared order and domain and that the model binds to, and an
// exact evidence that agrees with the model's own oracle where one is declared.
func TestEveryRegisteredModel(t *testing.T) {
	for _, info := range All() {
		t.Run(info.Name, func(t *testing.T) {
			if err := info.check(); err != nil {
				t.Fatal(err)
			}
			spec := Spec{Name: info.Name, Params: defaults(info.Hypers, info.Order)}
			if err := spec.Validate(); err != nil {
				t.Fatalf("defaults do not validate: %v", err)
			}
			b, err := json.Marshal(spec)
			if err != nil {
				t.Fatal(err)
			}
			var back Spec
			if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, spec) {
				t.Errorf("spec %s does not round-trip through JSON: %+v, %v", b, back, err)
			}
			if again, _ := json.Marshal(back); string(again) != string(b) {
				t.Errorf("spec encodes as %s, then %s", b, again)
			}
			for _, h := range info.Hypers {
				if err := spec.With(h.Name, Value{}).Validate(); err == nil {
					t.Errorf("an empty %s validates", h.Name)
				}
			}
			if err := spec.With("no-such-hyper", Num(1)).Validate(); err == nil {
				t.Error("an unknown hyper-parameter validates")
			}
			if info.Generate == nil {
				return
			}
			shape := []int{40, 30, 20, 10}[:info.Order]
			if info.Order == 1 {
				shape = []int{200}
			}
			gp := defaults(info.Generate.Hypers, info.Order)
			if err := validateParams(info.Generate.Hypers, gp, info.Order, false); err != nil {
				t.Fatalf("generator defaults do not validate: %v", err)
			}
			if info.Dictionary {
				// a one-column dictionary for the data's rows, where rank 0 has an exact evidence
				d := &Dictionary{Source: "test", Rows: shape[0], Cols: 1, Values: make([]float64, shape[0])}
				for i := range d.Values {
					d.Values[i] = float64(1 + i%3)
				}
				spec.Dictionary = d
			}
			head := Truth{Model: info.Name, Rank: 2, Seed: 9, Shape: shape}
			data, truth, err := info.Generate.Draw(rng.New(9), head, gp, spec.Dictionary)
			if err != nil {
				t.Fatal(err)
			}
			if data.Order() != info.Order || !reflect.DeepEqual(data.Shape, shape) {
				t.Errorf("generated shape %v, want %v", data.Shape, shape)
			}
			if err := data.Validate(info.Domain == Counts); err != nil {
				t.Errorf("generated data outside the domain: %v", err)
			}
			for _, v := range data.Values {
				if info.Domain != AnyReal && v < 0 {
					t.Fatalf("generated value %v outside %s", v, info.Domain)
				}
			}
			tb, err := json.Marshal(truth)
			if err != nil {
				t.Fatal(err)
			}
			var th Truth
			if err := json.Unmarshal(tb, &th); err != nil || !reflect.DeepEqual(th, head) {
				t.Errorf("truth %s does not record %+v", tb, head)
			}
			m, err := spec.Build(data, 2)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := spec.Build(data, 0); (err == nil) != info.ZeroRank {
				t.Errorf("Build at rank 0: error %v; registered ZeroRank %v", err, info.ZeroRank)
			}
			if _, ok := m.(Augmentable); ok != info.Gibbs {
				t.Errorf("built %s implements Augmentable: %v; registered Gibbs %v", m.Name(), ok, info.Gibbs)
			}
			if m.Name() != info.Name || m.Rank() != 2 || (m.Factors() != nil) != info.Factored {
				t.Errorf("built %s rank %d, factors %v; registered Factored %v", m.Name(), m.Rank(), m.Factors(), info.Factored)
			}
			// The oracles know fixed rates: a default of --rate auto is checked at the embedded
			// data's rate (the hyperprior's exact rank-1 value has tests of its own).
			if spec.Params.Auto("rates") {
				spec = spec.With("rates", Nums(slices.Repeat([]float64{0.3}, info.Order)...))
			}
			if info.ExpPoissonRates != nil && len(info.ExpPoissonRates(spec.Params)) != info.Order {
				t.Errorf("ExpPoissonRates gives %v for order %d", info.ExpPoissonRates(spec.Params), info.Order)
			}
			if info.Exact == nil {
				return
			}
			exact := 0
			for R := info.MinRank(); R <= 3; R++ {
				v, err := info.Exact(data, R, spec)
				if errors.Is(err, ErrNoExact) {
					continue
				}
				if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("rank %d: exact evidence %v, %v", R, v, err)
				}
				if want := oracle(t, info.Name, data, R, spec); math.Abs(v-want) > 1e-9*math.Abs(want) {
					t.Errorf("rank %d: exact evidence %v, oracle %v", R, v, want)
				}
				exact++
			}
			if exact == 0 {
				t.Errorf("Exact declared, but no exact evidence at ranks %d–3", info.MinRank())
			}
		})
	}
}

// defaults are the default values of hs for data of the order.
func defaults(hs []Hyper, order int) Params {
	p := Params{}
	for _, h := range hs {
		p[h.Name] = h.DefaultFor(order)
	}
	return p
}

// oracle is the exact evidence by the function the model's own tests check.
func oracle(t *testing.T, name string, data *tensor.Sparse, R int, spec Spec) float64 {
	p := spec.Params
	switch name {
	case "gauss":
		m, err := NewGauss(data.Values, R, gaussPriorOf(p))
		if err != nil {
			t.Fatal(err)
		}
		return m.LogEvidence()
	case "nmf", "cp":
		v, err := Rank1LogEvidence(data, p.Nums("rates"))
		if err != nil {
			t.Fatal(err)
		}
		return v
	case "ssnmf":
		// rank 0 with one dictionary column w: every column j of X is its own 1-D integral over
		// the activation h ~ Exp(rate), Π_i Poisson(x_ij | w_i h), taken by quadrature in log h
		w, rate := spec.Dictionary.Values, p.Nums("rates")[1]
		cols := make([]map[int]float64, data.Shape[1])
		for n, x := range data.Values {
			j := int(data.Coords[1][n])
			if cols[j] == nil {
				cols[j] = map[int]float64{}
			}
			cols[j][int(data.Coords[0][n])] += x
		}
		total := 0.0
		for _, c := range cols {
			total += quad.LogIntegral(func(u float64) float64 {
				h := math.Exp(u)
				v := math.Log(rate) - rate*h + u
				for i, wi := range w {
					x := c[i]
					lg, _ := math.Lgamma(x + 1)
					v += x*math.Log(wi*h) - wi*h - lg
				}
				return v
			})
		}
		return total
	}
	t.Fatalf("no oracle for the exact evidence of %s: add one", name)
	return 0
}

// A Value encodes as a number, a list or a string, and back.
func TestValueJSON(t *testing.T) {
	p := Params{"mu": Num(-1.5), "rates": Nums(0.3, 2), "param": Word("log"), "one": Nums(4)}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"mu":-1.5,"one":4,"param":"log","rates":[0.3,2]}`; string(b) != want {
		t.Errorf("%s, want %s", b, want)
	}
	var back Params
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, p) {
		t.Errorf("%+v, %v; want %+v", back, err, p)
	}
}

func TestRegisterRejectsBadRegistrations(t *testing.T) {
	build := func(*tensor.Sparse, int, Spec) (Model, error) { return nil, nil }
	for _, info := range []Info{
		{Name: "gauss", Order: 1, Build: build},                           // taken
		{Name: "x y", Order: 1, Build: build},                             // not a word
		{Name: "order0", Order: 0, Build: build},                          // no order
		{Name: "nobuild", Order: 2},                                       // no Build
		{Name: "default2", Order: 2, DefaultForOrder: true, Build: build}, // nmf is the default
		{Name: "baddefault", Order: 1, Build: build, Hypers: []Hyper{{Name: "v", Kind: Real, Positive: true, Default: Num(0)}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: registered", info.Name)
				}
			}()
			Register(info)
		}()
	}
	if _, err := Lookup("baddefault"); err == nil {
		t.Error("a rejected registration is registered")
	}
}
