package tensorio

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// The Parquet guard. parquet-go sizes its buffers from what a file says: the footer length, the
// lengths and counts in Thrift metadata, a page's declared uncompressed size, and the output of a
// decompressor it trusts to stop (its LZ4_RAW decoder doubles its buffer for as long as the input
// fails to decode, forever on input that is not LZ4). A shard whose checksum matches its manifest
// is still only as trustworthy as whoever wrote both, so before parquet-go sees a shard the guard
// checks every such claim against the bytes that back it:
//
//   - the footer: magic numbers, a length within the file and below maxFooterBytes, Thrift that
//     claims no list, string or nesting larger than the bytes that hold it (checkThrift);
//   - every column chunk: a codec this reader knows, a byte range inside the file;
//   - every page: a header that passes checkThrift, a compressed size inside the chunk, a value
//     count within the row group's rows, an uncompressed size within what that many values can
//     take (maxPageBytes), and a body that really decompresses to that size, checked by a
//     decoder with bounded output.
//
// What parquet-go then allocates is bounded by the shard's rows times a constant, and the rows
// were checked against the machine's memory (checkMemory). The same checks belong upstream: the
// LZ4_RAW codec should decode into a buffer of the page's uncompressed size and fail, and the
// Thrift decoder should refuse lengths beyond the bytes left.
const (
	// maxFooterBytes bounds the footer: a shard's footer lists a few columns per row group, a few
	// hundred bytes each, so this allows thousands of row groups.
	maxFooterBytes = 4 << 20
	// maxPageHeaderBytes bounds one page header (statistics of numeric columns are small).
	maxPageHeaderBytes = 64 << 10
	// maxThriftDepth bounds the nesting of Thrift structs; Parquet metadata nests about 6 deep.
	maxThriftDepth = 32
)

// OpenParquet checks the Parquet file of size bytes read through ra as shards are checked before
// parquet-go reads them, and opens it, for the other Parquet files stirank reads (chain states,
// run histories). They have no manifest: their footer may declare at most maxRows rows, a bound
// the caller sets from the file's size, since the rows are what a reader allocates for. The page
// index and bloom filters, which the guard does not check and stirank does not use, are not read.
// file names the file in errors.
func OpenParquet(ra io.ReaderAt, size int64, file string, maxRows int64) (f *parquet.File, err error) {
	if err := checkFooter(ra, size, file); err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			f, err = nil, fileError(file, "corrupt Parquet file: %v", p)
		}
	}()
	f, err = parquet.OpenFile(ra, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fileError(file, "not a valid Parquet file (truncated or corrupt): %v", err)
	}
	if n := f.NumRows(); n < 0 || n > maxRows {
		return nil, fileError(file, "Parquet footer declares %d rows, more than a file of %d bytes holds", n, size)
	}
	if err := (&pageChecker{ra: ra, size: size, file: file}).checkChunks(f.Metadata()); err != nil {
		return nil, err
	}
	return f, nil
}

// ReadRows reads every row of a file opened by OpenParquet as a T; file names it in errors.
func ReadRows[T any](f *parquet.File, file string) (rows []T, err error) {
	defer func() {
		if p := recover(); p != nil {
			rows, err = nil, fileError(file, "corrupt Parquet file: %v", p)
		}
	}()
	rows = make([]T, f.NumRows())
	r := parquet.NewGenericReader[T](f)
	defer r.Close()
	n, err := r.Read(rows)
	if err != nil && err != io.EOF {
		return nil, fileError(file, "%v", err)
	}
	return rows[:n], nil
}

// maxPageBytes is the largest uncompressed page of n values of physical type t. Fixed-width
// types take at most 12 bytes a value PLAIN (INT96), a little more with DELTA_BINARY_PACKED's
// block headers and the definition levels of optional columns, plus a constant for encoding
// headers. Byte arrays (the strings of run histories) have no width; 256 bytes a value and 1 MB
// allow any short string while still bounding the page by its values.
func maxPageBytes(t format.Type, n int64) int64 {
	if t == format.ByteArray || t == format.FixedLenByteArray {
		return 256*n + 1<<20
	}
	return 16*n + 1024
}

