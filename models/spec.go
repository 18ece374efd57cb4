package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/stirank/stirank/tensor"
)

// Kind is the type of a hyper-parameter's value.
type Kind int

const (
	// Real is one real number.
	Real Kind = iota
	// PerMode is one real number per data mode (the prior rate of every factor).
	PerMode
	// Choice is one word of a list.
	Choice
)

// Hyper declares a hyper-parameter: the command line makes its flags from it, specs carry its
// value under its name, and evidence.json records it.
type Hyper struct {
	// Name is the flag (--var-theta), the key in Params and in evidence.json's prior.
	Name string
	Kind Kind
	// Help is the flag's usage text, without the models it applies to or its default.
	Help string
	// Default is the value when none is given; a PerMode default of one number applies to
	// every mode.
	Default Value
	// Positive requires numbers > 0, NonNegative numbers ≥ 0; numbers are always finite.
	Positive, NonNegative bool
	// Choices are the words a Choice takes.
	Choices []string
	// Each, for PerMode, names the flag that gives every mode the same number (--rate beside
	// --rates), with its usage text EachHelp; it also names one number in errors.
	Each, EachHelp string
	// Auto lets a PerMode hyper-parameter take the word AutoWord instead of numbers: the model
	// then puts a hyperprior on them and samples them with its parameters.
	Auto bool
	// Sampling marks a setting of how the STI engine samples the model rather than of the
	// model's distribution: the baselines and the generators do not take it.
	Sampling bool
}

// DefaultFor is the default value for data of the given order.
func (h Hyper) DefaultFor(order int) Value {
	if h.Kind == PerMode && len(h.Default.Nums) == 1 {
		return Nums(slices.Repeat(h.Default.Nums, order)...)
	}
	return h.Default.clone()
}

// check validates the declaration.
func (h Hyper) check() error {
	switch {
	case h.Name == "" || strings.ContainsAny(h.Name, " ,="):
		return fmt.Errorf("hyper-parameter name %q must be a non-empty word", h.Name)
	case h.Kind == Choice && len(h.Choices) == 0:
		return fmt.Errorf("%s: a choice with no choices", h.Name)
	case h.Kind != PerMode && h.Each != "":
		return fmt.Errorf("%s: Each applies to PerMode hyper-parameters", h.Name)
	}
	return nil
}

// label names one number of the hyper-parameter in errors.
func (h Hyper) label() string {
	if h.Each != "" {
		return h.Each
	}
	return h.Name
}

// Validate checks a value for data of the given order.
func (h Hyper) Validate(v Value, order int) error {
	if h.Kind == Choice {
		if v.Nums != nil || !slices.Contains(h.Choices, v.Word) {
			return fmt.Errorf("%s %q must be %s", h.Name, v.Word, Or(h.Choices))
		}
		return nil
	}
	switch {
	case h.Kind == PerMode && h.Auto && v.Word == AutoWord && v.Nums == nil:
		return nil
	case h.Kind == Real && (v.Word != "" || len(v.Nums) != 1):
		return fmt.Errorf("%s wants one number, got %s", h.Name, v)
	case h.Kind == PerMode && (v.Word != "" || len(v.Nums) != order):
		if h.Auto {
			return fmt.Errorf("%s wants %d numbers, one per mode, or %s, got %s", h.Name, order, AutoWord, v)
		}
		return fmt.Errorf("%s wants %d numbers, one per mode, got %s", h.Name, order, v)
	}
	for _, x := range v.Nums {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%s %v is not finite", h.label(), x)
		}
		if h.Positive && !(x > 0) {
			return fmt.Errorf("%s %v must be positive and finite", h.label(), x)
		}
		if h.NonNegative && x < 0 {
			return fmt.Errorf("%s %v must not be negative", h.label(), x)
		}
	}
	return nil
}

// Value is the value of one hyper-parameter: Nums for a Real (one number) or a PerMode, Word for
// a Choice. It encodes to JSON as a number, a list of numbers or a string.
type Value struct {
	Nums []float64
	Word string
}

// Num is a Real value.
func Num(x float64) Value { return Value{Nums: []float64{x}} }

// Nums is a PerMode value.
func Nums(xs ...float64) Value { return Value{Nums: append([]float64{}, xs...)} }

// Word is a Choice value.
func Word(w string) Value { return Value{Word: w} }

func (v Value) clone() Value { return Value{Nums: slices.Clone(v.Nums), Word: v.Word} }

