#!/bin/bash
# ./fuzz.sh build             build the four harnesses (instrumented; see rustc-wrap.sh)
# ./fuzz.sh TARGET SECONDS    fuzz one target from seeds/TARGET into out/TARGET
# TARGET is intake, retry_after, html or pdf. CARGO_TARGET_DIR is honoured (default target/).
set -e
cd "$(dirname "$0")"
bin=${CARGO_TARGET_DIR:-target}/release
if [ "$1" = build ]; then
    # opt-level 1 and coverage for the parsers only: a cold build is ~17 min on 2 cores.
    AFL_OPT_LEVEL=${AFL_OPT_LEVEL:-1} RUSTC_WRAPPER="$PWD/rustc-wrap.sh" exec cargo afl build --release
fi
t=$1
secs=${2:-600}
export AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_AFFINITY=1
# -t 3000: an input that takes over 3 s is a hang (the inputs are a few KB).
exec timeout $((secs + 120)) cargo afl fuzz -i "seeds/$t" -o "out/$t" -t 3000 -V "$secs" "$bin/$t"
