package wav

import (
	"bytes"
	"encoding/binary"
	"math"
	"runtime"
	"strings"
	"testing"
)

// fmtChunk returns a fmt chunk of the plain layout (16 bytes) with the given fields.
func fmtChunk(tag, channels uint16, rate uint32, blockAlign, bits uint16) []byte {
	le := binary.LittleEndian
	b := []byte("fmt ")
	b = le.AppendUint32(b, 16)
	b = le.AppendUint16(b, tag)
	b = le.AppendUint16(b, channels)
	b = le.AppendUint32(b, rate)
	b = le.AppendUint32(b, rate*uint32(blockAlign))
	b = le.AppendUint16(b, blockAlign)
	return le.AppendUint16(b, bits)
}

// extensibleFmtChunk returns a WAVE_FORMAT_EXTENSIBLE fmt chunk (40 bytes) carrying sub-format tag.
func extensibleFmtChunk(tag, channels uint16, rate uint32, bits uint16) []byte {
	le := binary.LittleEndian
	blockAlign := channels * bits / 8
	b := []byte("fmt ")
	b = le.AppendUint32(b, 40)
	b = le.AppendUint16(b, formatExtensible)
	b = le.AppendUint16(b, channels)
	b = le.AppendUint32(b, rate)
	b = le.AppendUint32(b, rate*uint32(blockAlign))
	b = le.AppendUint16(b, blockAlign)
	b = le.AppendUint16(b, bits)
	b = le.AppendUint16(b, 22)   // cbSize
	b = le.AppendUint16(b, bits) // valid bits
	b = le.AppendUint32(b, 0)    // channel mask
	b = le.AppendUint16(b, tag)
	return append(b, extensibleGUIDTail...)
}

