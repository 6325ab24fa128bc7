//! AFL harness for `targets::intake`: `./fuzz.sh intake 600` (docs/ARCHITECTURE.md, "Fuzzing").

use gleaner_fuzz as targets;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        targets::intake(data);
    });
}
