package models

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/stirank/stirank/tensor"
)

// Domain is the set the values of a model's data come from.
type Domain int

const (
	// AnyReal data are finite real numbers.
	AnyReal Domain = iota
	// NonNegative data are finite reals ≥ 0.
	NonNegative
	// Counts are non-negative integers.
	Counts
)

func (d Domain) String() string {
	switch d {
	case NonNegative:
		return "non-negative reals"
	case Counts:
		return "non-negative integer counts"
	}
	return "reals"
}

// Info is a model's registration: everything the engine, the pipelines and the command line know
// of it. A model registers it from its own file's init.
type Info struct {
	// Name is what --model and evidence.json call the model.
	Name string
	// Summary is one line for usage texts.
	Summary string
	// Order is the tensor order of the data.
	Order int
	// Domain is the set the stored values come from.
	Domain Domain
	// UnstoredZero says unstored cells are zeros that the likelihood covers (a sparse tensor);
	// otherwise they are missing and the likelihood covers the stored cells only.
	UnstoredZero bool
	// DefaultForOrder makes the model the one chosen for data of its order when none is named;
	// at most one model per order sets it.
	DefaultForOrder bool
	// Factored says the parameters are one factor matrix per data mode (Model.Factors): the parts
	// schedule can block them, they gain rows when the data gain indices, and relabelled
	// components make the posterior multimodal. sti.Default chooses its settings by it.
	Factored bool
	// Gibbs says the model's likelihood has a data augmentation that makes each factor row
	// conjugate, and its models implement Augmentable: sti.Default runs its chains on that
	// Gibbs kernel.
	Gibbs bool
	// Hypers are the hyper-parameters, in the order usage texts list them.
	Hypers []Hyper
	// Dictionary says the model takes a fixed dictionary (Spec.Dictionary), a non-negative
	// matrix with a row per index of the data's first mode; the command line reads it from --dict.
	Dictionary bool
	// ZeroRank says rank 0 is a model of its own: ssnmf at R = 0 is its fixed dictionary alone.
	// The ranks of every other model start at 1 (MinRank).
	ZeroRank bool
	// Build binds the model of spec s, whose hyper-parameters are valid, to data of its order
	// at rank R.
	Build func(data *tensor.Sparse, R int, s Spec) (Model, error)
	// Generate draws datasets from the model (stirank generate); nil when it has none.
	Generate *Generator
	// Exact returns the exact log p(X | R), or ErrNoExact at ranks it has none for; nil when the
	// model has none at any rank.
	Exact func(data *tensor.Sparse, R int, s Spec) (float64, error)
	// ExpPoissonRates, when set, says the model is Poisson CP of its order with Exp(rate) priors
	// on the factors, the model the baselines (Chib's method, AIS) estimate, and returns the rate
	// of every mode for hyper-parameters p.
	ExpPoissonRates func(p Params) []float64
	// PowerVariance, when set, returns the exact v(t) = Var_t[log p(X | θ)] of the model's power
	// posteriors at rank R, which sti's record allocation reads (sti.Config.Allocate).
	PowerVariance func(data *tensor.Sparse, R int, s Spec) (func(t float64) float64, error)
}

// PriorHypers are the hyper-parameters of the model's distribution, without the STI engine's
// sampling settings (Hyper.Sampling).
func (info *Info) PriorHypers() []Hyper {
	return slices.DeleteFunc(slices.Clone(info.Hypers), func(h Hyper) bool { return h.Sampling })
}

// MinRank is the smallest rank the model is defined at: 0 when rank 0 is a model of its own
// (ZeroRank), 1 otherwise.
func (info *Info) MinRank() int {
	if info.ZeroRank {
		return 0
	}
	return 1
}

// ErrNoExact is returned by Info.Exact at a rank without an exact evidence.
var ErrNoExact = errors.New("no exact evidence at this rank")

// Generator is a model's generative process: a dataset of a shape and true rank, with what
// truth.json records about it.
type Generator struct {
	// Hypers are the hyper-parameters the process draws with, with its own defaults.
	Hypers []Hyper
	// Draw draws the data of shape t.Shape at rank t.Rank from r and returns them with their
	// truth: a JSON-encodable value that embeds t. d is the fixed dictionary of a model that
	// takes one (Info.Dictionary), nil for the others.
	Draw func(r *rand.Rand, t Truth, p Params, d *Dictionary) (*tensor.Sparse, any, error)
}

