#!/usr/bin/env bash
# experiment.sh OUTDIR: the speech enhancement experiment of ICASSP 2016 §4.2 with synthetic
# speech. For every speech dictionary size R^sp it trains a KL-NMF dictionary on clean speech,
# enhances noisy test speech with it (stirank enhance, 5 noise columns), estimates the STI log
# evidence log p(X | R^sp) of the training spectrogram under Poisson NMF (stirank select), and
# prints the mean SDR and SI-SDR over the test mixtures, with their means before enhancement,
# beside the evidence, and whether the evidence peaks where enhancement does.
#
# Training speech: make-spectrogram.sh's 257 × 1 661 spectrogram (espeak-ng reading Harvard
# sentences from the first 14 with two male and two female voices; it needs 9). Test speech:
# each of sentences 14–19, read by voice (n mod 4), so no test sentence is in the training set,
# mixed with white, pink and hum noise at 0 and 5 dB SNR (bench/speech/mixwav; NOISES may add
# babble, six other espeak-ng voices reading sentences in neither set, and SNRS 10 and 15).
#
# The evidence: one race, `stirank select --model nmf --ranks R^sp,… --rate auto` on the training
# spectrogram (select's defaults, STI_FLAGS added), so that every rank's prior has the hyperprior
# centred where its prior mean of a cell is the data's mean (docs/prior.md); the evidence of a rank,
# its standard error and the race's wall time go to OUTDIR/evidence.csv.
#
# Everything is written under OUTDIR (WAV files, datasets, results.csv with one row per
# mixture and dictionary, and the figure experiment.svg/png: the mean gains and the evidence
# against R^sp, drawn by bench/speech/plot); the table goes to stdout. It needs Go and espeak-ng (Debian:
# apt-get install espeak-ng) and installs nothing. The environment can shrink the run:
#   RANKS="32 64 128 256 512"  SNRS="0 5"  NOISES="white pink hum"
#   TEST=14:17 (sentences FROM:TO)  FACTORIZE_ITERS=300  ENHANCE_ITERS=200
#   STI_FLAGS="" (any select flags, such as --time 5m)
# README gives the measured cost and bias of each part. Dictionaries and evidence already in
# OUTDIR are reused by rank: remove OUTDIR/dictR or OUTDIR/evidence.csv after changing settings.
set -euo pipefail

out=${1:?usage: experiment.sh OUTDIR}
ranks=${RANKS:-32 64 128 256 512}
snrs=${SNRS:-0 5}
noises=${NOISES:-white pink hum}
test=${TEST:-14:17}
fiters=${FACTORIZE_ITERS:-300}
eiters=${ENHANCE_ITERS:-200}
read -r -a sti_flags <<<"${STI_FLAGS:-}"
if ! command -v espeak-ng >/dev/null; then
	echo "experiment.sh: espeak-ng is not installed (Debian: apt-get install espeak-ng)" >&2
	exit 1
fi
if [[ ! $test =~ ^([0-9]+):([0-9]+)$ ]] || ((BASH_REMATCH[1] < 14)); then
	echo "experiment.sh: TEST=$test: want FROM:TO with FROM >= 14, after the training sentences" >&2
	exit 1
fi
repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out/bin" "$out/test"
(cd "$repo" && go build -o "$out/bin/stirank" ./cmd/stirank && go build -o "$out/bin/speechwav" ./bench/speech/speechwav &&
	go build -o "$out/bin/mixwav" ./bench/speech/mixwav && go build -o "$out/bin/plot" ./bench/speech/plot)
bin=$out/bin

if [[ ! -f $out/train/manifest.json ]]; then
	"$bin/speechwav" -out "$out/train.wav" -sentences 0:14 -frames 1661
	"$bin/stirank" import --in "$out/train.wav" --out "$out/train"
fi
for ((n = BASH_REMATCH[1]; n < BASH_REMATCH[2]; n++)); do
	clean=$out/test/s$n.wav
	[[ -f $clean ]] || "$bin/speechwav" -out "$clean" -frames 0 -sentences "$n:$((n + 1))" >/dev/null
	for noise in $noises; do
		for snr in $snrs; do
			m=$out/test/s$n-$noise-$snr
			[[ -f $m-noisy.wav ]] || "$bin/mixwav" -clean "$clean" -noise "$noise" -snr "$snr" -seed "$n" \
				-noisy "$m-noisy.wav" -reference "$m-clean.wav" >/dev/null
		done
	done
