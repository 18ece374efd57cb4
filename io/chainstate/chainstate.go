// Package chainstate stores the final state of an STI chain (models.State) as a Parquet file, so that
// a later run on grown data can resume the chain (stirank reanalyze). One file per chain, one row
// per parameter:
//
//	factor INT32   the data mode the factor belongs to (0 for models without factors; one past
//	               the last mode for the log rates a hyperprior adds after the factors)
//	row    INT32   the factor's row: the index along that mode (the parameter's index otherwise,
//	               the mode of a log rate)
//	col    INT32   the component, 0 … rank−1 (0 for models without factors)
//	value  DOUBLE  the parameter in the model's sampling parameterisation (log factors for the
//	               default Poisson parameterisation)
//
// The file's key-value metadata "stirank.state" holds the model, rank and factor layout as JSON.
// A reader sees a whole file or none: local files are written to a temporary name and renamed,
// and objects of a Beam filesystem URL (gs://, s3://) appear only once written. A retried chain
// (which computes the same state bit for bit) rewrites the same bytes.
package chainstate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/parquet-go/parquet-go"

	"github.com/stirank/stirank/models"

	"github.com/stirank/stirank/internal/atomicfile"
	"github.com/stirank/stirank/io/tensorio"
)

// metaKey is the Parquet key-value metadata entry that describes the state's layout.
const metaKey = "stirank.state"

// layout is the JSON of metaKey.
type layout struct {
	Model   string          `json:"model"`
	Rank    int             `json:"rank"`
	Params  int             `json:"params"`
	Factors []models.Factor `json:"factors,omitempty"`
	// Size is models.State.Size, the size of the data the state was saved on.
	Size float64 `json:"data_size,omitempty"`
}

// check verifies that the factors tile the parameters: one after the other, each with at least
// rank columns (more where a model adds fixed components' activations, as ssnmf's H), followed by
// nothing or by one log rate per factor (a hyperprior's, --rate auto).
func (l layout) check() error {
	if l.Factors == nil {
		return nil
	}
	next := 0
	for k, f := range l.Factors {
		if f.Offset != next || f.Rows < 0 || f.Cols < l.Rank {
			return fmt.Errorf("factor %d (%+v) does not fit a layout of rank %d factors one after the other", k, f, l.Rank)
		}
		next += f.Rows * f.Cols
	}
	if r := l.rates(); r != 0 && r != len(l.Factors) {
		return fmt.Errorf("the factors hold %d parameters, the state %d: the layout does not fit (after the factors a state holds nothing or one rate per factor)", next, l.Params)
	}
	return nil
}

// rates is the number of log rates the state holds after its factors.
func (l layout) rates() int {
	next := 0
	for _, f := range l.Factors {
		next += f.Rows * f.Cols
	}
	return l.Params - next
}

type row struct {
	Factor int32   `parquet:"factor,delta"`
	Row    int32   `parquet:"row,delta"`
	Col    int32   `parquet:"col,delta"`
	Value  float64 `parquet:"value"`
}

// Chain names a chain whose state a states directory holds: its rank, its rung on the ladder and
// its replica.
type Chain struct{ Rank, Rung, Replica int }

// FileName is the name of chain c's state file in a states directory.
func FileName(c Chain) string {
	return fmt.Sprintf("r%03d-t%03d-c%02d.parquet", c.Rank, c.Rung, c.Replica)
}

// Path is the path of chain c's state file in dir, a local directory or a Beam filesystem URL.
func Path(dir string, c Chain) string {
	if tensorio.IsURL(dir) {
		return strings.TrimSuffix(dir, "/") + "/" + FileName(c)
	}
	return filepath.Join(dir, FileName(c))
}

