#!/usr/bin/env bash
# The README's test command: installs what the build and the tests need (first run only),
# builds the `gleaner` binary the process tests launch, then runs every test in the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo build --locked -p gleaner --bins
cargo test --locked --workspace "$@"
