//! Small text helpers for the article's rules.

use std::collections::HashSet;

/// White space squeezed to single spaces, lower-cased.
pub(super) fn squeeze(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The words of a text (runs of letters and digits), lower-cased.
pub(super) fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Letters and digits only, lower-cased: "I’m in.." and "Im in" are the same heading.
pub(super) fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

pub(super) type Shingles = HashSet<u64>;

/// Hashes of a text's runs of four words: how two texts are compared. FNV-1a: these are
/// not keys an attacker chooses to collide, and SipHash cost more than the comparison.
pub(super) fn shingles(text: &str) -> Shingles {
    let hashes: Vec<u64> = words(text).iter().map(|w| fnv(w.as_bytes())).collect();
    hashes
        .windows(4)
        .map(|w| {
            w.iter().fold(0xcbf2_9ce4_8422_2325, |h, x| {
                (h ^ x).wrapping_mul(0x100_0000_01b3)
            })
        })
        .collect()
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The share of `text`'s shingles that are in `set`, in [0, 1]; 0 for a text of none.
pub(super) fn share_in(text: &str, set: &Shingles) -> f64 {
    let mine = shingles(text);
    if mine.is_empty() {
        return 0.0;
    }
    mine.iter().filter(|s| set.contains(s)).count() as f64 / mine.len() as f64
}
