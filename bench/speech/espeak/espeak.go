// Package espeak is the synthetic speech of bench/speech: espeak-ng reading Harvard sentences.
// The speakers and sentences of the training and test speech (Voices, Sentences) and of babble
// noise (BabbleVoices, BabbleSentences) are disjoint, so that no noise talker or sentence is in
// the speech the dictionaries are trained or tested on. espeak-ng must be installed (Debian:
// apt-get install espeak-ng); nothing here installs it.
package espeak

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/stirank/stirank/io/wav"
)

// Voices alternate male and female espeak-ng variants of two English accents, so that the
// speech holds more than one speaker's pitch and formants.
var Voices = []string{"en-us+m3", "en-gb+f3", "en-gb+m1", "en-us+f4"}

// Sentences are Harvard sentences (IEEE 1969, lists 1 and 2), the phonetically balanced set
// that speech corpora such as NOIZEUS draw on.
var Sentences = []string{
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

// BabbleVoices are the talkers of babble noise: male and female variants of other accents and
// pitches than Voices'.
var BabbleVoices = []string{"en-gb-scotland+m2", "en-us+f2", "en-gb-x-rp+f5", "en-us+m6", "en-gb+m4", "en-gb-scotland+f1"}

// BabbleSentences are Harvard sentences of lists 3 and 4, none of them in Sentences.
var BabbleSentences = []string{
	"The small pup gnawed a hole in the sock.",
	"The fish twisted and turned on the bent hook.",
	"Press the pants and sew a button on the vest.",
	"The swan dive was far short of perfect.",
	"The beauty of the view stunned the young boy.",
	"Two blue fish swam in the tank.",
	"Her purse was full of useless trash.",
	"The colt reared and threw the tall rider.",
	"It snowed, rained, and hailed the same morning.",
	"Read verse out loud for pleasure.",
	"Hoist the load to your left shoulder.",
	"Take the winding path to reach the lake.",
	"Note closely the size of the gas tank.",
	"Wipe the grease off his dirty face.",
	"Mend the coat before you go out.",
	"The wrist was badly strained and hung limp.",
	"The stray cat gave birth to kittens.",
	"The young girl gave no clear response.",
	"The meal was cooked before the bell rang.",
	"What joy there is in living.",
}

// Say returns espeak-ng's reading of text in voice.
func Say(voice, text string) (*wav.Audio, error) {
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		return nil, errors.New("espeak-ng is not installed (Debian: apt-get install espeak-ng)")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("espeak-ng", "-v", voice, "--stdout", text)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("espeak-ng -v %s: %v: %s", voice, err, strings.TrimSpace(stderr.String()))
	}
	return wav.Read(&stdout, int64(stdout.Len()), "espeak-ng -v "+voice)
}
