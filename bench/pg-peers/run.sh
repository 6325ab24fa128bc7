#!/usr/bin/env bash
# BENCHMARKS.md §14: the queue on PostgreSQL against graphile-worker and pg-boss, on one server.
#
#   bench/pg-peers/run.sh postgres://user@host:port/db     [results.jsonl]
#
# Installs the peers (npm ci here), then, interleaved so that drift on the machine spreads over
# all of them, REPS rounds (default 1) of: each peer's drain of N no-op jobs (default 100,000)
# with 1 and 4 worker processes, and Gleaner's `queue_pg` bench (built first with `cargo bench
# -p gleaner-tests --bench queue_pg --no-run`). pg-boss fetches once per polling interval (at
# least 0.5 s) whatever it finds, so it drains PGBOSS_N jobs (default 2,000) in batches of 4,
# the parity, and 20,000 in batches of 100, its own best. procrastinate (PyPI, in .venv here)
# drains PROCRASTINATE_N (default 2,000). Appends one JSON line per measurement.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
url="${1:?give the server: postgres://user@host:port/db}"
out="${2:-$here/../results-issue19-pg.jsonl}"
N="${N:-100000}"
REPS="${REPS:-1}"

(cd "$here" && npm ci --no-audit --no-fund >/dev/null)
if [[ ! -x "$here/.venv/bin/python" ]]; then
  python3 -m venv "$here/.venv"
  "$here/.venv/bin/pip" install -q "procrastinate==3.10.0" "psycopg[binary]"
fi
bench="$(ls -t "$here"/../../target/release/deps/queue_pg-* 2>/dev/null | grep -v '\.d$' | head -1)"
[[ -x "$bench" ]] || { echo "build it first: cargo bench -p gleaner-tests --bench queue_pg --no-run" >&2; exit 1; }

for ((rep = 1; rep <= REPS; rep++)); do
  for workers in 1 4; do
    node "$here/drain.js" graphile "$url" "$N" "$workers" | tee -a "$out"
    node "$here/drain.js" pgboss "$url" "${PGBOSS_N:-2000}" "$workers" | tee -a "$out"
    PGBOSS_BATCH=100 node "$here/drain.js" pgboss "$url" 20000 "$workers" | sed 's/"peer":"pgboss"/"peer":"pgboss-batch100"/' | tee -a "$out"
    "$here/.venv/bin/python" "$here/drain.py" "$url" "${PROCRASTINATE_N:-2000}" "$workers" 2>/dev/null | tee -a "$out"
  done
  GLEANER_TEST_DATABASE_URL="$url" GLEANER_BENCH_N="$N" GLEANER_BENCH_OPS=drain "$bench" --bench | tee -a "$out"
done
GLEANER_TEST_DATABASE_URL="$url" GLEANER_BENCH_OPS=claim_1m "$bench" --bench | tee -a "$out"
