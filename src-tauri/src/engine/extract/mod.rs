//! Content extraction: turns a fetched response body into a [`Document`] for the
//! knowledge base.
//!
//! The fetcher hands over raw bytes plus the `Content-Type` header; this module
//! decides what the bytes are (HTML, PDF, text, or something to keep as-is),
//! decodes them, pulls out the readable text and the page metadata, and rejects
//! responses that are technically a 200 but really a block or challenge page.
//! It does no I/O and knows nothing about the rest of Gleaner, so it can be
//! tested with fixtures alone.

use dom_smoothie::ReadabilityError;

use super::intake::is_bidi_control;

mod article;
mod decode;
pub(crate) mod fence;
mod parse;
mod pdf;
use article::Attempts;
pub use decode::decode_html;
use decode::decode_text;
use pdf::extract_pdf;

/// What was extracted from one response body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// Plain text (entities decoded, whitespace collapsed); never markup.
    pub title: Option<String>,
    pub byline: Option<String>,
    /// As found in the page, ISO 8601 preferred when several sources disagree.
    pub published: Option<String>,
    pub language: Option<String>,
    pub canonical_url: Option<String>,
    pub description: Option<String>,
    pub site_name: Option<String>,
    /// A scholarly page's journal (`citation_journal_title`): the container a citation names,
    /// which the site (`og:site_name`, often the publisher) is not.
    pub journal: Option<String>,
    /// A scholarly page's `citation_author`s as "Family, Given" (a name written given names
    /// first is turned round; one that may be an organisation's is kept as written).
    pub authors: Vec<String>,
    /// The paper's PDF a landing page names (`citation_pdf_url`, else a PDF
    /// `<link rel="alternate">`), absolute.
    pub pdf_url: Option<String>,
    /// `citation_doi`, as written.
    pub doi: Option<String>,
    /// The abstract a landing page states (`citation_abstract`, else its description).
    pub abstract_text: Option<String>,
    /// Markdown for HTML, plain text for PDF and text types, empty for raw.
    pub text: String,
    pub kind: DocKind,
}

/// What kind of body a [`Document`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    Html,
    Pdf,
    Text,
    /// Not something we extract text from (images, archives, video); the caller
    /// keeps the raw bytes.
    Raw,
}

/// Why a body could not be turned into a [`Document`]. The strings are meant to
/// be shown to the user as they are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    #[error("could not extract the content: {0}")]
    Unparsable(String),
    #[error("the server answered with a block page instead of the content: {0}")]
    Blocked(String),
    #[error("the response body is empty")]
    Empty,
}

/// Extracts text and metadata from `body`. `url` is the final URL of the
/// response; it is used to resolve relative links (canonical URL, links in the
/// Markdown) and may be empty.
pub fn extract(
    body: &[u8],
    content_type: Option<&str>,
    url: &str,
) -> Result<Document, ExtractError> {
    if body.is_empty() {
        return Err(ExtractError::Empty);
    }
    match classify(body, content_type) {
        DocKind::Html => extract_html(body, content_type, url),
        DocKind::Pdf => extract_pdf(body),
        DocKind::Text => Ok(Document {
            text: without_controls(decode_text(body, content_type)),
            ..Document::empty(DocKind::Text)
        }),
        DocKind::Raw => Ok(Document::empty(DocKind::Raw)),
    }
}

/// Text with its control characters dropped, line breaks and tabs kept. They mean nothing in a
/// document, and two of them are what the search index marks its matches with: a text file
/// holding them made words look matched in its snippets.
fn without_controls(text: String) -> String {
    if !text.contains(|c: char| c.is_control() && !matches!(c, '\n' | '\t' | '\r')) {
        return text;
    }
    text.chars()
        .filter(|&c| !c.is_control() || matches!(c, '\n' | '\t' | '\r'))
        .collect()
}

impl Document {
    fn empty(kind: DocKind) -> Self {
        Document {
            title: None,
            byline: None,
            published: None,
            language: None,
            canonical_url: None,
            description: None,
            site_name: None,
            journal: None,
            authors: Vec::new(),
            pdf_url: None,
            doi: None,
            abstract_text: None,
            text: String::new(),
            kind,
        }
    }
}

// ---------------------------------------------------------------------------
// Dispatch
// ---------------------------------------------------------------------------

fn mime_of(content_type: Option<&str>) -> String {
    content_type
        .and_then(|ct| ct.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

fn classify(body: &[u8], content_type: Option<&str>) -> DocKind {
    // Servers and CDNs regularly label PDFs as text/plain or text/html, and a
    // PDF signature is unambiguous, so it wins over the header.
    if looks_like_pdf(body) {
        return DocKind::Pdf;
    }
    let mime = mime_of(content_type);
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => DocKind::Html,
        // An "application/pdf" that is not a PDF is usually a login or error
        // page; reading it as HTML gives a better error than "damaged PDF".
        "application/pdf" | "application/x-pdf" if looks_like_html(body) => DocKind::Html,
        "application/pdf" | "application/x-pdf" => DocKind::Pdf,
        "" | "application/octet-stream" | "binary/octet-stream" | "application/unknown" => {
            if looks_like_html(body) {
                DocKind::Html
            } else {
                DocKind::Raw
            }
        }
        m if is_text_mime(m) => DocKind::Text,
        _ => DocKind::Raw,
    }
}

/// True for the types kept as decoded text rather than saved as raw bytes.
pub fn is_text_mime(mime: &str) -> bool {
    let mime = mime.trim().to_ascii_lowercase();
    if mime.starts_with("image/") {
        return false;
    }
    mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime.as_str(),
            "application/json" | "application/xml" | "application/javascript"
        )
}

