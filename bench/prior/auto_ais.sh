#!/bin/sh
# bench/prior/auto_ais.sh — is select under --rate auto right above rank 1? On small generated
# sets, every rank's STI estimate (`stirank select --rate auto --ranks 1-4`, seeds 1..SEEDS, all
# else default) against a long AIS reference under the same hyperprior (`stirank ais --rate auto
# --replicas 8`, the Gibbs kernel from the prior, 40 000 temperatures; AIS from the prior under
# auto is held to the exact rank-1 value by `go test ./baselines -run UnderAuto`). AIS at 20 000
# temperatures runs beside it: a reference that still moves with its temperatures is marked.
# Prints a markdown table (one row per set, rank and seed: STI, AIS, the offset and its z), then
# how many offsets lie within 1 nat and within 3 of STI's reported standard errors.
# Usage, from anywhere in the repository: bench/prior/auto_ais.sh [SEEDS] (default 2; about
# 10 min of CPU per seed).
set -eu
cd "$(dirname "$0")/../.."
seeds=${1:-2}
sets="nmf:12x10:2:0.5:3 cp:8x6x5:2:0.5:4 nmf:20x15:3:1:5 cp:6x5x4:3:0.3:6 nmf:30x20:3:0.3:3"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/stirank" ./cmd/stirank
# col DIR RANK FIELD: field FIELD (2 estimate, 3 stderr) of RANK's row of DIR/evidence.csv.
col() { awk -F, -v r="$2" -v f="$3" '$1 == r { print $f }' "$1/evidence.csv"; }
echo "| set (drawn at rate, seed) | rank | seed | STI | AIS, 40 000 temperatures | AIS, 20 000 | STI − AIS | z |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for set in $sets; do
	IFS=: read -r model shape rank rate dseed <<EOF
$set
EOF
	d="$tmp/$model-$shape"
	"$tmp/stirank" generate --model "$model" --shape "$shape" --rank "$rank" --rate "$rate" --seed "$dseed" --out "$d" >/dev/null
	for temps in 20000 40000; do
		"$tmp/stirank" ais --data "$d" --model "$model" --rate auto --ranks 1-4 --temperatures "$temps" --replicas 8 --no-report --out "$d-ais$temps" >/dev/null
	done
	for seed in $(seq 1 "$seeds"); do
		"$tmp/stirank" select --data "$d" --model "$model" --rate auto --ranks 1-4 --seed "$seed" --quiet --no-report --out "$d-sti$seed" >/dev/null
		for r in 1 2 3 4; do
			printf '%s %s %s %s %s %s %s %s %s\n' "$model $shape ($rate, $dseed)" "$r" "$seed" \
				"$(col "$d-sti$seed" "$r" 2)" "$(col "$d-sti$seed" "$r" 3)" \
				"$(col "$d-ais40000" "$r" 2)" "$(col "$d-ais40000" "$r" 3)" \
				"$(col "$d-ais20000" "$r" 2)" "$(col "$d-ais20000" "$r" 3)"
		done
	done
done | awk '{
  n = NF; s = $(n-5); se = $(n-4); a = $(n-3); ase = $(n-2); b = $(n-1); bse = $n
  name = $1; for (i = 2; i <= n - 8; i++) name = name " " $i
  d = s - a; z = d / se; moving = ((a - b) > 3 * sqrt(ase * ase + bse * bse)) ? " (moving)" : ""
  printf "| %s | %s | %s | %.2f ± %.2f | %.2f ± %.2f%s | %.2f ± %.2f | %+.2f | %+.1f |\n", name, $(n-7), $(n-6), s, se, a, ase, moving, b, bse, d, z
  runs++; near += (d < 1 && d > -1); covered += (z <= 3 && z >= -3) }
END { printf "\n%d of %d estimates within 1 nat of AIS, %d of %d within 3 of their reported standard errors\n", near, runs, covered, runs }'
