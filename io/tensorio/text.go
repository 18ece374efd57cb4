package tensorio

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stirank/stirank/tensor"
)

// TextFormat is a text layout of sparse tensors that stirank imports.
type TextFormat string

const (
	// CSV is comma-separated values with a header line naming the columns i, j, k (as many as
	// the order) and value, or re and im for complex values. Coordinates are 0-based.
	CSV TextFormat = "csv"
	// TNS is the FROSTT format: one cell per line, its 1-based coordinates then its value,
	// separated by white space. Lines starting with # are comments.
	TNS TextFormat = "tns"
	// MTX is the Matrix Market coordinate format (1-based), with real, integer or pattern values
	// (a pattern entry has value 1) and general, symmetric or skew-symmetric storage.
	MTX TextFormat = "mtx"
)

// ParseTextFormat reads "csv", "tns" or "mtx".
func ParseTextFormat(s string) (TextFormat, error) {
	switch f := TextFormat(strings.ToLower(s)); f {
	case CSV, TNS, MTX:
		return f, nil
	}
	return "", fmt.Errorf("text format %q is not one of csv, tns, mtx", s)
}

// TextFormatOf returns the format a file name's extension stands for.
func TextFormatOf(name string) (TextFormat, error) {
	ext := strings.TrimPrefix(filepath.Ext(name), ".")
	f, err := ParseTextFormat(ext)
	if err != nil {
		return "", fmt.Errorf("%s: cannot tell the format from the extension %q (want .csv, .tns or .mtx)", name, ext)
	}
	return f, nil
}

// TextOptions configures ReadText.
type TextOptions struct {
	// Shape is the shape of the tensor. Nil means the smallest shape that holds every cell, or
	// for Matrix Market the declared size, which a non-nil Shape must equal.
	Shape []int
	// Kind is the value kind the values must have. Empty means Complex for a CSV file whose
	// header ends in re,im, else Count when every value is a non-negative integer and Real
	// otherwise.
	Kind ValueKind
}

// ReadText parses a sparse tensor in format f from r. name is the file name errors give, with
// the line number and the problem. It returns the tensor and its value kind.
func ReadText(r io.Reader, name string, f TextFormat, opts TextOptions) (*tensor.Sparse, ValueKind, error) {
	t, kind, _, err := ReadTextLines(r, name, f, opts)
	return t, kind, err
}

// ReadTextLines is ReadText that also returns the 1-based line every cell was read from, so that
// checks made later, such as Append's against the cells of a dataset, can point at the line.
func ReadTextLines(r io.Reader, name string, f TextFormat, opts TextOptions) (*tensor.Sparse, ValueKind, []int, error) {
	if opts.Kind != "" {
		if _, err := ParseValueKind(string(opts.Kind)); err != nil {
			return nil, "", nil, err
		}
	}
	if opts.Kind == Complex && f != CSV {
		return nil, "", nil, fileError(name, "complex values are read from CSV only, with the header i,j[,k],re,im")
	}
	b := &textBuilder{name: name, format: f, shape: opts.Shape, kind: opts.Kind}
	// Every format reads line by line; a line has no reason to be long, and a reader that
	// buffered one without limit would hold a file's worth of memory for it.
	limit := &lineLimiter{r: r, line: 1}
	r = limit
	var err error
	switch f {
	case CSV:
		err = b.readCSV(r)
	case TNS:
		b.base = 1
		err = b.readTNS(r)
	case MTX:
		b.base = 1
		err = b.readMTX(r)
	default:
		_, err = ParseTextFormat(string(f))
	}
	// The parsers see the start of a line too long before the limiter's error, and may fail on
	// it first: the line's length is the problem to report.
	var e *Error
	if limit.err != nil && errors.As(err, &e) && e.Line >= limit.err.line {
		err = b.readError(limit.err)
	}
	if err != nil {
		return nil, "", nil, err
	}
	t, err := b.tensor()
	if err != nil {
		return nil, "", nil, err
	}
	kind := opts.Kind
	if kind == "" {
		kind = inferKind(t)
	}
	return t, kind, b.lines, nil
}

