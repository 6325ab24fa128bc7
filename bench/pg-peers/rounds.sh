#!/usr/bin/env bash
# BENCHMARKS.md §14, run 6: Gleaner builds and graphile-worker alternating, round by round.
#
#   U=postgres://… OUT=runs.txt bench/pg-peers/rounds.sh "base=./queue_pg-a new=./queue_pg-b" 1 2
#
# Each round: each build's `queue_pg` drain (1, then 4 processes), then graphile-worker's with
# 1 and 4 (drain.js here, after `npm ci`; NOPEER=1 leaves it out). Each output line is prefixed
# with the round, the label and the time it was printed (epoch seconds), which windows.sh
# needs; run server-cpu.py sample beside it.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
U="${U:?the server: postgres://user@host:port/db}"
OUT="${OUT:-runs.txt}"
BUILDS="$1"; shift
stamp() { python3 -u "$here/ts.py"; }
for r in "$@"; do
  for b in $BUILDS; do
    L=${b%%=*}; BIN=${b#*=}
    echo "$(date +%s.%N) round $r $L loadavg $(cat /proc/loadavg)" >> "$OUT"
    GLEANER_TEST_DATABASE_URL=$U GLEANER_BENCH_N=100000 GLEANER_BENCH_OPS="${OPS:-drain}" \
      GLEANER_BENCH_ROUNDS=1 "$BIN" --bench | stamp | sed "s/^/R$r $L /" >> "$OUT"
  done
  if [ -z "${NOPEER:-}" ]; then for w in 1 4; do
    echo "$(date +%s.%N) round $r graphile $w loadavg $(cat /proc/loadavg)" >> "$OUT"
    node "$here/drain.js" graphile "$U" 100000 $w | stamp | sed "s/^/R$r graphile /" >> "$OUT"
  done; fi
done
echo "$(date +%s.%N) done loadavg $(cat /proc/loadavg)" >> "$OUT"