/// Whether a body is a PDF, by its signature (what a PDF link answers may be a login page).
pub fn is_pdf(body: &[u8]) -> bool {
    looks_like_pdf(body)
}

fn looks_like_pdf(body: &[u8]) -> bool {
    // The PDF spec lets the header sit anywhere in the first 1024 bytes.
    let head = &body[..body.len().min(1024)];
    head.windows(5).any(|w| w == b"%PDF-")
}

fn looks_like_html(body: &[u8]) -> bool {
    let head = &body[..body.len().min(512)];
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let head = head[start..].to_ascii_lowercase();
    ["<!doctype html", "<html", "<head", "<body"]
        .iter()
        .any(|sig| head.starts_with(sig.as_bytes()))
}

// ---------------------------------------------------------------------------
// HTML
// ---------------------------------------------------------------------------

const NO_READABLE_TEXT: &str = "the page has a body but no readable text";

fn extract_html(
    body: &[u8],
    content_type: Option<&str>,
    url: &str,
) -> Result<Document, ExtractError> {
    let html = decode_html(body, content_type);
    if html.trim().is_empty() {
        return Err(ExtractError::Unparsable(NO_READABLE_TEXT.into()));
    }
    let too_deep = || {
        ExtractError::Unparsable(format!(
            "the page's markup is nested more than {MAX_DEPTH} elements deep"
        ))
    };
    // Given up while parsing: html5ever's time grows with the square of the depth. The tree's
    // own walk then checks what the parse's count could not (nodes it moved).
    let dom = parse::parse_unless_deeper_than(&html, 2 * MAX_DEPTH).ok_or_else(too_deep)?;
    if nested_deeper_than(&dom, MAX_DEPTH) {
        return Err(too_deep());
    }
    let tags = MetaTags::find(&dom);
    if let Some(reason) = block_reason(&dom, &tags, &html) {
        return Err(ExtractError::Blocked(reason.into()));
    }
    // Collected before Readability runs, because it rewrites the tree.
    let meta = PageMeta::collect(&tags, url);
    drop(tags);
    let attempts = if html.len() > BIG_PAGE {
        Attempts::Strictest
    } else {
        Attempts::All
    };
    // The tree holds its own copy of the text; the page's string is not needed any more.
    drop(html);

    // dom_smoothie fails the whole parse on a URL it can't use as a base;
    // without a base it just leaves relative links alone, the better failure.
    let base = url::Url::parse(url)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
        .then_some(url);
    let read = |dom, attempts| {
        article::read(dom, base, attempts).map_err(|e| match e {
            ReadabilityError::GrabFailed => ExtractError::Unparsable(NO_READABLE_TEXT.into()),
            e => ExtractError::Unparsable(format!("the page could not be read: {e}")),
        })
    };
    let article = match read(dom, attempts)? {
        Some(article) => article,
        None => {
            let html = decode_html(body, content_type);
            let dom = dom_query::Document::from(html.as_str());
            drop(html);
            read(dom, Attempts::All)?
                .ok_or_else(|| ExtractError::Unparsable(NO_READABLE_TEXT.into()))?
        }
    };
    let text = tidy_markdown(&article.markdown);
    if text.is_empty() {
        return Err(ExtractError::Unparsable(NO_READABLE_TEXT.into()));
    }

    let byline = if meta.citation_authors.is_empty() {
        article.byline.as_deref().and_then(clean)
    } else {
        Some(meta.citation_authors.join("; "))
    };
    let abstract_text = meta.citation_abstract.clone().or_else(|| {
        // A description is an abstract only on a page that says it is a paper.
        (meta.citation_title.is_some() || !meta.citation_authors.is_empty())
            .then(|| meta.description.clone())
            .flatten()
    });
    let mut dates = meta.citation_dates;
    dates.extend(article.published_time.as_deref().and_then(clean));
    Ok(Document {
        title: meta
            .citation_title
            .or(meta.og_title)
            .or_else(|| clean(&article.title)),
        byline,
        published: dates
            .iter()
            .find(|d| looks_iso8601(d))
            .or(dates.first())
            .cloned(),
        language: article.lang.as_deref().and_then(clean).or(meta.language),
        canonical_url: meta.canonical_url,
        description: meta.description,
        // Not the journal: a journal is a citation's container, and a site named as one made
        // the export take the article for a web page.
        site_name: meta
            .og_site_name
            .or_else(|| article.site_name.as_deref().and_then(clean)),
        journal: meta.journal,
        authors: meta.citation_authors,
        pdf_url: meta.pdf_url,
        doi: meta.doi,
        abstract_text,
        text,
        kind: DocKind::Html,
    })
}

/// Above this much HTML, Readability first tries its strictest attempt alone, on the page's
/// one tree: each of its attempts otherwise works on a copy (BENCHMARKS.md §2, peak memory).
const BIG_PAGE: usize = 1 << 20;