// checkFooter checks a shard's magic numbers and footer before parquet-go reads them.
func checkFooter(ra io.ReaderAt, size int64, file string) error {
	if size < 12 {
		return fileError(file, "not a valid Parquet file: %d bytes", size)
	}
	var head, tail [8]byte
	if _, err := ra.ReadAt(head[:4], 0); err != nil {
		return fileError(file, "%v", err)
	}
	if _, err := ra.ReadAt(tail[:], size-8); err != nil {
		return fileError(file, "%v", err)
	}
	if string(head[:4]) != "PAR1" || string(tail[4:]) != "PAR1" {
		return fileError(file, "not a valid Parquet file (truncated or corrupt): no PAR1 magic at both ends (encrypted files are not supported)")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 {
		return fileError(file, "corrupt Parquet file: footer length %d is more than the file's %d bytes hold", n, size)
	}
	if n > maxFooterBytes {
		return fileError(file, "Parquet footer of %d bytes is larger than the %d this reader accepts", n, maxFooterBytes)
	}
	footer := make([]byte, n)
	if _, err := ra.ReadAt(footer, size-8-n); err != nil {
		return fileError(file, "%v", err)
	}
	used, err := checkThrift(footer)
	if err == nil && used != len(footer) {
		err = fmt.Errorf("%d bytes after the metadata", len(footer)-used)
	}
	if err != nil {
		return fileError(file, "corrupt Parquet footer: %v", err)
	}
	return nil
}

// pageChecker checks the column chunks of one shard; its buffers and decoders are reused from
// page to page.
type pageChecker struct {
	ra   io.ReaderAt
	size int64
	file string
	buf  []byte
	out  []byte
	zstd *zstd.Decoder
}

// checkChunks checks every column chunk of md, the decoded footer of a shard of size bytes.
func (c *pageChecker) checkChunks(md *format.FileMetaData) error {
	defer func() {
		if c.zstd != nil {
			c.zstd.Close()
		}
	}()
	for g := range md.RowGroups {
		rg := &md.RowGroups[g]
		if rg.NumRows < 0 {
			return fileError(c.file, "corrupt Parquet file: row group %d has %d rows", g, rg.NumRows)
		}
		for k := range rg.Columns {
			if err := c.checkChunk(rg.Columns[k].MetaData, rg.NumRows); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *pageChecker) checkChunk(m format.ColumnMetaData, rows int64) error {
	name := strings.Join(m.PathInSchema, ".")
	fail := func(format string, args ...any) error {
		return fileError(c.file, "corrupt Parquet column chunk %q: %s", name, fmt.Sprintf(format, args...))
	}
	switch m.Codec {
	case format.Uncompressed, format.Snappy, format.Gzip, format.Brotli, format.Zstd, format.Lz4Raw:
	default:
		return fileError(c.file, "column %q uses compression codec %v, which this reader does not accept (use SNAPPY, GZIP, BROTLI, ZSTD, LZ4_RAW or none)", name, m.Codec)
	}
	start := m.DataPageOffset
	if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < start {
		start = m.DictionaryPageOffset
	}
	end := start + m.TotalCompressedSize
	if start < 4 || m.TotalCompressedSize < 0 || end > c.size-8 {
		return fail("bytes [%d, %d) outside the file's %d", start, end, c.size)
	}
	var values int64
	for off := start; off < end; {
		window := c.read(off, min(end-off, maxPageHeaderBytes))
		if window == nil {
			return fail("cannot read page header at byte %d", off)
		}
		n, err := checkThrift(window)
		var h format.PageHeader
		if err == nil {
			err = thrift.Unmarshal(new(thrift.CompactProtocol), window[:n], &h)
		}
		if err != nil {
			return fail("page header at byte %d: %v", off, err)
		}
		off += int64(n)
		cs, us := int64(h.CompressedPageSize), int64(h.UncompressedPageSize)
		if cs < 0 || us < 0 || cs > end-off {
			return fail("page at byte %d: %d compressed bytes, %d left in the chunk", off, cs, end-off)
		}
		var nv, levels int64
		compressed := true
		switch {
		case h.Type == format.DictionaryPage && h.DictionaryPageHeader.Valid:
			nv = int64(h.DictionaryPageHeader.V.NumValues)
		case h.Type == format.DataPage && h.DataPageHeader.Valid:
			nv = int64(h.DataPageHeader.V.NumValues)
			values += nv
		case h.Type == format.DataPageV2 && h.DataPageHeaderV2.Valid:
			v2 := h.DataPageHeaderV2.V
			nv = int64(v2.NumValues)
			values += nv
			levels = int64(v2.DefinitionLevelsByteLength) + int64(v2.RepetitionLevelsByteLength)
			if v2.DefinitionLevelsByteLength < 0 || v2.RepetitionLevelsByteLength < 0 || levels > cs || levels > us {
				return fail("page at byte %d: levels of %d bytes in a page of %d", off, levels, cs)
			}
			if v, ok := v2.IsCompressed.Get(); ok && !v {
				compressed = false
			}
		default:
			return fail("page at byte %d has type %v without its header, or is not a data or dictionary page", off, h.Type)
		}
		// A dictionary holds distinct values of the chunk, so no more than its rows either.
		if nv < 0 || nv > rows || values > rows {
			return fail("page at byte %d holds %d values, more than the row group's %d rows", off, nv, rows)
		}
		if us > maxPageBytes(m.Type, nv) {
			return fail("page at byte %d declares %d uncompressed bytes for %d values", off, us, nv)
		}
		body := c.read(off, cs)
		if body == nil {
			return fail("cannot read the page at byte %d", off)
		}
		codec := m.Codec
		if !compressed {
			codec = format.Uncompressed
		}
		if err := c.checkBody(codec, body[levels:], us-levels); err != nil {
			return fail("page at byte %d is not %v data of %d bytes: %v", off, m.Codec, us-levels, err)
		}
		off += cs
	}
	return nil
}

// read returns n bytes of the file at off in a reused buffer, or nil if they cannot be read.
func (c *pageChecker) read(off, n int64) []byte {
	if cap(c.buf) < int(n) {
		c.buf = make([]byte, n)
	}
	b := c.buf[:n]
	if k, err := c.ra.ReadAt(b, off); int64(k) != n && err != nil {
		return nil
	}
	return b
}

// checkBody checks that body decompresses with codec to exactly want bytes, never holding more
// than want bytes of output.
func (c *pageChecker) checkBody(codec format.CompressionCodec, body []byte, want int64) error {
	var r io.Reader
	switch codec {
	case format.Uncompressed:
		if int64(len(body)) != want {
			return fmt.Errorf("%d bytes", len(body))
		}
		return nil
	case format.Snappy:
		n, err := snappy.DecodedLen(body)
		if err != nil {
			return err
		}
		if int64(n) != want {
			return fmt.Errorf("decodes to %d bytes", n)
		}
		// snappy.Decode allocates what the header says, which now matches a checked size.
		return nil
	case format.Lz4Raw:
		if cap(c.out) < int(want) {
			c.out = make([]byte, want)
		}
		n, err := lz4.UncompressBlock(body, c.out[:want])
		if err != nil {
			return err
		}
		if int64(n) != want {
			return fmt.Errorf("decodes to %d bytes", n)
		}
		return nil
	case format.Gzip:
		z, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return err
		}
		r = z
	case format.Brotli:
		r = brotli.NewReader(bytes.NewReader(body))
	case format.Zstd:
		if total, ok := zstdDeclared(body); ok {
			// Every frame declares its size, and the zstd decoder stops a frame that exceeds it:
			// the declared total bounds what decoding can produce.
			if total != uint64(want) {
				return fmt.Errorf("frames declare %d bytes", total)
			}
			return nil
		}
		if c.zstd == nil {
			// zstd's spec recommends decoders support windows up to 8 MB, and no more is
			// allowed: the decoder allocates the window a frame asks for, and a 419-byte shard
			// whose frame asked for tens of MB made a read allocate 34 MB (FuzzShard's
			// testdata). Writers that declare frame sizes never get here.
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(8<<20), zstd.WithDecoderLowmem(true))
			if err != nil {
				return err
			}
			c.zstd = d
		}
		if err := c.zstd.Reset(bytes.NewReader(body)); err != nil {
			return err
		}
		r = c.zstd
	}
	n, err := io.Copy(io.Discard, io.LimitReader(r, want+1))
	if err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("decodes to %s bytes", sizeString(n, want))
	}
	return nil
}

