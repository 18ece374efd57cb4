package tensorio

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"regexp"
	"slices"

	"github.com/stirank/stirank/tensor"
)

const (
	// FormatName identifies a stirank dataset manifest.
	FormatName = "stirank-tensor"
	// FormatVersion is the manifest layout this package writes and the newest it reads.
	FormatVersion = 1
	// ManifestName is the manifest's file name inside the dataset directory.
	ManifestName = "manifest.json"
)

// versionPath is where a dataset keeps the manifest of version v, so that the version stays
// readable after later appends replace manifest.json.
func versionPath(v int) string { return fmt.Sprintf("versions/v%06d.json", v) }

// Manifest describes a dataset: the tensor's shape and value kind, and the Parquet shards that
// hold its cells. It is the last file written, so a dataset without one is incomplete.
type Manifest struct {
	Format        string `json:"format"`
	FormatVersion int    `json:"format_version"`
	// Version counts the revisions of the dataset's content; a fresh write is version 1, and every
	// Append adds one, keeping the earlier versions readable (ReadVersion).
	Version int       `json:"version"`
	Order   int       `json:"order"`
	Shape   []int     `json:"shape"`
	Kind    ValueKind `json:"value_kind"`
	// Cells is the number of stored cells, the sum of the shards' rows.
	Cells int64 `json:"cells"`
	// ZerosStored says whether some stored cell has the value zero. When it is false every stored
	// value is non-zero, and for count data every cell that is not stored is zero.
	ZerosStored bool `json:"zeros_stored"`
	// Blocks is the block layout, nil when the shards are not cut by block.
	Blocks *Blocks `json:"blocks,omitempty"`
	// Provenance records how the data were made when the importer knows more than the cells
	// say, such as the window, hop and scale that turned audio into a spectrogram. stirank does
	// not interpret it; it is carried over by Append and shown by inspect. Omitted when empty,
	// so that manifests without it keep their checksums.
	Provenance map[string]string `json:"provenance,omitempty"`
	Shards     []Shard           `json:"shards"`
}

// Blocks is the layout of a dataset written by block: every mode is cut into B contiguous ranges
// (tensor.NewGrid), and every shard holds cells of one block only.
type Blocks struct {
	B int `json:"b"`
	// Bounds[m] has B+1 entries: range b of mode m is [Bounds[m][b], Bounds[m][b+1]).
	Bounds [][]int `json:"bounds"`
}

// Shard is one Parquet file of a dataset.
type Shard struct {
	// Path is relative to the dataset directory, with forward slashes.
	Path string `json:"path"`
	Rows int64  `json:"rows"`
	// Bytes is the file's size and SHA256 the hex SHA-256 of its content.
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Block is the block the shard's cells lie in (one range index per mode), when blocked.
	Block []int `json:"block,omitempty"`
}

// Checksum is a stable hash of the manifest's content: the hex SHA-256 of its canonical JSON
// encoding. Since the manifest holds the checksum of every shard, it identifies the dataset's
// data, and serves as a cache key for anything computed from it.
func (m *Manifest) Checksum() string {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("tensorio: manifest does not encode: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Grid returns the block grid of a blocked dataset, and false for an unblocked one.
func (m *Manifest) Grid() (tensor.Grid, bool) {
	if m.Blocks == nil {
		return tensor.Grid{}, false
	}
	return tensor.Grid{B: m.Blocks.B, Bounds: m.Blocks.Bounds}, true
}

// numberList matches an indented JSON array of integers.
var numberList = regexp.MustCompile(`\[[\s\d,]+\]`)

// encode returns the manifest as written to disk: indented JSON, with arrays of integers such as
// shapes and block indices kept on one line for the reader's eye, and a final newline.
func (m *Manifest) encode() []byte {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("tensorio: manifest does not encode: %v", err))
	}
	b = numberList.ReplaceAllFunc(b, func(list []byte) []byte {
		return bytes.ReplaceAll(bytes.Join(bytes.Fields(list), nil), []byte(","), []byte(", "))
	})
	return append(b, '\n')
}

// parseManifest decodes and validates the manifest read from file.
func parseManifest(data []byte, file string) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	m := new(Manifest)
	if err := dec.Decode(m); err != nil {
		return nil, fileError(file, "not a valid manifest: %v", err)
	}
	if dec.More() {
		return nil, fileError(file, "not a valid manifest: data after the JSON object")
	}
	if err := m.validate(); err != nil {
		return nil, fileError(file, "%v", err)
	}
	return m, nil
}