// chunk returns a chunk with the given id and content, padded to an even size.
func chunk(id string, content []byte) []byte {
	b := binary.LittleEndian.AppendUint32([]byte(id), uint32(len(content)))
	b = append(b, content...)
	if len(content)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

// riff wraps chunks in a RIFF/WAVE header.
func riff(chunks ...[]byte) []byte {
	body := []byte("WAVE")
	for _, c := range chunks {
		body = append(body, c...)
	}
	return append(binary.LittleEndian.AppendUint32([]byte("RIFF"), uint32(len(body))), body...)
}

func read(b []byte) (*Audio, error) {
	return Read(bytes.NewReader(b), int64(len(b)), "x.wav")
}

func TestRoundTripPCM16(t *testing.T) {
	want := []float64{0, 0.5, -0.5, -1, 1 - 1.0/(1<<15), 0.25}
	var buf bytes.Buffer
	if err := WritePCM16(&buf, want, 16000); err != nil {
		t.Fatal(err)
	}
	a, err := read(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if a.SampleRate != 16000 || a.Channels != 1 || a.BitsPerSample != 16 || a.Float {
		t.Errorf("format %+v", a)
	}
	if len(a.Samples) != len(want) {
		t.Fatalf("%d samples, want %d", len(a.Samples), len(want))
	}
	for n := range want {
		if a.Samples[n] != want[n] {
			t.Errorf("sample %d is %v, want %v", n, a.Samples[n], want[n])
		}
	}
}

func TestWritePCM16Clips(t *testing.T) {
	var buf bytes.Buffer
	if err := WritePCM16(&buf, []float64{3, -3}, 8000); err != nil {
		t.Fatal(err)
	}
	a, err := read(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if a.Samples[0] != 1-1.0/(1<<15) || a.Samples[1] != -1 {
		t.Errorf("clipped samples %v", a.Samples)
	}
	if err := WritePCM16(&buf, []float64{math.NaN()}, 8000); err == nil {
		t.Error("NaN sample written")
	}
}

func TestFormats(t *testing.T) {
	le := binary.LittleEndian
	// Two stereo frames: (0.5, -0.25) and (-1, 1) in each format, so the means are 0.125 and 0.
	pcm16 := le.AppendUint16(nil, uint16(1<<14))
	pcm16 = le.AppendUint16(pcm16, uint16(0xE000)) // -8192 = -0.25
	pcm16 = le.AppendUint16(pcm16, 0x8000)
	pcm16 = le.AppendUint16(pcm16, 0x7FFF)
	pcm24 := []byte{0x00, 0x00, 0x40, 0x00, 0x00, 0xE0, 0x00, 0x00, 0x80, 0xFF, 0xFF, 0x7F}
	var float32s []byte
	for _, v := range []float32{0.5, -0.25, -1, 1} {
		float32s = le.AppendUint32(float32s, math.Float32bits(v))
	}
	cases := []struct {
		name  string
		file  []byte
		bits  int
		float bool
		want  []float64
	}{
		{"pcm16", riff(fmtChunk(formatPCM, 2, 44100, 4, 16), chunk("data", pcm16)), 16, false, []float64{0.125, -0.5 / (1 << 15)}},
		{"pcm24", riff(fmtChunk(formatPCM, 2, 44100, 6, 24), chunk("data", pcm24)), 24, false, []float64{0.125, -0.5 / (1 << 23)}},
		{"float32", riff(fmtChunk(formatIEEEFloat, 2, 44100, 8, 32), chunk("data", float32s)), 32, true, []float64{0.125, 0}},
		{"extensible pcm24", riff(extensibleFmtChunk(formatPCM, 2, 44100, 24), chunk("data", pcm24)), 24, false, []float64{0.125, -0.5 / (1 << 23)}},
		{"extensible float32", riff(extensibleFmtChunk(formatIEEEFloat, 2, 44100, 32), chunk("data", float32s)), 32, true, []float64{0.125, 0}},
		// Unknown chunks, odd-sized ones padded, are skipped.
		{"list chunk", riff(chunk("LIST", []byte("INFOabc")), fmtChunk(formatPCM, 2, 44100, 4, 16), chunk("data", pcm16)), 16, false, []float64{0.125, -0.5 / (1 << 15)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := read(c.file)
			if err != nil {
				t.Fatal(err)
			}
			if a.SampleRate != 44100 || a.Channels != 2 || a.BitsPerSample != c.bits || a.Float != c.float {
				t.Errorf("format %+v", a)
			}
			if len(a.Samples) != len(c.want) || a.Samples[0] != c.want[0] || a.Samples[1] != c.want[1] {
				t.Errorf("samples %v, want %v", a.Samples, c.want)
			}
		})
	}
}

// TestStreamedDataSize reads a file as streaming writers leave it: the data chunk claims far
// more bytes than follow, and an odd trailing byte is not a whole frame.
func TestStreamedDataSize(t *testing.T) {
	file := riff(fmtChunk(formatPCM, 1, 22050, 2, 16))
	file = append(file, "data\x00\xf0\xff\x7f\x00\x40\x00\xc0\x01"...)
	a, err := read(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Samples) != 2 || a.Samples[0] != 0.5 || a.Samples[1] != -0.5 {
		t.Errorf("samples %v", a.Samples)
	}
}

func TestHostile(t *testing.T) {
	pcm := chunk("data", []byte{1, 0, 2, 0})
	good := fmtChunk(formatPCM, 1, 8000, 2, 16)
	withTag := func(tag uint16, bits uint16) []byte { return fmtChunk(tag, 1, 8000, bits/8, bits) }
	cases := []struct {
		name, file, want string
	}{
		{"empty", "", "too short for a RIFF header"},
		{"not riff", "RIFX\x00\x00\x00\x00WAVE", "not a RIFF/WAVE file"},
		{"no chunks", string(riff()), "no fmt chunk"},
		{"no data", string(riff(good)), "no data chunk"},
		{"truncated chunk header", string(riff(good)) + "dat", "no data chunk"},
		{"data first", string(riff(pcm, good)), "data chunk before the fmt chunk"},
		{"zero channels", string(riff(fmtChunk(formatPCM, 0, 8000, 0, 16), pcm)), "zero channels"},
		{"many channels", string(riff(fmtChunk(formatPCM, 65535, 8000, 65535*2%65536, 16), pcm)), "65535 channels"},
		{"zero rate", string(riff(fmtChunk(formatPCM, 1, 0, 2, 16), pcm)), "sample rate 0 Hz"},
		{"8-bit", string(riff(withTag(formatPCM, 8), pcm)), "8-bit PCM not supported"},
		{"32-bit pcm", string(riff(withTag(formatPCM, 32), pcm)), "32-bit PCM not supported"},
		{"64-bit float", string(riff(withTag(formatIEEEFloat, 64), pcm)), "64-bit float not supported"},
		{"a-law", string(riff(withTag(formatALaw, 8), pcm)), "A-law"},
		{"mp3", string(riff(withTag(0x55, 16), pcm)), "format tag 0x0055 not supported"},
		{"bad block align", string(riff(fmtChunk(formatPCM, 2, 8000, 2, 16), pcm)), "block align 2, want 4"},
		{"two fmt", string(riff(good, good, pcm)), "two fmt chunks"},
		{"short fmt", string(riff(chunk("fmt ", make([]byte, 14)), pcm)), "fmt chunk of 14 bytes"},
		{"fmt beyond file", "RIFF\x00\x00\x00\x00WAVEfmt \xff\xff\xff\xff\x01\x00", "fmt chunk claims 4294967295 bytes, the file has 2 left"},
		{"chunk beyond file", string(riff(good)) + "LIST\x00\x00\x00\x40abc", `"LIST" chunk claims 1073741824 bytes`},
		{"empty data", string(riff(good, chunk("data", nil))), "data chunk holds no complete frame"},
		{"huge data, one byte", string(riff(good)) + "data\xff\xff\xff\xff\x01", "data chunk holds no complete frame"},
		{"short extensible", string(riff(chunk("fmt ", append(fmtChunk(formatExtensible, 1, 8000, 2, 16)[8:], 0, 0)), pcm)), "shorter than 40 bytes"},
		{"float nan", string(riff(fmtChunk(formatIEEEFloat, 1, 8000, 4, 32), chunk("data", []byte{0, 0, 0xc0, 0x7f}))), "frame 0 channel 0 is NaN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := read([]byte(c.file))
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "x.wav: ") || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line naming x.wav and saying %q", msg, c.want)
			}
		})
	}
}

