package sti

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
)

// A Preset is the defaults of one kind of model, as data (presets.json): the settings it changes
// from the preset it comes from, and why, a sentence a setting.
type Preset struct {
	Name string `json:"name"`
	// From names the preset whose settings this one starts from.
	From string `json:"from,omitempty"`
	// For says which models and kernels take it.
	For string `json:"for"`
	// LadderRungs, when set, is the number of rungs above t = 0 of the default power ladder
	// (exponent evidence.DefaultPower).
	LadderRungs int `json:"ladder_rungs,omitempty"`
	// Config holds the settings this preset changes, under Config's JSON names.
	Config json.RawMessage `json:"config"`
	// Why gives the reason for each setting, under the same names.
	Why map[string]string `json:"why"`
}

//go:embed presets.json
var presetsJSON []byte

// Presets are the defaults of every kind of model, each after the one it comes from.
var Presets = func() []Preset {
	var ps []Preset
	d := json.NewDecoder(bytes.NewReader(presetsJSON))
	d.DisallowUnknownFields()
	if err := d.Decode(&ps); err != nil {
		panic(fmt.Sprintf("sti: presets.json: %v", err))
	}
	return ps
}()

// preset returns the configuration of the named preset: the settings of the presets it comes
// from, then its own.
func preset(name string) Config {
	var chain []Preset
	for name != "" {
		i := slices.IndexFunc(Presets, func(p Preset) bool { return p.Name == name })
		if i < 0 {
			panic(fmt.Sprintf("sti: no preset %q", name))
		}
		chain = append(chain, Presets[i])
		name = Presets[i].From
	}
	var c Config
	for _, p := range slices.Backward(chain) {
		if p.LadderRungs > 0 {
			c.Ladder = evidence.Power(p.LadderRungs, evidence.DefaultPower)
		}
		if err := json.Unmarshal(p.Config, &c); err != nil {
			panic(fmt.Sprintf("sti: preset %s: %v", p.Name, err))
		}
	}
	return c
}

// forModel returns the preset c fitted to what the model has: a fitted ladder, a rank-1 budget
// and allocation need an exact curve to fit them to, EM sweeps a data-augmentation kernel, and
// the rank from which chains record plain means counts from the model's lowest rank.
func forModel(c Config, info models.Info) Config {
	exact := info.ExpPoissonRates != nil
	c.FitLadder = c.FitLadder && exact
	c.Allocate = c.Allocate && (exact || info.PowerVariance != nil)
	if !exact {
		c.Rank1 = nil
	}
	if !info.Gibbs {
		c.StartEM = 0
	}
	if info.ZeroRank && c.SteinBelow > 0 {
		c.SteinBelow--
	}
	return c
}

// lookup returns the registered model of that name; it panics on a name not registered (callers
// look the name up first: models.Lookup).
func lookup(model string) models.Info {
	info, err := models.Lookup(model)
	if err != nil {
		panic(fmt.Sprintf("sti: %v", err))
	}
	return *info
}

// Default returns the defaults of the registered model of that name: the Gibbs presets for the
// models with a data-augmentation kernel (models.Info.Gibbs), the SG-MCMC ones for the others.
func Default(model string) Config {
	info := lookup(model)
	switch {
	case info.Gibbs && info.Order == 3:
		return forModel(preset("gibbs-tensor"), info)
	case info.Gibbs:
		return forModel(preset("gibbs-matrix"), info)
	}
	return DefaultSGMCMC(model)
}

// DefaultSGMCMC returns the defaults of the model with its chains on the SG-MCMC kernels.
func DefaultSGMCMC(model string) Config {
	info := lookup(model)
	if !info.Factored {
		return forModel(preset("sgmcmc-additive"), info)
	}
	return forModel(preset("sgmcmc-factored"), info)
}

// DefaultAnnealed returns the defaults of the model with the annealing stage on (Config.Annealing).
func DefaultAnnealed(model string) Config {
	info := lookup(model)
	if !info.Factored {
		return forModel(preset("annealed-additive"), info)
	}
	return forModel(preset("annealed-factored"), info)
}

// WritePresets writes every preset as a list of its settings and their reasons, for
// `select -h -all` and docs/defaults.md.
func WritePresets(w io.Writer) error {
	for _, p := range Presets {
		from := ""
		if p.From != "" {
			from = ", from " + p.From
		}
		if _, err := fmt.Fprintf(w, "%s (%s%s):\n", p.Name, p.For, from); err != nil {
			return err
		}
		var set map[string]json.RawMessage
		if err := json.Unmarshal(p.Config, &set); err != nil {
			return err
		}
		if p.LadderRungs > 0 {
			set["ladder"] = json.RawMessage(fmt.Sprintf(`"power:%d with %d rungs"`, evidence.DefaultPower, p.LadderRungs))
		}
		for _, k := range slices.Sorted(maps.Keys(set)) {
			line := fmt.Sprintf("  %s = %s", k, compact(set[k]))
			if why := p.Why[k]; why != "" {
				line += ": " + why
			}
			if _, err := fmt.Fprintln(w, line); err != nil {
				return err
			}
		}
	}
	return nil
}

// compact is a JSON value on one line.
func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return strings.ReplaceAll(b.String(), ",", ", ")
}