/// No page a person reads nests deeper than this; Blink's HTML parser caps its tree at 512 too.
/// dom_smoothie walks the tree recursively, and in time that grows with the square of the
/// depth: 10 KB of nested `<div>`s took 25 s, and 30,000 nested `<b>` overflowed the 2 MiB
/// stack of the blocking pool's threads, which kills the whole app rather than one job.
const MAX_DEPTH: usize = 512;

/// Whether some element sits more than `limit` elements deep. Walked without recursion, since
/// the tree it checks may be arbitrarily deep.
fn nested_deeper_than(dom: &dom_query::Document, limit: usize) -> bool {
    let Some(mut node) = dom.root().first_element_child() else {
        return false;
    };
    let mut depth = 1;
    loop {
        if depth > limit {
            return true;
        }
        if let Some(child) = node.first_element_child() {
            node = child;
            depth += 1;
            continue;
        }
        loop {
            if let Some(next) = node.next_element_sibling() {
                node = next;
                break;
            }
            match node.parent() {
                Some(parent) if depth > 1 => {
                    node = parent;
                    depth -= 1;
                }
                _ => return false,
            }
        }
    }
}

/// Metadata that dom_smoothie does not cover, or ranks differently from what
/// Gleaner wants (citation_* tags beat everything for scholarly pages).
#[derive(Default)]
struct PageMeta {
    citation_title: Option<String>,
    citation_authors: Vec<String>,
    citation_dates: Vec<String>,
    journal: Option<String>,
    og_title: Option<String>,
    og_site_name: Option<String>,
    description: Option<String>,
    language: Option<String>,
    canonical_url: Option<String>,
    pdf_url: Option<String>,
    doi: Option<String>,
    citation_abstract: Option<String>,
}

/// The page's `<meta content>`, `<link rel href>` and `<title>` elements, in document order,
/// found in one walk of the tree (three selectors matched every element three times).
struct MetaTags<'a> {
    metas: Vec<dom_query::NodeRef<'a>>,
    links: Vec<dom_query::NodeRef<'a>>,
    titles: Vec<dom_query::NodeRef<'a>>,
}

impl<'a> MetaTags<'a> {
    fn find(dom: &'a dom_query::Document) -> Self {
        let mut tags = MetaTags {
            metas: Vec::new(),
            links: Vec::new(),
            titles: Vec::new(),
        };
        for node in dom.root().descendants_it() {
            let Some(name) = node.qual_name_ref() else {
                continue;
            };
            match &*name.local {
                "meta" if node.has_attr("content") => tags.metas.push(node),
                "link" if node.has_attr("rel") && node.has_attr("href") => tags.links.push(node),
                "title" => tags.titles.push(node),
                _ => {}
            }
        }
        tags
    }

    /// Every `<title>`'s text, joined (as `select("title").text()` gives it).
    fn title_text(&self) -> String {
        self.titles
            .iter()
            .map(|t| t.text())
            .fold(String::new(), |mut all, t| {
                all.push_str(&t);
                all
            })
    }
}

impl PageMeta {
    fn collect(tags: &MetaTags, url: &str) -> Self {
        let mut m = PageMeta::default();
        let (mut pub_date, mut date, mut meta_desc, mut og_desc) = (None, None, None, None);
        let (mut og_url, mut content_language, mut citation_language) = (None, None, None);
        for node in &tags.metas {
            let Some(value) = node.attr("content").as_deref().and_then(clean) else {
                continue;
            };
            let key = node
                .attr("name")
                .or_else(|| node.attr("property"))
                .or_else(|| node.attr("http-equiv"))
                .map(|k| k.trim().to_ascii_lowercase())
                .unwrap_or_default();
            // First one wins for single-valued keys, like in browsers' own metadata readers.
            let slot = match key.as_str() {
                "citation_author" => {
                    // Written either way round on the web; stored family first, as intake does.
                    let value = crate::engine::person_name::family_first(&value).unwrap_or(value);
                    m.citation_authors.push(value);
                    continue;
                }
                "citation_title" => &mut m.citation_title,
                "citation_publication_date" => &mut pub_date,
                "citation_date" => &mut date,
                "citation_journal_title" | "citation_conference_title" => &mut m.journal,
                "citation_language" => &mut citation_language,
                "citation_pdf_url" => &mut m.pdf_url,
                "citation_doi" => &mut m.doi,
                "citation_abstract" | "dc.description" | "dcterms.abstract" => {
                    &mut m.citation_abstract
                }
                "og:title" => &mut m.og_title,
                "og:site_name" => &mut m.og_site_name,
                "og:description" => &mut og_desc,
                "og:url" => &mut og_url,
                "description" => &mut meta_desc,
                "content-language" => &mut content_language,
                _ => continue,
            };
            slot.get_or_insert(value);
        }
        m.citation_dates = pub_date.into_iter().chain(date).collect();
        m.description = meta_desc.or(og_desc);
        m.language = content_language.or(citation_language);

        // One walk over the links for the canonical address and a PDF alternate.
        let (mut canonical, mut alternate_pdf) = (None, None);
        for n in &tags.links {
            let Some(rel) = n.attr("rel") else { continue };
            let has = |name: &str| {
                rel.split_ascii_whitespace()
                    .any(|t| t.eq_ignore_ascii_case(name))
            };
            let slot = if has("canonical") {
                &mut canonical
            } else if has("alternate")
                && n.attr("type")
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/pdf"))
            {
                &mut alternate_pdf
            } else {
                continue;
            };
            if slot.is_none() {
                *slot = n.attr("href").and_then(|href| clean(&href));
            }
        }
        m.canonical_url = canonical.or(og_url).map(|href| resolve(url, &href));
        m.pdf_url = m
            .pdf_url
            .take()
            .or(alternate_pdf)
            .map(|href| resolve(url, &href))
            .filter(|u| u.starts_with("http://") || u.starts_with("https://"));
        m
    }
}

