package sti

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/models"
)

// TestPresetsAreConsistent checks the preset table: every preset comes from one defined before
// it, every setting changes what it inherits, every reason names a setting of its preset, and
// every model's defaults validate.
func TestPresetsAreConsistent(t *testing.T) {
	for i, p := range Presets {
		if p.From != "" && !slices.ContainsFunc(Presets[:i], func(q Preset) bool { return q.Name == p.From }) {
			t.Errorf("preset %s comes from %q, which no preset before it is", p.Name, p.From)
		}
		var set map[string]json.RawMessage
		if err := json.Unmarshal(p.Config, &set); err != nil {
			t.Fatalf("preset %s: %v", p.Name, err)
		}
		if p.LadderRungs > 0 {
			set["ladder"] = nil
		}
		for k := range p.Why {
			if _, ok := set[k]; !ok {
				t.Errorf("preset %s gives a reason for %s, which it does not set", p.Name, k)
			}
		}
		if p.From == "" {
			continue
		}
		inherited := preset(p.From)
		for k, v := range set {
			if k == "ladder" && p.LadderRungs > 0 {
				continue
			}
			one := preset(p.From)
			if err := json.Unmarshal([]byte(`{"`+k+`":`+string(v)+`}`), &one); err != nil {
				t.Fatalf("preset %s: %s: %v", p.Name, k, err)
			}
			if reflect.DeepEqual(one, inherited) {
				t.Errorf("preset %s sets %s to %s, which it inherits from %s", p.Name, k, v, p.From)
			}
		}
	}
	for _, info := range models.All() {
		for name, c := range map[string]Config{"default": Default(info.Name), "sgmcmc": DefaultSGMCMC(info.Name), "annealed": DefaultAnnealed(info.Name)} {
			if err := c.Validate(); err != nil {
				t.Errorf("%s %s defaults: %v", info.Name, name, err)
			}
		}
	}
	var b strings.Builder
	if err := WritePresets(&b); err != nil {
		t.Fatal(err)
	}
	for _, p := range Presets {
		if !strings.Contains(b.String(), p.Name+" (") {
			t.Errorf("WritePresets leaves out %s", p.Name)
		}
	}
}
