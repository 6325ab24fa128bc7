#!/usr/bin/env bash
# The README's test command: installs what the build and the tests need (first run only; the
# GUI tests need tauri-driver), builds the `gleaner` binary the process and GUI tests launch, then
# runs every test in the workspace, the queue's tests against both SQLite and a throwaway
# PostgreSQL server (scripts/postgres-for-tests.sh; GLEANER_TEST_DATABASE_URL names your own).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --gui
# shellcheck source=scripts/postgres-for-tests.sh
source scripts/postgres-for-tests.sh
cargo build --locked -p gleaner --bins
cargo test --locked --workspace "$@"
