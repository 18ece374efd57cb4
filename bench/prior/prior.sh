#!/bin/sh
# bench/prior/prior.sh — does the chosen rank depend on the prior rate? On generated sets
# (NMF 40x30 rank 3 at rate 1, NMF 60x40 rank 4 at 0.5, CP 12x10x8 rank 3 at 0.5, NMF 30x25 rank 2
# at 0.02: counts in the thousands; with DRAWN=1 also NMF 40x30 rank 3 whose rates
# `generate --rate auto` draws from Gamma(1, 1)), each drawn with seeds 1..SEEDS,
# `stirank select --ranks 1-6` (defaults otherwise) with the generating rates λ*, λ*/10, 10·λ* and
# --rate auto. Prints one line per run (set, seed, prior, chosen rank, true rank, wall and CPU
# seconds), then a markdown table: the ranks chosen per set and prior (one per seed, bold where all
# are the true rank), how many chose the true rank, and wall and CPU seconds per prior.
# Usage, from anywhere in the repository: bench/prior/prior.sh [SEEDS] (default 2; about 5 min of
# CPU per seed), or bench/prior/prior.sh --table LOG to print the table of the run lines in LOG
# (of a run cut short, say). Times are inflated by whatever else runs on the machine: compare
# the priors within one run (the runs of a set and seed run one after the other).
set -eu
# table LOG: the markdown table of the run lines in LOG.
# Fields: model shape rate "seed" N: "prior" LABEL "chose" R "(true" T) "wall" W "cpu" C.
table() {
	awk '
$4 == "seed" && $6 == "prior" { k = ++lines; g[k] = $1 " " $2 " " $3 " " $5; runs[g[k]]++
  set[k] = $1 " " $2 " (" $3 ")"; t[k] = $11; sub(/\)/, "", t[k]); p[k] = $7; r[k] = $9; w[k] = $13; c[k] = $15 }
END {
  np = split("λ* λ*/10 10λ* auto", ps, " ")
  # Only a set and seed that ran under every prior enters the table, so that its rows compare.
  for (k = 1; k <= lines; k++) {
    if (runs[g[k]] < np) continue
    s = set[k]
    if (!(s in seen)) { seen[s] = 1; order[++nsets] = s; truth[s] = t[k] }
    chosen[s, p[k]] = chosen[s, p[k]] (chosen[s, p[k]] == "" ? "" : " ") r[k]
    miss[s, p[k]] += (r[k] != t[k]); n[p[k]]++; ok[p[k]] += (r[k] == t[k]); wall[p[k]] += w[k]; cpu[p[k]] += c[k] }
  printf "| set (drawn at λ*) | true rank |"; for (i = 1; i <= np; i++) printf " %s |", ps[i]; printf "\n"
  printf "| --- | --- |"; for (i = 1; i <= np; i++) printf " --- |"; printf "\n"
  for (s = 1; s <= nsets; s++) {
    o = order[s]; printf "| %s | %s |", o, truth[o]
    for (i = 1; i <= np; i++) printf (miss[o, ps[i]] ? " %s |" : " **%s** |"), chosen[o, ps[i]]
    printf "\n" }
  printf "| chose the true rank | |"; for (i = 1; i <= np; i++) printf " %d of %d |", ok[ps[i]], n[ps[i]]; printf "\n"
  printf "| wall time, all runs | |"; for (i = 1; i <= np; i++) printf " %.0f s |", wall[ps[i]]; printf "\n"
  printf "| CPU time (user + sys), all runs | |"; for (i = 1; i <= np; i++) printf " %.0f s |", cpu[ps[i]]; printf "\n" }' "$1"
}
if [ "${1:-}" = --table ]; then
	table "$2"
	exit
fi
cd "$(dirname "$0")/../.."
seeds=${1:-2}
sets="nmf:40x30:3:1 nmf:60x40:4:0.5 cp:12x10x8:3:0.5 nmf:30x25:2:0.02"
if [ "${DRAWN:-0}" = 1 ]; then sets="$sets nmf:40x30:3:auto"; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/stirank" ./cmd/stirank
# scale RATES FACTOR: every comma-separated rate times FACTOR.
scale() { echo "$1" | awk -F, -v f="$2" '{ for (i = 1; i <= NF; i++) printf "%s%.6g", (i > 1 ? "," : ""), $i * f; print "" }'; }
for seed in $(seq 1 "$seeds"); do
	for set in $sets; do
		IFS=: read -r model shape rank rate <<EOF
$set
EOF
		d="$tmp/$model-$shape-$rate-$seed"
		"$tmp/stirank" generate --model "$model" --shape "$shape" --rank "$rank" --rate "$rate" --seed "$seed" --out "$d" >/dev/null
		# λ*: the rates the factors were drawn at (drawn per mode under --rate auto).
		rates=$(tr -d ' \n' <"$d/truth.json" | sed -n 's/.*"rates":\[\([^]]*\)\].*/\1/p')
		for label in 'λ*' 'λ*/10' '10λ*' auto; do
			case $label in
			'λ*') prior=$rates ;;
			'λ*/10') prior=$(scale "$rates" 0.1) ;;
			'10λ*') prior=$(scale "$rates" 10) ;;
			auto) prior=auto ;;
			esac
			out="$d-out-$(echo "$label" | tr -c 'a-z0-9\n' _)"
			/usr/bin/time -f '%e %U %S' -o "$tmp/time" "$tmp/stirank" select --data "$d" --model "$model" --ranks 1-6 --rates "$prior" --no-report --out "$out" >"$tmp/stdout" 2>/dev/null || :
			best=$(sed -n 's/^best rank: \([0-9]*\).*/\1/p' "$tmp/stdout")
			read -r wall user sys <"$tmp/time"
			printf '%s %s %s seed %s: prior %s chose %s (true %s) wall %.1f cpu %.1f\n' "$model" "$shape" "$rate" "$seed" "$label" "${best:-?}" "$rank" "$wall" "$(echo "$user + $sys" | bc -l)"
		done
	done
done | tee "$tmp/log"
echo
table "$tmp/log"
