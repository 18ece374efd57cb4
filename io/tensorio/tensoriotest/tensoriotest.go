// Package tensoriotest builds datasets and text files by hand, bypassing tensorio's own writer and
// its validation, and a corpus of bad inputs that tests of readers and importers run through
// their own entry points (the library, the stirank command).
package tensoriotest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/stirank/stirank/io/tensorio"
)

// WriteShard writes rows, structs whose parquet tags name the columns, as the Parquet file
// dir/rel, and returns its manifest entry.
func WriteShard[T any](dir, rel string, rows []T) (tensorio.Shard, error) {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return tensorio.Shard{}, err
	}
	f, err := os.Create(p)
	if err != nil {
		return tensorio.Shard{}, err
	}
	defer f.Close()
	w := parquet.NewGenericWriter[T](f, parquet.Compression(&parquet.Zstd))
	if _, err := w.Write(rows); err != nil {
		return tensorio.Shard{}, err
	}
	if err := w.Close(); err != nil {
		return tensorio.Shard{}, err
	}
	if err := f.Close(); err != nil {
		return tensorio.Shard{}, err
	}
	sh := tensorio.Shard{Path: rel, Rows: int64(len(rows))}
	return sh, Rehash(dir, &sh)
}

// Rehash sets the size and checksum of sh to those of its file in dir, as if a manifest had been
// written for the file as it is now.
func Rehash(dir string, sh *tensorio.Shard) error {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(sh.Path)))
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	sh.Bytes, sh.SHA256 = n, hex.EncodeToString(h.Sum(nil))
	return nil
}

// RewriteFooter decodes the footer of the Parquet file at path, lets edit change it, and writes
// the file back with the new footer, so that a test can make a file whose metadata lies about
// pages that are left as they were.
func RewriteFooter(path string, edit func(*format.FileMetaData)) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(b) < 12 || !bytes.Equal(b[len(b)-4:], []byte("PAR1")) {
		return errors.New("not a Parquet file")
	}
	n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	body := b[:len(b)-8-n]
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), b[len(b)-8-n:len(b)-8], &md); err != nil {
		return err
	}
	edit(&md)
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	if err != nil {
		return err
	}
	out := append(slices.Clone(body), footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return os.WriteFile(path, append(out, "PAR1"...), 0o644)
}

// WriteManifest writes m as dir/manifest.json, whatever it says.
func WriteManifest(dir string, m *tensorio.Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, tensorio.ManifestName), b, 0o644)
}

// ReadManifest reads dir/manifest.json without validating it.
func ReadManifest(dir string) (*tensorio.Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, tensorio.ManifestName))
	if err != nil {
		return nil, err
	}
	m := new(tensorio.Manifest)
	return m, json.Unmarshal(b, m)
}

// Cell2 is a row of a matrix dataset as tensorio writes it.
type Cell2 struct {
	I     int32   `parquet:"i"`
	J     int32   `parquet:"j"`
	Value float64 `parquet:"value"`
}

// Cell2C is a row of a complex matrix dataset as tensorio writes it.
type Cell2C struct {
	I     int32   `parquet:"i"`
	J     int32   `parquet:"j"`
	Value float64 `parquet:"value"`
	Imag  float64 `parquet:"imag"`
}

// ComplexMatrix returns the cells of Matrix as complex values: cell (i, j) has imaginary part
// j − i, so that some are real and none is zero.
func ComplexMatrix() []Cell2C {
	var cells []Cell2C
	for _, c := range Matrix() {
		cells = append(cells, Cell2C{I: c.I, J: c.J, Value: c.Value, Imag: float64(c.J - c.I)})
	}
	return cells
}

// Matrix returns the cells of a small count matrix in row-major order: cell (i, j) of a 30×20
// matrix is stored when (i+j) is divisible by 3, with value 1 + (i·j mod 5). Row r of a shard
// written from it is cell r.
func Matrix() []Cell2 {
	var cells []Cell2
	for i := range int32(30) {
		for j := range int32(20) {
			if (i+j)%3 == 0 {
				cells = append(cells, Cell2{I: i, J: j, Value: float64(1 + i*j%5)})
			}
		}
	}
	return cells
}

