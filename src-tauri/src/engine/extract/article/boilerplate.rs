//! Boilerplate inside an article's container that Readability keeps: lists of other
//! articles' headlines, and the lines of a site's chrome (tags, sharing, copyright).

use super::walk;
use dom_query::{NodeData, NodeRef};

use super::blocks::{Counts, count};
use super::text::squeeze;

/// A list of at least this many links whose words are mostly link words, at least this many
/// a link, is other articles' headlines ("Most popular", "Related stories").
const HEADLINE_LINKS: usize = 3;
const HEADLINE_WORDS: usize = 4;

/// A line of at least this many short links (this many words a link at most), with a few
/// words beside them, after the article has begun, is its tags or categories ("in [Crafts],
/// [Fall], [Paper]"). A breadcrumb at the top is not judged: Readability keeps it, and so
/// do pages that are read for it.
const TAG_LINKS: usize = 3;
const TAG_WORDS: usize = 3;
const TAG_OTHER_WORDS: usize = 8;
const TAG_AFTER_WORDS: usize = 15;

fn is_block(node: &NodeRef) -> bool {
    walk::named(
        node,
        &[
            "ul", "ol", "dl", "table", "div", "section", "aside", "nav", "p", "footer",
        ],
    )
}

/// An element that may be a line of chrome.
fn is_line(node: &NodeRef) -> bool {
    walk::named(
        node,
        &[
            "p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "span", "dd", "dt", "td", "th",
        ],
    )
}

/// A table's cell is data unless no data starts so ("Share: 12%" is, "Print this page" is
/// not); a cell of chrome is emptied, not taken out, since a table that loses a cell can no
/// longer be written as a table.
fn is_cell(node: &NodeRef) -> bool {
    walk::named(node, &["td", "th"])
}

/// Removes blocks of headlines that link elsewhere and lines of tags (unless one holds half
/// the article), and the lines of a site's chrome.
pub(super) fn remove(root: &NodeRef) {
    let mut links = Vec::new();
    let mut chrome = Vec::new();
    let mut boxes = Vec::new();
    let total = count(root, &mut |node, c, before| {
        if node.has_attr(AUTHOR_BOX) {
            // Judged whole: the box's own elements are marked too, and one by one each
            // would be under half the article when the box is not.
            if node.parent().is_none_or(|p| !p.has_attr(AUTHOR_BOX)) {
                boxes.push((*node, c.chars));
            }
            return;
        }
        let headlines = is_block(node)
            && c.links >= HEADLINE_LINKS
            && c.link_dense(6)
            && c.link_words >= HEADLINE_WORDS * c.links;
        let tags = walk::named(node, &["p", "div"])
            && c.links >= TAG_LINKS
            && c.link_dense(6)
            && c.link_words <= TAG_WORDS * c.links
            && c.words.saturating_sub(c.link_words) <= TAG_OTHER_WORDS + c.links
            && before >= TAG_AFTER_WORDS;
        if (headlines && !is_reference_list(node)) || tags {
            links.push((*node, c.chars));
        } else if is_line(node)
            && c.words > 0
            && c.words <= SENTENCE_WORDS
            && (is_chrome(node, c, is_cell(node))
                || (c.words <= CHROME_WORDS && opens_with(node, &chrome)))
        {
            chrome.push(*node);
        }
    });
    for (node, chars) in links.into_iter().chain(boxes) {
        if chars * 2 < total.chars {
            node.remove_from_parent();
        }
    }
    for node in chrome {
        if is_cell(&node) {
            node.remove_children();
        } else {
            node.remove_from_parent();
        }
    }
}

/// Marks the boxes about the article's author found before Readability, which drops the
/// classes that name them; the clean-up takes them out. Their elements are marked too:
/// Readability puts a `div`'s only paragraph in its place.
pub(super) fn mark_author_boxes(boxes: &[NodeRef]) {
    for node in boxes {
        // A box of more words is a wrapper whose name mentions one ("post has-author-box"),
        // and its paragraphs would each go, each under half the article.
        if walk::words_up_to(node, AUTHOR_BOX_WORDS) > AUTHOR_BOX_WORDS {
            continue;
        }
        let inner: Vec<NodeRef> = walk::elements(node).collect();
        for n in inner.iter().chain(std::iter::once(node)) {
            n.set_attr(AUTHOR_BOX, "");
        }
    }
}