fn resolve(base: &str, href: &str) -> String {
    url::Url::parse(base)
        .and_then(|b| b.join(href))
        .map_or_else(|_| href.to_string(), String::from)
}

/// Collapses whitespace; `None` for blank strings so empty tags don't shadow
/// lower-priority sources. Control characters count as space: a page's `<title>` may hold
/// `&#27;[2J`, and a title printed by `gleaner jobs show` must not drive the terminal. Bidi
/// controls (U+202E and the like, see [`is_bidi_control`]) are dropped: one in a title
/// reorders the line it is shown on, in the window's table as in a terminal. So are soft
/// hyphens and zero-width spaces ([`is_invisible`]).
fn clean(s: &str) -> Option<String> {
    let kept: String;
    let s = if s.contains(|c| is_bidi_control(c) || is_invisible(c)) {
        kept = s
            .chars()
            .filter(|&c| !is_bidi_control(c) && !is_invisible(c))
            .collect();
        &kept
    } else {
        s
    };
    let joined = s
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    (!joined.is_empty()).then_some(joined)
}

fn looks_iso8601(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
}

/// Trims trailing spaces and squeezes runs of blank lines, which both the
/// Markdown serializer and PDF text output produce in abundance. Control characters other
/// than tab are dropped: they have no place in a text file, and an escape sequence in one
/// would act on the terminal of whoever prints it with `cat`. So are the characters that
/// are not text ([`is_invisible`]).
fn tidy_text(s: &str) -> String {
    tidy(s, false)
}

/// [`tidy_text`] for Markdown: a fenced code block is kept as written (its blank lines and
/// its trailing spaces are code), and a hard break (two spaces at a line's end: `<br>` in the
/// page, an address's or a poem's lines) stays one.
fn tidy_markdown(s: &str) -> String {
    tidy(s, true)
}

fn tidy(s: &str, markdown: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank_run = 0;
    let mut fences = fence::Fences::default();
    // The line written last ended in a hard break, which holds only before a line of its
    // paragraph.
    let mut hard_break = false;
    for line in s.lines() {
        let kept: String;
        let dropped = |c: char| (c.is_control() && c != '\t') || is_invisible(c);
        let line = if line.contains(dropped) {
            kept = line.chars().filter(|&c| !dropped(c)).collect();
            &kept
        } else {
            line
        };
        if markdown && fences.is_code(line) {
            if !out.is_empty() {
                out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
            }
            blank_run = 0;
            hard_break = false;
            out.push_str(line);
            continue;
        }
        let trimmed = line.trim_end();
        if trimmed.trim_start().is_empty() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            if hard_break && blank_run == 0 {
                out.push_str("  ");
            }
            out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
        }
        blank_run = 0;
        hard_break =
            markdown && line.ends_with("  ") && !trimmed.trim_start().starts_with(['#', '|']);
        out.push_str(trimmed);
    }
    out
}

/// Characters that are not text: a soft hyphen (a place a word may break), a zero-width
/// space, a word joiner, a byte-order mark inside text. In a stored document they split a word
/// for search ("Bundes\u{ad}regierung" is two words to the index) and for `grep`.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{ad}' | '\u{200b}' | '\u{2060}' | '\u{feff}')
}

// ---------------------------------------------------------------------------
// Block pages
// ---------------------------------------------------------------------------

/// Challenge pages are short. Below this, challenge wording or markup is taken
/// at face value; above it, the page is assumed to be real content that merely
/// mentions or embeds such things.
const SHORT_PAGE_CHARS: usize = 2000;
/// A CAPTCHA widget or an "access denied" heading on its own is only a block
/// page when there is next to nothing else: ordinary articles carry reCAPTCHA
/// comment forms, and short pages can be about access control.
const TINY_PAGE_CHARS: usize = 600;