// textBuilder collects the cells of a text file, validating each line as it comes.
type textBuilder struct {
	name   string
	format TextFormat
	shape  []int // nil: inferred from the cells
	// kind is the value kind asked for, or empty.
	kind ValueKind
	// base is the index of the first position of a mode in the file: 0 or 1.
	base   int64
	coords [][]int32
	values []float64
	// imag holds the imaginary parts of complex values, and is nil for real ones.
	imag []float64
	// lines[n] is the line cell n came from, to name both lines of a duplicate.
	lines []int
	// extent[m] is one past the largest 0-based mode-m index seen.
	extent []int
}

// setOrder fixes the order from the first line with cells.
func (b *textBuilder) setOrder(line, order int) error {
	if order < 1 || order > tensor.MaxOrder {
		return lineError(b.name, line, "%d coordinates: order %d not supported (1 to %d)", order, order, tensor.MaxOrder)
	}
	if b.shape != nil && len(b.shape) != order {
		return lineError(b.name, line, "%d coordinates, but the shape %v has %d modes", order, b.shape, len(b.shape))
	}
	b.coords = make([][]int32, order)
	b.extent = make([]int, order)
	return nil
}

// add validates and stores a cell whose coordinates idx are as written in the file, with its
// value v and, for complex values, its imaginary part im.
func (b *textBuilder) add(line int, idx []int64, v, im float64) error {
	for m, i := range idx {
		limit := int64(math.MaxInt32) - 1 + b.base
		if b.shape != nil {
			limit = int64(b.shape[m]) - 1 + b.base
		}
		switch {
		case i < b.base && b.base == 1:
			return lineError(b.name, line, "mode-%d index %d: indices start at 1 in %s files", m, i, b.formatName())
		case i < b.base:
			return lineError(b.name, line, "mode-%d index %d is negative", m, i)
		case i > limit && b.base == 1:
			return lineError(b.name, line, "mode-%d index %d outside [1, %d]", m, i, limit)
		case i > limit:
			return lineError(b.name, line, "mode-%d index %d outside [0, %d)", m, i, limit+1)
		}
	}
	if problem := valueProblem(v, b.kind == Count, true); problem != "" {
		return lineError(b.name, line, "%s", problem)
	}
	if b.imag != nil {
		if problem := imagProblem(v, im, true); problem != "" {
			return lineError(b.name, line, "%s", problem)
		}
		b.imag = append(b.imag, im)
	}
	for m, i := range idx {
		c := int32(i - b.base)
		b.coords[m] = append(b.coords[m], c)
		b.extent[m] = max(b.extent[m], int(c)+1)
	}
	b.values = append(b.values, v)
	b.lines = append(b.lines, line)
	return nil
}

// formatName names the 1-based formats in messages.
func (b *textBuilder) formatName() string {
	if b.format == MTX {
		return "Matrix Market"
	}
	return "FROSTT .tns"
}

// tensor returns the cells read as a tensor, after the checks that need all of them.
func (b *textBuilder) tensor() (*tensor.Sparse, error) {
	if len(b.values) == 0 {
		return nil, fileError(b.name, "no cells")
	}
	shape := b.shape
	if shape == nil {
		shape = b.extent
	}
	t := &tensor.Sparse{Shape: slices.Clone(shape), Coords: b.coords, Values: b.values, Imag: b.imag}
	if first, second, ok := duplicate(t); ok {
		idx := t.Index(second, nil)
		for m := range idx {
			idx[m] += int(b.base)
		}
		return nil, lineError(b.name, b.lines[second], "cell %v stored twice (first on line %d)", idx, b.lines[first])
	}
	return t, nil
}