// errThrift is the cause of every checkThrift error.
var errThrift = errors.New("invalid Thrift metadata")

// checkThrift walks one compact-protocol Thrift struct at the start of b and returns its length.
// It fails when a length or count claims more than the bytes left (each list element takes at
// least one byte), when a list holds an empty struct (every struct Parquet lists has a required
// field), or when structs nest deeper than maxThriftDepth: the claims a decoder would otherwise
// allocate for before reading.
func checkThrift(b []byte) (int, error) {
	w := thriftWalker{b: b}
	if err := w.structure(0, false); err != nil {
		return 0, fmt.Errorf("%w at byte %d: %v", errThrift, w.off, err)
	}
	return w.off, nil
}

type thriftWalker struct {
	b   []byte
	off int
}

func (w *thriftWalker) byte1() (byte, error) {
	if w.off >= len(w.b) {
		return 0, io.ErrUnexpectedEOF
	}
	w.off++
	return w.b[w.off-1], nil
}

func (w *thriftWalker) uvarint() (uint64, error) {
	v, n := binary.Uvarint(w.b[w.off:])
	if n <= 0 {
		return 0, errors.New("bad varint")
	}
	w.off += n
	return v, nil
}

// skip advances over n bytes.
func (w *thriftWalker) skip(n uint64) error {
	if n > uint64(len(w.b)-w.off) {
		return fmt.Errorf("length %d, %d bytes left", n, len(w.b)-w.off)
	}
	w.off += int(n)
	return nil
}

