// Package refs holds what the accuracy benches measure against: long-AIS references of the
// small data sets' evidence (ais_references.csv: per data set and rank, the mean of 4 AIS runs of
// 20 000 temperatures; of 100 000 and 400 000 for ranks 3 and 2 of the seed-7 sets, where 20 000
// was 0.4 and 0.7 nat lower; of 100 000 for the 12x10 set; of stirank ais --temperatures 400000
// --replicas 4 for the seed-32 sets and the seed-31 tensor) and a real table of counts.
package refs

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

//go:embed ais_references.csv
var referencesCSV string

// Stored returns the stored reference of rank R of the data set whose name contains the
// reference's data set name, and whether there is one.
func Stored(name string, R int) (float64, bool, error) {
	for _, line := range strings.Split(strings.TrimSpace(referencesCSV), "\n")[1:] {
		f := strings.Split(line, ",")
		if len(f) != 3 || !strings.Contains(name, f[0]) || f[1] != strconv.Itoa(R) {
			continue
		}
		v, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			return 0, false, fmt.Errorf("ais_references.csv: %q: %w", line, err)
		}
		return v, true, nil
	}
	return 0, false, nil
}

// glassCSV is a real table of counts: the 8×8 British social mobility table of Glass (1954),
// father's by son's occupational status, 3 498 men, as tabulated by Goodman (1979, JASA 74,
// Table 1). Its cells run from 0 to 554. stirank import --in bench/internal/refs/glass.csv reads
// it too.
//
//go:embed glass.csv
var glassCSV string

// Glass is the Glass table.
func Glass() (*tensor.Sparse, error) {
	t, _, err := tensorio.ReadText(strings.NewReader(glassCSV), "glass.csv", tensorio.CSV, tensorio.TextOptions{Kind: tensorio.Count})
	return t, err
}

// Generated draws a Poisson set as stirank generate --seed seed does, with every factor's rows
// scaled by Gamma(rowShape, rowShape) activities (0: none, models.GeneratePoissonActive), and
// returns it with the spec of the model of its order at that rate: the sets the stored
// references were computed on.
func Generated(seed uint64, shape []int, trueR int, rate, rowShape float64) (*tensor.Sparse, models.Spec, error) {
	rates := make([]float64, len(shape))
	for m := range rates {
		rates[m] = rate
	}
	d, _, _, err := models.GeneratePoissonActive(rng.New(seed, 0xda7a), shape, trueR, rates, rowShape)
	if err != nil {
		return nil, models.Spec{}, err
	}
	info, err := models.ForOrder(len(shape))
	if err != nil {
		return nil, models.Spec{}, err
	}
	return d, models.PoissonSpec(info.Name, rates, models.LogScale), nil
}
