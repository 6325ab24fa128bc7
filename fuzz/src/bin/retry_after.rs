//! AFL harness for `targets::retry_after`: `./fuzz.sh retry_after 600` (docs/ARCHITECTURE.md, "Fuzzing").

use gleaner_fuzz as targets;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        targets::retry_after(data);
    });
}