const AUTHOR_BOX: &str = "data-gleaner-author-box";

/// The most words a box about the author has.
const AUTHOR_BOX_WORDS: usize = 150;

/// Whether an element's class or id names a box about the article's author (a biography, a
/// profile): `author-bio`, `about-the-author`, `authorbox`. Asked of most elements of every
/// page, so compared in place, without a lower-cased copy.
pub(super) fn names_author_box(node: &NodeRef) -> bool {
    let has = |v: &[u8], w: &str| {
        v.windows(w.len())
            .any(|part| part.eq_ignore_ascii_case(w.as_bytes()))
    };
    ["class", "id"].iter().any(|a| {
        node.attr(a).is_some_and(|v| {
            let v = v.as_bytes();
            has(v, "author")
                && ["bio", "box", "about", "profile", "info", "desc"]
                    .iter()
                    .any(|w| has(v, w))
        })
    })
}

/// Headings over a list of works cited: its titles are links, as other articles' headlines
/// are, and they are the article's.
const REFERENCE_HEADINGS: &[&str] = &[
    "references",
    "reference list",
    "sources",
    "notes",
    "notes and references",
    "footnotes",
    "bibliography",
    "selected bibliography",
    "further reading",
    "works cited",
    "literature",
    "literature cited",
    "citations",
];

/// A list right under a heading of [`REFERENCE_HEADINGS`] ("4. References" too).
fn is_reference_list(node: &NodeRef) -> bool {
    if !walk::named(node, &["ol", "ul", "dl"]) {
        return false;
    }
    node.prev_element_sibling()
        .filter(|h| walk::named(h, &["h1", "h2", "h3", "h4", "h5", "h6"]))
        .is_some_and(|h| {
            let text = squeeze(&h.text());
            let title = text
                .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c.is_whitespace())
                .trim_end_matches(|c: char| !c.is_alphanumeric());
            REFERENCE_HEADINGS.contains(&title)
        })
}

/// How a line of a site's chrome starts, once lower-cased: words no article's line starts
/// with.
const CHROME_STARTS: &[&str] = &[
    "tags:",
    "tagged:",
    "labels:",
    "categories:",
    "category:",
    "share:",
    "share this",
    "email this",
    "print this",
    "bookmark this",
    "bookmark the permalink",
    "trackback url",
    "trackback-url",
    "comments feed",
    "comments rss",
    "rss feed for comments",
    "related posts",
    "related articles",
    "related stories",
    "related links",
    "you may also like",
    "you might also like",
    "recommended for you",
    "more stories",
    "more from",
    "sign up for our",
    "subscribe to our",
    "follow us",
    "©",
    "all rights reserved",
    "comments powered by",
    "your email address will not be published",
    "required fields are marked",
    "you may use these html tags",
];

/// Chrome labels whose words an article's line may also start with ("Filed in March, the
/// suit…", "Subscribe to a topic with MQTT", "Copyright law after…"): chrome only as the
/// whole line, before a colon, or before links and nothing else ("Filed under [News]").
const CHROME_LABELS: &[&str] = &[
    "tags",
    "tagged with",
    "tagged as",
    "tagged //",
    "filed under",
    "filed in",
    "posted in",
    "posted at",
    "share on",
    "share with",
    "permalink",
    "related content",
    "most popular",
    "most read",
    "most viewed",
    "most shared",
    "read more",
    "sign up for",
    "subscribe to",
    "newsletter",
    "advertisement",
    "copyright",
];

/// How the sentences of a blog's or a site's chrome start: a post's filing and feeds, a
/// disclaimer. They run longer than a label.
const CHROME_SENTENCES: &[&str] = &[
    "this entry was posted",
    "this was written by",
    "you can follow any responses",
    "by providing information",
];

