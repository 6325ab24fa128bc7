#!/usr/bin/env bash
# Peer benchmarks for the Gleaner job-queue comparison (plainjob, huey, apalis).
#
#   bench/run-peers.sh [results.jsonl]     (default: bench/results/peers.jsonl)
#
# Installs each peer itself (bench/plainjob/node_modules via npm,
# bench/huey/.venv via pip, bench/apalis via cargo build --release), then runs
# every configuration
# (synchronous NORMAL/FULL x 1/4 workers) REPS times (default 3), appending
# one JSON line per measurement to the results file. Enqueue rows are
# single-producer, so they are measured in the workers=1 runs only; the
# workers=4 runs are --drain-only. Runs are interleaved (rep-major) so slow
# drift on the machine spreads over all configurations.
#
# Env: N (jobs, default 100000), REPS (default 3), PYTHON (default python3),
#      PEERS (default "plainjob huey apalis"), SYNCS (default "NORMAL FULL"),
#      CARGO_TARGET_DIR (apalis build dir, default bench/apalis/target),
#      APALIS_DRAIN_N (jobs in apalis's drain, default min(N, 10000): with
#      apalis-sqlite 1.0 each drained job costs time in proportion to the
#      queue's depth, so a 100,000-job drain takes hours; see
#      bench/apalis/src/main.rs. Its enqueue rows use N.)
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-$BENCH/results/peers.jsonl}"
N="${N:-100000}"
REPS="${REPS:-3}"
PYTHON="${PYTHON:-python3}"
PEERS="${PEERS:-plainjob huey apalis}"
SYNCS="${SYNCS:-NORMAL FULL}"
export APALIS_DRAIN_N="${APALIS_DRAIN_N:-$(( N < 10000 ? N : 10000 ))}"
APALIS_TARGET="${CARGO_TARGET_DIR:-$BENCH/apalis/target}"
mkdir -p "$(dirname "$OUT")"
OUT="$(cd "$(dirname "$OUT")" && pwd)/$(basename "$OUT")"

log() { echo "[run-peers $(date +%H:%M:%S)] $*" >&2; }

install_plainjob() {
  local d="$BENCH/plainjob"
  local major
  major="$(node -p 'process.versions.node.split(".")[0]')"
  [ "$major" = 20 ] || log "WARNING: node $(node --version); the spec pins Node 20"
  # Reuse an existing install only if it matches the lockfile and loads.
  if [ -d "$d/node_modules" ] &&
     (cd "$d" && node -e '
        const want = require("./package-lock.json").packages;
        for (const p of ["plainjob", "better-sqlite3"]) {
          const v = require("./node_modules/" + p + "/package.json").version;
          if (v !== want["node_modules/" + p].version) process.exit(1);
        }
        new (require("better-sqlite3"))(":memory:").close();' 2>/dev/null); then
    log "plainjob: node_modules up to date"
    return
  fi
  log "plainjob: npm ci (better-sqlite3 builds from source when no prebuilt binary can be fetched: ~2 min)"
  # Without network access to prebuilt binaries or node headers, node-gyp
  # must use the headers of the installed Node (/usr/include/node).
  if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node_api.h ]; then
    export npm_config_nodedir=/usr
  fi
  (cd "$d" && npm ci --no-audit --no-fund)
}

install_huey() {
  local d="$BENCH/huey"
  if [ ! -x "$d/.venv/bin/python" ]; then
    log "huey: creating venv with $PYTHON ($("$PYTHON" --version 2>&1))"
    "$PYTHON" -m venv "$d/.venv"
  fi
  "$d/.venv/bin/pip" install --quiet --disable-pip-version-check -r "$d/requirements.txt"
}

install_apalis() {
  command -v cargo >/dev/null || { log "apalis: cargo not found"; return 1; }
  log "apalis: cargo build --release (target dir $APALIS_TARGET; first build ~6 min on 2 cores)"
  (cd "$BENCH/apalis" && CARGO_TARGET_DIR="$APALIS_TARGET" cargo build --release --locked)
}

run_plainjob() { (cd "$BENCH/plainjob" && node bench.mjs "$@"); }
run_huey()     { "$BENCH/huey/.venv/bin/python" "$BENCH/huey/bench.py" "$@"; }
run_apalis()   { "$APALIS_TARGET/release/gleaner-bench-apalis" "$@"; }

versions_plainjob() {
  echo "node $(node --version)," \
    "plainjob $(node -p 'require("'"$BENCH"'/plainjob/node_modules/plainjob/package.json").version')," \
    "better-sqlite3 $(node -p 'require("'"$BENCH"'/plainjob/node_modules/better-sqlite3/package.json").version')"
}
versions_huey() {
  echo "huey $("$BENCH/huey/.venv/bin/python" -c 'import huey; print(huey.__version__)')," \
    "python sqlite3 $("$BENCH/huey/.venv/bin/python" -c 'import sqlite3; print(sqlite3.sqlite_version)')"
}
versions_apalis() { run_apalis --versions; }

for peer in $PEERS; do "install_$peer"; done
versions=""
for peer in $PEERS; do versions="${versions:+$versions, }$("versions_$peer")"; done
log "versions: $versions"

log "N=$N REPS=$REPS SYNCS=$SYNCS APALIS_DRAIN_N=$APALIS_DRAIN_N -> $OUT"
for rep in $(seq 1 "$REPS"); do
  for peer in $PEERS; do
    for sync in $SYNCS; do
      for workers in 1 4; do
        extra=()
        [ "$workers" = 1 ] || extra=(--drain-only)
        log "rep $rep/$REPS: $peer sync=$sync workers=$workers ${extra[*]:-}"
        # A failing configuration is logged and skipped, not fatal.
        "run_$peer" "$sync" "$workers" "$N" "${extra[@]}" | tee -a "$OUT" ||
          log "FAILED: rep $rep $peer sync=$sync workers=$workers (exit $?)"
      done
    done
  done
done
log "done: $(wc -l < "$OUT") lines in $OUT"
