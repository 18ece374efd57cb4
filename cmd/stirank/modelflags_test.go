package main

import (
	"strings"
	"testing"

	"github.com/stirank/stirank/models"
)

// select's flags are the registry's: one per hyper-parameter of every model (and the flag that
// sets every mode of a PerMode one), whose usage names the models it applies to unless it applies
// to all; --model's usage lists every registered model.
func TestSelectFlagsFromRegistry(t *testing.T) {
	fs, f := newSelectFlagSet("select", selectSynopsis, "", "", nil, nil)
	all := models.All()
	for _, info := range all {
		for _, h := range info.Hypers {
			names := []string{h.Name}
			if h.Each != "" {
				names = append(names, h.Each)
			}
			for _, name := range names {
				fl := fs.Lookup(name)
				if fl == nil {
					t.Errorf("%s: no flag --%s", info.Name, name)
					continue
				}
				if owners := f.hypers.owners[name]; len(owners) < len(all) && !strings.HasPrefix(fl.Usage, strings.Join(owners, ", ")+": ") {
					t.Errorf("--%s usage %q does not name %v", name, fl.Usage, owners)
				}
			}
		}
		if !strings.Contains(fs.Lookup("model").Usage, info.Name) || !strings.Contains(selectSynopsis, info.Name) {
			t.Errorf("--model usage %q or the synopsis does not list %s", fs.Lookup("model").Usage, info.Name)
		}
	}
	// A flag of another model's hyper-parameter names the models it applies to.
	gauss, _ := models.Lookup("gauss")
	if _, err := f.hypers.params(gauss, map[string]bool{"rate": true}); err == nil || err.Error() != "--rate applies to nmf, ssnmf and cp, not gauss" {
		t.Errorf("--rate on gauss: %v", err)
	}
	p, err := f.hypers.params(gauss, map[string]bool{})
	if err != nil || p.Num("mu") != models.ICASSPGauss.Mu {
		t.Errorf("gauss defaults: %v, %v", p, err)
	}
}
