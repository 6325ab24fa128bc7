//! A short post: a page whose article is a title, a line and a picture. Readability scores
//! paragraphs, finds none there, and takes the comments instead; the post is found from the
//! heading that repeats the page's title.

use super::walk;
use dom_query::{Document, NodeRef};

use super::text::{share_in, shingles, squash, words};
use super::walk::{elements, part};

/// The most words a short post has; a longer one has paragraphs Readability finds.
const MOST_WORDS: usize = 200;

/// The post's container, as HTML, to be read on its own if Readability's choice is wrong.
pub(super) struct ShortPost {
    pub html: String,
}

/// The page's title, cut into the parts a site joins with its name ("Post | Site").
fn title_parts(dom: &Document) -> Vec<String> {
    let (mut og, mut twitter, mut title) = (None, None, None);
    for node in part(dom, "head").iter().flat_map(elements) {
        if node.has_name("meta") {
            let content = || node.attr("content").map(|c| c.to_string());
            if og.is_none() && node.attr("property").is_some_and(|p| &*p == "og:title") {
                og = content();
            } else if twitter.is_none() && node.attr("name").is_some_and(|n| &*n == "twitter:title")
            {
                twitter = content();
            }
        } else if title.is_none() && node.has_name("title") {
            title = Some(node.text().to_string());
        }
    }
    let titles = [og, twitter, title].into_iter().flatten();
    let mut parts = Vec::new();
    for title in titles {
        let whole = std::iter::once(title.as_str());
        let cut = title.split(['|', '-', '–', '—', '»', ':', '/', '·', '•']);
        for part in whole.chain(cut) {
            if words(part).len() >= 2 {
                parts.push(squash(part));
            }
        }
    }
    parts
}

/// Whether a heading links to a site's front page (`/`, or a folder above the page's own
/// address): the site's name, not an article's.
fn links_home(heading: &NodeRef, page: Option<&url::Url>) -> bool {
    heading
        .descendants_it()
        .filter(|a| walk::named(a, &["a"]))
        .filter_map(|a| a.attr("href"))
        .any(|href| {
            let href = href.trim();
            let target = match page {
                Some(page) => page.join(href).ok(),
                None => url::Url::parse(href).ok(),
            };
            match target {
                Some(u) => {
                    u.query().is_none()
                        && (matches!(u.path(), "/" | "")
                            || page.is_some_and(|p| {
                                u.path().ends_with('/')
                                    && p.path().starts_with(u.path())
                                    && p.path() != u.path()
                            }))
                }
                None => matches!(href, "/" | "./" | "index.html" | "index.htm"),
            }
        })
}

/// The heading that names the article: its text is one of the title's parts. The site's
/// name is a part too, but its heading links home; of the rest, one that is not a link wins
/// (a blog's banner may link to its folder, which a page of unknown address cannot tell
/// from elsewhere), then the longest, then the highest rank. Headings in lists are other
/// articles'.
fn title_heading<'a>(
    dom: &Document,
    headings: &[(usize, NodeRef<'a>)],
    page: Option<&url::Url>,
) -> Option<(NodeRef<'a>, bool)> {
    let parts = title_parts(dom);
    // (links elsewhere, squashed length, rank): a heading that is no link wins (a linked one
    // names another page: the site's front, or the post's own permalink), then the longest,
    // then the highest rank, then the first.
    let mut best: Option<(bool, usize, usize, NodeRef<'a>)> = None;
    for &(rank, h) in headings {
        let text = squash(&h.text());
        if text.len() < 6 || !parts.contains(&text) {
            continue;
        }
        let links = h.descendants_it().any(|a| walk::named(&a, &["a"]));
        let better = best.as_ref().is_none_or(|(l, len, r, _)| {
            (!links && *l)
                || (links == *l && (text.len() > *len || (text.len() == *len && rank < *r)))
        });
        if better && !links_home(&h, page) && !h.ancestors_it(None).any(|a| a.has_name("li")) {
            best = Some((links, text.len(), rank, h));
        }
    }
    if let Some((_, _, _, h)) = best {
        return Some((h, false));
    }
    // No heading repeats the title: the first `h2` of three words or more that is no link
    // and in no list names the post (an `h1` is as often the site's name; an `h1` here
    // emptied a Dragnet page); failing any, the first such `h1`.
    let named = |h: &NodeRef| {
        words(&h.text()).len() >= 3
            && !h.descendants_it().any(|a| walk::named(&a, &["a"]))
            && !h.ancestors_it(None).any(|a| a.has_name("li"))
    };
    [1, 0].into_iter().find_map(|want| {
        headings
            .iter()
            .filter(|(rank, _)| *rank == want)
            .map(|(_, h)| *h)
            .find(|h| named(h))
            .map(|h| (h, true))
    })
}

/// The short post around the title's heading: its nearest container with more than the
/// heading in it, if that holds at most [`MOST_WORDS`] outside its comments (an open thread's
/// container often holds its hundreds of comments too).
/// `headings`: the page's `h1`–`h3` with their rank ([`super::walk::survey`]).
pub(super) fn find(
    dom: &Document,
    headings: &[(usize, NodeRef)],
    page: Option<&str>,
) -> Option<ShortPost> {
    let page = page.and_then(|p| url::Url::parse(p).ok());
    let (heading, fallback) = title_heading(dom, headings, page.as_ref())?;
    let heading_words = walk::words_up_to(&heading, MOST_WORDS);
    let mut post = heading;
    loop {
        post = post.parent()?;
        if !post.is_element() || walk::named(&post, &["body"]) {
            return None;
        }
        let n = super::comments::words_outside_comments(&post, MOST_WORDS);
        if n > MOST_WORDS {
            return None;
        }
        if n >= 2 * heading_words + 5 {
            break;
        }
    }
    // A heading found without the title's help over a form names the form ("Email this
    // post"), not a post.
    if fallback
        && post
            .descendants_it()
            .any(|d| walk::named(&d, &["form", "input", "textarea", "select"]))
    {
        return None;
    }
    Some(ShortPost {
        html: post.html().to_string(),
    })
}

impl ShortPost {
    /// The share of `found`'s four-word runs that are the post's.
    pub fn share_of(&self, found: &str) -> f64 {
        let post = Document::fragment(self.html.as_str());
        post.select("script, style, noscript").remove();
        share_in(found, &shingles(&post.root().text()))
    }

    /// Whether Readability's `found` text missed this post: it is short of Readability's own
    /// threshold (it is the best of weak attempts), shares nothing with the post, and is not
    /// much longer than the post.
    pub fn missed_by(&self, found: &str, threshold: usize) -> bool {
        if found.chars().filter(|c| !c.is_whitespace()).count() >= threshold {
            return false;
        }
        let post = Document::fragment(self.html.as_str());
        post.select("script, style, noscript").remove();
        let post = post.root().text();
        let post_words = post.split_whitespace().count();
        post_words * 2 >= found.split_whitespace().count()
            && share_in(found, &shingles(&post)) == 0.0
    }
}
