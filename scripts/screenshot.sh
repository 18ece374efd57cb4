#!/bin/sh
# Screenshot check of the report: runs the README's first command (into a fresh directory, as
# OUTDIR must not exist), renders its report.html in headless Chromium (Debian's package
# `chromium`), checks that the page drew, and copies the evidence figure the report wrote to
# docs/evidence.png, the picture the README shows.
#
#   scripts/screenshot.sh [SHOT.png]     # default: report.png in the run's directory
set -eu
cd "$(dirname "$0")/.."

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
	echo "screenshot.sh: no chromium on PATH (Debian: apt-get install chromium)" >&2
	exit 1
fi
tmp=$(mktemp -d)
out="$tmp/stirank-default"
shot=${1:-$tmp/report.png}

go run ./cmd/stirank select --out "$out" --quiet

# Chromium refuses to run as root inside its sandbox.
sandbox=""
[ "$(id -u)" = 0 ] && sandbox="--no-sandbox"
"$browser" --headless $sandbox --disable-gpu --hide-scrollbars --window-size=1100,2600 \
	--screenshot="$shot" "file://$out/report.html" 2>/dev/null

# A page that failed to draw is a near-empty white PNG of a few kilobytes.
size=$(wc -c <"$shot")
if [ "$size" -lt 50000 ]; then
	echo "screenshot.sh: $shot is only $size bytes: the report did not render" >&2
	exit 1
fi
cp "$out/evidence.png" docs/evidence.png
echo "report: $out/report.html"
echo "screenshot: $shot"
echo "figure: docs/evidence.png ($(wc -c <docs/evidence.png) bytes)"
