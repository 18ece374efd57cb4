package main

import (
	"flag"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/sti"
)

// modelFlags are the flags of the hyper-parameters of a command's models, made from the
// registry: one flag per hyper-parameter name, shared by every model that declares it, and for a
// PerMode hyper-parameter also the flag that sets every mode at once (--rate beside --rates).
type modelFlags struct {
	// hypers returns the hyper-parameters the command takes of a model.
	hypers func(*models.Info) []models.Hyper
	// owners are the models that declare each flag, in registry order.
	owners map[string][]string
	nums   map[string]*float64
	words  map[string]*string
	// autos are the flags that set every mode at once and also take models.AutoWord (Hyper.Auto).
	autos map[string]*numOrAuto
}

// numOrAuto is the value of a flag that takes a number or models.AutoWord (--rate auto).
type numOrAuto struct {
	x    *float64
	auto bool
}

func (v *numOrAuto) String() string {
	switch {
	case v.x == nil:
		return ""
	case v.auto:
		return models.AutoWord
	}
	return strconv.FormatFloat(*v.x, 'g', -1, 64)
}

func (v *numOrAuto) Set(s string) error {
	if s == models.AutoWord {
		v.auto = true
		return nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("want a number or %s", models.AutoWord)
	}
	*v.x, v.auto = x, false
	return nil
}

// addModelFlags adds to fs the flags of the hyper-parameters hypers returns for each of infos.
func addModelFlags(fs *flag.FlagSet, infos []*models.Info, hypers func(*models.Info) []models.Hyper) *modelFlags {
	mf := &modelFlags{hypers: hypers, owners: map[string][]string{}, nums: map[string]*float64{}, words: map[string]*string{}, autos: map[string]*numOrAuto{}}
	type decl struct {
		h        models.Hyper
		defaults map[string]models.Value // by model
	}
	var order []string
	decls := map[string]*decl{}
	for _, info := range infos {
		for _, h := range hypers(info) {
			d := decls[h.Name]
			if d == nil {
				d = &decl{h: h, defaults: map[string]models.Value{}}
				decls[h.Name] = d
				order = append(order, h.Name)
			} else if d.h.Kind != h.Kind || d.h.Each != h.Each {
				panic(fmt.Sprintf("stirank: models declare hyper-parameter %s differently", h.Name))
			}
			d.defaults[info.Name] = h.Default
			mf.owners[h.Name] = append(mf.owners[h.Name], info.Name)
			if h.Each != "" {
				mf.owners[h.Each] = append(mf.owners[h.Each], info.Name)
			}
		}
	}
	for _, name := range order {
		d := decls[name]
		owners := mf.owners[name]
		// The models a flag applies to prefix its help unless it applies to all of them.
		prefix := ""
		if len(owners) < len(infos) {
			prefix = strings.Join(owners, ", ") + ": "
		}
		// A default shared by every model is the flag's; different ones are spelled out.
		def, same := d.defaults[owners[0]], true
		for _, m := range owners[1:] {
			same = same && reflect.DeepEqual(d.defaults[m], def)
		}
		note := ""
		if !same {
			var parts []string
			for _, m := range owners {
				parts = append(parts, m+" "+d.defaults[m].String())
			}
			note = " (default: " + strings.Join(parts, ", ") + ")"
			def = models.Value{}
		}
		switch h := d.h; h.Kind {
		case models.Real:
			mf.nums[name] = fs.Float64(name, first(def.Nums), prefix+h.Help+note)
		case models.PerMode:
			switch {
			case h.Each != "" && h.Auto:
				x := first(def.Nums)
				v := &numOrAuto{x: &x, auto: def.Word == models.AutoWord}
				fs.Var(v, h.Each, prefix+h.EachHelp+note)
				mf.nums[h.Each], mf.autos[h.Each] = &x, v
			case h.Each != "":
				mf.nums[h.Each] = fs.Float64(h.Each, first(def.Nums), prefix+h.EachHelp+note)
			}
			mf.words[name] = fs.String(name, "", prefix+h.Help)
		case models.Choice:
			mf.words[name] = fs.String(name, def.Word, prefix+h.Help+note)
		}
	}
	return mf
}

func first(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[0]
}

