#!/usr/bin/env bash
# tantivy as a peer of Gleaner's full-text search (issue 21, BENCHMARKS.md §9), on the
# documents `cargo bench -p gleaner-tests --bench search` wrote with GLEANER_BENCH_FILES=DIR.
#
#   bench/tantivy-peer.sh DIR [QUERIES_FILE]     >> results.jsonl
#
# Builds bench/tantivy-peer (release, its own target dir, outside the workspace), indexes DIR
# into a fresh index in one commit, then runs the queries. Without QUERIES_FILE the bench's
# four query lists are rebuilt from DIR by bench/tantivy-peer-queries.py (checked against
# DIR/queries.txt). QUERIES_FILE: lines KIND<TAB>QUERY, or bare one-word queries.
#
# Env: TANTIVY_TARGET (build dir, default /tmp/tantivy-peer-target),
#      TANTIVY_INDEX (index dir, default /tmp/tantivy-peer-index; emptied first),
#      THREADS (indexing threads, default 1, as Gleaner indexes on one; "1 2" runs both),
#      PYTHON (default python3). One JSON line per measurement on stdout; the log on stderr.
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${1:?usage: bench/tantivy-peer.sh DIR [QUERIES_FILE]}"
QUERIES="${2:-}"
TARGET="${TANTIVY_TARGET:-/tmp/tantivy-peer-target}"
INDEX="${TANTIVY_INDEX:-/tmp/tantivy-peer-index}"
THREADS="${THREADS:-1}"
PYTHON="${PYTHON:-python3}"

log() { echo "[tantivy-peer $(date +%H:%M:%S)] $*" >&2; }

log "building (release) into $TARGET"
t0=$(date +%s)
CARGO_TARGET_DIR="$TARGET" cargo build --release --quiet \
  --manifest-path "$BENCH/tantivy-peer/Cargo.toml"
log "built in $(( $(date +%s) - t0 )) s"
BIN="$TARGET/release/tantivy-peer"

if [ -z "$QUERIES" ]; then
  QUERIES="$(mktemp /tmp/tantivy-peer-queries.XXXXXX.tsv)"
  "$PYTHON" "$BENCH/tantivy-peer-queries.py" "$DIR" > "$QUERIES"
  log "queries rebuilt from $DIR: $(wc -l < "$QUERIES") in $QUERIES"
fi

for t in $THREADS; do
  rm -rf "$INDEX"
  log "indexing $DIR with $t thread(s) into $INDEX"
  "$BIN" index "$DIR" "$INDEX" "$t"
done
log "querying"
"$BIN" query "$INDEX" "$QUERIES"