fn block_reason(dom: &dom_query::Document, tags: &MetaTags, html: &str) -> Option<&'static str> {
    let title = tags
        .title_text()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    if title.starts_with("attention required! | cloudflare") {
        return Some("Cloudflare challenge page");
    }
    let visible = visible_chars(dom);
    if visible >= SHORT_PAGE_CHARS {
        return None;
    }
    // Not the bare "/cdn-cgi/challenge-platform/" prefix: Cloudflare injects
    // its bot-detection script (".../scripts/jsd/...") into ordinary pages too.
    let cloudflare_markers = [
        "_cf_chl_opt",
        "cf-chl-",
        "/cdn-cgi/challenge-platform/h/",
        "cf-browser-verification",
    ]
    .iter()
    .any(|m| html.contains(m));
    if title.starts_with("just a moment") || cloudflare_markers {
        return Some("Cloudflare challenge page");
    }
    let body_text = dom.select("body").text().to_lowercase();
    let captcha_words = [
        "verify you are human",
        "are you a robot",
        "not a robot",
        "complete the security check",
    ]
    .iter()
    .any(|w| body_text.contains(w));
    if captcha_words {
        return Some("CAPTCHA page");
    }
    if visible >= TINY_PAGE_CHARS {
        return None;
    }
    let captcha_widget = !dom
        .select(".g-recaptcha, .h-captcha, .cf-turnstile, iframe[src*=recaptcha], iframe[src*=hcaptcha]")
        .is_empty();
    if captcha_widget {
        return Some("CAPTCHA page");
    }
    let heading = dom.select("h1").text().to_lowercase();
    let denied = [
        "access denied",
        "403 forbidden",
        "request blocked",
        "you have been blocked",
    ]
    .iter()
    .any(|w| title.contains(w) || heading.contains(w));
    denied.then_some("access denied page")
}

