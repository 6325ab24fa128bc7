//! Counts of text and links for the elements of an article, taken in one walk that hands each
//! element's counts to a judge, so that no rule walks a subtree twice (a 20 MB page has deep
//! ones) and nothing is kept per element.

use super::walk;
use dom_query::{NodeData, NodeRef};

/// The text inside one element, and the part of it inside links.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Counts {
    /// Characters that are not white space.
    pub chars: usize,
    pub words: usize,
    /// Characters and words inside `<a>` elements.
    pub link_chars: usize,
    pub link_words: usize,
    pub links: usize,
}

impl Counts {
    /// At least `tenths`/10 of the text is link text.
    pub fn link_dense(&self, tenths: usize) -> bool {
        self.chars > 0 && self.link_chars * 10 >= self.chars * tenths
    }

    fn add(&mut self, other: &Counts) {
        self.chars += other.chars;
        self.words += other.words;
        self.link_chars += other.link_chars;
        self.link_words += other.link_words;
        self.links += other.links;
    }
}

/// The counts of `node`'s subtree; `judge` sees every element below `node` with its counts
/// and the words before it in the article, children before their parent. (The tree is at
/// most 512 deep: `MAX_DEPTH` in extract.)
pub(super) fn count<'a>(
    node: &NodeRef<'a>,
    judge: &mut impl FnMut(&NodeRef<'a>, &Counts, usize),
) -> Counts {
    let mut seen = 0;
    count_from(node, &mut seen, judge)
}

fn count_from<'a>(
    node: &NodeRef<'a>,
    seen: &mut usize,
    judge: &mut impl FnMut(&NodeRef<'a>, &Counts, usize),
) -> Counts {
    let mut c = Counts::default();
    let mut child = node.first_child();
    while let Some(n) = child {
        if n.is_text() {
            // Read in place: `text()` would copy every text node of the article.
            let (chars, words) = n
                .query(|t| match &t.data {
                    NodeData::Text { contents } => chars_and_words(contents),
                    _ => (0, 0),
                })
                .unwrap_or_default();
            c.chars += chars;
            c.words += words;
            *seen += words;
        } else if n.is_element() {
            let mut inner = count_from(&n, seen, judge);
            if walk::named(&n, &["a"]) {
                inner.link_chars = inner.chars;
                inner.link_words = inner.words;
                inner.links += 1;
            }
            judge(&n, &inner, *seen - inner.words);
            c.add(&inner);
        }
        child = n.next_sibling();
    }
    c
}

/// Characters that are not white space, and words, in one pass (over bytes when the text is
/// ASCII, as most is).
fn chars_and_words(text: &str) -> (usize, usize) {
    let (mut chars, mut words, mut in_word) = (0, 0, false);
    if text.is_ascii() {
        for b in text.bytes() {
            if b.is_ascii_whitespace() || b == 0x0b {
                in_word = false;
            } else {
                chars += 1;
                words += usize::from(!in_word);
                in_word = true;
            }
        }
        return (chars, words);
    }
    for ch in text.chars() {
        if ch.is_whitespace() {
            in_word = false;
        } else {
            chars += 1;
            if !in_word {
                words += 1;
                in_word = true;
            }
        }
    }
    (chars, words)
}
