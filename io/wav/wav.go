// Package wav reads and writes RIFF/WAVE audio files.
//
// Read accepts integer PCM of 16 or 24 bits and IEEE float of 32 bits, each either as a plain
// format tag or carried by WAVE_FORMAT_EXTENSIBLE, with any number of channels and any sample
// rate. It returns one mono signal, the mean of the channels, in [-1, 1], and the sample rate as
// the file states it: nothing is resampled, so a spectrogram's bins depend on the file's rate and
// whoever compares two files must check that their rates agree.
//
// Files come from users and are treated as hostile: every chunk size is checked against the bytes
// the file really holds before anything is allocated from it, and every problem is a one-line
// error that names the file.
package wav

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Format tags of the fmt chunk (mmreg.h).
const (
	formatPCM        = 0x0001
	formatIEEEFloat  = 0x0003
	formatALaw       = 0x0006
	formatMuLaw      = 0x0007
	formatExtensible = 0xFFFE
)

// MaxChannels bounds the channel count Read accepts; WAVE_FORMAT_EXTENSIBLE's channel mask names
// 18 speaker positions, and files with more channels than that are not audio for this program.
const MaxChannels = 64

// Audio is a decoded WAV file.
type Audio struct {
	// SampleRate is the number of samples per second per channel, as the file states it.
	SampleRate int
	// Channels is the number of channels in the file; Samples is their mean.
	Channels int
	// BitsPerSample is the stored sample width, and Float tells IEEE float from integer PCM.
	BitsPerSample int
	Float         bool
	// Samples is the mono signal, one value per frame in [-1, 1] (integer PCM is divided by
	// 2^(bits-1), so the most negative code maps to exactly -1).
	Samples []float64
}

// Error is a problem with a WAV file: its name and what is wrong.
type Error struct {
	File string
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.File, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

func fileError(file, format string, args ...any) error {
	return &Error{File: file, Err: fmt.Errorf(format, args...)}
}

// ReadFile reads the WAV file at path.
func ReadFile(path string) (*Audio, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return Read(f, info.Size(), path)
}

// format is the content of the fmt chunk that decoding needs.
type format struct {
	tag        uint16 // formatPCM or formatIEEEFloat, after unwrapping WAVE_FORMAT_EXTENSIBLE
	channels   int
	sampleRate int
	blockAlign int
	bits       int
}

// Read decodes a WAV file of size bytes from r; name is the file name errors give. size bounds
// every allocation: a chunk that claims more bytes than the file has left is an error, except
// that a data chunk running past the end of the file is read as far as whole frames go, since
// streaming writers (espeak-ng --stdout among them) cannot go back to fill in its size.
func Read(r io.Reader, size int64, name string) (*Audio, error) {
	var header [12]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return nil, fileError(name, "too short for a RIFF header (%d bytes)", size)
	}
	if string(header[0:4]) != "RIFF" || string(header[8:12]) != "WAVE" {
		return nil, fileError(name, "not a RIFF/WAVE file (starts with %q)", header[0:4])
	}
	left := size - 12
	var fm *format
	for {
		var ch [8]byte
		if left < 8 {
			if fm == nil {
				return nil, fileError(name, "no fmt chunk")
			}
			return nil, fileError(name, "no data chunk")
		}
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return nil, fileError(name, "truncated chunk header: %v", err)
		}
		left -= 8
		id, n := string(ch[0:4]), int64(binary.LittleEndian.Uint32(ch[4:8]))
		switch id {
		case "fmt ":
			if fm != nil {
				return nil, fileError(name, "two fmt chunks")
			}
			if n > left {
				return nil, fileError(name, "fmt chunk claims %d bytes, the file has %d left", n, left)
			}
			// A fmt chunk is 16, 18 or 40 bytes; anything longer is not one this reader knows.
			if n < 16 || n > 1024 {
				return nil, fileError(name, "fmt chunk of %d bytes (want 16 to 40)", n)
			}
			buf := make([]byte, n)
			if _, err := io.ReadFull(r, buf); err != nil {
				return nil, fileError(name, "truncated fmt chunk: %v", err)
			}
			var err error
			if fm, err = parseFormat(buf); err != nil {
				return nil, fileError(name, "%v", err)
			}
		case "data":
			if fm == nil {
				return nil, fileError(name, "data chunk before the fmt chunk")
			}
			n = min(n, left)
			frames := n / int64(fm.blockAlign)
			if frames == 0 {
				return nil, fileError(name, "data chunk holds no complete frame")
			}
			samples, err := decode(r, fm, frames)
			if err != nil {
				return nil, fileError(name, "data chunk: %v", err)
			}
			return &Audio{SampleRate: fm.sampleRate, Channels: fm.channels, BitsPerSample: fm.bits,
				Float: fm.tag == formatIEEEFloat, Samples: samples}, nil
		default:
			// Chunks are padded to an even size; skip without allocating.
			skip := n + n%2
			if skip > left {
				return nil, fileError(name, "%q chunk claims %d bytes, the file has %d left", id, n, left)
			}
			if _, err := io.CopyN(io.Discard, r, skip); err != nil {
				return nil, fileError(name, "truncated %q chunk: %v", id, err)
			}
			left -= skip
			continue
		}
		left -= n
		if n%2 == 1 && left > 0 {
			if _, err := io.CopyN(io.Discard, r, 1); err != nil {
				return nil, fileError(name, "truncated chunk padding: %v", err)
			}
			left--
		}
	}
}

