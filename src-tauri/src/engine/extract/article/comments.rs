//! Reader comments: where they start inside an article, and their text on the whole page.
//! A researcher keeps the article; its comments are other people's words (BENCHMARKS.md §12).

use super::walk;
use dom_query::{Document, NodeRef};

use super::text::{Shingles, shingles, squeeze};
use super::walk::{elements, part};

/// An element a site names as its comments (`comments`, `commentlist`, `respond`, Disqus's),
/// by the words of its `id` and `class`.
fn is_comment_name(node: &NodeRef) -> bool {
    ["id", "class"].iter().any(|attr| {
        node.attr(attr).is_some_and(|value| {
            value
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(is_comment_word)
        })
    })
}

fn is_comment_word(w: &str) -> bool {
    let is = |s: &str| w.eq_ignore_ascii_case(s);
    let starts = |s: &str| w.len() > s.len() && w[..s.len()].eq_ignore_ascii_case(s);
    is("comments")
        || is("commentlist")
        || is("respond")
        || is("disqus")
        || is("dsq")
        || is("replies")
        || (starts("comment") && !starts("commentary"))
}

/// Headings that open a comment section whatever follows their first words: "Leave a Reply
/// Cancel reply", "Join the discussion on…".
const COMMENT_HEADING_STARTS: &[&str] = &[
    "leave a reply",
    "leave a response",
    "leave a comment",
    "leave your comment",
    "trackback",
    "trackbacks",
    "pingback",
    "pingbacks",
    "post a comment",
    "post your comment",
    "add a comment",
    "add your comment",
    "write a comment",
    "join the discussion",
    "join the conversation",
    "have your say",
    "speak your mind",
];

/// Headings that open a comment section when they are whole, a count aside ("Comments (3)",
/// "12 Responses", "No comments").
const COMMENT_HEADINGS: &[&str] = &[
    "comments",
    "comment",
    "responses",
    "replies",
    "reply",
    "comments and trackbacks",
    "reader comments",
    "readers comments",
    "user comments",
    "your comments",
    "show comments",
    "view comments",
    "comments are closed",
    "what do you think",
];

/// Whole headings that are comments only with a count: a paper's "Discussion" is its text,
/// "Discussion (12)" or "One thought" is not.
const COUNTED_HEADINGS: &[&str] = &[
    "discussion",
    "discussions",
    "thoughts",
    "thought",
    "response",
];

/// A blog's "3 thoughts on “Title”", "One Response to “Title”": a count, these words, and a
/// quoted title ("2 Responses to treatment" is a paper's section).
const COUNTED_ON: &[&str] = &[
    "comments on",
    "comment on",
    "responses to",
    "response to",
    "replies to",
    "reply to",
    "thoughts on",
    "thought on",
];

/// The words of a heading that may count its comments.
const COUNT_WORDS: &[&str] = &[
    "no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
];

/// Words of a heading that, right before an element named as comments, make it theirs
/// ("Discussion" over a Disqus thread).
const COMMENT_WORDS: &[&str] = &[
    "comment",
    "comments",
    "discussion",
    "response",
    "responses",
    "replies",
    "reply",
    "thoughts",
    "conversation",
];

/// Whether a heading opens a comment section: whole forms, or counted ones, never a bare
/// prefix (a paper's "Discussion", "Commentary", "Responses to treatment" and "Reply to
/// reviewers" are its text).
fn is_comment_heading(text: &str) -> bool {
    let t = squeeze(text);
    if t.len() > 60 {
        return false;
    }
    let words = heading_words(&t);
    let is_count = |w: &str| w.bytes().all(|b| b.is_ascii_digit()) || COUNT_WORDS.contains(&w);
    if COMMENT_HEADING_STARTS
        .iter()
        .any(|h| starts_with_words(&words, h))
    {
        return true;
    }
    let (lead, rest) = match words.split_first() {
        Some((first, rest)) if is_count(first) => (Some(*first), rest),
        _ => (None, &words[..]),
    };
    // A count after the words is in brackets: "Discussion (12)", not a textbook's
    // "Discussion 2".
    let bracketed = t.trim_end().ends_with([')', ']']);
    let (trail, core) = match rest.split_last() {
        Some((last, core)) if bracketed && last.bytes().all(|b| b.is_ascii_digit()) => (true, core),
        _ => (false, rest),
    };
    let core = core.join(" ");
    if COMMENT_HEADINGS.contains(&core.as_str()) {
        return true;
    }
    // A number before a singular word is a section's ("4 Discussion"), unless it is 1.
    let counts = trail
        || lead.is_some_and(|w| !w.bytes().all(|b| b.is_ascii_digit()) || w == "1")
        || (lead.is_some() && core.ends_with('s'));
    if counts && COUNTED_HEADINGS.contains(&core.as_str()) {
        return true;
    }
    lead.is_some()
        && COUNTED_ON.iter().any(|h| starts_with_words(rest, h))
        && t.contains(['\u{201c}', '"', '\u{ab}', '\u{201e}', '\u{2018}'])
}

