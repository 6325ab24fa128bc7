//! AFL harness for `targets::html`: `./fuzz.sh html 600` (docs/ARCHITECTURE.md, "Fuzzing").

use gleaner_fuzz as targets;

fn main() {
    // No panic hook: a panic that extraction catches itself (pdf-extract's) is handled the way
    // the app handles it, as an error; one that escapes still aborts, and AFL sees a crash.
    afl::fuzz_nohook!(|data: &[u8]| {
        let _ = targets::html(data);
    });
}
