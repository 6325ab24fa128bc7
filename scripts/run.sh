#!/usr/bin/env bash
# The README's run command: installs the system libraries (first run only), then builds and
# opens Gleaner. A debug build, so it shares its build cache with scripts/test.sh.
# Arguments are passed to the binary (e.g. `scripts/run.sh add URL`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
exec cargo run --locked -p gleaner -- "$@"