// params returns the hyper-parameters of the model from the flags given (set), the others at
// their defaults, valid; a flag of another model's hyper-parameter is a usage error.
func (mf *modelFlags) params(info *models.Info, set map[string]bool) (models.Params, error) {
	hs := mf.hypers(info)
	declared := map[string]bool{}
	for _, h := range hs {
		declared[h.Name] = true
		if h.Each != "" {
			declared[h.Each] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(mf.owners)) {
		if set[name] && !declared[name] {
			return nil, usagef("--%s applies to %s, not %s", name, models.And(mf.owners[name]), info.Name)
		}
	}
	p := models.Params{}
	for _, h := range hs {
		v := h.DefaultFor(info.Order)
		switch {
		case h.Kind == models.PerMode && set[h.Each] && set[h.Name]:
			return nil, usagef("give --%s or --%s, not both", h.Each, h.Name)
		case h.Kind == models.PerMode && set[h.Name]:
			list := *mf.words[h.Name]
			if h.Auto && list == models.AutoWord {
				v = models.Word(models.AutoWord)
				break
			}
			fields := strings.Split(list, ",")
			if len(fields) != info.Order {
				return nil, usagef("--%s %q: want %d comma-separated %s, one per mode", h.Name, list, info.Order, h.Name)
			}
			v = models.Value{Nums: make([]float64, len(fields))}
			for m, f := range fields {
				x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
				if err != nil {
					return nil, usagef("--%s %q: %q is not a number", h.Name, list, f)
				}
				v.Nums[m] = x
			}
		case h.Kind == models.PerMode && set[h.Each] && mf.autos[h.Each] != nil && mf.autos[h.Each].auto:
			v = models.Word(models.AutoWord)
		case h.Kind == models.PerMode && set[h.Each]:
			v = models.Value{Nums: make([]float64, info.Order)}
			for m := range v.Nums {
				v.Nums[m] = *mf.nums[h.Each]
			}
		case h.Kind == models.Real && set[h.Name]:
			v = models.Num(*mf.nums[h.Name])
		case h.Kind == models.Choice && set[h.Name]:
			v = models.Word(*mf.words[h.Name])
		}
		if err := h.Validate(v, info.Order); err != nil {
			return nil, usagef("%s: %v", info.Name, err)
		}
		p[h.Name] = v
	}
	return p, nil
}

// lookupModel returns the model --model names, or, when it names none, the default model of the
// data's order; src names the data in errors.
func lookupModel(name, src string, order int) (*models.Info, error) {
	if name == "" {
		info, err := models.ForOrder(order)
		if err != nil {
			return nil, fmt.Errorf("%s: a %d-way tensor fits no model (by order: %s)", src, order, models.DefaultsByOrder())
		}
		return info, nil
	}
	info, err := models.Lookup(name)
	if err != nil {
		return nil, usagef("unknown --model %q (%s)", name, models.Or(models.Names()))
	}
	return info, nil
}

// modelHelp is --model's usage text for a command of the given models.
func modelHelp(infos []*models.Info) string {
	var byOrder []string
	for _, info := range infos {
		if info.DefaultForOrder {
			byOrder = append(byOrder, fmt.Sprintf("%d %s", info.Order, info.Name))
		}
	}
	return fmt.Sprintf("%s (default: from the data's order: %s)", models.Or(models.NamesOf(infos)), strings.Join(byOrder, ", "))
}

// configGroup is the models whose STI defaults (sti.Default) are the same.
type configGroup struct {
	label string // "nmf/cp"
	cfg   sti.Config
}

// configGroups groups the registered models by their STI defaults, in registry order.
func configGroups() []configGroup { return configGroupsOf(sti.Default) }

// configGroupsOf groups the models by the configuration def gives them.
func configGroupsOf(def func(model string) sti.Config) []configGroup {
	var groups []configGroup
	for _, info := range models.All() {
		cfg := def(info.Name)
		i := 0
		for i < len(groups) && !reflect.DeepEqual(groups[i].cfg, cfg) {
			i++
		}
		if i == len(groups) {
			groups = append(groups, configGroup{label: info.Name, cfg: cfg})
		} else {
			groups[i].label += "/" + info.Name
		}
	}
	return groups
}

// perModelDefault spells out a setting of sti.Default for every model: "gauss 480, nmf/cp 600".
func perModelDefault(setting func(sti.Config) any) string {
	return perModel(configGroups(), setting)
}

// perModel spells out a setting of every group of models.
func perModel(groups []configGroup, setting func(sti.Config) any) string {
	var parts []string
	for _, g := range groups {
		parts = append(parts, fmt.Sprintf("%s %v", g.label, setting(g.cfg)))
	}
	return strings.Join(parts, ", ")
}

// factoredNames are the models whose parameters the parts schedule (--blocks) can block.
func factoredNames() []string {
	return models.NamesOf(models.Where(func(i *models.Info) bool { return i.Factored }))
}

// zeroRankNames are the models of which rank 0 is a model of its own (models.Info.ZeroRank).
func zeroRankNames() []string {
	return models.NamesOf(models.Where(func(i *models.Info) bool { return i.ZeroRank }))
}