// validate checks the manifest's own consistency; the shards are checked when read.
func (m *Manifest) validate() error {
	switch {
	case m.Format != FormatName:
		return fmt.Errorf("format is %q, want %q", m.Format, FormatName)
	case m.FormatVersion > FormatVersion:
		return fmt.Errorf("format_version %d is newer than this stirank reads (%d)", m.FormatVersion, FormatVersion)
	case m.FormatVersion < 1:
		return fmt.Errorf("format_version %d must be at least 1", m.FormatVersion)
	case m.Version < 1:
		return fmt.Errorf("version %d must be at least 1", m.Version)
	case m.Order < 1 || m.Order > tensor.MaxOrder:
		return fmt.Errorf("order %d not supported (1 to %d)", m.Order, tensor.MaxOrder)
	case len(m.Shape) != m.Order:
		return fmt.Errorf("shape %v has %d modes, order is %d", m.Shape, len(m.Shape), m.Order)
	}
	cells := 1.0
	for mode, n := range m.Shape {
		if n < 1 || n > math.MaxInt32 {
			return fmt.Errorf("mode-%d extent %d outside [1, %d]", mode, n, math.MaxInt32)
		}
		cells *= float64(n)
	}
	if _, err := ParseValueKind(string(m.Kind)); err != nil {
		return fmt.Errorf("value_kind: %v", err)
	}
	if m.Cells < 1 {
		return fmt.Errorf("dataset has no stored cells (cells is %d)", m.Cells)
	}
	if float64(m.Cells) > cells {
		return fmt.Errorf("%d stored cells is more than the %v cells of shape %v", m.Cells, cells, m.Shape)
	}
	if m.Blocks != nil {
		if err := m.Blocks.validate(m.Shape); err != nil {
			return err
		}
	}
	var rows int64
	paths := make(map[string]bool, len(m.Shards))
	for s, sh := range m.Shards {
		if err := sh.validate(m.Blocks, m.Order); err != nil {
			return fmt.Errorf("shard %d: %v", s, err)
		}
		if paths[sh.Path] {
			return fmt.Errorf("shard %d: path %q listed twice", s, sh.Path)
		}
		paths[sh.Path] = true
		if sh.Rows > math.MaxInt64-rows {
			return fmt.Errorf("shard %d: rows %d overflow the total", s, sh.Rows)
		}
		rows += sh.Rows
	}
	if rows != m.Cells {
		return fmt.Errorf("shards hold %d rows, cells is %d", rows, m.Cells)
	}
	return nil
}

func (b *Blocks) validate(shape []int) error {
	g, err := tensor.NewGrid(shape, b.B)
	if err != nil {
		return fmt.Errorf("blocks: %v", err)
	}
	if !slices.EqualFunc(b.Bounds, g.Bounds, slices.Equal) {
		return fmt.Errorf("blocks: bounds %v are not the %d-way grid of shape %v, %v", b.Bounds, b.B, shape, g.Bounds)
	}
	return nil
}

func (sh *Shard) validate(blocks *Blocks, order int) error {
	switch {
	case !fs.ValidPath(sh.Path) || sh.Path == "." || sh.Path == ManifestName:
		return fmt.Errorf("path %q is not a relative slash-separated file path inside the dataset", sh.Path)
	case sh.Rows < 0:
		return fmt.Errorf("rows %d is negative", sh.Rows)
	case sh.Bytes < 0:
		return fmt.Errorf("bytes %d is negative", sh.Bytes)
	case !isSHA256(sh.SHA256):
		return fmt.Errorf("sha256 %q is not 64 lower-case hex digits", sh.SHA256)
	case blocks == nil && sh.Block != nil:
		return fmt.Errorf("block %v given but the dataset is not blocked", sh.Block)
	case blocks != nil && len(sh.Block) != order:
		return fmt.Errorf("block %v must have one range index per mode (%d)", sh.Block, order)
	}
	for _, b := range sh.Block {
		if b < 0 || b >= blocks.B {
			return fmt.Errorf("block %v outside the %d-way grid", sh.Block, blocks.B)
		}
	}
	return nil
}

func isSHA256(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