/// A heading's words: runs of letters and digits.
fn heading_words(squeezed: &str) -> Vec<&str> {
    squeezed
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect()
}

fn starts_with_words(words: &[&str], phrase: &str) -> bool {
    phrase
        .split(' ')
        .enumerate()
        .all(|(i, p)| words.get(i) == Some(&p))
}

/// A short heading naming comments, right before an element named as comments.
fn heads_comment_markup(node: &NodeRef, text: &str) -> bool {
    let t = squeeze(text);
    t.len() <= 60
        && heading_words(&t).iter().any(|w| COMMENT_WORDS.contains(w))
        && node
            .next_element_sibling()
            .is_some_and(|n| is_comment_name(&n))
}

fn is_heading(node: &NodeRef) -> bool {
    walk::named(node, &["h1", "h2", "h3", "h4", "h5", "h6"])
}

/// Words of an article that must come before its comments: a container that starts with
/// comments is a page of comments, and they are its text.
const ARTICLE_FIRST: usize = 10;

/// Whether `node` opens a comment section: a comment heading, or an element named as
/// comments, with words in it.
fn opens_comments(node: &NodeRef) -> bool {
    let heading = is_heading(node) && {
        let text = node.text();
        is_comment_heading(&text) || heads_comment_markup(node, &text)
    };
    (heading || is_comment_name(node)) && has_words(node)
}

/// Where an article's comments begin: the first element that opens them, with at least
/// [`ARTICLE_FIRST`] words of the article before it.
fn comment_start<'a>(root: &NodeRef<'a>) -> Option<NodeRef<'a>> {
    let mut words_before = 0;
    for node in root.descendants_it() {
        if node.is_text() {
            if words_before < ARTICLE_FIRST {
                words_before += node.text().split_whitespace().count();
            }
            continue;
        }
        if node.is_element() && words_before >= ARTICLE_FIRST && opens_comments(&node) {
            return Some(node);
        }
    }
    None
}

/// The words under `root` outside the elements it holds that a site names as comments,
/// counted up to just past `limit`: an open thread's post, without its hundreds of comments.
pub(super) fn words_outside_comments(root: &NodeRef, limit: usize) -> usize {
    let mut n = 0;
    let mut stack = vec![*root];
    while let Some(node) = stack.pop() {
        if node.is_text() {
            n += node.text().split_whitespace().count();
            if n > limit {
                break;
            }
        } else if node.id == root.id || !is_comment_name(&node) {
            stack.extend(node.children_it(true));
        }
    }
    n
}

fn has_words(node: &NodeRef) -> bool {
    node.descendants_it()
        .any(|d| d.is_text() && !d.text().trim().is_empty())
}

/// Removes the comments at an article's end: their start, and everything after it.
pub(super) fn cut_comments(root: &NodeRef) {
    let Some(start) = comment_start(root) else {
        return;
    };
    let mut node = start;
    while node.id != root.id {
        while let Some(next) = node.next_sibling() {
            next.remove_from_parent();
        }
        match node.parent() {
            Some(parent) => node = parent,
            None => break,
        }
    }
    start.remove_from_parent();
}

/// The shingles of every comment section on the page, outermost sections only.
pub(super) fn comment_shingles(dom: &Document) -> Shingles {
    let mut set = Shingles::new();
    for node in part(dom, "body").iter().flat_map(elements) {
        if is_comment_name(&node) && !node.ancestors_it(None).any(|a| is_comment_name(&a)) {
            set.extend(shingles(&node.text()));
        }
    }
    set
}
