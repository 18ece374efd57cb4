#!/bin/sh
# bench/prior/prior.sh — does the chosen rank depend on the prior rate? On four generated sets
# (NMF 40x30 rank 3 at rate 1, NMF 60x40 rank 4 at 0.5, CP 12x10x8 rank 3 at 0.5, NMF 30x25 rank 2
# at 0.02: counts in the thousands), each drawn with seeds 1..SEEDS, `stirank select --ranks 1-6`
# with the generating rate λ*, λ*/10, 10·λ* and --rate auto. Prints one line per run: set, seed,
# prior, chosen rank, true rank, wall seconds; then, per prior, how many chose the true rank.
# Usage, from anywhere in the repository: bench/prior/prior.sh [SEEDS] (default 2; about 4 min per
# seed on 2 free cores). Wall times are inflated by whatever else runs on the machine: compare
# the priors within one run.
set -eu
cd "$(dirname "$0")/../.."
seeds=${1:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/stirank" ./cmd/stirank
for set in "nmf 40x30 3 1" "nmf 60x40 4 0.5" "cp 12x10x8 3 0.5" "nmf 30x25 2 0.02"; do
	set -- $set
	model=$1 shape=$2 rank=$3 rate=$4
	for seed in $(seq 1 "$seeds"); do
		d="$tmp/$model-$shape-$seed"
		"$tmp/stirank" generate --model "$model" --shape "$shape" --rank "$rank" --rate "$rate" --seed "$seed" --out "$d" >/dev/null
		for prior in "$rate" "$(echo "$rate / 10" | bc -l)" "$(echo "$rate * 10" | bc -l)" auto; do
			start=$(date +%s.%N)
			best=$("$tmp/stirank" select --data "$d" --model "$model" --ranks 1-6 --rate "$prior" --no-report --out "$d-out-$prior" 2>/dev/null | sed -n 's/^best rank: \([0-9]*\).*/\1/p')
			end=$(date +%s.%N)
			label=$prior
			case $prior in
			"$rate") label="λ*" ;;
			auto) ;;
			*) if [ "$(echo "$prior < $rate" | bc -l)" = 1 ]; then label="λ*/10"; else label="10λ*"; fi ;;
			esac
			printf '%s %s seed %s: prior %s chose %s (true %s) %.0f s\n' "$model" "$shape" "$seed" "$label" "${best:-?}" "$rank" "$(echo "$end - $start" | bc -l)"
		done
	done
done | tee "$tmp/log"
# Fields: model shape "seed" N: "prior" LABEL "chose" R "(true" T) SECONDS "s".
awk '{ t = $10; sub(/\)/, "", t); n[$6]++; if ($8 == t) ok[$6]++; secs[$6] += $11 }
END { for (p in n) printf "prior %s: chose the true rank %d of %d, %.0f s in all\n", p, ok[p], n[p], secs[p] }' "$tmp/log"