done

# The evidence of the training spectrogram at every R^sp: one race under the hyperprior.
evidence=$out/evidence.csv
if [[ ! -f $evidence ]]; then
	rm -rf "$out/evidence"
	start=$SECONDS
	"$bin/stirank" select --model nmf --data "$out/train" --ranks "$(echo $ranks | tr ' ' ,)" --rate auto "${sti_flags[@]}" \
		--out "$out/evidence" --quiet --no-report >/dev/null
	# evidence.csv's columns by name: rank, log_evidence, stderr, …
	awk -F, -v secs=$((SECONDS - start)) 'NR == 1 { print "rank,rate,log_evidence,stderr,seconds"; for (i = 1; i <= NF; i++) c[$i] = i; next }
		{ print $c["rank"] ",auto," $c["log_evidence"] "," $c["stderr"] "," secs }' "$out/evidence/evidence.csv" >"$evidence"
fi

results=$out/results.csv
echo "rank,sentence,noise,snr,sdr,input_sdr,si_sdr,input_si_sdr" >"$results"
for r in $ranks; do
	dict=$out/dict$r
	if [[ ! -f $dict/manifest.json ]]; then
		"$bin/stirank" factorize --data "$out/train" --rank "$r" --out "$dict" --iters "$fiters" 2>/dev/null
	fi
	for m in "$out"/test/s*-noisy.wav; do
		base=${m%-noisy.wav}
		IFS=- read -r sentence noise snr <<<"${base##*/}"
		line=$("$bin/stirank" enhance --in "$m" --dict "$dict" --out "$base-r$r.wav" --reference "$base-clean.wav" \
			--iters "$eiters" 2>/dev/null | grep '^SDR ')
		# SDR a dB (input b dB), SI-SDR c dB (input d dB) over …
		read -r sdr isdr sisdr isisdr < <(echo "$line" | awk '{gsub(/[(),]/, ""); print $2, $5, $8, $11}')
		echo "$r,${sentence#s},$noise,$snr,$sdr,$isdr,$sisdr,$isisdr" >>"$results"
	done
done

echo "mean over $(($(grep -c "^${ranks%% *}," "$results"))) mixtures per dictionary (results: $results; evidence: $evidence)"
awk -F, 'FNR == 1 { next }
FILENAME == ARGV[1] { ev[$1] = $3; se[$1] = $4; secs[$1] = $5; next }
{
	n[$1]++; sdr[$1] += $5; isdr[$1] += $6; sisdr[$1] += $7; isisdr[$1] += $8
	if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 }
}
END {
	printf "%6s  %9s  %9s  %9s  %12s  %12s  %12s  %14s  %8s  %7s\n", "R^sp", "input SDR", "SDR", "SDR gain",
		"input SI-SDR", "SI-SDR", "SI-SDR gain", "log p(X|R^sp)", "± stderr", "race s"
	for (i = 1; i <= k; i++) {
		r = order[i]
		printf "%6d  %9.2f  %9.2f  %9.2f  %12.2f  %12.2f  %12.2f  %14.1f  %8.1f  %7d\n", r, isdr[r] / n[r], sdr[r] / n[r],
			(sdr[r] - isdr[r]) / n[r], isisdr[r] / n[r], sisdr[r] / n[r], (sisdr[r] - isisdr[r]) / n[r], ev[r], se[r], secs[r]
		if (i == 1 || ev[r] > ev[bestEv]) bestEv = r
		if (i == 1 || sdr[r] / n[r] > sdr[bestSdr] / n[bestSdr]) bestSdr = r
	}
	verdict = "the evidence does not choose the dictionary size where enhancement stops improving"
	if (bestEv == bestSdr) verdict = "the evidence chooses the dictionary size where enhancement stops improving"
	printf "STI evidence peaks at R^sp = %d; mean SDR peaks at R^sp = %d: %s\n", bestEv, bestSdr, verdict
}' "$evidence" "$results"
"$bin/plot" -results "$results" -evidence "$evidence" -out "$out/experiment"
echo "figure: $out/experiment.svg, $out/experiment.png"
