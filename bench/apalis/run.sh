#!/usr/bin/env bash
# Peer harness: apalis 1.0 + apalis-sqlite 1.0 for the Gleaner job-queue benchmark.
#
#   bench/apalis/run.sh <NORMAL|FULL> <workers:1|4> [n=100000] [--drain-only]
#   bench/apalis/run.sh --versions
#
# Builds the harness (release) if needed, then runs it; it prints one JSON
# line per measurement on stdout (see src/main.rs for what each op measures).
# Env: CARGO_TARGET_DIR (default bench/apalis/target), APALIS_DRAIN_N (jobs in
# the drain, default n), APALIS_POLL_MS (default 1), APALIS_DRAIN_MODE
# (instances|concurrency, default instances).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HERE/target}"
# A no-op when the binary is up to date; build output goes to stderr.
cargo build --release --locked --quiet --manifest-path "$HERE/Cargo.toml" >&2
exec "$CARGO_TARGET_DIR/release/gleaner-bench-apalis" "$@"