// MatrixManifest returns the manifest of Matrix written as the given shards.
func MatrixManifest(kind tensorio.ValueKind, shards ...tensorio.Shard) *tensorio.Manifest {
	m := &tensorio.Manifest{
		Format: tensorio.FormatName, FormatVersion: tensorio.FormatVersion, Version: 1,
		Order: 2, Shape: []int{30, 20}, Kind: kind, Shards: shards,
	}
	for _, sh := range shards {
		m.Cells += sh.Rows
	}
	return m
}

// WriteMatrix writes a dataset of the given rows as one shard, data/shard-00000.parquet, with a
// manifest that agrees with the file, and returns the shard's path.
func WriteMatrix[T any](dir string, kind tensorio.ValueKind, rows []T) (string, error) {
	sh, err := WriteShard(dir, "data/shard-00000.parquet", rows)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "data", "shard-00000.parquet"), WriteManifest(dir, MatrixManifest(kind, sh))
}

// Case is a bad input and what its error must say.
type Case struct {
	Name string
	// Dataset is the directory of a bad dataset, or empty for a text input.
	Dataset string
	// Text is the path of a bad text file, imported with Format and Options.
	Text    string
	Format  tensorio.TextFormat
	Options tensorio.TextOptions
	// Read is how a dataset is read: complex datasets with Complex set, so that the reader gets
	// to the problem rather than refuse complex values.
	Read tensorio.ReadOptions
	// Want are substrings of the error message: the file, the row or line, the problem.
	Want []string
}

