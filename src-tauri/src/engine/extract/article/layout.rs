//! A page laid out in a table: its text stands in cells side by side (a column of news, a
//! column of links, a list of hotels), and Readability's container is the one cell that
//! scored best. When that cell holds most of the text Readability kept but not most of the
//! page's, the page is a document rather than an article: the other cells' running text
//! (blocks of some length, mostly not links, outside the page's navigation, header, footer
//! and the elements named as such, and no copyright line) is read too, in its place before
//! or after the cell (BENCHMARKS.md §12).

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use dom_query::{Document, NodeData, NodeRef};

use super::walk;

/// Elements that end a block of text: what is inside them is a block of its own.
const BREAKS: &[&str] = &[
    "p",
    "li",
    "td",
    "th",
    "tr",
    "tbody",
    "thead",
    "tfoot",
    "table",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "div",
    "dd",
    "dt",
    "dl",
    "blockquote",
    "pre",
    "section",
    "article",
    "ul",
    "ol",
    "form",
    "center",
    "font",
    "span",
];

/// Elements whose text is never read.
const SKIP: &[&str] = &[
    "script", "style", "noscript", "template", "select", "option", "textarea", "iframe",
];

/// Elements that hold a site's chrome, not its text.
const CHROME: &[&str] = &[
    "nav", "header", "footer", "aside", "form", "select", "button",
];

/// Words in a class or id that name a site's chrome (Readability's unlikely candidates, and
/// the names of widgets).
const CHROME_NAMES: &[&str] = &[
    "-ad-",
    "ad-break",
    "agegate",
    "banner",
    "breadcrumbs",
    "combx",
    "comment",
    "community",
    "copyright",
    "cover-wrap",
    "disqus",
    "extra",
    "footer",
    "gdpr",
    "header",
    "legends",
    "login",
    "menu",
    "nav",
    "pager",
    "pagination",
    "popup",
    "related",
    "remark",
    "replies",
    "rss",
    "share",
    "shoutbox",
    "sidebar",
    "skyscraper",
    "social",
    "sponsor",
    "subscribe",
    "supplemental",
    "widget",
];

/// The shortest block read from outside the container, in characters, and the largest share
/// of it that may be link text.
const MIN_CHARS: usize = 50;
const MAX_LINK_SHARE: f64 = 0.5;

/// Readability's container holds at most this share of the page's words for the rest to be
/// read.
const MAX_CONTAINER_SHARE: f64 = 0.8;

/// One block of the page's text.
struct Block {
    text: String,
    words: usize,
    chars: usize,
    link_chars: usize,
    /// Inside a table's cell.
    in_cell: bool,
    /// Inside the page's chrome.
    chrome: bool,
}

/// The page's blocks of text, in document order, found before Readability rewrites the tree.
pub(super) struct Blocks(Vec<Block>);

/// What an element is to the reading of blocks.
enum Kind {
    Skip,
    Break,
    Inline,
}

fn kind(node: &NodeRef) -> Kind {
    let Some(name) = node.qual_name_ref() else {
        return Kind::Inline;
    };
    let name: &str = &name.local;
    if SKIP.contains(&name) {
        Kind::Skip
    } else if BREAKS.contains(&name) {
        Kind::Break
    } else {
        Kind::Inline
    }
}

#[derive(Clone, Copy, Default)]
struct Flags {
    in_cell: bool,
    chrome: bool,
}

/// The blocks of `dom`'s body.
pub(super) fn collect(dom: &Document) -> Option<Blocks> {
    let body = walk::part(dom, "body")?;
    let mut blocks = Vec::new();
    read_blocks(&body, Flags::default(), &mut blocks);
    Some(Blocks(blocks))
}

/// The bytes a word of [`CHROME_NAMES`] starts with: a class is scanned once, and a word is
/// compared only where one of them stands.
const CHROME_STARTS: [bool; 256] = {
    let mut starts = [false; 256];
    let mut i = 0;
    while i < CHROME_NAMES.len() {
        starts[CHROME_NAMES[i].as_bytes()[0] as usize] = true;
        i += 1;
    }
    starts
};

fn is_chrome_name(node: &NodeRef) -> bool {
    ["class", "id"].iter().any(|attr| {
        node.attr(attr).is_some_and(|v| {
            let v = v.as_bytes();
            v.len() >= 3
                && (0..v.len()).any(|i| {
                    let c = v[i].to_ascii_lowercase();
                    CHROME_STARTS[c as usize]
                        && CHROME_NAMES.iter().any(|w| {
                            let w = w.as_bytes();
                            v.len() - i >= w.len() && v[i..i + w.len()].eq_ignore_ascii_case(w)
                        })
                        || c == b't' && names_tag_at(v, i)
                })
        })
    })
}

