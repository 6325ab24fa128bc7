#!/usr/bin/env bash
# The extraction dev set (issue 22, BENCHMARKS.md §12): Gleaner, rs-trafilatura and Python
# trafilatura on the same pages in one run, each scored by the dev set's own scorer.
#
#   bench/extraction-devset.sh [DEVSET_DIR] [OUT_DIR]
#
# DEVSET_DIR defaults to ../shared/extraction-dev beside the checkout; OUT_DIR to
# /tmp/extraction-devset (emptied first). Python trafilatura runs from a venv made at
# $TRAF_VENV (default /tmp/venv-trafilatura: trafilatura 2.0.0 and lxml_html_clean from PyPI) unless it exists.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEVSET="$(cd "${1:-$ROOT/../shared/extraction-dev}" && pwd)"
OUT="${2:-/tmp/extraction-devset}"
VENV="${TRAF_VENV:-/tmp/venv-trafilatura}"

rm -rf "$OUT" && mkdir -p "$OUT"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet trafilatura==2.0.0 lxml_html_clean
fi
cd "$ROOT"
cargo run --quiet --release -p gleaner-tests --example extraction_devset -- "$DEVSET" "$OUT"
"$VENV/bin/python" bench/trafilatura-devset.py "$DEVSET" "$OUT/trafilatura"
for who in gleaner rs-trafilatura trafilatura; do
  echo
  echo "## $who"
  python3 "$DEVSET/score.py" "$OUT/$who" --name "$who" --jobs 2 --per-page "$OUT/$who.csv"
done