// Corpus builds bad datasets and text files under dir, each in a directory of its own, and
// returns them with the messages they must be rejected with.
func Corpus(dir string) ([]Case, error) {
	var cases []Case
	var err error
	// dataset makes a directory for a case and runs build in it; build returns the messages.
	dataset := func(name string, build func(d string) ([]string, error)) {
		if err != nil {
			return
		}
		d := filepath.Join(dir, name)
		if err = os.MkdirAll(d, 0o755); err != nil {
			return
		}
		var want []string
		if want, err = build(d); err != nil {
			err = fmt.Errorf("corpus case %s: %w", name, err)
			return
		}
		cases = append(cases, Case{Name: name, Dataset: d, Read: tensorio.ReadOptions{Complex: true}, Want: want})
	}
	shard := func(d string) string { return filepath.Join(d, "data", "shard-00000.parquet") }
	// good writes the matrix as a valid dataset and returns its manifest for the case to spoil.
	good := func(d string) (*tensorio.Manifest, error) {
		if _, err := WriteMatrix(d, tensorio.Count, Matrix()); err != nil {
			return nil, err
		}
		return ReadManifest(d)
	}
	// withCell writes the matrix with row r replaced.
	withCell := func(d string, kind tensorio.ValueKind, r int, c Cell2) error {
		cells := Matrix()
		cells[r] = c
		_, err := WriteMatrix(d, kind, cells)
		return err
	}

	dataset("missing-manifest", func(d string) ([]string, error) {
		if _, err := good(d); err != nil {
			return nil, err
		}
		return []string{filepath.Join(d, "manifest.json"), "no manifest: not a stirank dataset"}, os.Remove(filepath.Join(d, "manifest.json"))
	})
	dataset("manifest-not-json", func(d string) ([]string, error) {
		if _, err := good(d); err != nil {
			return nil, err
		}
		return []string{"manifest.json", "not a valid manifest"}, os.WriteFile(filepath.Join(d, "manifest.json"), []byte("{\"format\": "), 0o644)
	})
	dataset("manifest-newer-format", func(d string) ([]string, error) {
		m, err := good(d)
		if err != nil {
			return nil, err
		}
		m.FormatVersion = tensorio.FormatVersion + 1
		return []string{"manifest.json", "format_version 2 is newer than this stirank reads (1)"}, WriteManifest(d, m)
	})
	dataset("empty-dataset", func(d string) ([]string, error) {
		return []string{"manifest.json", "dataset has no stored cells"}, WriteManifest(d, MatrixManifest(tensorio.Count))
	})
	dataset("shard-outside-dataset", func(d string) ([]string, error) {
		m, err := good(d)
		if err != nil {
			return nil, err
		}
		m.Shards[0].Path = "../elsewhere.parquet"
		return []string{"manifest.json", `shard 0: path "../elsewhere.parquet" is not a relative`}, WriteManifest(d, m)
	})
	dataset("missing-shard", func(d string) ([]string, error) {
		if _, err := good(d); err != nil {
			return nil, err
		}
		return []string{shard(d), "shard listed in the manifest is missing"}, os.Remove(shard(d))
	})
	dataset("checksum-mismatch", func(d string) ([]string, error) {
		if _, err := good(d); err != nil {
			return nil, err
		}
		b, err := os.ReadFile(shard(d))
		if err != nil {
			return nil, err
		}
		b[len(b)/2] ^= 0xff
		return []string{shard(d), "does not match the manifest's"}, os.WriteFile(shard(d), b, 0o644)
	})
	dataset("size-mismatch", func(d string) ([]string, error) {
		m, err := good(d)
		if err != nil {
			return nil, err
		}
		want := fmt.Sprintf("file has %d bytes, the manifest says %d", m.Shards[0].Bytes-100, m.Shards[0].Bytes)
		return []string{shard(d), want}, os.Truncate(shard(d), m.Shards[0].Bytes-100)
	})
	dataset("truncated-parquet", func(d string) ([]string, error) {
		m, err := good(d)
		if err != nil {
			return nil, err
		}
		// The manifest agrees with the truncated file, as if it had been written for it.
		if err := os.Truncate(shard(d), m.Shards[0].Bytes-100); err != nil {
			return nil, err
		}
		if err := Rehash(d, &m.Shards[0]); err != nil {
			return nil, err
		}
		return []string{shard(d), "not a valid Parquet file (truncated or corrupt)"}, WriteManifest(d, m)
	})
	dataset("row-count-mismatch", func(d string) ([]string, error) {
		m, err := good(d)
		if err != nil {
			return nil, err
		}
		rows := m.Shards[0].Rows
		m.Shards[0].Rows--
		m.Cells--
		return []string{shard(d), fmt.Sprintf("has %d rows, the manifest says %d", rows, rows-1)}, WriteManifest(d, m)
	})
	dataset("value-column-int64", func(d string) ([]string, error) {
		type cell struct {
			I     int32 `parquet:"i"`
			J     int32 `parquet:"j"`
			Value int64 `parquet:"value"`
		}
		_, err := WriteMatrix(d, tensorio.Count, []cell{{0, 0, 1}})
		return []string{shard(d), `column "value" has type INT64, want DOUBLE`}, err
	})
	dataset("index-column-double", func(d string) ([]string, error) {
		type cell struct {
			I     int32   `parquet:"i"`
			J     float64 `parquet:"j"`
			Value float64 `parquet:"value"`
		}
		_, err := WriteMatrix(d, tensorio.Count, []cell{{0, 0, 1}})
		return []string{shard(d), `column "j" has type DOUBLE, want INT32 or INT64`}, err
	})
	dataset("missing-column", func(d string) ([]string, error) {
		type cell struct {
			I     int32   `parquet:"i"`
			Value float64 `parquet:"value"`
		}
		_, err := WriteMatrix(d, tensorio.Count, []cell{{0, 1}})
		return []string{shard(d), `missing column "j"`}, err
	})
	dataset("unexpected-column", func(d string) ([]string, error) {
		type cell struct {
			I     int32   `parquet:"i"`
			J     int32   `parquet:"j"`
			Value float64 `parquet:"value"`
			Index int64   `parquet:"__index_level_0__"`
		}
		_, err := WriteMatrix(d, tensorio.Count, []cell{{0, 0, 1, 0}})
		return []string{shard(d), `unexpected column "__index_level_0__"`}, err
	})
	dataset("index-out-of-range", func(d string) ([]string, error) {
		return []string{shard(d) + " row 17: mode-1 index 40 outside [0, 20)"}, withCell(d, tensorio.Count, 17, Cell2{I: 5, J: 40, Value: 1})
	})
	dataset("negative-index", func(d string) ([]string, error) {
		return []string{shard(d) + " row 3: mode-0 index -1 outside [0, 30)"}, withCell(d, tensorio.Count, 3, Cell2{I: -1, J: 0, Value: 1})
	})
	dataset("duplicate-cell", func(d string) ([]string, error) {
		cells := Matrix()
		return []string{shard(d) + " row 9: cell [0 3] stored twice (first at " + shard(d) + " row 1)"},
			withCell(d, tensorio.Count, 9, cells[1])
	})
	dataset("nan-value", func(d string) ([]string, error) {
		return []string{shard(d) + " row 4: value NaN is not finite"}, withCell(d, tensorio.Real, 4, Cell2{I: 0, J: 12, Value: math.NaN()})
	})
	dataset("infinite-value", func(d string) ([]string, error) {
		return []string{shard(d) + " row 6: value +Inf is not finite"}, withCell(d, tensorio.Real, 6, Cell2{I: 0, J: 18, Value: math.Inf(1)})
	})
	dataset("negative-count", func(d string) ([]string, error) {
		return []string{shard(d) + " row 5: count -2 is negative"}, withCell(d, tensorio.Count, 5, Cell2{I: 0, J: 15, Value: -2})
	})
	dataset("fractional-count", func(d string) ([]string, error) {
		return []string{shard(d) + " row 5: count 2.5 is not an integer"}, withCell(d, tensorio.Count, 5, Cell2{I: 0, J: 15, Value: 2.5})
	})
	dataset("stored-zero", func(d string) ([]string, error) {
		return []string{shard(d) + " row 2: value 0 is stored but the manifest says zeros are not stored"}, withCell(d, tensorio.Count, 2, Cell2{I: 0, J: 6, Value: 0})
	})
	dataset("null-value", func(d string) ([]string, error) {
		type cell struct {
			I     int32    `parquet:"i"`
			J     int32    `parquet:"j"`
			Value *float64 `parquet:"value,optional"`
		}
		one := 1.0
		_, err := WriteMatrix(d, tensorio.Count, []cell{{0, 0, &one}, {0, 3, &one}, {0, 6, nil}})
		return []string{shard(d) + " row 2: value is null"}, err
	})

	// Complex datasets: the imag column must be there exactly when the manifest says complex.
	withComplexCell := func(d string, r int, c Cell2C) error {
		cells := ComplexMatrix()
		cells[r] = c
		_, err := WriteMatrix(d, tensorio.Complex, cells)
		return err
	}
	dataset("complex-nan-imag", func(d string) ([]string, error) {
		return []string{shard(d) + " row 4: imaginary part NaN is not finite"}, withComplexCell(d, 4, Cell2C{I: 0, J: 12, Value: 1, Imag: math.NaN()})
	})
	dataset("complex-stored-zero", func(d string) ([]string, error) {
		return []string{shard(d) + " row 2: value 0 is stored but the manifest says zeros are not stored"}, withComplexCell(d, 2, Cell2C{I: 0, J: 6})
	})
	dataset("complex-missing-imag", func(d string) ([]string, error) {
		_, err := WriteMatrix(d, tensorio.Complex, Matrix())
		return []string{shard(d), `missing column "imag": an order-2 complex dataset has columns i, j, value, imag`}, err
	})
	dataset("real-with-imag", func(d string) ([]string, error) {
		_, err := WriteMatrix(d, tensorio.Real, ComplexMatrix())
		return []string{shard(d), `unexpected column "imag": an order-2 dataset has columns i, j, value`}, err
	})
	dataset("complex-imag-int64", func(d string) ([]string, error) {
		type cell struct {
			I     int32   `parquet:"i"`
			J     int32   `parquet:"j"`
			Value float64 `parquet:"value"`
			Imag  int64   `parquet:"imag"`
		}
		_, err := WriteMatrix(d, tensorio.Complex, []cell{{0, 0, 1, 2}})
		return []string{shard(d), `column "imag" has type INT64, want DOUBLE`}, err
	})
	dataset("complex-null-imag", func(d string) ([]string, error) {
		type cell struct {
			I     int32    `parquet:"i"`
			J     int32    `parquet:"j"`
			Value float64  `parquet:"value"`
			Imag  *float64 `parquet:"imag,optional"`
		}
		one := 1.0
		_, err := WriteMatrix(d, tensorio.Complex, []cell{{0, 0, 1, &one}, {0, 3, 1, &one}, {0, 6, 1, nil}})
		return []string{shard(d) + " row 2: imag is null"}, err
	})
	dataset("complex-imag-codec-lie", func(d string) ([]string, error) {
		if _, err := WriteMatrix(d, tensorio.Complex, ComplexMatrix()); err != nil {
			return nil, err
		}
		// The guard checks the imag column's pages as it checks every other column's.
		err := RewriteFooter(shard(d), func(md *format.FileMetaData) {
			for g := range md.RowGroups {
				for c, col := range md.RowGroups[g].Columns {
					if slices.Equal(col.MetaData.PathInSchema, []string{"imag"}) {
						md.RowGroups[g].Columns[c].MetaData.Codec = format.Lz4Raw
					}
				}
			}
		})
		if err != nil {
			return nil, err
		}
		m, err := ReadManifest(d)
		if err != nil {
			return nil, err
		}
		if err := Rehash(d, &m.Shards[0]); err != nil {
			return nil, err
		}
		return []string{shard(d), `corrupt Parquet column chunk "imag"`, "is not LZ4_RAW data"}, WriteManifest(d, m)
	})

	// Hostile shards: the manifest's checksums match, the metadata lies. Each once made the
	// reader allocate without bound or loop.
	// lie rewrites the footer of the good matrix's shard and the manifest to match the file.
	lie := func(d string, edit func(*format.FileMetaData)) (*tensorio.Manifest, error) {
		m, err := good(d)
		if err != nil {
			return nil, err
		}
		if err := RewriteFooter(shard(d), edit); err != nil {
			return nil, err
		}
		return m, Rehash(d, &m.Shards[0])
	}
	dataset("codec-lie-lz4raw", func(d string) ([]string, error) {
		m, err := lie(d, func(md *format.FileMetaData) {
			for g := range md.RowGroups {
				for c := range md.RowGroups[g].Columns {
					md.RowGroups[g].Columns[c].MetaData.Codec = format.Lz4Raw
				}
			}
		})
		if err != nil {
			return nil, err
		}
		return []string{shard(d), "is not LZ4_RAW data"}, WriteManifest(d, m)
	})
	dataset("rows-lie", func(d string) ([]string, error) {
		m, err := lie(d, func(md *format.FileMetaData) {
			md.NumRows, md.RowGroups[0].NumRows = 3, 3
		})
		if err != nil {
			return nil, err
		}
		m.Cells, m.Shards[0].Rows = 3, 3
		return []string{shard(d), "more than the row group's 3 rows"}, WriteManifest(d, m)
	})
	dataset("footer-length-lie", func(d string) ([]string, error) {
		m, err := good(d)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(shard(d))
		if err != nil {
			return nil, err
		}
		binary.LittleEndian.PutUint32(b[len(b)-8:], 0xf0000000)
		if err := os.WriteFile(shard(d), b, 0o644); err != nil {
			return nil, err
		}
		if err := Rehash(d, &m.Shards[0]); err != nil {
			return nil, err
		}
		return []string{shard(d), "footer length 4026531840 is more than the file's"}, WriteManifest(d, m)
	})
	dataset("footer-list-lie", func(d string) ([]string, error) {
		m, err := good(d)
		if err != nil {
			return nil, err
		}
		// FileMetaData{version: 1, schema: a list of 2³¹−1 structs} in 9 bytes.
		footer := []byte{0x15, 0x02, 0x19, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00}
		b := append([]byte("PAR1"), footer...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(footer)))
		if err := os.WriteFile(shard(d), append(b, "PAR1"...), 0o644); err != nil {
			return nil, err
		}
		if err := Rehash(d, &m.Shards[0]); err != nil {
			return nil, err
		}
		return []string{shard(d), "corrupt Parquet footer", "list of 2147483647 elements"}, WriteManifest(d, m)
	})
	dataset("manifest-rows-lie", func(d string) ([]string, error) {
		m, err := good(d)
		if err != nil {
			return nil, err
		}
		m.Shape = []int{math.MaxInt32, math.MaxInt32}
		m.Cells, m.Shards[0].Rows = 1e11, 1e11
		return []string{"manifest.json", "100000000000 stored cells needs about", "of memory, more than"}, WriteManifest(d, m)
	})

	dataset("manifest-rows-maxint", func(d string) ([]string, error) {
		m, err := good(d)
		if err != nil {
			return nil, err
		}
		m.Order, m.Shape = 3, []int{math.MaxInt32, math.MaxInt32, math.MaxInt32}
		m.Cells, m.Shards[0].Rows = math.MaxInt64, math.MaxInt64
		return []string{"manifest.json", "9223372036854775807 stored cells needs about"}, WriteManifest(d, m)
	})
	dataset("manifest-rows-overflow", func(d string) ([]string, error) {
		m, err := good(d)
		if err != nil {
			return nil, err
		}
		second := m.Shards[0]
		second.Path = "data/shard-00001.parquet"
		m.Shards = append(m.Shards, second)
		m.Shards[0].Rows, m.Shards[1].Rows = math.MaxInt64, math.MaxInt64
		m.Cells = 1
		return []string{"manifest.json", "shard 1: rows 9223372036854775807 overflow the total"}, WriteManifest(d, m)
	})

	// text writes a text file for a case.
	text := func(name, file, content string, f tensorio.TextFormat, opts tensorio.TextOptions, want ...string) {
		if err != nil {
			return
		}
		p := filepath.Join(dir, name, file)
		if err = os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return
		}
		if err = os.WriteFile(p, []byte(content), 0o644); err != nil {
			return
		}
		cases = append(cases, Case{Name: name, Text: p, Format: f, Options: opts, Want: append([]string{p}, want...)})
	}
	none := tensorio.TextOptions{}
	text("csv-no-header", "x.csv", "0,1,3\n1,2,4\n", tensorio.CSV, none, "line 1: no header")
	text("csv-complex-imag-not-a-number", "x.csv", "i,j,re,im\n0,1,3,4\n1,2,1,abc\n", tensorio.CSV, none, `line 3: imaginary part "abc" is not a number`)
	text("csv-complex-nan-imag", "x.csv", "i,j,re,im\n0,1,1,NaN\n", tensorio.CSV, none, "line 2: imaginary part NaN is not finite")
	text("csv-complex-field-count", "x.csv", "i,j,re,im\n0,1,3,4\n1,2,3\n", tensorio.CSV, none, "line 3: wrong number of fields")
	text("csv-complex-duplicate", "x.csv", "i,j,re,im\n0,1,1,2\n0,1,3,4\n", tensorio.CSV, none, "line 3: cell [0 1] stored twice (first on line 2)")
	text("csv-complex-as-real", "x.csv", "i,j,re,im\n0,1,1,2\n", tensorio.CSV, tensorio.TextOptions{Kind: tensorio.Real}, "line 1: the header's re,im columns hold complex values, but the values must be real")
	text("csv-kind-complex-value-header", "x.csv", "i,j,value\n0,1,3\n", tensorio.CSV, tensorio.TextOptions{Kind: tensorio.Complex}, "line 1: complex values need the header i,j[,k],re,im")
	text("tns-kind-complex", "x.tns", "1 1 2\n", tensorio.TNS, tensorio.TextOptions{Kind: tensorio.Complex}, "complex values are read from CSV only")
	text("csv-wrong-header", "x.csv", "row,col,count\n0,1,3\n", tensorio.CSV, none, `line 1: header "row,col,count"`)
	text("csv-field-count", "x.csv", "i,j,value\n0,1,3\n1,2\n", tensorio.CSV, none, "line 3: wrong number of fields")
	text("csv-not-a-number", "x.csv", "i,j,value\n0,1,3\n1,2,abc\n", tensorio.CSV, none, `line 3: value "abc" is not a number`)
	text("csv-bad-index", "x.csv", "i,j,value\n0,1.5,3\n", tensorio.CSV, none, `line 2: mode-1 index "1.5" is not an integer`)
	text("csv-negative-index", "x.csv", "i,j,value\n0,1,3\n-1,2,4\n", tensorio.CSV, none, "line 3: mode-0 index -1 is negative")
	text("csv-outside-shape", "x.csv", "i,j,value\n0,1,3\n2,5,4\n", tensorio.CSV, tensorio.TextOptions{Shape: []int{3, 5}}, "line 3: mode-1 index 5 outside [0, 5)")
	text("csv-duplicate", "x.csv", "i,j,value\n0,1,3\n1,2,4\n0,1,5\n", tensorio.CSV, none, "line 4: cell [0 1] stored twice (first on line 2)")
	text("csv-fractional-count", "x.csv", "i,j,value\n0,1,3\n1,2,2.5\n", tensorio.CSV, tensorio.TextOptions{Kind: tensorio.Count}, "line 3: count 2.5 is not an integer")
	text("csv-nan", "x.csv", "i,j,value\n0,1,NaN\n", tensorio.CSV, none, "line 2: value NaN is not finite")
	text("csv-empty", "x.csv", "i,j,value\n", tensorio.CSV, none, "no cells")
	text("tns-zero-based", "x.tns", "# a comment\n1 1 1 2\n0 2 1 3\n", tensorio.TNS, none, "line 3: mode-0 index 0: indices start at 1 in FROSTT .tns files")
	text("tns-field-count", "x.tns", "1 1 1 2\n1 2 3\n", tensorio.TNS, none, "line 2: 3 fields, earlier lines have 4")
	text("tns-order-4", "x.tns", "1 1 1 1 2\n", tensorio.TNS, none, "line 1: 4 coordinates: order 4 not supported")
	text("tns-negative-count", "x.tns", "1 1 2\n2 1 -3\n", tensorio.TNS, tensorio.TextOptions{Kind: tensorio.Count}, "line 2: count -3 is negative")
	text("mtx-bad-header", "x.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", tensorio.MTX, none, "line 1: malformed Matrix Market header")
	text("mtx-no-header", "x.mtx", "3 3 1\n1 1 2\n", tensorio.MTX, none, "line 1: malformed Matrix Market header")
	text("mtx-bad-size", "x.mtx", "%%MatrixMarket matrix coordinate real general\n% comment\n3 three 1\n1 1 2\n", tensorio.MTX, none, `line 3: malformed size line "3 three 1"`)
	text("mtx-outside-size", "x.mtx", "%%MatrixMarket matrix coordinate integer general\n4 5 2\n1 1 2\n2 7 1\n", tensorio.MTX, none, "line 4: mode-1 index 7 outside [1, 5]")
	text("mtx-too-few-entries", "x.mtx", "%%MatrixMarket matrix coordinate real general\n4 5 3\n1 1 2\n2 2 1\n", tensorio.MTX, none, "2 entries, line 2 declares 3")
	text("mtx-too-many-entries", "x.mtx", "%%MatrixMarket matrix coordinate real general\n4 5 1\n1 1 2\n2 2 1\n", tensorio.MTX, none, "line 4: more entries than the 1 declared on line 2")
	text("mtx-integer-field", "x.mtx", "%%MatrixMarket matrix coordinate integer general\n4 5 1\n1 1 2.5\n", tensorio.MTX, none, `line 3: value "2.5" is not an integer`)
	text("mtx-symmetric-upper", "x.mtx", "%%MatrixMarket matrix coordinate real symmetric\n4 4 2\n2 1 2\n1 3 1\n", tensorio.MTX, none, "line 4: entry (1, 3) above the diagonal of a symmetric matrix")
	long := strings.Repeat("7", 2<<20)
	text("csv-long-line", "x.csv", "i,j,value\n0,1,3\n1,2,"+long+"\n", tensorio.CSV, none, "line 3: line longer than 1048576 bytes")
	text("tns-long-line", "x.tns", "1 1 2\n2 1 "+long+"\n", tensorio.TNS, none, "line 2: line longer than 1048576 bytes")
	text("mtx-long-line", "x.mtx", "%%MatrixMarket matrix coordinate real general\n4 5 2\n1 1 "+long+"\n", tensorio.MTX, none, "line 3: line longer than 1048576 bytes")
	text("csv-long-field", "x.csv", "i,j,value\n0,1,"+strings.Repeat("x", 5000)+"\n", tensorio.CSV, none, `line 2: value "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"… (5000 bytes) is not a number`)
	text("csv-count-2^53+1", "x.csv", "i,j,value\n0,1,9007199254740993\n", tensorio.CSV, none, "line 2: value \"9007199254740993\" is an integer above 2⁵³")
	text("mtx-count-2^53+1", "x.mtx", "%%MatrixMarket matrix coordinate integer general\n4 5 1\n1 1 9007199254740993\n", tensorio.MTX, none, "line 3: value \"9007199254740993\" is an integer above 2⁵³")
	return cases, err
}