/// "tag" or "tags" at `i`, ending a word of a class or id ("post-tags", "tag").
fn names_tag_at(names: &[u8], i: usize) -> bool {
    if names.len() - i < 3 || !names[i..i + 3].eq_ignore_ascii_case(b"tag") {
        return false;
    }
    let rest = &names[i + 3..];
    let rest = match rest.first() {
        Some(b's' | b'S') => &rest[1..],
        _ => rest,
    };
    rest.first()
        .is_none_or(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
}

/// A block being gathered: text of the inline content between two breaks.
#[derive(Default)]
struct Chunk {
    text: String,
    link_chars: usize,
}

fn read_blocks(node: &NodeRef, flags: Flags, out: &mut Vec<Block>) {
    let mut flags = flags;
    if walk::named(node, &["td", "th"]) {
        flags.in_cell = true;
    }
    if !flags.chrome && (walk::named(node, CHROME) || is_chrome_name(node)) {
        flags.chrome = true;
    }
    let mut chunk = Chunk::default();
    let mut next = node.first_child();
    while let Some(child) = next {
        next = child.next_sibling();
        if child.is_text() {
            push_text(&child, &mut chunk.text);
        } else if child.is_element() {
            match kind(&child) {
                Kind::Skip => {}
                Kind::Break => {
                    flush(&mut chunk, flags, out);
                    read_blocks(&child, flags, out);
                }
                Kind::Inline => {
                    inline_text(&child, &mut chunk.text, &mut chunk.link_chars, false);
                }
            }
        }
    }
    flush(&mut chunk, flags, out);
}

fn push_text(node: &NodeRef, to: &mut String) {
    node.query(|t| {
        if let NodeData::Text { contents } = &t.data {
            to.push_str(contents);
        }
    });
}

/// The text of an inline element, what is never read left out; the characters inside links
/// are added to `links`.
fn inline_text(node: &NodeRef, to: &mut String, links: &mut usize, in_link: bool) {
    let in_link = in_link || walk::named(node, &["a"]);
    let mut next = node.first_child();
    while let Some(child) = next {
        next = child.next_sibling();
        if child.is_text() {
            let before = to.len();
            push_text(&child, to);
            if in_link {
                *links += non_space(&to[before..]);
            }
        } else if child.is_element() && !matches!(kind(&child), Kind::Skip) {
            inline_text(&child, to, links, in_link);
        }
    }
}

/// Characters that are not white space, and runs of letters and digits (words as
/// `text::words` cuts them), in one pass.
fn chars_and_words(s: &str) -> (usize, usize) {
    let (mut chars, mut words, mut in_word) = (0, 0, false);
    if s.is_ascii() {
        for b in s.bytes() {
            chars += usize::from(!b.is_ascii_whitespace());
            let w = b.is_ascii_alphanumeric();
            words += usize::from(w && !in_word);
            in_word = w;
        }
    } else {
        for c in s.chars() {
            chars += usize::from(!c.is_whitespace());
            let w = c.is_alphanumeric();
            words += usize::from(w && !in_word);
            in_word = w;
        }
    }
    (chars, words)
}

fn non_space(s: &str) -> usize {
    if s.is_ascii() {
        return s.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    }
    s.chars().filter(|c| !c.is_whitespace()).count()
}

fn flush(chunk: &mut Chunk, flags: Flags, out: &mut Vec<Block>) {
    let (chars, words) = chars_and_words(&chunk.text);
    if chars > 0 {
        out.push(Block {
            words,
            chars,
            link_chars: chunk.link_chars,
            in_cell: flags.in_cell,
            chrome: flags.chrome,
            text: std::mem::take(&mut chunk.text),
        });
    }
    chunk.text.clear();
    chunk.link_chars = 0;
}

impl Blocks {
    /// The running text outside Readability's container, whose text is `found`, as the
    /// blocks before it and the blocks after it; `None` unless the container is a cell of a
    /// page laid out in a table and holds too little of the page.
    pub(super) fn outside(&self, found: &str) -> Option<(Vec<String>, Vec<String>)> {
        // Most containers hold most of the page: no need to compare.
        let all_chars: usize = self.0.iter().map(|b| b.chars).sum();
        if non_space(found) as f64 >= 0.9 * all_chars as f64 {
            return None;
        }
        let found: HashSet<u64, BuildHasherDefault<Identity>> = runs(found).collect();
        let (mut all, mut inside, mut in_cells) = (0, 0, 0);
        let mut first_inside = None;
        let mut outside = Vec::new();
        for (i, block) in self.0.iter().enumerate() {
            // A block of under four words has no four-word run to compare.
            if block.words < 4 {
                continue;
            }
            all += block.words;
            let (mut n, mut shared) = (0usize, 0usize);
            for run in runs(&block.text) {
                n += 1;
                shared += usize::from(found.contains(&run));
            }
            if shared * 2 >= n && n > 0 {
                inside += block.words;
                if block.in_cell {
                    in_cells += block.words;
                }
                first_inside.get_or_insert(i);
            } else {
                outside.push(i);
            }
        }
        let first_inside = first_inside?;
        if in_cells * 2 <= inside || inside as f64 >= MAX_CONTAINER_SHARE * all as f64 {
            return None;
        }
        let mut seen = HashSet::new();
        let (mut before, mut after) = (Vec::new(), Vec::new());
        for i in outside {
            let block = &self.0[i];
            // A copyright line after the container starts the page's footer: the little after
            // it (a disclaimer, an address) is not read.
            if i > first_inside && self.footer_from(i) {
                break;
            }
            if block.chrome
                || block.chars < MIN_CHARS
                || block.link_chars as f64 >= MAX_LINK_SHARE * block.chars as f64
            {
                continue;
            }
            let text = block.text.split_whitespace().collect::<Vec<_>>().join(" ");
            if is_copyright(&text) || !seen.insert(text.clone()) {
                continue;
            }
            if i < first_inside {
                before.push(text);
            } else {
                after.push(text);
            }
        }
        Some((before, after))
    }
}

/// The most words of a copyright line that starts a footer ([`Blocks::footer_from`]), and
/// the most words after it.
const FOOTER_LINE_WORDS: usize = 30;
const FOOTER_WORDS: usize = 150;

impl Blocks {
    /// Whether block `i` is a short copyright line with little text after it: the page's
    /// footer starts there. (A long one is an article's licence; one followed by much text
    /// closes an article that comments follow.)
    fn footer_from(&self, i: usize) -> bool {
        let block = &self.0[i];
        block.words <= FOOTER_LINE_WORDS
            && is_copyright(&block.text)
            && self.0[i + 1..].iter().map(|b| b.words).sum::<usize>() <= FOOTER_WORDS
    }
}

/// Hashes of a text's runs of four words (letters and digits, lower-cased), without a copy
/// of each word: the comparison runs over every block of a page.
fn runs(text: &str) -> impl Iterator<Item = u64> + '_ {
    let mut last = [0u64; 4];
    let mut seen = 0usize;
    let mut word: Option<u64> = None;
    let mut chars = text.chars().chain(std::iter::once(' '));
    std::iter::from_fn(move || {
        for c in chars.by_ref() {
            if c.is_alphanumeric() {
                let mut h = word.unwrap_or(0xcbf2_9ce4_8422_2325);
                if c.is_ascii() {
                    let b = (c as u8).to_ascii_lowercase();
                    h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
                } else {
                    for l in c.to_lowercase() {
                        let mut buf = [0u8; 4];
                        for b in l.encode_utf8(&mut buf).bytes() {
                            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
                        }
                    }
                }
                word = Some(h);
            } else if let Some(h) = word.take() {
                last.rotate_left(1);
                last[3] = h;
                seen += 1;
                if seen >= 4 {
                    return Some(last.iter().fold(0xcbf2_9ce4_8422_2325, |acc, x| {
                        (acc ^ x).wrapping_mul(0x100_0000_01b3)
                    }));
                }
            }
        }
        None
    })
}

/// A line of copyright: the site's, not its text. "Ã©" is an "é" read as Latin-1, not a
/// copyright sign.
fn is_copyright(text: &str) -> bool {
    let lower = text.to_lowercase();
    let sign = lower
        .match_indices('©')
        .any(|(i, _)| !lower[..i].ends_with(['ã', 'Ã']));
    sign || lower.contains("copyright") || lower.contains("all rights reserved")
}

/// The runs' hashes are hashes already: the set takes them as they are.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Blocks of plain text as Markdown paragraphs.
pub(super) fn markdown(texts: &[String]) -> String {
    if texts.is_empty() {
        return String::new();
    }
    let mut html = String::new();
    for text in texts {
        html.push_str("<p>");
        for c in text.chars() {
            match c {
                '&' => html.push_str("&amp;"),
                '<' => html.push_str("&lt;"),
                '>' => html.push_str("&gt;"),
                c => html.push(c),
            }
        }
        html.push_str("</p>");
    }
    Document::fragment(html.as_str())
        .root()
        .md(None)
        .to_string()
}
