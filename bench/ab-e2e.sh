#!/bin/bash
# A/B of the end-to-end worker, wall-clock throughput: a build before (BEFORE=its e2e bench binary) and this one, alternating.
# Run from the checkout after `cargo bench -p gleaner-tests --bench e2e --no-run`.
set -u
BEFORE=${BEFORE:?the e2e bench binary of the build before, e.g. from a worktree: target/release/deps/e2e-*}
AFTER=${AFTER:-$(ls -t target/release/deps/e2e-* | grep -v '\.d$' | head -1)}
OUT=${OUT:-ab-e2e.jsonl}
ROUNDS=${ROUNDS:-12}
: > $OUT
for round in $(seq 1 $ROUNDS); do
  for side in before after; do
    bin=$BEFORE; [ $side = after ] && bin=$AFTER
    GLEANER_BENCH_ROUNDS=1 $bin --bench 2>/dev/null | sed "s/^{/{\"side\":\"$side\",\"round\":$round,/" >> $OUT
  done
done
