package tensorio

import (
	"bytes"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
)

// A page body must decompress to exactly its declared size, whether its zstd frames declare
// their sizes (checked from the headers) or not (decoded with bounded output).
func TestCheckBodyZstd(t *testing.T) {
	page := bytes.Repeat([]byte("stirank "), 1<<17) // 1 MB
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	declared := enc.EncodeAll(page, nil)
	var streamed bytes.Buffer // a streaming writer declares no size
	w, err := zstd.NewWriter(&streamed)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(page)
	w.Close()
	if _, ok := zstdDeclared(streamed.Bytes()); ok {
		t.Fatal("a streamed frame declares its size")
	}
	if n, ok := zstdDeclared(declared); !ok || n != uint64(len(page)) {
		t.Fatalf("zstdDeclared = %d, %v; want %d", n, ok, len(page))
	}
	c := &pageChecker{}
	for name, body := range map[string][]byte{"declared": declared, "streamed": streamed.Bytes()} {
		if err := c.checkBody(format.Zstd, body, int64(len(page))); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		// The same body under a page header that says 1 KB: 1000 times more than declared.
		if err := c.checkBody(format.Zstd, body, 1024); err == nil || !strings.Contains(err.Error(), "bytes") {
			t.Errorf("%s under a 1 KB header: %v", name, err)
		}
	}
	if err := c.checkBody(format.Lz4Raw, declared, int64(len(page))); err == nil {
		t.Error("zstd data passed as LZ4_RAW")
	}
}

// checkThrift refuses lengths and counts beyond the bytes that hold them, and deep nesting.
func TestCheckThrift(t *testing.T) {
	for name, b := range map[string][]byte{
		"list count":    {0x19, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00},
		"binary length": {0x18, 0xff, 0xff, 0xff, 0xff, 0x07, 'a', 0x00},
		"empty struct":  {0x19, 0x2c, 0x00, 0x00, 0x00},
		"truncated":     {0x15},
		"deep":          bytes.Repeat([]byte{0x1c}, 100),
	} {
		if _, err := checkThrift(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// {1: i32 1, 2: list<struct>[{1: i32 0}], 3: binary "ab"}
	ok := []byte{0x15, 0x02, 0x19, 0x1c, 0x15, 0x00, 0x00, 0x18, 0x02, 'a', 'b', 0x00}
	if n, err := checkThrift(ok); err != nil || n != len(ok) {
		t.Errorf("valid struct: %d, %v", n, err)
	}
}
