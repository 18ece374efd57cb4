package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/io/wav"
)

// writeWAV writes samples as a 16-bit mono WAV file and returns its path.
func writeWAV(t *testing.T, dir, name string, samples []float64, rate int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := wav.WritePCM16(&buf, samples, rate); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestImportWAV imports a tone at the centre of bin 20 of a 128-sample window: 10 frames of hop
// 64, every one peaking at row 20, with the analysis recorded in the manifest.
func TestImportWAV(t *testing.T) {
	dir := t.TempDir()
	tone := make([]float64, 9*64+128)
	for n := range tone {
		tone[n] = 0.5 * math.Sin(2*math.Pi*20*float64(n)/128)
	}
	in := writeWAV(t, dir, "tone.WAV", tone, 8000)
	out := filepath.Join(dir, "ds")
	stdout := mustExec(t, "import", "--in", in, "--out", out, "--window", "128", "--overlap", "0.5", "--scale", "2")
	if !strings.Contains(stdout, "count 65x10") || !strings.Contains(stdout, "8000 Hz") {
		t.Errorf("output %q", stdout)
	}
	d := readDataset(t, out)
	if d.Manifest.Kind != tensorio.Count || !slices.Equal(d.Manifest.Shape, []int{65, 10}) || d.Manifest.ZerosStored {
		t.Errorf("manifest %+v", d.Manifest)
	}
	for key, want := range map[string]string{"from": "wav", "file": "tone.WAV", "sample_rate": "8000", "channels": "1",
		"window": "128", "hop": "64", "scale": "2", "samples": "704"} {
		if got := d.Manifest.Provenance[key]; got != want {
			t.Errorf("provenance %s is %q, want %q", key, got, want)
		}
	}
	peak, peakRow := make([]float64, 10), make([]int32, 10)
	for n, v := range d.Tensor.Values {
		if f := d.Tensor.Coords[1][n]; v > peak[f] {
			peak[f], peakRow[f] = v, d.Tensor.Coords[0][n]
		}
	}
	for f := range peak {
		// 0.5 amplitude × 0.27·128 × scale 2 ≈ 34.6.
		if peakRow[f] != 20 || math.Abs(peak[f]-34.6) > 1 {
			t.Errorf("frame %d peaks at row %d with %v, want row 20 with about 34.6", f, peakRow[f], peak[f])
		}
	}
	if inspect := mustExec(t, "inspect", out); !strings.Contains(inspect, "provenance   hop: 64") {
		t.Errorf("inspect does not show the provenance:\n%s", inspect)
	}
}

func TestImportWAVErrors(t *testing.T) {
	dir := t.TempDir()
	tone := writeWAV(t, dir, "tone.wav", []float64{0.5, -0.5, 0.25, 0}, 8000)
	silence := writeWAV(t, dir, "silence.wav", make([]float64, 2048), 8000)
	short := writeWAV(t, dir, "short.wav", make([]float64, 100), 8000)
	zeroChannels := writeFile(t, dir, "zero.wav", "RIFF\x2c\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x00\x00\x40\x1f\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00data\x00\x00\x00\x00")
	csv := writeFile(t, dir, "m.csv", "i,j,value\n0,1,3\n")
	usage := []struct {
		args []string
		want string
	}{
		{[]string{"--in", tone, "--shape", "3x3"}, "--shape and --kind do not apply to WAV input"},
		{[]string{"--in", csv, "--scale", "3"}, "--window, --overlap and --scale apply to WAV input only"},
		{[]string{"--in", tone, "--overlap", "1"}, "overlap 1 outside [0, 1)"},
		{[]string{"--in", tone, "--window", "1"}, "window 1 outside"},
		{[]string{"--in", tone, "--scale", "-1"}, "scale -1 must be positive"},
	}
	for _, tt := range usage {
		code, _, stderr := execData(t, append([]string{"import", "--out", filepath.Join(dir, "out")}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("stirank import %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
	}
	failures := []struct {
		in   string
		want string
	}{
		{silence, "every cell of the spectrogram rounds to zero at scale 10"},
		{short, "100 samples are shorter than one window of 512"},
		{zeroChannels, "zero channels"},
		{tone, "4 samples are shorter"},
	}
	for _, tt := range failures {
		parent := t.TempDir()
		code, _, stderr := execData(t, "import", "--in", tt.in, "--out", filepath.Join(parent, "ds"))
		if code != 1 || !strings.Contains(stderr, tt.in+": ") || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("import %s: exit %d, stderr %q; want exit 1 and one line naming the file and %q", tt.in, code, stderr, tt.want)
		}
		if entries, _ := os.ReadDir(parent); len(entries) != 0 {
			t.Errorf("import %s left %v behind", tt.in, entries)
		}
	}
	// --format wav reads audio whatever the extension says.
	renamed := filepath.Join(dir, "tone.bin")
	if err := os.Rename(silence, renamed); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := execData(t, "import", "--in", renamed, "--out", filepath.Join(dir, "out"), "--format", "wav", "--scale", "1e6")
	if code != 1 || !strings.Contains(stderr, "rounds to zero at scale 1e+06") {
		t.Errorf("--format wav: exit %d, %q", code, stderr)
	}
}
