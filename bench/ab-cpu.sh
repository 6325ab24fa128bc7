#!/bin/bash
# CPU time (task-clock) of one whole e2e bench run (worker, GET only, save only, queue only; 5,000 jobs each), before and after, alternating.
BEFORE=${BEFORE:?the e2e bench binary of the build before, e.g. from a worktree: target/release/deps/e2e-*}
AFTER=${AFTER:-$(ls -t target/release/deps/e2e-* | grep -v '\.d$' | head -1)}
OUT=${OUT:-ab-cpu.jsonl}
: > $OUT
for round in $(seq 1 ${ROUNDS:-8}); do
  for side in before after; do
    bin=$BEFORE; [ $side = after ] && bin=$AFTER
    res=$(GLEANER_BENCH_ROUNDS=1 perf stat -x, -e task-clock $bin --bench 2>&1 >"$OUT.$side.out" | grep task-clock | cut -d, -f1)
    w=$(grep worker_end_to_end "$OUT.$side.out" | sed 's/.*"per_sec":\([0-9.]*\).*/\1/')
    echo "{\"side\":\"$side\",\"round\":$round,\"task_clock_ms\":$res,\"worker_per_sec\":$w}" >> $OUT
  done
done