func (b *textBuilder) readCSV(r io.Reader) error {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return fileError(b.name, "empty file: want a header line i,j[,k],value or i,j[,k],re,im")
	}
	if err != nil {
		return b.csvError(err)
	}
	order, complexValues, ok := csvHeader(header)
	if !ok {
		if _, err := strconv.ParseFloat(strings.TrimSpace(header[0]), 64); err == nil {
			return lineError(b.name, 1, "no header: the first line is %s; want a header line i,j[,k],value or i,j[,k],re,im (0-based coordinates)", excerpt(strings.Join(header, ",")))
		}
		return lineError(b.name, 1, "header %s; want i,j[,k],value or i,j[,k],re,im (0-based coordinates)", excerpt(strings.Join(header, ",")))
	}
	switch {
	case complexValues && b.kind != "" && b.kind != Complex:
		return lineError(b.name, 1, "the header's re,im columns hold complex values, but the values must be %s", b.kind)
	case !complexValues && b.kind == Complex:
		return lineError(b.name, 1, "complex values need the header i,j[,k],re,im")
	case complexValues:
		b.imag = []float64{}
	}
	if err := b.setOrder(1, order); err != nil {
		return err
	}
	idx := make([]int64, order)
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return b.csvError(err)
		}
		line, _ := cr.FieldPos(0)
		if err := b.parseCell(line, rec, idx); err != nil {
			return err
		}
	}
}

// csvHeader reads a header naming the columns i, j, k (as many as the order) then value, or re
// and im for complex values, and returns the order and whether the values are complex.
func csvHeader(h []string) (order int, complexValues, ok bool) {
	values := []string{"value"}
	if n := len(h); n >= 3 && strings.EqualFold(strings.TrimSpace(h[n-2]), "re") && strings.EqualFold(strings.TrimSpace(h[n-1]), "im") {
		values = []string{"re", "im"}
	}
	order = len(h) - len(values)
	if order < 1 || order > tensor.MaxOrder {
		return 0, false, false
	}
	for c, name := range h {
		var want string
		if c < order {
			want = indexColumns[c]
		} else {
			want = values[c-order]
		}
		if !strings.EqualFold(strings.TrimSpace(name), want) {
			return 0, false, false
		}
	}
	return order, len(values) == 2, true
}

// csvError turns an encoding/csv error into one naming the file and line.
func (b *textBuilder) csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return lineError(b.name, pe.Line, "%v", pe.Err)
	}
	return b.readError(err)
}

// readError names the file, and the line when it is too long, of an error reading it.
func (b *textBuilder) readError(err error) error {
	var long *lineTooLong
	if errors.As(err, &long) {
		return lineError(b.name, long.line, "line longer than %d bytes", maxLine)
	}
	return fileError(b.name, "%v", err)
}

// lineTooLong is the error of a lineLimiter.
type lineTooLong struct{ line int }

func (e *lineTooLong) Error() string {
	return fmt.Sprintf("line %d longer than %d bytes", e.line, maxLine)
}

// lineLimiter passes a reader on until a line exceeds maxLine bytes, then fails with the line.
type lineLimiter struct {
	r    io.Reader
	line int // the line the next byte belongs to
	n    int // bytes of that line read so far
	err  *lineTooLong
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	k, err := l.r.Read(p)
	for i, c := range p[:k] {
		if c == '\n' {
			l.line++
			l.n = 0
			continue
		}
		if l.n++; l.n > maxLine {
			l.err = &lineTooLong{line: l.line}
			return i, l.err
		}
	}
	return k, err
}

