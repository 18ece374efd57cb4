package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/models/isnmf"
)

// dictHelp is the usage text of --dict, for the models that take a dictionary.
func dictHelp() string {
	return models.Or(dictionaryModels()) + ": the fixed dictionary, a features × K dataset whose rows match the data's (stirank factorize writes one); it travels to the workers inside the job"
}

// dictionaryModels are the models that take a fixed dictionary (models.Info.Dictionary).
func dictionaryModels() []string {
	return models.NamesOf(models.Where(func(i *models.Info) bool { return i.Dictionary }))
}

// withDictionary returns spec with the dictionary of --dict dir when its model takes one, read
// here and carried by value in the spec, so workers that cannot read dir build the same model.
// shape is the data's. A model without a dictionary given one, or one with a dictionary given
// none, is a usage error; an unreadable or unfit dictionary an error that names it.
func withDictionary(ctx context.Context, spec models.Spec, dir string, shape []int) (models.Spec, error) {
	info, err := models.Lookup(spec.Name)
	switch {
	case err != nil:
		return spec, err
	case !info.Dictionary && dir == "":
		return spec, nil
	case !info.Dictionary:
		return spec, usagef("--dict applies to %s, not %s", models.And(dictionaryModels()), spec.Name)
	case dir == "":
		return spec, usagef("--model %s needs --dict DIR, its fixed dictionary", spec.Name)
	}
	if !tensorio.IsURL(dir) {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return spec, usagef("--dict %s: no such dataset directory", dir)
		}
	}
	ds, err := tensorio.Read(ctx, dir, tensorio.ReadOptions{})
	if err != nil {
		return spec, fmt.Errorf("--dict %s: %w", dir, err)
	}
	values, rows, cols, err := isnmf.Dictionary(ds.Tensor)
	if err != nil {
		return spec, fmt.Errorf("--dict %s: %w", dir, err)
	}
	d := &models.Dictionary{Source: dir, Checksum: ds.Manifest.Checksum(), Rows: rows, Cols: cols, Values: values}
	if err := d.CheckFor(shape[0]); err != nil {
		return spec, err
	}
	spec.Dictionary = d
	return spec, nil
}
