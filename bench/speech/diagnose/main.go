// Command diagnose enhances the mixtures of bench/speech/unseen.sh's OUTDIR/test with the
// dictionary in OUTDIR/dict at several noise ranks and a noise hold, and prints each
// mixture's SI-SDR gain per noise rank; with -oracle also the gain of the ideal ratio mask
// |S| / (|S| + |N|) and the divergence of the clean speech fitted by the dictionary alone, as a
// fraction of its total (how well the dictionary explains the voice).
//
//	go run ./bench/speech/diagnose -dir OUT -nr 0,1,2,5,10 -oracle
//	go run ./bench/speech/diagnose -dir OUT -nr 5 -hold 43 -match pink
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
		for i, nr := range nrs {
			r, err := enhance(mix.Samples, p, dict, K, nr, *hold, *iters)
			if err != nil {
				log.Fatal(err)
			}
			s, _ := speech.SISDR(ref.Samples, r)
			fmt.Printf(" %6.2f", s-in)
			sum[i] += s - in
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

func enhance(mix []float64, p spectrogram.Params, dict []float64, D, nr, hold, iters int) ([]float64, error) {
	r, err := speech.Enhance(mix, speech.Options{Params: p, Dict: dict, DictCols: D, NoiseRank: nr, NoiseHold: hold, Iters: iters})
	if err != nil {
		return nil, err
	}
	return r.Speech, nil
}