// excerpt quotes s for an error message, cut short when long: a message echoes a field of a
// line, and the line may be a megabyte long.
func excerpt(s string) string {
	const keep = 40
	if len(s) <= keep {
		return strconv.Quote(s)
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// exactInteger reports whether v, parsed from the text s, holds s exactly when s is an integer
// literal of 2⁵³ or more, where float64 starts rounding integers; other text is not its concern.
func exactInteger(s string, v float64) bool {
	if math.Abs(v) < 1<<53 || math.IsInf(v, 0) {
		return true
	}
	i, ok := new(big.Int).SetString(strings.TrimPrefix(s, "+"), 10)
	if !ok {
		return true
	}
	exact, acc := new(big.Float).SetFloat64(v).Int(nil)
	return acc == big.Exact && exact.Cmp(i) == 0
}

// parseCell parses the coordinates and value of one line and adds the cell.
func (b *textBuilder) parseCell(line int, fields []string, idx []int64) error {
	for m := range idx {
		i, err := strconv.ParseInt(strings.TrimSpace(fields[m]), 10, 64)
		if err != nil {
			return lineError(b.name, line, "mode-%d index %s is not an integer", m, excerpt(fields[m]))
		}
		idx[m] = i
	}
	v, err := b.parseNumber(line, "value", fields[len(idx)])
	if err != nil {
		return err
	}
	var im float64
	if b.imag != nil {
		if im, err = b.parseNumber(line, "imaginary part", fields[len(idx)+1]); err != nil {
			return err
		}
	}
	return b.add(line, idx, v, im)
}

// parseNumber parses a value, or what names, from its field.
func (b *textBuilder) parseNumber(line int, what, field string) (float64, error) {
	s := strings.TrimSpace(field)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, lineError(b.name, line, "%s %s is not a number", what, excerpt(s))
	}
	if !exactInteger(s, v) {
		return 0, lineError(b.name, line, "%s %s is an integer above 2⁵³ that a float64 cannot hold exactly", what, excerpt(s))
	}
	return v, nil
}

// maxLine bounds the length of a line of a text file, newline excluded.
const maxLine = 1 << 20

func (b *textBuilder) readTNS(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxLine+2) // lineLimiter fails first, naming the line
	var idx []int64
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if idx == nil {
			if err := b.setOrder(line, len(fields)-1); err != nil {
				return err
			}
			idx = make([]int64, len(fields)-1)
		}
		if len(fields) != len(idx)+1 {
			return lineError(b.name, line, "%d fields, earlier lines have %d (coordinates then value)", len(fields), len(idx)+1)
		}
		if err := b.parseCell(line, fields, idx); err != nil {
			return err
		}
	}
	return b.scanError(sc)
}

func (b *textBuilder) scanError(sc *bufio.Scanner) error {
	if err := sc.Err(); err != nil {
		return b.readError(err)
	}
	return nil
}

// Matrix Market header fields stirank reads.
var (
	mtxFields     = []string{"real", "integer", "pattern"}
	mtxSymmetries = []string{"general", "symmetric", "skew-symmetric"}
)

func (b *textBuilder) readMTX(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxLine+2) // lineLimiter fails first, naming the line
	if !sc.Scan() {
		if err := b.scanError(sc); err != nil {
			return err
		}
		return fileError(b.name, "empty file: want a %%%%MatrixMarket header line")
	}
	header := strings.Fields(strings.ToLower(sc.Text()))
	if len(header) != 5 || header[0] != "%%matrixmarket" || header[1] != "matrix" || header[2] != "coordinate" ||
		!slices.Contains(mtxFields, header[3]) || !slices.Contains(mtxSymmetries, header[4]) {
		return lineError(b.name, 1, "malformed Matrix Market header %s; want %%%%MatrixMarket matrix coordinate real|integer|pattern general|symmetric|skew-symmetric", excerpt(sc.Text()))
	}
	field, symmetry := header[3], header[4]
	if err := b.setOrder(1, 2); err != nil {
		return err
	}
	// entries counts the entry lines: symmetric storage adds two cells for some.
	sizeLine, declared, entries := 0, 0, 0
	idx := make([]int64, 2)
	line := 1
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "%") {
			continue
		}
		fields := strings.Fields(text)
		if sizeLine == 0 {
			shape, entries, err := b.mtxSize(line, fields)
			if err != nil {
				return err
			}
			sizeLine, declared, b.shape = line, entries, shape
			continue
		}
		want := 3
		if field == "pattern" {
			want = 2
		}
		if len(fields) != want {
			return lineError(b.name, line, "%d fields, a %s entry has %d", len(fields), field, want)
		}
		if entries == declared {
			return lineError(b.name, line, "more entries than the %d declared on line %d", declared, sizeLine)
		}
		if err := b.mtxEntry(line, fields, field, symmetry, idx); err != nil {
			return err
		}
		entries++
	}
	if err := b.scanError(sc); err != nil {
		return err
	}
	if sizeLine == 0 {
		return fileError(b.name, "no size line (rows columns entries) after the header")
	}
	if entries != declared {
		return fileError(b.name, "%d entries, line %d declares %d (truncated file?)", entries, sizeLine, declared)
	}
	return nil
}