// extensibleGUIDTail is bytes 2 to 15 of the KSDATAFORMAT_SUBTYPE GUIDs; bytes 0 and 1 hold the
// plain format tag.
var extensibleGUIDTail = []byte{0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71}

// parseFormat checks the fmt chunk b and returns the format it describes.
func parseFormat(b []byte) (*format, error) {
	le := binary.LittleEndian
	f := &format{
		tag:        le.Uint16(b[0:2]),
		channels:   int(le.Uint16(b[2:4])),
		sampleRate: int(le.Uint32(b[4:8])),
		blockAlign: int(le.Uint16(b[12:14])),
		bits:       int(le.Uint16(b[14:16])),
	}
	if f.tag == formatExtensible {
		if len(b) < 40 || le.Uint16(b[16:18]) < 22 {
			return nil, errors.New("WAVE_FORMAT_EXTENSIBLE fmt chunk shorter than 40 bytes")
		}
		if string(b[26:40]) != string(extensibleGUIDTail) {
			return nil, errors.New("WAVE_FORMAT_EXTENSIBLE with an unknown sub-format GUID")
		}
		f.tag = le.Uint16(b[24:26])
	}
	switch {
	case f.tag == formatALaw || f.tag == formatMuLaw:
		return nil, errors.New("A-law and µ-law WAV are not supported (want 16- or 24-bit PCM or 32-bit float)")
	case f.tag != formatPCM && f.tag != formatIEEEFloat:
		return nil, fmt.Errorf("format tag 0x%04x not supported (want 16- or 24-bit PCM or 32-bit float)", f.tag)
	case f.channels == 0:
		return nil, errors.New("zero channels")
	case f.channels > MaxChannels:
		return nil, fmt.Errorf("%d channels (at most %d)", f.channels, MaxChannels)
	case f.sampleRate == 0:
		return nil, errors.New("sample rate 0 Hz")
	case f.tag == formatPCM && f.bits != 16 && f.bits != 24:
		return nil, fmt.Errorf("%d-bit PCM not supported (want 16 or 24)", f.bits)
	case f.tag == formatIEEEFloat && f.bits != 32:
		return nil, fmt.Errorf("%d-bit float not supported (want 32)", f.bits)
	case f.blockAlign != f.channels*f.bits/8:
		return nil, fmt.Errorf("block align %d, want %d for %d channels of %d bits", f.blockAlign, f.channels*f.bits/8, f.channels, f.bits)
	}
	return f, nil
}

