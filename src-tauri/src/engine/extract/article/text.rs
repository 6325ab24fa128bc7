//! Small text helpers for the article's rules.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

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

/// Hashes of a text's runs of four words: how two texts are compared.
pub(super) fn shingles(text: &str) -> Shingles {
    words(text)
        .windows(4)
        .map(|w| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            w.hash(&mut h);
            h.finish()
        })
        .collect()
}

/// The share of `text`'s shingles that are in `set`, in [0, 1]; 0 for a text of none.
pub(super) fn share_in(text: &str, set: &Shingles) -> f64 {
    let mine = shingles(text);
    if mine.is_empty() {
        return 0.0;
    }
    mine.iter().filter(|s| set.contains(s)).count() as f64 / mine.len() as f64
}
