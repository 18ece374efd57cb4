#!/usr/bin/env bash
# make-spectrogram.sh OUTDIR: the speech-size benchmark dataset (issue 13), a 257 × 1 661 integer
# magnitude spectrogram of synthetic speech, as a count dataset in OUTDIR.
#
# espeak-ng reads Harvard sentences with two male and two female voices (bench/speech/speechwav),
# cut to exactly the 425 472 samples (22 050 Hz, 19.3 s) that give 1 661 frames of a 512-sample
# Hamming window with 50% overlap, and `stirank import` turns the WAV into counts at the default
# scale. The dataset is generated, not shipped. This script installs nothing: it needs Go and
# espeak-ng (Debian: apt-get install espeak-ng).
set -euo pipefail

out=${1:?usage: make-spectrogram.sh OUTDIR}
if ! command -v espeak-ng >/dev/null; then
	echo "make-spectrogram.sh: espeak-ng is not installed (Debian: apt-get install espeak-ng)" >&2
	exit 1
fi
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$repo" && go build -o "$tmp/stirank" ./cmd/stirank && go build -o "$tmp/speechwav" ./bench/speech/speechwav)
"$tmp/speechwav" -out "$tmp/speech.wav" -frames 1661 -window 512 -overlap 0.5
"$tmp/stirank" import --in "$tmp/speech.wav" --out "$out" --window 512 --overlap 0.5
"$tmp/stirank" inspect "$out" | grep -E '^(shape|stored cells|values) '
