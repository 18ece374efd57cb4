// Command speechwav writes a mono 16-bit WAV file of synthetic speech, espeak-ng reading English
// sentences in turn with male and female voices, cut or padded with silence to exactly the
// length whose spectrogram has the requested number of frames (or, with -frames 0, as long as the
// sentences). make-spectrogram.sh turns it into the speech-size benchmark dataset, and
// experiment.sh draws its training and test speech from disjoint ranges of sentences; espeak-ng
// must be installed (Debian: apt-get install espeak-ng), this program installs nothing.
//
//	go run ./bench/speech/speechwav -out speech.wav -frames 1661
//	go run ./bench/speech/speechwav -out test.wav -frames 0 -sentences 15:16
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"os"

	"github.com/stirank/stirank/bench/speech/espeak"
	"github.com/stirank/stirank/io/spectrogram"
	"github.com/stirank/stirank/io/wav"
)

func main() {
	out := flag.String("out", "", "output WAV file")
	frames := flag.Int("frames", 1661, "spectrogram frames the audio must give exactly (0: all of the sentences, uncut)")
	span := flag.String("sentences", fmt.Sprintf("0:%d", len(espeak.Sentences)), fmt.Sprintf("range FROM:TO of the %d sentences to read, in order; sentence n is read by voice n mod %d", len(espeak.Sentences), len(espeak.Voices)))
	voiceFlag := flag.String("voice", "", fmt.Sprintf("one espeak-ng voice to read every sentence (default: sentence n is read by voice n mod %d of %v)", len(espeak.Voices), espeak.Voices))
	windowLen := flag.Int("window", spectrogram.DefaultWindow, "spectrogram window in samples")
	overlap := flag.Float64("overlap", spectrogram.DefaultOverlap, "fraction of a window that consecutive frames share")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("speechwav: ")
	var from, to int
	if _, err := fmt.Sscanf(*span, "%d:%d", &from, &to); err != nil || from < 0 || from >= to || to > len(espeak.Sentences) {
		log.Fatalf("-sentences %q: want FROM:TO with 0 <= FROM < TO <= %d", *span, len(espeak.Sentences))
	}
	if *out == "" || *frames < 0 {
		log.Fatal("-out is required and -frames must not be negative")
	}
	p, err := spectrogram.NewParams(*windowLen, *overlap, 1)
	if err != nil {
		log.Fatal(err)
	}
	want := math.MaxInt
	if *frames > 0 {
		want = p.Samples(*frames)
	}
	var speech []float64
	rate, spoken := 0, 0
	for n := from; len(speech) < want && n < to; n++ {
		voice := espeak.Voices[n%len(espeak.Voices)]
		if *voiceFlag != "" {
			voice = *voiceFlag
		}
		a, err := espeak.Say(voice, espeak.Sentences[n])
		if err != nil {
			log.Fatal(err)
		}
		if rate != 0 && a.SampleRate != rate {
			log.Fatalf("voice %s speaks at %d Hz, the others at %d Hz", voice, a.SampleRate, rate)
		}
		rate = a.SampleRate
		speech = append(speech, a.Samples...)
		spoken++
	}
	voices := min(spoken, len(espeak.Voices))
	if *voiceFlag != "" {
		voices = 1
	}
	if *frames == 0 {
		want = len(speech)
	}
	padded := want - len(speech)
	if padded > 0 {
		speech = append(speech, make([]float64, padded)...)
	}
	speech = speech[:want]
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	if err := wav.WritePCM16(f, speech, rate); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d sentences by %d voices, %d samples at %d Hz (%.2f s; %d padded with silence) for %d frames of %d with hop %d\n",
		*out, spoken, voices, want, rate, float64(want)/float64(rate), max(padded, 0), p.Frames(want), p.Window, p.Hop)
}
