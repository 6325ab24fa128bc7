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

/// Headings that open a comment section: "12 Comments", "Leave a Reply", "Trackbacks"…
const COMMENT_HEADINGS: &[&str] = &[
    "comment",
    "responses",
    "response to",
    "replies",
    "reply",
    "leave a reply",
    "leave a comment",
    "leave your comment",
    "post a comment",
    "post your comment",
    "add a comment",
    "add your comment",
    "trackback",
    "pingback",
    "reader comments",
    "readers' comments",
    "readers comments",
    "join the discussion",
    "join the conversation",
    "discussion",
    "have your say",
    "your comments",
    "speak your mind",
    "what do you think",
    "thoughts on",
    "one response",
    "one thought on",
    "no comments",
    "show comments",
    "view comments",
    "write a comment",
];

fn is_comment_heading(text: &str) -> bool {
    let t = squeeze(text);
    if t.len() > 60 {
        return false;
    }
    let t = t
        .trim_matches(|c: char| !c.is_alphanumeric())
        .trim_start_matches(|c: char| c.is_ascii_digit() || c.is_whitespace());
    COMMENT_HEADINGS.iter().any(|s| t.starts_with(s))
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
    let heading = is_heading(node) && is_comment_heading(&node.text());
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