// decode reads frames frames of format f from r and returns the mean of their channels. The
// caller has checked that the file holds that many bytes, so the allocation is bounded by it.
func decode(r io.Reader, f *format, frames int64) ([]float64, error) {
	samples := make([]float64, frames)
	width := f.bits / 8
	// Read a bounded number of frames at a time, so that the raw bytes never cost more than a
	// small buffer on top of the samples.
	const framesPerRead = 4096
	buf := make([]byte, min(frames, framesPerRead)*int64(f.blockAlign))
	norm := 1 / float64(f.channels)
	switch {
	case f.tag == formatIEEEFloat:
		// Float WAV is nominally in [-1, 1]; keep louder values as they are, they are rare
		// and clipping them would distort the spectrum.
	case f.bits == 16:
		norm /= 1 << 15
	default:
		norm /= 1 << 23
	}
	for start := int64(0); start < frames; start += framesPerRead {
		count := min(framesPerRead, frames-start)
		chunk := buf[:count*int64(f.blockAlign)]
		if _, err := io.ReadFull(r, chunk); err != nil {
			return nil, fmt.Errorf("truncated at frame %d: %v", start, err)
		}
		for i := range count {
			frame := chunk[i*int64(f.blockAlign):]
			var sum float64
			for c := range f.channels {
				b := frame[c*width:]
				switch {
				case f.tag == formatIEEEFloat:
					v := float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
					if math.IsNaN(v) || math.IsInf(v, 0) {
						return nil, fmt.Errorf("frame %d channel %d is %v", start+i, c, v)
					}
					sum += v
				case f.bits == 16:
					sum += float64(int16(binary.LittleEndian.Uint16(b)))
				default:
					// Sign-extend the 24-bit little-endian value through the top of an int32.
					sum += float64(int32(uint32(b[0])<<8|uint32(b[1])<<16|uint32(b[2])<<24) >> 8)
				}
			}
			samples[start+i] = sum * norm
		}
	}
	return samples, nil
}

// WritePCM16 writes samples, a mono signal in [-1, 1], as a 16-bit PCM WAV file at the given
// sample rate. Samples outside [-1, 1] are clipped; the rest are rounded to the nearest code.
func WritePCM16(w io.Writer, samples []float64, sampleRate int) error {
	if sampleRate <= 0 || sampleRate > math.MaxUint32 {
		return fmt.Errorf("wav: sample rate %d outside [1, %d]", sampleRate, uint32(math.MaxUint32))
	}
	dataBytes := 2 * int64(len(samples))
	if 36+dataBytes > math.MaxUint32 {
		return fmt.Errorf("wav: %d samples do not fit a RIFF file", len(samples))
	}
	for n, s := range samples {
		if math.IsNaN(s) {
			return fmt.Errorf("wav: sample %d is NaN", n)
		}
	}
	le := binary.LittleEndian
	b := make([]byte, 0, 44+dataBytes)
	b = append(b, "RIFF"...)
	b = le.AppendUint32(b, uint32(36+dataBytes))
	b = append(b, "WAVEfmt "...)
	b = le.AppendUint32(b, 16)
	b = le.AppendUint16(b, formatPCM)
	b = le.AppendUint16(b, 1)
	b = le.AppendUint32(b, uint32(sampleRate))
	b = le.AppendUint32(b, uint32(2*sampleRate))
	b = le.AppendUint16(b, 2)
	b = le.AppendUint16(b, 16)
	b = append(b, "data"...)
	b = le.AppendUint32(b, uint32(dataBytes))
	for _, s := range samples {
		b = le.AppendUint16(b, uint16(int16(math.Round(max(-1, min(s, 1-1.0/(1<<15)))*(1<<15)))))
	}
	_, err := w.Write(b)
	return err
}
