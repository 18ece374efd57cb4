#!/usr/bin/env bash
# unseen.sh OUTDIR: enhancement of voices the speech dictionary has not heard. A KL-NMF dictionary
# of RANK atoms (stirank factorize) is trained on one espeak-ng voice reading sentences 0–13;
# `stirank enhance` then cleans sentences 14 and 15 read by two other voices, each mixed with
# white, pink and hum noise at 0 and 5 dB (bench/speech/mixwav), and the script prints SI-SDR
# before and after for each of the 12 mixtures, their mean gain and how many got worse. It needs
# Go and espeak-ng (Debian: apt-get install espeak-ng) and installs nothing. The environment can
# change the run: RANK=64 TRAIN_VOICE=en-us+m3 TEST_VOICES="en-gb+m1 en-us+f4" FACTORIZE_ITERS=300
# ENHANCE_FLAGS="" (any enhance flags). The dictionary in OUTDIR is reused: remove OUTDIR/dict after
# changing RANK, TRAIN_VOICE or FACTORIZE_ITERS.
set -euo pipefail

out=${1:?usage: unseen.sh OUTDIR}
rank=${RANK:-64}
trainVoice=${TRAIN_VOICE:-en-us+m3}
read -r -a testVoices <<<"${TEST_VOICES:-en-gb+m1 en-us+f4}"
fiters=${FACTORIZE_ITERS:-300}
read -r -a enhanceFlags <<<"${ENHANCE_FLAGS:-}"
if ! command -v espeak-ng >/dev/null; then
	echo "unseen.sh: espeak-ng is not installed (Debian: apt-get install espeak-ng)" >&2
	exit 1
fi
repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out/bin" "$out/test"
(cd "$repo" && go build -o "$out/bin/stirank" ./cmd/stirank && go build -o "$out/bin/speechwav" ./bench/speech/speechwav &&
	go build -o "$out/bin/mixwav" ./bench/speech/mixwav)
bin=$out/bin

if [[ ! -f $out/dict/manifest.json ]]; then
	rm -rf "$out/train" "$out/dict"
	"$bin/speechwav" -out "$out/train.wav" -frames 0 -sentences 0:14 -voice "$trainVoice" >/dev/null
	"$bin/stirank" import --in "$out/train.wav" --out "$out/train" >/dev/null
	"$bin/stirank" factorize --data "$out/train" --rank "$rank" --iters "$fiters" --out "$out/dict" >/dev/null 2>&1
fi
printf "%-9s  %-6s  %4s  %12s  %7s  %7s\n" voice noise snr "input SI-SDR" SI-SDR gain
n=14
for voice in "${testVoices[@]}"; do
	clean=$out/test/s$n-$voice.wav
	[[ -f $clean ]] || "$bin/speechwav" -out "$clean" -frames 0 -sentences "$n:$((n + 1))" -voice "$voice" >/dev/null
	for noise in white pink hum; do
		for snr in 0 5; do
			m=$out/test/s$n-$voice-$noise-$snr
			[[ -f $m-noisy.wav ]] || "$bin/mixwav" -clean "$clean" -noise "$noise" -snr "$snr" -seed "$n" \
				-noisy "$m-noisy.wav" -reference "$m-clean.wav" >/dev/null
			# SDR a dB (input b dB), SI-SDR c dB (input d dB)
			"$bin/stirank" enhance --in "$m-noisy.wav" --dict "$out/dict" --out "$m-enhanced.wav" \
				--reference "$m-clean.wav" "${enhanceFlags[@]}" 2>/dev/null | grep '^SDR ' |
				awk -v v="$voice" -v no="$noise" -v s="$snr" '{ gsub(/[(),]/, ""); printf "%-9s  %-6s  %4s  %12.2f  %7.2f  %7.2f\n", v, no, s, $11, $8, $8 - $11 }'
		done
	done
	n=$((n + 1))
done | tee "$out/table.txt"
awk '{ g += $6; n++; if ($6 < 0) worse++; if (n == 1 || $6 < lo) lo = $6 }
	END { printf "mean SI-SDR gain %.2f dB over %d mixtures; %d worse; lowest gain %.2f dB\n", g / n, n, worse, lo }' "$out/table.txt"