/// The first word of every chrome start and sentence.
static FIRST_WORDS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
    let mut words: Vec<&str> = CHROME_STARTS
        .iter()
        .chain(CHROME_LABELS)
        .chain(CHROME_SENTENCES)
        .filter_map(|s| s.split(|c: char| !c.is_alphanumeric() && c != '©').next())
        .collect();
    words.sort_unstable();
    words.dedup();
    words
});

/// Whether `node`'s first child with words is one of `chrome`, the lines found so far (a
/// short block under a chrome label: "Most popular student blog posts", then its widget).
fn opens_with(node: &NodeRef, chrome: &[NodeRef]) -> bool {
    let first = node
        .children_it(false)
        .find(|child| child.is_element() || (child.is_text() && !child.text().trim().is_empty()));
    // Children are judged just before their parent: a label is among the last found.
    first.is_some_and(|first| chrome.iter().rev().any(|c| c.id == first.id))
}

/// The most words a line of chrome has; "all rights reserved" may close a longer one, and a
/// chrome sentence may be longer still.
const CHROME_WORDS: usize = 15;
const COPYRIGHT_WORDS: usize = 25;
const SENTENCE_WORDS: usize = 60;

/// Whether an element is a line of chrome. Most lines of an article cannot be, and their
/// first word says so, read in place without copying the line's text.
fn is_chrome(node: &NodeRef, c: &Counts, cell: bool) -> bool {
    let words = c.words;
    let mut first = None;
    let mut reserved = false;
    for text in node.descendants_it().filter(|d| d.is_text()) {
        text.query(|t| {
            if let NodeData::Text { contents } = &t.data {
                if first.is_none() {
                    first = first_word(contents);
                }
                reserved = reserved || mentions_reserved(contents);
            }
        });
        if first.is_some() && (reserved || words > COPYRIGHT_WORDS) {
            break;
        }
    }
    let may_start = first.is_some_and(|first: String| {
        FIRST_WORDS
            .iter()
            .any(|w| first.starts_with(w) || w.starts_with(first.as_str()))
    });
    (may_start || (reserved && words <= COPYRIGHT_WORDS)) && is_chrome_line(&node.text(), c, cell)
}

/// The first word of a text (letters, digits and ©), lower-cased, at most 16 characters.
fn first_word(text: &str) -> Option<String> {
    let word: String = text
        .trim_start_matches(|c: char| !c.is_alphanumeric() && c != '©')
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '©')
        .take(16)
        .flat_map(char::to_lowercase)
        .collect();
    (!word.is_empty()).then_some(word)
}

/// Whether a line is chrome. Only its start is lower-cased (every start above is shorter
/// than 64 characters), and the rest only if it may be a copyright line.
fn is_chrome_line(text: &str, c: &Counts, cell: bool) -> bool {
    let words = text.split_whitespace().count();
    let head = squeeze_lower(text, 64);
    let head = head.trim_start_matches(|c: char| !c.is_alphanumeric() && c != '©');
    (words <= CHROME_WORDS
        && CHROME_STARTS
            .iter()
            .any(|s| head.starts_with(s) && !(cell && s.ends_with(':'))))
        || (words <= CHROME_WORDS
            && !cell
            && CHROME_LABELS
                .iter()
                .any(|s| head.starts_with(s) && labels(head, s, c)))
        || (words <= SENTENCE_WORDS && CHROME_SENTENCES.iter().any(|s| head.starts_with(s)))
        || (words <= COPYRIGHT_WORDS
            && mentions_reserved(text)
            && squeeze_lower(text, usize::MAX).contains("all rights reserved"))
}