// Write stores s at path, a local path (written atomically, its directory created if needed) or a
// Beam filesystem URL.
func Write(ctx context.Context, path string, s *models.State) error {
	l := layout{Model: s.Model, Rank: s.Rank, Params: len(s.Theta), Factors: s.Factors, Size: s.Size}
	if err := l.check(); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	meta, err := json.Marshal(l)
	if err != nil {
		return err
	}
	rows := make([]row, len(s.Theta))
	for i, v := range s.Theta {
		rows[i] = row{Row: int32(i), Value: v}
	}
	for k, f := range s.Factors {
		for i := range f.Rows * f.Cols {
			rows[f.Offset+i] = row{Factor: int32(k), Row: int32(i / f.Cols), Col: int32(i % f.Cols), Value: s.Theta[f.Offset+i]}
		}
	}
	if s.Factors != nil {
		first := len(s.Theta) - l.rates()
		for i := first; i < len(s.Theta); i++ {
			rows[i] = row{Factor: int32(len(s.Factors)), Row: int32(i - first), Value: s.Theta[i]}
		}
	}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows, parquet.KeyValueMetadata(metaKey, string(meta)), parquet.Compression(&parquet.Zstd)); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !tensorio.IsURL(path) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(path, buf.Bytes()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}
	fsys, err := filesystem.New(ctx, path)
	if err != nil {
		return err
	}
	defer fsys.Close()
	if err := filesystem.Write(ctx, fsys, path, buf.Bytes()); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readURL reads the object at a Beam filesystem URL; a missing one is fs.ErrNotExist (filesystems
// report missing objects each in their own way, so it is looked up first).
func readURL(ctx context.Context, path string) ([]byte, error) {
	fsys, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, err
	}
	defer fsys.Close()
	names, err := fsys.List(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !slices.Contains(names, path) {
		return nil, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	return filesystem.Read(ctx, fsys, path)
}

// Prune removes the state files under dir, a Beam filesystem URL of runs' state directories
// dir/<run>/, of every run not in keep. Local state directories are pruned with their runs.
func Prune(ctx context.Context, dir string, keep ...string) error {
	fsys, err := filesystem.New(ctx, dir)
	if err != nil {
		return err
	}
	defer fsys.Close()
	rm, ok := fsys.(filesystem.Remover)
	if !ok {
		return fmt.Errorf("%s: the filesystem cannot remove files", dir)
	}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	names, err := fsys.List(ctx, prefix+"*/*.parquet")
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	for _, n := range names {
		run, _, _ := strings.Cut(strings.TrimPrefix(n, prefix), "/")
		if slices.Contains(keep, run) {
			continue
		}
		if err := rm.Remove(ctx, n); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	return nil
}

// Read loads the state stored at path, a local path or a Beam filesystem URL. A missing file gives
// an error that satisfies errors.Is(err, fs.ErrNotExist).
func Read(ctx context.Context, path string) (*models.State, error) {
	var data []byte
	var err error
	if tensorio.IsURL(path) {
		data, err = readURL(ctx, path)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	// A chain state's row holds a distinct float64 parameter: rows beyond one per byte are a lie.
	f, err := tensorio.OpenParquet(bytes.NewReader(data), int64(len(data)), path, int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("not a chain state: %w", err)
	}
	meta, ok := f.Lookup(metaKey)
	if !ok {
		return nil, fmt.Errorf("%s: not a chain state: no %s metadata", path, metaKey)
	}
	var l layout
	if err := json.Unmarshal([]byte(meta), &l); err != nil {
		return nil, fmt.Errorf("%s: bad %s metadata: %v", path, metaKey, err)
	}
	if l.Params < 0 || l.Params > len(data) {
		return nil, fmt.Errorf("%s: %d parameters cannot fit in %d bytes", path, l.Params, len(data))
	}
	if err := l.check(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	rows, err := tensorio.ReadRows[row](f, path)
	if err != nil {
		return nil, err
	}
	if len(rows) != l.Params {
		return nil, fmt.Errorf("%s: %d rows, the metadata says %d parameters", path, len(rows), l.Params)
	}
	s := &models.State{Model: l.Model, Rank: l.Rank, Factors: l.Factors, Theta: make([]float64, l.Params), Size: l.Size}
	seen := make([]bool, l.Params)
	rates := l.rates()
	for n, r := range rows {
		i := int(r.Row)
		switch {
		case l.Factors != nil && int(r.Factor) == len(l.Factors):
			if r.Col != 0 || r.Row < 0 || int(r.Row) >= rates {
				return nil, fmt.Errorf("%s row %d: log rate (row %d, col %d) outside the layout", path, n, r.Row, r.Col)
			}
			i = l.Params - rates + i
		case l.Factors != nil:
			if r.Factor < 0 || int(r.Factor) >= len(l.Factors) || r.Col < 0 || int(r.Col) >= l.Factors[r.Factor].Cols || r.Row < 0 || int(r.Row) >= l.Factors[r.Factor].Rows {
				return nil, fmt.Errorf("%s row %d: parameter (factor %d, row %d, col %d) outside the layout", path, n, r.Factor, r.Row, r.Col)
			}
			f := l.Factors[r.Factor]
			i = f.Offset + i*f.Cols + int(r.Col)
		case r.Factor != 0 || r.Col != 0 || i < 0 || i >= l.Params:
			return nil, fmt.Errorf("%s row %d: parameter (factor %d, row %d, col %d) outside the layout", path, n, r.Factor, r.Row, r.Col)
		}
		if seen[i] {
			return nil, fmt.Errorf("%s row %d: parameter (factor %d, row %d, col %d) stored twice", path, n, r.Factor, r.Row, r.Col)
		}
		seen[i] = true
		s.Theta[i] = r.Value
	}
	return s, nil
}
