//! AFL harness: `cargo afl fuzz -i corpus/intake -o out/intake target/release/intake` (docs/ARCHITECTURE.md).


use gleaner_fuzz as targets;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        targets::intake(data);
    });
}