/// Whether `label`, which starts `head`, labels its line: the whole line, before a colon,
/// or before links and at most one more word ("Filed under [News], [Rivers]"; not "Most
/// popular languages in 2024", nor a heading that is a link). A copyright line may instead
/// have its year or its sign, and a post's time is a number ("Posted at 10:00 AM").
fn labels(head: &str, label: &str, c: &Counts) -> bool {
    let rest = &head[label.len()..];
    if !rest.is_empty() && !rest.starts_with(|c: char| !c.is_alphanumeric()) {
        return false; // "tagsets", "newsletters"
    }
    let after = rest.trim_start();
    let label_words = label.split_whitespace().count();
    let outside_links = c.words.saturating_sub(c.link_words);
    let whole = head.len() < 64;
    (whole && after.chars().all(|c| !c.is_alphanumeric()))
        || (whole
            && outside_links <= label_words + 4
            && after
                .rsplit(|c: char| !c.is_alphanumeric())
                .find(|w| !w.is_empty())
                .is_some_and(|w| CHROME_TAILS.contains(&w)))
        || after.starts_with(':')
        || (c.links > 0 && (label_words..=label_words + 1).contains(&outside_links))
        || (label == "copyright" && starts_with_copyright_sign_or_year(after))
        || (label == "posted at" && after.starts_with(|c: char| c.is_ascii_digit()))
}

/// The last words of a label that names what a site offers beside the article ("Most popular
/// student blog posts", "Newsletter sign up"), which a heading of the article's own does not
/// end with ("Most popular languages in 2024").
const CHROME_TAILS: &[&str] = &[
    "posts",
    "stories",
    "articles",
    "entries",
    "videos",
    "photos",
    "headlines",
    "links",
    "up",
    "signup",
    "updates",
];

/// "© 2006 …", "(c) 1999 …", "2004 by …": what follows the word "Copyright" in a notice.
fn starts_with_copyright_sign_or_year(text: &str) -> bool {
    let year = text.get(..4).is_some_and(|y| {
        y.bytes().all(|b| b.is_ascii_digit()) && (y.starts_with("19") || y.starts_with("20"))
    });
    year || text.starts_with(['©', '@']) || text.starts_with("(c)")
}

fn mentions_reserved(text: &str) -> bool {
    text.as_bytes()
        .windows(8)
        .any(|w| w.eq_ignore_ascii_case(b"reserved"))
}

/// The first `limit` characters of `text`, white space squeezed to single spaces, lower-cased.
fn squeeze_lower(text: &str, limit: usize) -> String {
    let mut out = String::new();
    let mut space = false;
    for ch in text.trim_start().chars() {
        if out.len() >= limit {
            break;
        }
        if ch.is_whitespace() {
            space = true;
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.extend(ch.to_lowercase());
    }
    out
}

fn is_heading(node: &NodeRef) -> bool {
    walk::named(node, &["h2", "h3", "h4", "h5", "h6"])
}

/// The most words a teaser has beside its heading.
const TEASER_WORDS: usize = 50;

/// A teaser of another article: it opens with a heading that is a link (or it ends in a
/// "Read more" link), and has a few lines under it.
fn is_teaser(item: &NodeRef) -> bool {
    let mut heading = *item;
    while !is_heading(&heading) {
        match heading.first_element_child() {
            Some(child) => heading = child,
            None => return false,
        }
    }
    let heading_words = walk::words_up_to(&heading, TEASER_WORDS);
    if heading_words == 0
        || walk::words_up_to(item, heading_words + TEASER_WORDS) > heading_words + TEASER_WORDS
    {
        return false;
    }
    let links = |node: &NodeRef| -> Vec<String> {
        node.descendants_it()
            .filter(|a| walk::named(a, &["a"]))
            .map(|a| a.text().to_string())
            .collect()
    };
    let linked: usize = links(&heading)
        .iter()
        .map(|t| t.split_whitespace().count())
        .sum();
    linked == heading_words
        || links(item)
            .iter()
            .any(|t| squeeze(t).starts_with("read more"))
}

/// Removes runs of teasers: at least two, and most of their parent's children.
pub(super) fn remove_teasers(root: &NodeRef) {
    let mut doomed = Vec::new();
    for parent in std::iter::once(*root).chain(root.descendants_it()) {
        let children = parent.element_children();
        if children.len() < 2 {
            continue;
        }
        let teasers: Vec<NodeRef> = children.iter().filter(|c| is_teaser(c)).copied().collect();
        if teasers.len() >= 2 && teasers.len() * 2 >= children.len() {
            doomed.extend(teasers);
        }
    }
    for node in doomed {
        node.remove_from_parent();
    }
}