// mtxSize parses the size line: rows, columns and number of entries.
func (b *textBuilder) mtxSize(line int, fields []string) ([]int, int, error) {
	var n [3]int
	ok := len(fields) == 3
	for k := 0; ok && k < 3; k++ {
		v, err := strconv.Atoi(fields[k])
		ok = err == nil && v >= 0 && v <= math.MaxInt32 && (k == 2 || v > 0)
		n[k] = v
	}
	if !ok {
		return nil, 0, lineError(b.name, line, "malformed size line %s; want rows columns entries", excerpt(strings.Join(fields, " ")))
	}
	shape := []int{n[0], n[1]}
	if b.shape != nil && !slices.Equal(b.shape, shape) {
		return nil, 0, lineError(b.name, line, "the file declares shape %v, the given shape is %v", shape, b.shape)
	}
	return shape, n[2], nil
}

// mtxEntry parses one entry and adds it, and its mirror image for symmetric storage.
func (b *textBuilder) mtxEntry(line int, fields []string, field, symmetry string, idx []int64) error {
	for m := range idx {
		i, err := strconv.ParseInt(fields[m], 10, 64)
		if err != nil {
			return lineError(b.name, line, "mode-%d index %s is not an integer", m, excerpt(fields[m]))
		}
		idx[m] = i
	}
	v := 1.0
	switch field {
	case "integer":
		i, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			return lineError(b.name, line, "value %s is not an integer", excerpt(fields[2]))
		}
		v = float64(i)
		if !exactInteger(fields[2], v) {
			return lineError(b.name, line, "value %s is an integer above 2⁵³ that a float64 cannot hold exactly", excerpt(fields[2]))
		}
	case "real":
		f, err := strconv.ParseFloat(fields[2], 64)
		if err != nil {
			return lineError(b.name, line, "value %s is not a number", excerpt(fields[2]))
		}
		if !exactInteger(fields[2], f) {
			return lineError(b.name, line, "value %s is an integer above 2⁵³ that a float64 cannot hold exactly", excerpt(fields[2]))
		}
		v = f
	}
	switch {
	case symmetry == "symmetric" && idx[0] < idx[1]:
		return lineError(b.name, line, "entry (%d, %d) above the diagonal of a symmetric matrix; only the lower triangle is stored", idx[0], idx[1])
	case symmetry == "skew-symmetric" && idx[0] <= idx[1]:
		return lineError(b.name, line, "entry (%d, %d) on or above the diagonal of a skew-symmetric matrix; only the strict lower triangle is stored", idx[0], idx[1])
	}
	if err := b.add(line, idx, v, 0); err != nil {
		return err
	}
	if symmetry == "general" || idx[0] == idx[1] {
		return nil
	}
	if symmetry == "skew-symmetric" {
		v = -v
	}
	return b.add(line, []int64{idx[1], idx[0]}, v, 0)
}