// Compact-protocol type codes.
const (
	tTrue, tFalse, tI8, tI16, tI32, tI64, tDouble, tBinary, tList, tSet, tMap, tStruct = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
)

func (w *thriftWalker) structure(depth int, inList bool) error {
	if depth > maxThriftDepth {
		return errors.New("structs nested too deep")
	}
	for fields := 0; ; fields++ {
		h, err := w.byte1()
		if err != nil {
			return err
		}
		if h == 0 {
			if inList && fields == 0 {
				return errors.New("empty struct in a list")
			}
			return nil
		}
		if h>>4 == 0 {
			if _, err := w.uvarint(); err != nil { // field id
				return err
			}
		}
		if t := h & 0xf; t != tTrue && t != tFalse { // booleans are in the header
			if err := w.value(t, depth); err != nil {
				return err
			}
		}
	}
}

func (w *thriftWalker) value(t byte, depth int) error {
	switch t {
	case tTrue, tFalse, tI8:
		return w.skip(1)
	case tI16, tI32, tI64:
		_, err := w.uvarint()
		return err
	case tDouble:
		return w.skip(8)
	case tBinary:
		n, err := w.uvarint()
		if err != nil {
			return err
		}
		return w.skip(n)
	case tList, tSet:
		h, err := w.byte1()
		if err != nil {
			return err
		}
		n := uint64(h >> 4)
		if n == 15 {
			if n, err = w.uvarint(); err != nil {
				return err
			}
		}
		if n > uint64(len(w.b)-w.off) {
			return fmt.Errorf("list of %d elements, %d bytes left", n, len(w.b)-w.off)
		}
		for range n {
			if err := w.element(h&0xf, depth); err != nil {
				return err
			}
		}
		return nil
	case tMap:
		n, err := w.uvarint()
		if err != nil || n == 0 {
			return err
		}
		kv, err := w.byte1()
		if err != nil {
			return err
		}
		if n > uint64(len(w.b)-w.off)/2 {
			return fmt.Errorf("map of %d entries, %d bytes left", n, len(w.b)-w.off)
		}
		for range n {
			if err := w.element(kv>>4, depth); err != nil {
				return err
			}
			if err := w.element(kv&0xf, depth); err != nil {
				return err
			}
		}
		return nil
	case tStruct:
		return w.structure(depth+1, false)
	}
	return fmt.Errorf("unknown type %d", t)
}

// element walks one list, set or map element of type t.
func (w *thriftWalker) element(t byte, depth int) error {
	if t == tStruct {
		return w.structure(depth+1, true)
	}
	return w.value(t, depth)
}

// zstdDeclared returns the sum of the content sizes that the zstd frames of body declare, found
// by walking their block headers without decoding; ok is false when a frame does not declare its
// size or the frames do not end where body does.
func zstdDeclared(body []byte) (total uint64, ok bool) {
	for len(body) > 0 {
		var h zstd.Header
		if h.Decode(body) != nil {
			return 0, false
		}
		if h.Skippable {
			n := 8 + uint64(h.SkippableSize)
			if n > uint64(len(body)) {
				return 0, false
			}
			body = body[n:]
			continue
		}
		if !h.HasFCS || h.FrameContentSize > math.MaxInt64-total {
			return 0, false
		}
		total += h.FrameContentSize
		off := h.HeaderSize
		for last := false; !last; {
			if off+3 > len(body) {
				return 0, false
			}
			bh := int(body[off]) | int(body[off+1])<<8 | int(body[off+2])<<16
			off += 3
			last = bh&1 == 1
			switch size := bh >> 3; bh >> 1 & 3 {
			case 0, 2: // raw, compressed: size bytes follow
				off += size
			case 1: // RLE: one byte, repeated size times
				off++
			default:
				return 0, false
			}
		}
		if h.HasCheckSum {
			off += 4
		}
		if off > len(body) {
			return 0, false
		}
		body = body[off:]
	}
	return total, true
}
