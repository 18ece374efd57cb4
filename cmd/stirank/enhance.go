package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/stirank/stirank/io/spectrogram"
	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/io/wav"
	"github.com/stirank/stirank/models/isnmf"
	"github.com/stirank/stirank/speech"
)

func init() {
	register(command{
		name:    "enhance",
		summary: "remove noise from speech in a WAV file with a fixed KL-NMF speech dictionary and a Wiener mask",
		run:     runEnhance,
	})
}

func runEnhance(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("enhance", "--in NOISY.wav --dict W --out CLEAN.wav [--reference CLEAN.wav] [flags]")
	in := fs.String("in", "", "noisy speech, a WAV file")
	dictDir := fs.String("dict", "", "speech dictionary: a features × R dataset (stirank factorize of imported clean speech)")
	out := fs.String("out", "", "output WAV file for the speech estimate (16-bit PCM at the input's rate)")
	ref := fs.String("reference", "", "the clean speech, a WAV file of the input's length: print SDR and SI-SDR")
	noiseRank := fs.Int("noise-rank", 5, "columns of the noise dictionary fitted to the mixture")
	noiseHold := fs.Float64("noise-hold", speech.DefaultNoiseHold, "seconds over which the noise activations are held constant (0: every frame free)")
	lowCut := fs.Float64("low-cut", speech.DefaultLowCut, "Hz below which the mask removes everything, as no voice has its pitch there (0: none)")
	noiseStart := fs.Float64("noise-start", speech.DefaultNoiseStart, "fraction of the frames, the quietest, whose mean spectrum the noise columns start from (0: a random start)")
	em := addEMFlags(fs, 200)
	windowLen := fs.Int("window", spectrogram.DefaultWindow, "samples per STFT frame (Hamming window); must be the dictionary's")
	overlap := fs.Float64("overlap", spectrogram.DefaultOverlap, "fraction of a window that consecutive frames share, in [0, 1); must give the dictionary's hop")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case *in == "" || *dictDir == "" || *out == "":
		return usagef("--in, --dict and --out are required")
	case *noiseRank < 0:
		return usagef("--noise-rank %d must not be negative", *noiseRank)
	case !(*noiseHold >= 0) || math.IsInf(*noiseHold, 0):
		return usagef("--noise-hold %v must be a non-negative number of seconds", *noiseHold)
	case !(*lowCut >= 0) || math.IsInf(*lowCut, 0):
		return usagef("--low-cut %v must be a non-negative frequency in Hz", *lowCut)
	case !(*noiseStart >= 0 && *noiseStart <= 1):
		return usagef("--noise-start %v must be a fraction in [0, 1]", *noiseStart)
	}
	if err := em.check(); err != nil {
		return err
	}
	p, err := spectrogram.NewParams(*windowLen, *overlap, spectrogram.DefaultScale)
	if err != nil {
		return usageError{err}
	}
	mix, err := wav.ReadFile(*in)
	if err != nil {
		return err
	}
	d, err := tensorio.Read(ctx, *dictDir, tensorio.ReadOptions{})
	if err != nil {
		return err
	}
	dict, F, K, err := isnmf.Dictionary(d.Tensor)
	if err != nil {
		return fmt.Errorf("%s: %v", *dictDir, err)
	}
	if err := matchAnalysis(d.Manifest, p, mix.SampleRate); err != nil {
		return fmt.Errorf("%s: %v", *dictDir, err)
	}
	if F != p.Bins() {
		return fmt.Errorf("%s: the dictionary has %d rows but a window of %d gives %d frequency bins", *dictDir, F, p.Window, p.Bins())
	}
	var clean *wav.Audio
	if *ref != "" {
		if clean, err = wav.ReadFile(*ref); err != nil {
			return err
		}
		if clean.SampleRate != mix.SampleRate || len(clean.Samples) != len(mix.Samples) {
			return fmt.Errorf("%s: %d samples at %d Hz, but %s has %d at %d Hz", *ref, len(clean.Samples), clean.SampleRate, *in, len(mix.Samples), mix.SampleRate)
		}
	}
	// The rows below the cut are those of frequency k·rate/window < --low-cut.
	cut := int(math.Ceil(*lowCut * float64(p.Window) / float64(mix.SampleRate)))
	if cut >= F {
		return usagef("--low-cut %v Hz leaves no frequency row at %d Hz", *lowCut, mix.SampleRate)
	}
	start := time.Now()
	r, err := speech.Enhance(mix.Samples, speech.Options{Params: p, Dict: dict, DictCols: K, NoiseRank: *noiseRank,
		LowCut: cut, NoiseStart: *noiseStart, NoiseHold: int(math.Round(*noiseHold * float64(mix.SampleRate) / float64(p.Hop))), Iters: *em.iters, Tol: *em.tol, Seed: *em.seed, Progress: fitProgress("enhance")})
	if err != nil {
		return fmt.Errorf("%s: %v", *in, err)
	}
	var buf bytes.Buffer
	if err := wav.WritePCM16(&buf, r.Speech, mix.SampleRate); err != nil {
		return fmt.Errorf("%s: %v", *out, err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "enhanced %s into %s: %dx%d spectrogram (%d rows below %g Hz cut), %d speech + %d noise columns, KL %.6g after %d sweeps in %.1f s\n",
		*in, *out, F, r.Fit.N, cut, *lowCut, K, *noiseRank, r.Fit.KL, r.Fit.Sweeps, time.Since(start).Seconds())
	if clean == nil {
		return nil
	}
	var m [4]float64
	for i, est := range [][]float64{r.Speech, mix.Samples} {
		if m[2*i], err = speech.SDR(clean.Samples, est); err != nil {
			return fmt.Errorf("%s: %v", *ref, err)
		}
		m[2*i+1], _ = speech.SISDR(clean.Samples, est)
	}
	fmt.Fprintf(stdout, "SDR %.2f dB (input %.2f dB), SI-SDR %.2f dB (input %.2f dB)\n", m[0], m[2], m[1], m[3])
	return nil
}

// matchAnalysis checks the STFT analysis p and the sample rate against the ones a dictionary
// from stirank factorize recorded from its training spectrogram, since a dictionary of another
// window, hop or rate describes other frequencies. (The count scale may differ: it does not
// change the mask, see speech.Magnitudes.) Dictionaries made elsewhere record nothing and are
// taken as they are.
func matchAnalysis(m *tensorio.Manifest, p spectrogram.Params, rate int) error {
	prov := m.Provenance
	for _, c := range []struct {
		key  string
		have int
		what string
	}{{"data_window", p.Window, "--window"}, {"data_hop", p.Hop, "hop (--window and --overlap)"}, {"data_sample_rate", rate, "sample rate of the input"}} {
		if v, ok := prov[c.key]; ok && v != strconv.Itoa(c.have) {
			return fmt.Errorf("the dictionary was trained with %s %s, but the %s gives %d", c.key[len("data_"):], v, c.what, c.have)
		}
	}
	return nil
}