func (v Value) String() string {
	if v.Nums == nil {
		return strconv.Quote(v.Word)
	}
	parts := make([]string, len(v.Nums))
	for i, x := range v.Nums {
		parts[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

func (v Value) MarshalJSON() ([]byte, error) {
	switch {
	case v.Nums == nil:
		return json.Marshal(v.Word)
	case len(v.Nums) == 1:
		return json.Marshal(v.Nums[0])
	}
	return json.Marshal(v.Nums)
}

func (v *Value) UnmarshalJSON(b []byte) error {
	*v = Value{}
	switch b = bytes.TrimSpace(b); {
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &v.Word)
	case len(b) > 0 && b[0] == '[':
		v.Nums = []float64{}
		return json.Unmarshal(b, &v.Nums)
	}
	var x float64
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	v.Nums = []float64{x}
	return nil
}

// Params holds the value of every hyper-parameter of a model, by name. encoding/json writes map
// keys sorted, so equal params encode to equal bytes (specs are part of cache keys).
type Params map[string]Value

// Num returns a Real hyper-parameter.
func (p Params) Num(name string) float64 { return p[name].Nums[0] }

// Nums returns a PerMode hyper-parameter.
func (p Params) Nums(name string) []float64 { return slices.Clone(p[name].Nums) }

// AutoWord is the value of a PerMode hyper-parameter that the model samples under a hyperprior
// (Hyper.Auto): --rate auto.
const AutoWord = "auto"

// Auto reports whether a PerMode hyper-parameter is AutoWord.
func (p Params) Auto(name string) bool { return p[name].Word == AutoWord && p[name].Nums == nil }

// Word returns a Choice hyper-parameter.
func (p Params) Word(name string) string { return p[name].Word }

// validateParams checks p against the declarations hs: every one given (the sampling settings may
// be missing when samplingOptional is set) and valid for data of the order, and nothing else.
func validateParams(hs []Hyper, p Params, order int, samplingOptional bool) error {
	for _, h := range hs {
		v, ok := p[h.Name]
		if !ok && samplingOptional && h.Sampling {
			continue
		}
		if !ok {
			return fmt.Errorf("no value for %s", h.Name)
		}
		if err := h.Validate(v, order); err != nil {
			return err
		}
	}
	for name := range p {
		if !slices.ContainsFunc(hs, func(h Hyper) bool { return h.Name == name }) {
			return fmt.Errorf("no hyper-parameter %s (%s)", name, And(hyperNames(hs)))
		}
	}
	return nil
}

func hyperNames(hs []Hyper) []string {
	names := make([]string, len(hs))
	for i, h := range hs {
		names[i] = h.Name
	}
	return names
}

// Spec names a registered model and gives its hyper-parameters. It holds plain values only, so
// it crosses Beam stages as JSON, and its encoding is deterministic.
type Spec struct {
	Name   string
	Params Params
	// Dictionary is the fixed dictionary of a model that takes one (Info.Dictionary: ssnmf),
	// carried by value because the workers of a cluster share no disk with the launcher and
	// build the model from the spec alone. Nil, and not encoded, for the other models.
	Dictionary *Dictionary `json:",omitempty"`
}

// FixedComponents is the number of components every cell's rate sums besides a rank's own: the
// fixed dictionary's columns (ssnmf), 0 for the other models.
func (s Spec) FixedComponents() int {
	if s.Dictionary == nil {
		return 0
	}
	return s.Dictionary.Cols
}

// With returns a copy of the spec with one hyper-parameter changed.
func (s Spec) With(name string, v Value) Spec {
	p := maps.Clone(s.Params)
	if p == nil {
		p = Params{}
	}
	p[name] = v
	return Spec{Name: s.Name, Params: p, Dictionary: s.Dictionary}
}

// Order is the tensor order the model expects.
func (s Spec) Order() (int, error) {
	info, err := Lookup(s.Name)
	if err != nil {
		return 0, err
	}
	return info.Order, nil
}

// Counts reports whether the model needs non-negative integer data (false for an unknown model,
// which Validate rejects).
func (s Spec) Counts() bool {
	info, err := Lookup(s.Name)
	return err == nil && info.Domain == Counts
}

// Factored reports whether the model's parameters are factors of the data modes (Info.Factored).
func (s Spec) Factored() bool {
	info, err := Lookup(s.Name)
	return err == nil && info.Factored
}

// Gibbs reports whether the model has a data-augmentation Gibbs kernel (Info.Gibbs).
func (s Spec) Gibbs() bool {
	info, err := Lookup(s.Name)
	return err == nil && info.Gibbs
}

// UnstoredZero reports whether the model reads unstored cells as zeros (Info.UnstoredZero), so that
// stored zeros can be left out.
func (s Spec) UnstoredZero() bool {
	info, err := Lookup(s.Name)
	return err == nil && info.UnstoredZero
}

// Validate checks the name and that Params holds exactly the model's hyper-parameters, valid.
func (s Spec) Validate() error { return s.validate(false) }

// ValidatePrior checks the hyper-parameters of the model's distribution, and the STI engine's
// sampling settings (Hyper.Sampling) only where they are given: an estimator that does not sample
// with the engine (Chib's method, AIS) needs the distribution alone.
func (s Spec) ValidatePrior() error { return s.validate(true) }

func (s Spec) validate(samplingOptional bool) error {
	info, err := Lookup(s.Name)
	if err != nil {
		return err
	}
	if err := validateParams(info.Hypers, s.Params, info.Order, samplingOptional); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	return nil
}

// Exact returns the model's exact log p(X | R) on data, or ErrNoExact at a rank it has none for
// (Info.Exact).
func (s Spec) Exact(data *tensor.Sparse, R int) (float64, error) {
	if err := s.Validate(); err != nil {
		return 0, err
	}
	info, _ := Lookup(s.Name)
	if info.Exact == nil {
		return 0, ErrNoExact
	}
	return info.Exact(data, R, s)
}

// Build binds the model to data (cells in the order the sampler will address them) at rank R.
func (s Spec) Build(data *tensor.Sparse, R int) (Model, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	info, _ := Lookup(s.Name)
	if data.Order() != info.Order {
		return nil, fmt.Errorf("model %s needs a %d-way tensor, the data are %d-way", s.Name, info.Order, data.Order())
	}
	return info.Build(data, R, s)
}