// TestSizeBeyondReader checks that a caller's size larger than what the reader holds fails
// cleanly rather than trusting the size.
func TestSizeBeyondReader(t *testing.T) {
	var buf bytes.Buffer
	if err := WritePCM16(&buf, make([]float64, 100), 8000); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	_, err := Read(bytes.NewReader(b[:100]), int64(len(b)), "x.wav")
	if err == nil || !strings.Contains(err.Error(), "truncated at frame") {
		t.Errorf("error %v, want a truncation", err)
	}
}

// FuzzRead checks that no input panics, that errors name the file on one line, that a decoded
// file never has more samples than its bytes allow, and that reading allocates at most 1 MB plus
// 40 bytes per input byte (a 2-byte sample becomes a float64 per channel and their mean): sizes
// that chunk headers claim are not allocated. CI runs the seeds; fuzz with
// go test ./io/wav -run '^$' -fuzz FuzzRead -fuzztime 10m.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	if err := WritePCM16(&buf, []float64{0, 0.5, -0.5, 0.25}, 8000); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(riff(extensibleFmtChunk(formatIEEEFloat, 2, 44100, 32), chunk("data", make([]byte, 16))))
	f.Add(riff(fmtChunk(formatPCM, 3, 48000, 9, 24), chunk("LIST", []byte("x")), chunk("data", make([]byte, 18))))
	f.Add(append(riff(fmtChunk(formatPCM, 1, 22050, 2, 16)), "data\x00\xf0\xff\x7f\x00\x40"...))
	claim := bytes.Clone(buf.Bytes())
	binary.LittleEndian.PutUint32(claim[40:], math.MaxUint32) // the data chunk's size
	f.Add(claim)
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		a, err := read(b)
		runtime.ReadMemStats(&after)
		if n, bound := after.TotalAlloc-before.TotalAlloc, uint64(1<<20+40*len(b)); n > bound {
			t.Errorf("file of %d bytes: allocated %d bytes, bound %d", len(b), n, bound)
		}
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "x.wav: ") || strings.Contains(msg, "\n") {
				t.Errorf("error %q", msg)
			}
			return
		}
		if len(a.Samples) == 0 || len(a.Samples)*2 > len(b) || a.SampleRate <= 0 || a.Channels < 1 {
			t.Errorf("%d samples from %d bytes, rate %d, %d channels", len(a.Samples), len(b), a.SampleRate, a.Channels)
		}
	})
}
