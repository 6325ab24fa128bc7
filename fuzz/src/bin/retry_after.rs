//! AFL harness: `cargo afl fuzz -i corpus/retry_after -o out/retry_after target/release/retry_after` (docs/ARCHITECTURE.md).


use gleaner_fuzz as targets;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        targets::retry_after(data);
    });
}