/// Non-whitespace characters a reader would see: body text minus the inline
/// scripts and styles that challenge pages are mostly made of. Counted in one walk
/// that skips them, without copying the body's text (every page is asked this).
fn visible_chars(dom: &dom_query::Document) -> usize {
    let mut count = 0;
    let mut open: Vec<_> = article::walk::part(dom, "body").into_iter().collect();
    while let Some(node) = open.pop() {
        for child in node.children_it(false) {
            if child.is_text() {
                count += child.text().chars().filter(|c| !c.is_whitespace()).count();
            } else if child.is_element()
                && !child
                    .qual_name_ref()
                    .is_some_and(|n| matches!(&*n.local, "script" | "style" | "template"))
            {
                open.push(child);
            }
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! fixture {
        ($name:literal) => {
            include_bytes!(concat!("../../../tests-fixtures/extract/", $name)).as_slice()
        };
    }

    const HTML: Option<&str> = Some("text/html; charset=utf-8");
    const URL: &str = "https://courier.example/news/2024/05/14/mill";

    fn ok(body: &[u8], content_type: Option<&str>) -> Document {
        match extract(body, content_type, URL) {
            Ok(doc) => doc,
            Err(e) => panic!("expected a document, got {e:?}"),
        }
    }

    fn unparsable(body: &[u8], content_type: Option<&str>) -> String {
        match extract(body, content_type, URL) {
            Err(ExtractError::Unparsable(reason)) => reason,
            other => panic!("expected Unparsable, got {other:?}"),
        }
    }

    #[test]
    fn news_article_keeps_the_story_and_drops_the_chrome() {
        let doc = ok(fixture!("news-article.html"), HTML);
        assert_eq!(doc.kind, DocKind::Html);
        assert!(
            doc.text
                .contains("Residents of Kelmouth voted by a wide margin on Tuesday")
        );
        assert!(
            doc.text.contains("## A working mill again"),
            "headings become Markdown: {}",
            doc.text
        );
        assert!(
            doc.text
                .contains("[published plan](https://courier.example/docs/mill-plan.pdf)")
        );
        for chrome in [
            "cookie",
            "Related stories",
            "sourdough award",
            "All rights reserved",
            "Subscribe today",
        ] {
            assert!(
                !doc.text.contains(chrome),
                "{chrome:?} leaked into the text:\n{}",
                doc.text
            );
        }
        assert_eq!(
            doc.title.as_deref(),
            Some("Harbour town votes to restore its tidal mill")
        );
        assert_eq!(doc.byline.as_deref(), Some("Priya Anand"));
        assert_eq!(doc.published.as_deref(), Some("2024-05-14T08:30:00Z"));
        assert_eq!(doc.language.as_deref(), Some("en-GB"));
        assert_eq!(doc.site_name.as_deref(), Some("The Coastal Courier"));
        assert_eq!(
            doc.canonical_url.as_deref(),
            Some("https://courier.example/news/2024/05/tidal-mill"),
            "relative canonical links are resolved against the page URL"
        );
        assert!(
            doc.description
                .as_deref()
                .is_some_and(|d| d.starts_with("Residents of Kelmouth backed"))
        );
    }

    #[test]
    fn a_landing_page_names_its_pdf_its_authors_and_its_abstract() {
        let doc = ok(fixture!("scholarly.html"), HTML);
        assert_eq!(
            doc.pdf_url.as_deref(),
            Some("https://journal.example/articles/42.pdf")
        );
        assert_eq!(doc.authors, ["Okafor, Chidi", "Lindqvist, Astrid"]);
        assert_eq!(
            doc.abstract_text.as_deref(),
            Some("A two-season field study of bedload in a braided reach.")
        );
        // A PDF named only by an alternate link, relative to the page; a page with no paper
        // has no abstract, whatever its description says.
        let page = br#"<html><head><link rel="alternate" type="application/pdf" href="/paper.pdf">
            <meta name="description" content="A blog."></head>
            <body><article><p>Some words of a post that is long enough to be read as the article's own text by the extractor.</p></article></body></html>"#;
        let doc = ok(page, HTML);
        assert_eq!(
            doc.pdf_url.as_deref(),
            Some("https://courier.example/paper.pdf")
        );
        assert_eq!(doc.abstract_text, None);
        let not_web = br#"<html><head><meta name="citation_pdf_url" content="javascript:alert(1)"></head>
            <body><article><p>Some words of a post that is long enough to be read as the article's own text by the extractor.</p></article></body></html>"#;
        assert_eq!(ok(not_web, HTML).pdf_url, None);
    }

    #[test]
    fn authors_written_given_names_first_are_stored_family_first() {
        let page = br#"<html><head>
            <meta name="citation_title" content="Attention Is All You Need">
            <meta name="citation_author" content="Ashish Vaswani">
            <meta name="citation_author" content="Ludwig van Beethoven">
            <meta name="citation_author" content="Shazeer, Noam">
            <meta name="citation_author" content="Google Brain">
            <meta name="citation_author" content="ATLAS Collaboration">
            </head><body><article><p>Some words of a paper's landing page, long enough to be read as the article's own text by the extractor.</p></article></body></html>"#;
        assert_eq!(
            ok(page, HTML).authors,
            [
                "Vaswani, Ashish",
                "van Beethoven, Ludwig",
                "Shazeer, Noam",
                "Google Brain",
                "ATLAS Collaboration"
            ]
        );
    }

    /// A text file's control characters go (the index marks matches with two of them), its
    /// line breaks and tabs stay.
    #[test]
    fn a_text_files_control_characters_are_dropped() {
        let doc = ok(
            b"Plain \x02spoofed\x03 notes\x00\n\tindented\r\n",
            Some("text/plain"),
        );
        assert_eq!(doc.text, "Plain spoofed notes\n\tindented\r\n");
    }

    #[test]
    fn citation_tags_beat_opengraph_and_title() {
        let doc = ok(fixture!("scholarly.html"), HTML);
        assert_eq!(
            doc.title.as_deref(),
            Some("Sediment Transport in Braided Rivers: A Field Study")
        );
        assert_eq!(
            doc.byline.as_deref(),
            Some("Okafor, Chidi; Lindqvist, Astrid")
        );
        assert_eq!(doc.published.as_deref(), Some("2023/11/02"));
        assert_eq!(doc.journal.as_deref(), Some("Journal of Fluvial Studies"));
        assert_eq!(doc.site_name, None, "a journal is no site's name");
        assert!(doc.text.contains("bedload transport over two seasons"));
        assert!(!doc.text.contains("Log in"));
    }

    #[test]
    fn json_ld_supplies_headline_author_and_date() {
        let doc = ok(fixture!("jsonld-article.html"), HTML);
        assert_eq!(
            doc.title.as_deref(),
            Some("Ten years of keeping bees on a city roof")
        );
        assert_eq!(doc.byline.as_deref(), Some("Jonas Weber"));
        assert_eq!(doc.published.as_deref(), Some("2022-03-09"));
        assert_eq!(doc.language.as_deref(), Some("fr"));
    }

    #[test]
    fn markup_in_title_stays_literal_text() {
        let doc = ok(fixture!("xss-title.html"), HTML);
        assert_eq!(
            doc.title.as_deref(),
            Some(r#"<img src=x onerror="document.title='pwned'">"#)
        );
    }

    #[test]
    fn latin1_page_with_meta_charset_and_no_header_charset() {
        let body = fixture!("latin1-meta.html");
        assert!(
            std::str::from_utf8(body).is_err(),
            "fixture must really be ISO-8859-1"
        );
        let decoded = decode_html(body, Some("text/html"));
        assert!(decoded.contains("Café Müller") && !decoded.contains('\u{FFFD}'));
        let doc = ok(body, Some("text/html"));
        assert_eq!(doc.title.as_deref(), Some("Ein Besuch im Café Müller"));
        assert!(doc.text.contains("Frau Müller öffnet jeden Morgen"));
    }

    #[test]
    fn latin1_page_without_any_declaration_is_sniffed() {
        let body = fixture!("latin1-nometa.html");
        assert!(!body.windows(7).any(|w| w.eq_ignore_ascii_case(b"charset")));
        let decoded = decode_html(body, None);
        assert!(decoded.contains("café") || decoded.contains("Café"));
        assert!(decoded.contains("Müller") && !decoded.contains('\u{FFFD}'));
        assert!(ok(body, None).text.contains("Käsekuchen"));
    }

    #[test]
    fn charset_precedence_header_then_bom_then_meta() {
        let latin1 = fixture!("latin1-meta.html");
        // A wrong header charset wins over the meta tag, as in browsers.
        assert!(decode_html(latin1, Some("text/html; charset=utf-8")).contains('\u{FFFD}'));
        assert!(decode_html(latin1, Some("text/html; charset=\"ISO-8859-1\"")).contains("Müller"));
        let mut bom = b"\xEF\xBB\xBF".to_vec();
        bom.extend_from_slice("<meta charset=iso-8859-1><p>Müller</p>".as_bytes());
        assert_eq!(
            decode_html(&bom, None),
            "<meta charset=iso-8859-1><p>Müller</p>"
        );
        let http_equiv = b"<meta http-equiv='Content-Type' content='text/html; charset=windows-1252'><p>caf\xE9</p>";
        assert!(decode_html(http_equiv, None).ends_with("<p>café</p>"));
        // Invalid bytes never panic, whatever the declared charset.
        for ct in [
            None,
            Some("text/html; charset=shift_jis"),
            Some("text/html; charset=bogus"),
        ] {
            let _ = decode_html(b"\xFF\xFE\x00\xC3<meta charset=", ct);
        }
    }

    #[test]
    fn block_pages_are_reported_as_blocked() {
        let cf = extract(fixture!("cloudflare.html"), HTML, URL);
        assert_eq!(
            cf,
            Err(ExtractError::Blocked("Cloudflare challenge page".into()))
        );
        let captcha = extract(fixture!("captcha.html"), HTML, URL);
        assert_eq!(captcha, Err(ExtractError::Blocked("CAPTCHA page".into())));
        let attention = b"<html><head><title>Attention Required! | Cloudflare</title></head><body>x</body></html>";
        assert!(matches!(
            extract(attention, HTML, URL),
            Err(ExtractError::Blocked(_))
        ));
        let denied = b"<html><head><title>Access Denied</title></head><body><h1>Access Denied</h1>\
            <p>You don't have permission to access this server.</p></body></html>";
        assert_eq!(
            extract(denied, HTML, URL),
            Err(ExtractError::Blocked("access denied page".into()))
        );
    }

    #[test]
    fn visible_text_leaves_out_scripts_styles_and_templates_at_any_depth() {
        let dom = dom_query::Document::from(
            "<html><head><title>t</title><style>h1{}</style></head><body><p>ab c</p>\
             <script>var x = 1;</script><div><style>p { color: red }</style>\
             <template><p>not shown</p></template><span> d <b>e</b></span></div></body></html>",
        );
        // a, b, c, d, e: the title and everything hidden are not counted.
        assert_eq!(visible_chars(&dom), 5);
        assert_eq!(visible_chars(&dom_query::Document::from("")), 0);
    }

    #[test]
    fn an_article_with_a_captcha_comment_form_is_not_blocked() {
        let html = String::from_utf8_lossy(fixture!("news-article.html")).replace(
            "</article>",
            r#"<form class="comments"><div class="g-recaptcha" data-sitekey="k"></div></form></article>
            <script src="/cdn-cgi/challenge-platform/scripts/jsd/main.js"></script>"#,
        );
        assert!(ok(html.as_bytes(), HTML).text.contains("tidal mill"));
    }

    #[test]
    fn a_page_without_readable_text_is_unparsable() {
        assert_eq!(
            unparsable(fixture!("js-shell.html"), HTML),
            NO_READABLE_TEXT
        );
        assert_eq!(unparsable(b"   \n ", HTML), NO_READABLE_TEXT);
    }

    #[test]
    fn control_characters_in_a_page_reach_neither_its_title_nor_its_text() {
        let page = format!(
            "<html><head><title>Evil &#27;[2J&#27;]0;pwned&#7; title\u{9b}31m</title>\
             <meta name=\"description\" content=\"a&#27;[31mb\"></head><body><article><p>{}</p>\
             <p>Tab\there, escape &#27;[2J gone, bell&#7; gone.</p></article></body></html>",
            "A paragraph of ordinary prose that is long enough to be read as content. ".repeat(8)
        );
        let doc = ok(page.as_bytes(), HTML);
        assert_eq!(doc.title.as_deref(), Some("Evil [2J ]0;pwned title 31m"));
        assert_eq!(doc.description.as_deref(), Some("a [31mb"));
        assert!(
            !doc.text
                .contains(|c: char| c.is_control() && c != '\n' && c != '\t'),
            "{:?}",
            doc.text
        );
        assert!(
            doc.text.contains("escape \\[2J gone, bell gone."),
            "{}",
            doc.text
        );
    }

    #[test]
    fn bidi_controls_in_a_page_reach_neither_its_title_nor_its_metadata() {
        // "txt.exe" shown as "exe.txt", and the rest of the row reversed after it.
        let page = format!(
            "<html><head><title>Invoice &#x202E;exe.txt&#x202C; and \u{2067}isolate\u{2069} \
             \u{200f}mark\u{200e} \u{061c}arabic</title>\
             <meta name=\"description\" content=\"d&#x202D;e&#x202A;f\"></head><body><article>\
             <p>{}</p></article></body></html>",
            "A paragraph of ordinary prose that is long enough to be read as content. ".repeat(8)
        );
        let doc = ok(page.as_bytes(), HTML);
        assert_eq!(
            doc.title.as_deref(),
            Some("Invoice exe.txt and isolate mark arabic")
        );
        assert_eq!(doc.description.as_deref(), Some("def"));
    }

    #[test]
    fn pdf_text_and_info_title() {
        let doc = ok(fixture!("article.pdf"), Some("application/pdf"));
        assert_eq!(doc.kind, DocKind::Pdf);
        assert_eq!(doc.title.as_deref(), Some("Field Notes on Moss (fixture)"));
        assert!(
            doc.text
                .contains("This sentence proves the PDF text layer was extracted.")
        );
    }

    #[test]
    fn pdf_without_info_title_uses_first_line() {
        let doc = ok(fixture!("untitled.pdf"), None);
        assert_eq!(doc.title.as_deref(), Some("Field Notes on Moss"));
    }

    #[test]
    fn broken_pdfs_are_unparsable_not_panics() {
        for body in [fixture!("truncated.pdf"), fixture!("garbage.pdf")] {
            let reason = unparsable(body, Some("application/pdf"));
            assert!(
                reason.starts_with("the PDF is damaged or truncated"),
                "{reason}"
            );
        }
        // Every prefix of a valid PDF: some of these used to hit unwraps deep in
        // the parser; all must come back as a value.
        let pdf = fixture!("article.pdf");
        for len in 1..pdf.len() {
            let _ = extract(&pdf[..len], Some("application/pdf"), URL);
        }
    }

    #[test]
    fn a_panic_inside_the_pdf_crate_becomes_unparsable() {
        let reason = unparsable(fixture!("panicky.pdf"), None);
        assert!(
            reason.starts_with("the PDF is damaged or truncated: the PDF reader crashed"),
            "{reason}"
        );
    }

    #[test]
    fn encrypted_pdfs() {
        assert_eq!(
            unparsable(fixture!("encrypted.pdf"), None),
            "the PDF is encrypted"
        );
        // Only an owner password (print/copy restrictions): readable like in any viewer.
        let doc = ok(fixture!("owner-locked.pdf"), None);
        assert!(doc.text.contains("This sentence proves"));
    }

    #[test]
    fn empty_body() {
        assert_eq!(
            extract(fixture!("empty.bin"), HTML, URL),
            Err(ExtractError::Empty)
        );
        assert_eq!(extract(b"", None, URL), Err(ExtractError::Empty));
    }

    #[test]
    fn text_types_are_kept_as_decoded_text() {
        let json = ok(fixture!("feed.json"), Some("application/json"));
        assert_eq!(json.kind, DocKind::Text);
        assert!(json.text.contains("Mill vote passed."));
        let rss = ok(
            fixture!("feed.rss"),
            Some("application/rss+xml; charset=utf-8"),
        );
        assert_eq!(rss.kind, DocKind::Text);
        assert!(
            rss.text.starts_with("<?xml")
                && rss.text.contains("<title>The Coastal Courier</title>")
        );
        let xml_latin1 = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><t>M\xFCller</t>";
        assert!(
            ok(xml_latin1, Some("application/xml"))
                .text
                .contains("Müller")
        );
        assert_eq!(ok(b"# Notes\n", Some("text/markdown")).text, "# Notes\n");
    }

    #[test]
    fn binary_types_are_raw() {
        for ct in [Some("image/png"), None, Some("application/octet-stream")] {
            let doc = ok(fixture!("pixel.png"), ct);
            assert_eq!((doc.kind, doc.text.as_str()), (DocKind::Raw, ""));
        }
        assert_eq!(
            ok(b"PK\x03\x04zip", Some("application/zip")).kind,
            DocKind::Raw
        );
        assert_eq!(ok(b"<svg/>", Some("image/svg+xml")).kind, DocKind::Raw);
    }

    #[test]
    fn sniffing_when_the_type_is_missing_or_wrong() {
        assert_eq!(ok(fixture!("news-article.html"), None).kind, DocKind::Html);
        let octet = Some("application/octet-stream");
        assert_eq!(ok(fixture!("news-article.html"), octet).kind, DocKind::Html);
        assert_eq!(ok(fixture!("article.pdf"), octet).kind, DocKind::Pdf);
        assert_eq!(
            ok(fixture!("article.pdf"), Some("text/plain")).kind,
            DocKind::Pdf
        );
        // A "PDF" link that answers with a login page.
        let fake_pdf = extract(fixture!("captcha.html"), Some("application/pdf"), URL);
        assert!(matches!(fake_pdf, Err(ExtractError::Blocked(_))));
    }

    #[test]
    fn truncated_and_odd_inputs_never_panic() {
        let fixtures: [&[u8]; 7] = [
            fixture!("news-article.html"),
            fixture!("scholarly.html"),
            fixture!("jsonld-article.html"),
            fixture!("latin1-meta.html"),
            fixture!("cloudflare.html"),
            fixture!("feed.rss"),
            fixture!("encrypted.pdf"),
        ];
        for body in fixtures {
            for cut in (1..body.len()).step_by(97) {
                let _ = extract(&body[..cut], None, "");
                let _ = extract(&body[..cut], HTML, "not a url");
                let _ = extract(&body[..cut], HTML, "http://");
            }
        }
        let _ = extract(b"<html><title>\xFF\xFE</title><meta charset=\"", None, URL);
    }

    #[test]
    fn deeply_nested_markup_is_refused_quickly_without_overflowing_the_stack() {
        // Without the depth limit the first body overflowed this thread's 2 MiB stack (the
        // process aborts), and the second took many seconds in dom_smoothie.
        let overflow = format!("<body>{}text", "<b>".repeat(30_000));
        let slow = format!("<body>{}text", "<div>".repeat(3_000));
        let start = std::time::Instant::now();
        for body in [overflow, slow] {
            match extract(body.as_bytes(), HTML, URL) {
                Err(ExtractError::Unparsable(e)) => {
                    assert!(e.contains("nested more than 512"), "{e}")
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        // Nesting short of the limit is still read.
        let deep = format!(
            "<body>{}<p>{}</p>",
            "<div>".repeat(MAX_DEPTH - 4),
            "A paragraph of real text, long enough to be the article. ".repeat(8)
        );
        let doc = ok(deep.as_bytes(), HTML);
        assert!(doc.text.contains("A paragraph of real text"), "{doc:?}");
    }
}
