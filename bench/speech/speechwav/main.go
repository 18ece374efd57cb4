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
	"bytes"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"strings"

	"github.com/stirank/stirank/io/spectrogram"
	"github.com/stirank/stirank/io/wav"
)

// voices alternate male and female espeak-ng variants of two English accents, so that the
// spectrogram holds more than one speaker's pitch and formants.
var voices = []string{"en-us+m3", "en-gb+f3", "en-gb+m1", "en-us+f4"}

// sentences are Harvard sentences (IEEE 1969, lists 1 and 2), the phonetically balanced set
// that speech corpora such as NOIZEUS draw on.
var sentences = []string{
	"The birch canoe slid on the smooth planks.",
	"Glue the sheet to the dark blue background.",
	"It's easy to tell the depth of a well.",
	"These days a chicken leg is a rare dish.",
	"Rice is often served in round bowls.",
	"The juice of lemons makes fine punch.",
	"The box was thrown beside the parked truck.",
	"The hogs were fed chopped corn and garbage.",
	"Four hours of steady work faced us.",
	"A large size in stockings is hard to sell.",
	"The boy was there when the sun rose.",
	"A rod is used to catch pink salmon.",
	"The source of the huge river is the clear spring.",
	"Kick the ball straight and follow through.",
	"Help the woman get back to her feet.",
	"A pot of tea helps to pass the evening.",
	"Smoky fires lack flame and heat.",
	"The soft cushion broke the man's fall.",
	"The salt breeze came across from the sea.",
	"The girl at the booth sold fifty bonds.",
}

func main() {
	out := flag.String("out", "", "output WAV file")
	frames := flag.Int("frames", 1661, "spectrogram frames the audio must give exactly (0: all of the sentences, uncut)")
	span := flag.String("sentences", fmt.Sprintf("0:%d", len(sentences)), fmt.Sprintf("range FROM:TO of the %d sentences to read, in order; sentence n is read by voice n mod %d", len(sentences), len(voices)))
	windowLen := flag.Int("window", spectrogram.DefaultWindow, "spectrogram window in samples")
	overlap := flag.Float64("overlap", spectrogram.DefaultOverlap, "fraction of a window that consecutive frames share")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("speechwav: ")
	var from, to int
	if _, err := fmt.Sscanf(*span, "%d:%d", &from, &to); err != nil || from < 0 || from >= to || to > len(sentences) {
		log.Fatalf("-sentences %q: want FROM:TO with 0 <= FROM < TO <= %d", *span, len(sentences))
	}
	if *out == "" || *frames < 0 {
		log.Fatal("-out is required and -frames must not be negative")
	}
	p, err := spectrogram.NewParams(*windowLen, *overlap, 1)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		log.Fatal("espeak-ng is not installed (Debian: apt-get install espeak-ng)")
	}
	want := math.MaxInt
	if *frames > 0 {
		want = p.Samples(*frames)
	}
	var speech []float64
	rate, spoken := 0, 0
	for n := from; len(speech) < want && n < to; n++ {
		voice := voices[n%len(voices)]
		a, err := say(voice, sentences[n])
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
		*out, spoken, min(spoken, len(voices)), want, rate, float64(want)/float64(rate), max(padded, 0), p.Frames(want), p.Window, p.Hop)
}

// say returns espeak-ng's reading of text in voice.
func say(voice, text string) (*wav.Audio, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("espeak-ng", "-v", voice, "--stdout", text)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("espeak-ng -v %s: %v: %s", voice, err, strings.TrimSpace(stderr.String()))
	}
	return wav.Read(&stdout, int64(stdout.Len()), "espeak-ng -v "+voice)
}
