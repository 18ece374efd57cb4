package samplers

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Param is a kernel parameter settable from the configuration and the command line.
type Param struct {
	Name    string
	Default float64
	Help    string
	// Check rejects a value outside the parameter's domain, saying what it must be.
	Check func(v float64) error
}

// Registration is a kernel as it registers itself: its name, what it is, its parameters and what
// it asks of the chain that drives it, and how it is made from its parameter values.
type Registration struct {
	Name    string
	Summary string
	// Aliases are other names it may be chosen by.
	Aliases []string
	Params  []Param
	Caps    Capabilities
	// New makes the kernel from a value for every parameter (defaults filled in and checked).
	New func(p map[string]float64) Kernel
}

var registry = struct {
	sync.RWMutex
	byName map[string]*Registration // names and aliases
	names  []string                 // names, sorted
}{byName: map[string]*Registration{}}

// Register adds a kernel; it panics on a name taken or a malformed registration, which are
// programming errors found at start-up.
func Register(r Registration) {
	registry.Lock()
	defer registry.Unlock()
	if r.Name == "" || r.New == nil {
		panic("samplers: a registration needs a name and New")
	}
	for _, n := range append([]string{r.Name}, r.Aliases...) {
		if _, taken := registry.byName[n]; taken {
			panic(fmt.Sprintf("samplers: kernel name %q registered twice", n))
		}
		registry.byName[n] = &r
	}
	for _, p := range r.Params {
		if err := p.Check(p.Default); err != nil {
			panic(fmt.Sprintf("samplers: %s: default %s=%v: %v", r.Name, p.Name, p.Default, err))
		}
	}
	registry.names = append(registry.names, r.Name)
	sort.Strings(registry.names)
}

// Names lists the registered kernels.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Clone(registry.names)
}

// Lookup returns the registration of a kernel by name or alias.
func Lookup(name string) (*Registration, error) {
	registry.RLock()
	r, ok := registry.byName[strings.ToLower(name)]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown sampler %q (%s)", name, strings.Join(Names(), ", "))
	}
	return r, nil
}

// Sampler is a kernel made from its registration and parameter values.
type Sampler struct {
	Name   string
	Kernel Kernel
	Caps   Capabilities
	// MH is the kernel's Metropolis–Hastings correction when Caps.MetropolisHastings is set.
	MH MetropolisHastings
	// Params holds every parameter's value.
	Params map[string]float64
}

// New makes the kernel name with the given parameter values, defaults for the others. An
// unknown parameter or a value outside its domain is an error that lists the kernel's parameters.
func New(name string, params map[string]float64) (Sampler, error) {
	r, err := Lookup(name)
	if err != nil {
		return Sampler{}, err
	}
	vals := make(map[string]float64, len(r.Params))
	for _, p := range r.Params {
		vals[p.Name] = p.Default
	}
	for k, v := range params {
		i := slices.IndexFunc(r.Params, func(p Param) bool { return p.Name == k })
		if i < 0 {
			return Sampler{}, fmt.Errorf("sampler %s has no parameter %q (%s)", r.Name, k, r.ParamNames())
		}
		if err := r.Params[i].Check(v); err != nil {
			return Sampler{}, fmt.Errorf("sampler %s: %s=%v: %w", r.Name, k, v, err)
		}
		vals[k] = v
	}
	s := Sampler{Name: r.Name, Kernel: r.New(vals), Caps: r.Caps, Params: vals}
	if r.Caps.MetropolisHastings {
		mh, ok := s.Kernel.(MetropolisHastings)
		if !ok {
			return Sampler{}, fmt.Errorf("sampler %s declares a Metropolis–Hastings correction it does not implement", r.Name)
		}
		s.MH = mh
	}
	return s, nil
}

// ParamNames lists the kernel's parameters, or says it has none.
func (r *Registration) ParamNames() string {
	if len(r.Params) == 0 {
		return "it has none"
	}
	names := make([]string, len(r.Params))
	for i, p := range r.Params {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// ParseParams reads name=value pairs separated by commas, such as "friction=0.3,em=1".
func ParseParams(s string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if !ok || err != nil || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("sampler parameter %q: want name=number", kv)
		}
		out[strings.TrimSpace(k)] = x
	}
	return out, nil
}

// Checks for parameter domains.

func positive(v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("must be positive and finite")
	}
	return nil
}

func nonNegative(v float64) error {
	if !(v >= 0) || math.IsInf(v, 0) {
		return fmt.Errorf("must be zero or positive and finite")
	}
	return nil
}

func openUnit(v float64) error {
	if !(v > 0 && v < 1) {
		return fmt.Errorf("must be in (0, 1)")
	}
	return nil
}

func onOff(v float64) error {
	if v != 0 && v != 1 {
		return fmt.Errorf("must be 0 (off) or 1 (on)")
	}
	return nil
}

func anyFinite(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("must be finite")
	}
	return nil
}
