// Command mixwav adds noise to clean speech at a given SNR and writes the mixture and the clean
// reference as 16-bit WAV files, the test material of experiment.sh.
//
// The noise is white (Gaussian), pink (white noise through Paul Kellet's refined 1/f filter,
// within 0.05 dB of −3 dB/octave above 10 Hz at 44.1 kHz), hum (50 Hz mains and its first 7
// harmonics at amplitudes 1/k with random phases) or babble: six espeak-ng talkers of other
// voices than the speech's, each reading Harvard sentences that are in neither the training
// nor the test speech (espeak.BabbleVoices, espeak.BabbleSentences) from a random one on, at
// equal power, shifted by random delays and summed (babble needs espeak-ng and the clean
// speech at espeak-ng's sample rate). It is scaled so that 10 log10(|s|²/|n|²) is
// -snr over the whole file. Mixture and reference are then scaled by the same gain, so that the
// mixture peaks at 0.9 at most: a 16-bit file must not clip, and a common gain leaves the SDR of
// any estimate unchanged.
//
//	go run ./bench/speech/mixwav -clean speech.wav -noise pink -snr 5 -seed 1 -noisy noisy.wav -reference clean.wav
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"

	"github.com/stirank/stirank/bench/speech/espeak"
	"github.com/stirank/stirank/io/wav"
)

func main() {
	in := flag.String("clean", "", "clean speech, a WAV file")
	kind := flag.String("noise", "white", "noise: white, pink, hum or babble")
	snr := flag.Float64("snr", 0, "signal-to-noise ratio in dB")
	seed := flag.Uint64("seed", 1, "random seed of the noise")
	noisyOut := flag.String("noisy", "", "output WAV file for the mixture")
	refOut := flag.String("reference", "", "output WAV file for the clean speech at the mixture's gain")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("mixwav: ")
	if *in == "" || *noisyOut == "" || *refOut == "" {
		log.Fatal("-clean, -noisy and -reference are required")
	}
	a, err := wav.ReadFile(*in)
	if err != nil {
		log.Fatal(err)
	}
	g := rand.New(rand.NewPCG(*seed, 0x6e6f697365))
	noise, err := makeNoise(*kind, len(a.Samples), a.SampleRate, g)
	if err != nil {
		log.Fatal(err)
	}
	ps, pn := power(a.Samples), power(noise)
	if ps == 0 {
		log.Fatalf("%s is silent", *in)
	}
	k := math.Sqrt(ps / pn / math.Pow(10, *snr/10))
	mix := make([]float64, len(noise))
	peak := 0.0
	for i, s := range a.Samples {
		mix[i] = s + k*noise[i]
		peak = max(peak, math.Abs(mix[i]))
	}
	gain := min(1, 0.9/peak)
	ref := make([]float64, len(mix))
	for i := range mix {
		mix[i] *= gain
		ref[i] = gain * a.Samples[i]
	}
	for _, f := range []struct {
		name    string
		samples []float64
	}{{*noisyOut, mix}, {*refOut, ref}} {
		var buf bytes.Buffer
		if err := wav.WritePCM16(&buf, f.samples, a.SampleRate); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(f.name, buf.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("%s: %s with %s noise at %g dB SNR (gain %.3f)\n", *noisyOut, *in, *kind, *snr, gain)
}

func makeNoise(kind string, n, rate int, g *rand.Rand) ([]float64, error) {
	noise := make([]float64, n)
	switch kind {
	case "white":
		for i := range noise {
			noise[i] = g.NormFloat64()
		}
	case "pink":
		var b [7]float64
		for i := range noise {
			w := g.NormFloat64()
			b[0] = 0.99886*b[0] + w*0.0555179
			b[1] = 0.99332*b[1] + w*0.0750759
			b[2] = 0.96900*b[2] + w*0.1538520
			b[3] = 0.86650*b[3] + w*0.3104856
			b[4] = 0.55000*b[4] + w*0.5329522
			b[5] = -0.7616*b[5] - w*0.0168980
			noise[i] = b[0] + b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + w*0.5362
			b[6] = w * 0.115926
		}
	case "hum":
		for k := 1; k <= 8; k++ {
			phase := 2 * math.Pi * g.Float64()
			for i := range noise {
				noise[i] += math.Sin(2*math.Pi*50*float64(k)*float64(i)/float64(rate)+phase) / float64(k)
			}
		}
	case "babble":
		for _, voice := range espeak.BabbleVoices {
			talker, err := talk(voice, n, rate, g)
			if err != nil {
				return nil, err
			}
			k := 1 / math.Sqrt(power(talker))
			for i, v := range talker {
				noise[i] += k * v
			}
		}
	default:
		return nil, fmt.Errorf("-noise %q: want white, pink, hum or babble", kind)
	}
	return noise, nil
}

// talk returns n samples at rate of voice reading the babble sentences in turn, from a random
// one on and as often as it takes, delayed by a random part of the whole.
func talk(voice string, n, rate int, g *rand.Rand) ([]float64, error) {
	var speech []float64
	for s := g.IntN(len(espeak.BabbleSentences)); len(speech) < n; s = (s + 1) % len(espeak.BabbleSentences) {
		a, err := espeak.Say(voice, espeak.BabbleSentences[s])
		if err != nil {
			return nil, err
		}
		if a.SampleRate != rate {
			return nil, fmt.Errorf("babble: espeak-ng speaks at %d Hz, the speech is at %d Hz", a.SampleRate, rate)
		}
		speech = append(speech, a.Samples...)
	}
	delay := g.IntN(len(speech))
	return append(speech[delay:], speech[:delay]...)[:n], nil
}

func power(x []float64) float64 {
	p := 0.0
	for _, v := range x {
		p += v * v
	}
	return p / float64(len(x))
}