// Truth is what truth.json records of every generated dataset; a model's truth embeds it and
// adds its true parameters.
type Truth struct {
	Model string `json:"model"`
	Rank  int    `json:"rank"`
	Seed  uint64 `json:"seed"`
	Shape []int  `json:"shape"`
}

var registry = struct {
	sync.RWMutex
	byName map[string]*Info
}{byName: map[string]*Info{}}

// Register adds a model. It panics on a registration that contradicts itself or another one:
// registrations are made by init functions, so that is a programming error.
func Register(info Info) {
	if err := info.check(); err != nil {
		panic("models: " + err.Error())
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.byName[info.Name]; dup {
		panic(fmt.Sprintf("models: %s registered twice", info.Name))
	}
	for _, o := range registry.byName {
		if info.DefaultForOrder && o.DefaultForOrder && o.Order == info.Order {
			panic(fmt.Sprintf("models: %s and %s are both the default for order %d", o.Name, info.Name, info.Order))
		}
	}
	registry.byName[info.Name] = &info
}

// check validates a registration on its own.
func (info *Info) check() error {
	if info.Name == "" || strings.ContainsAny(info.Name, " ,|") {
		return fmt.Errorf("model name %q must be a non-empty word", info.Name)
	}
	if info.Order < 1 || info.Order > tensor.MaxOrder {
		return fmt.Errorf("%s: order %d outside [1, %d]", info.Name, info.Order, tensor.MaxOrder)
	}
	if info.Build == nil {
		return fmt.Errorf("%s: no Build", info.Name)
	}
	hypers := [][]Hyper{info.Hypers}
	if info.Generate != nil {
		hypers = append(hypers, info.Generate.Hypers)
	}
	for _, hs := range hypers {
		for i, h := range hs {
			if err := h.check(); err != nil {
				return fmt.Errorf("%s: %w", info.Name, err)
			}
			if slices.ContainsFunc(hs[:i], func(o Hyper) bool { return o.Name == h.Name }) {
				return fmt.Errorf("%s: hyper-parameter %s declared twice", info.Name, h.Name)
			}
			if err := h.Validate(h.DefaultFor(info.Order), info.Order); err != nil {
				return fmt.Errorf("%s: default of %s: %w", info.Name, h.Name, err)
			}
		}
	}
	return nil
}

// Lookup returns the registration of the named model; an unknown name is an error that lists
// the registered ones.
func Lookup(name string) (*Info, error) {
	registry.RLock()
	info, ok := registry.byName[name]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown model %q (%s)", name, Or(Names()))
	}
	return info, nil
}

// All returns every registration, by order and then name.
func All() []*Info {
	registry.RLock()
	defer registry.RUnlock()
	all := make([]*Info, 0, len(registry.byName))
	for _, info := range registry.byName {
		all = append(all, info)
	}
	slices.SortFunc(all, func(a, b *Info) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		return strings.Compare(a.Name, b.Name)
	})
	return all
}

// Names returns the registered names, by order and then name (gauss, nmf, cp), the order usage
// texts and errors list them in.
func Names() []string { return NamesOf(All()) }

// NamesOf returns the names of the models.
func NamesOf(infos []*Info) []string {
	names := make([]string, len(infos))
	for i, info := range infos {
		names[i] = info.Name
	}
	return names
}

// Where returns the registered models for which keep is true, by order and then name.
func Where(keep func(*Info) bool) []*Info {
	return slices.DeleteFunc(All(), func(info *Info) bool { return !keep(info) })
}

// ForOrder returns the default model for data of the given order.
func ForOrder(order int) (*Info, error) {
	for _, info := range All() {
		if info.Order == order && info.DefaultForOrder {
			return info, nil
		}
	}
	return nil, fmt.Errorf("no model is the default for %d-way data (defaults: %s)", order, DefaultsByOrder())
}

// DefaultsByOrder describes the default model of every order, as "1 gauss, 2 nmf, 3 cp".
func DefaultsByOrder() string {
	var parts []string
	for _, info := range Where(func(i *Info) bool { return i.DefaultForOrder }) {
		parts = append(parts, fmt.Sprintf("%d %s", info.Order, info.Name))
	}
	return strings.Join(parts, ", ")
}

// Or joins names as "a", "a or b", "a, b or c".
func Or(names []string) string { return joinLast(names, " or ") }

// And joins names as "a", "a and b", "a, b and c".
func And(names []string) string { return joinLast(names, " and ") }

func joinLast(names []string, last string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + last + names[len(names)-1]
}
