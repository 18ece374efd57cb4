#!/usr/bin/env bash
# Replays a corpus of hostile inputs and flags through the stirank commands under an
# address-space limit and prints one table row per run: case, command, exit status, first line of
# stderr, peak resident memory, and whether a failed run left output behind. Every bad input must
# give a one-line error, a non-zero exit, no output and bounded memory (issue 17).
#
#   scripts/hostile/run.sh [WORKDIR]    (default: a new temporary directory, removed at the end)
#
# Environment: LIMIT_KB (ulimit -v, default 3000000), TIMEOUT (seconds per run, default 120).
# To extend it, add a line to the "Flags and shapes" section or a case to tensoriotest.Corpus.
set -u
cd "$(dirname "$0")/../.."
LIMIT_KB=${LIMIT_KB:-3000000}
TIMEOUT=${TIMEOUT:-120}
work=${1:-}
if [ -z "$work" ]; then
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
bin=$work/stirank
go build -o "$bin" ./cmd/stirank || exit 1
go run ./scripts/hostile/corpus "$work/corpus" >"$work/cases.tsv" || exit 1

printf '%-26s %-9s %4s %7s %-7s %s\n' case command exit peak-MB partial "first line of stderr"
# row CASE OUT ARGS... runs stirank ARGS under the limits; OUT is the path a failed run must not
# leave (or -).
row() {
	local name=$1 out=$2
	shift 2
	local err=$work/stderr
	/usr/bin/time -f %M -o "$work/peak" bash -c 'ulimit -v "$1"; shift; exec timeout "$@"' _ \
		"$LIMIT_KB" "$TIMEOUT" "$bin" "$@" >/dev/null 2>"$err"
	local code=$?
	local peak
	peak=$(tail -1 "$work/peak" | awk '{printf "%.0f", $1/1024}')
	local partial=no
	if [ "$out" != - ] && [ -e "$out" ] && [ "$code" -ne 0 ]; then partial=yes; fi
	local lines
	lines=$(wc -l <"$err")
	[ "$code" -eq 124 ] && partial="$partial,timeout"
	[ "$lines" -gt 1 ] && partial="$partial,${lines}lines"
	printf '%-26s %-9s %4s %7s %-7s %s\n' "$name" "$1" "$code" "$peak" "$partial" "$(head -1 "$err" | cut -c1-150)"
}

small=$work/small
"$bin" generate --model nmf --shape 6x5 --rank 1 --out "$small" >/dev/null
printf 'i,j,value\n29,19,1\n' >"$work/inc.csv"

# Controls: good runs must still work under the limits.
row control-select "$work/ctl1" select --data "$small" --ranks 1-2 --steps 40 --temperatures 4 --quiet --out "$work/ctl1"
row control-reanalyze - reanalyze --data "$small" --state "$work/ctl2" --ranks 1 --steps 40 --temperatures 4 --quiet

# The corpus: every bad dataset through every command that reads data, every bad text file
# through import.
while IFS=$'\t' read -r name kind path flags; do
	if [ "$kind" = dataset ]; then
		row "$name" - inspect "$path"
		row "$name" "$work/out-$name" select --data "$path" --ranks 1 --steps 20 --temperatures 2 --quiet --out "$work/out-$name"
		row "$name" "$work/chib-$name" chib --data "$path" --ranks 1 --out "$work/chib-$name"
		row "$name" "$work/ais-$name" ais --data "$path" --ranks 1 --temperatures 5 --out "$work/ais-$name"
		row "$name" "$work/st-$name" reanalyze --data "$path" --state "$work/st-$name" --ranks 1 --quiet
		row "$name" - append --data "$path" --in "$work/inc.csv"
	else
		# shellcheck disable=SC2086 # the flags are words
		row "$name" "$work/imp-$name" import --in "$path" $flags --out "$work/imp-$name"
	fi
done <"$work/cases.tsv"

# Flags and shapes.
printf '%%%%MatrixMarket matrix coordinate integer general\n1000000000 1000000000 2\n1 1 3\n5 7 2\n' >"$work/big.mtx"
"$bin" import --in "$work/big.mtx" --out "$work/big" >/dev/null
row generate-rate-1e-4 "$work/g1" generate --model nmf --shape 3x3 --rank 1 --rate 1e-4 --out "$work/g1"
row generate-rate-1e-9 "$work/g2" generate --model nmf --shape 3x3 --rank 1 --rate 1e-9 --out "$work/g2"
row generate-rank-1e9 "$work/g3" generate --model nmf --shape 3x3 --rank 1000000000 --out "$work/g3"
row generate-cube-1e9 "$work/g4" generate --model cp --shape 1000000000x1000000000x1000000000 --rank 2 --out "$work/g4"
row mtx-shape-1e9 "$work/o1" select --data "$work/big" --ranks 1-2 --out "$work/o1"
row chib-shape-1e9 "$work/o2" chib --data "$work/big" --ranks 1 --out "$work/o2"
row temperatures-1e9 "$work/o3" select --data "$small" --ranks 1 --temperatures 1000000000 --out "$work/o3"
row chains-1e9 "$work/o4" select --data "$small" --ranks 1 --chains 1000000000 --out "$work/o4"

# State directories: a user's directory is refused untouched; a failed first run leaves none.
mine=$work/mine
mkdir -p "$mine/runs" "$mine/latest"
echo notes >"$mine/notes.txt"
echo data >"$mine/runs/2025.csv"
echo draft >"$mine/.tmp-draft"
before=$(cd "$mine" && find . -type f | sort | xargs md5sum)
row statedir-foreign - reanalyze --data "$small" --state "$mine" --ranks 1 --quiet
after=$(cd "$mine" && find . -type f | sort | xargs md5sum)
[ "$before" = "$after" ] || echo "statedir-foreign: FILES CHANGED in $mine"
row statedir-failed-first "$work/newstate" reanalyze --data "$small" --state "$work/newstate" --model cp --ranks 1 --quiet
row state-url-scheme "$work/st2" reanalyze --data "$small" --state "$work/st2" --state-url nosuch://b/p --ranks 1 --quiet
