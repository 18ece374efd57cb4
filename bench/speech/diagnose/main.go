// Command diagnose enhances the mixtures of bench/speech/unseen.sh's OUTDIR/test with the
// dictionary in OUTDIR/dict at several noise ranks and a noise hold, and prints each
// mixture's SI-SDR gain per noise rank; with -oracle also the gain of the ideal ratio mask
// |S| / (|S| + |N|) and the divergence of the clean speech fitted by the dictionary alone, as a
// fraction of its total (how well the dictionary explains the voice); with -leak the fraction of
// the noise's energy that the mask of the last noise rank passes, below 129 Hz (rows 0–2) and in
// all (where the speech columns explain noise).
//
//	go run ./bench/speech/diagnose -dir OUT -nr 0,1,2,5,10 -oracle
//	go run ./bench/speech/diagnose -dir OUT -nr 5 -hold 43 -match pink
//	go run ./bench/speech/diagnose -dir OUT -nr 5 -hold 43 -cut 2 -start 0.1 -leak
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/cmplx"
	"path/filepath"
	"strings"

	"github.com/stirank/stirank/io/spectrogram"
	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/io/wav"
	"github.com/stirank/stirank/models/isnmf"
	"github.com/stirank/stirank/models/klnmf"
	"github.com/stirank/stirank/speech"
)

func main() {
	dir := flag.String("dir", "", "OUTDIR of bench/speech/unseen.sh")
	ranks := flag.String("nr", "0,1,2,5", "noise ranks, comma-separated: one column of gains each")
	match := flag.String("match", "", "only the mixtures whose file name contains this")
	iters := flag.Int("iters", 200, "EM sweeps")
	oracle := flag.Bool("oracle", false, "also the ideal ratio mask and the dictionary's fit of the clean speech")
	hold := flag.Int("hold", 0, "frames over which the noise activations are held (speech.Options.NoiseHold)")
	cut := flag.Int("cut", 0, "frequency rows below the low cut (speech.Options.LowCut; enhance's 80 Hz is 2 rows at 22050 Hz)")
	start := flag.Float64("start", 0, "fraction of quietest frames the noise starts from (speech.Options.NoiseStart)")
	leak := flag.Bool("leak", false, "also the fraction of the noise's energy the mask passes, below 129 Hz and in all")
	flag.Parse()
	d, err := tensorio.Read(context.Background(), *dir+"/dict", tensorio.ReadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	dict, _, K, err := isnmf.Dictionary(d.Tensor)
	if err != nil {
		log.Fatal(err)
	}
	p, _ := spectrogram.NewParams(spectrogram.DefaultWindow, spectrogram.DefaultOverlap, spectrogram.DefaultScale)
	files, _ := filepath.Glob(*dir + "/test/*" + *match + "*-noisy.wav")
	var nrs []int
	for _, s := range strings.Split(*ranks, ",") {
		var r int
		if _, err := fmt.Sscan(s, &r); err != nil {
			log.Fatalf("-nr %q: %v", *ranks, err)
		}
		nrs = append(nrs, r)
	}
	sum := make([]float64, len(nrs)+2)
	for _, fn := range files {
		mix, err := wav.ReadFile(fn)
		if err != nil {
			log.Fatal(err)
		}
		ref, err := wav.ReadFile(strings.TrimSuffix(fn, "-noisy.wav") + "-clean.wav")
		if err != nil {
			log.Fatal(err)
		}
		in, _ := speech.SISDR(ref.Samples, mix.Samples)
		fmt.Printf("%-30s %6.2f", filepath.Base(fn), in)
		var last *speech.Result
		for i, nr := range nrs {
			r, err := speech.Enhance(mix.Samples, speech.Options{Params: p, Dict: dict, DictCols: K, NoiseRank: nr, NoiseHold: *hold,
				LowCut: *cut, NoiseStart: *start, Iters: *iters})
			if err != nil {
				log.Fatal(err)
			}
			last = r
			s, _ := speech.SISDR(ref.Samples, r.Speech)
			fmt.Printf(" %6.2f", s-in)
			sum[i] += s - in
		}
		if *leak {
			noise := make([]float64, len(mix.Samples))
			for i := range noise {
				noise[i] = mix.Samples[i] - ref.Samples[i]
			}
			low, all := passed(noise, last.Fit, K, *cut, p)
			fmt.Printf("  leak <129 Hz %.3f all %.3f", low, all)
		}
		if *oracle {
			n := len(mix.Samples)
			noise := make([]float64, n)
			for i := range noise {
				noise[i] = mix.Samples[i] - ref.Samples[i]
			}
			irm := idealMask(mix.Samples, ref.Samples, noise, p)
			s, _ := speech.SISDR(ref.Samples, irm)
			fmt.Printf("  IRM %6.2f", s-in)
			sum[len(nrs)] += s - in
			spec, _ := spectrogram.STFT(ref.Samples, p)
			x := speech.Magnitudes(spec, p.Scale)
			fit, _ := klnmf.Fit(x, klnmf.Options{Fixed: dict, FixedCols: K, Iters: 200})
			fmt.Printf("  speechKL/sum %.3f", fit.KL/x.Sum())
		}
		fmt.Println()
	}
	fmt.Printf("%-30s %6s", "mean", "")
	for i := range nrs {
		fmt.Printf(" %6.2f", sum[i]/float64(len(files)))
	}
	if *oracle {
		fmt.Printf("  IRM %6.2f", sum[len(nrs)]/float64(len(files)))
	}
	fmt.Println()
}

func idealMask(mix, s, n []float64, p spectrogram.Params) []float64 {
	sm, _ := spectrogram.STFT(mix, p)
	ss, _ := spectrogram.STFT(s, p)
	sn, _ := spectrogram.STFT(n, p)
	for f := range sm {
		for k := range sm[f] {
			a, b := cmplx.Abs(ss[f][k]), cmplx.Abs(sn[f][k])
			if a+b > 0 {
				sm[f][k] *= complex(a/(a+b), 0)
			}
		}
	}
	out, _ := spectrogram.ISTFT(sm, p, len(mix))
	return out[:len(mix)]
}

// passed returns the fractions of noise's energy below row 3 and in all that the mask of fit
// (its first D columns speech, its rows from row cut on) passes.
func passed(noise []float64, fit *klnmf.Result, D, cut int, p spectrogram.Params) (low, all float64) {
	if n := len(noise); n > p.Window && (n-p.Window)%p.Hop != 0 {
		noise = append(noise, make([]float64, p.Samples(p.Frames(n)+1)-n)...)
	}
	spec, _ := spectrogram.STFT(noise, p)
	var lowIn, allIn float64
	K, N := fit.K, fit.N
	for f, coeffs := range spec {
		for k, c := range coeffs {
			e := real(c)*real(c) + imag(c)*imag(c)
			m := 0.0
			if k >= cut {
				sp, tot := 0.0, 0.0
				for r := range K {
					v := fit.W[(k-cut)*K+r] * fit.H[r*N+f]
					tot += v
					if r < D {
						sp += v
					}
				}
				if tot > 0 {
					m = sp / tot
				}
			}
			allIn += e
			all += m * m * e
			if k < 3 {
				lowIn += e
				low += m * m * e
			}
		}
	}
	return low / lowIn, all / allIn
}
