//! The reader's HTML: a library document's Markdown rendered with pulldown-cmark, then
//! sanitised with ammonia, so the window gets markup that can hold nothing active.
//!
//! A document's text comes from the web, so both steps assume it is hostile:
//! - raw HTML in the Markdown is shown as the text it is, never parsed as markup;
//! - links keep only http(s) targets and the document's own `#` anchors (footnotes); a
//!   relative link is made absolute against the page it came from, and any other scheme loses
//!   its target and stays as plain text;
//! - images are never loaded (the CSP blocks remote ones anyway): their alt text is shown.
//!
//! The window opens an http(s) link in the system browser, never in its own webview.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

/// The prefix given to every `id` the document makes (footnote definitions), so that none can
/// clash with an element of the window itself.
const ID_PREFIX: &str = "doc-";

/// The HTML of the reader's first piece, in bytes before sanitising: about a screenful, so the
/// first frame is painted without laying out the rest of a long document.
pub const FIRST_PIECE_BYTES: usize = 16 * 1024;
/// The HTML of each later piece, which the window appends one a frame.
pub const PIECE_BYTES: usize = 256 * 1024;

/// Markdown as safe HTML for the reader, in one piece.
pub fn markdown_to_html(markdown: &str) -> String {
    render_blocks(markdown, None, 0, usize::MAX, usize::MAX)
        .pieces
        .concat()
}

/// A document's HTML in pieces cut between top-level blocks, each sanitised on its own.
#[derive(Debug, Default, PartialEq)]
pub struct Rendered {
    pub pieces: Vec<String>,
    /// The top-level block the next piece starts at, if any is left.
    pub next: Option<usize>,
}

/// Renders the top-level blocks from block `from` on, in pieces of at least `piece_bytes` of
/// HTML (the last may be smaller), and stops after `max_pieces`.
///
/// A cut between top-level blocks never splits an element, and the parse is always of the
/// whole text, so links to references defined anywhere resolve, and footnotes keep the
/// numbers they have in the whole document.
/// `base`: the address the document came from, which its relative links are relative to.
pub fn render_blocks(
    markdown: &str,
    base: Option<&str>,
    from: usize,
    piece_bytes: usize,
    max_pieces: usize,
) -> Rendered {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_FOOTNOTES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TASKLISTS);
    // The TeX a page's MathML or MathJax kept (`$…$`, `$$…$$`): without it, Markdown read its
    // backslashes as escapes and its `^{*}` as emphasis.
    options.insert(Options::ENABLE_MATH);
    let base = base.and_then(|b| url::Url::parse(b).ok());
    let mut guarded = Guarded::new(Parser::new_ext(markdown, options), base);
    guarded.anchors = footnote_names(markdown);
    let mut events = guarded.peekable();
    let sanitizer = sanitizer();
    let mut out = Rendered::default();
    let mut raw = String::new();
    let mut block = Vec::new();
    let mut index = 0;
    while next_block(&mut events, &mut block) {
        if index >= from {
            pulldown_cmark::html::push_html(&mut raw, block.drain(..));
        }
        block.clear();
        index += 1;
        let end = events.peek().is_none();
        if raw.len() >= piece_bytes {
            out.pieces.push(sanitizer.clean(&raw).to_string());
            raw.clear();
            if out.pieces.len() >= max_pieces {
                out.next = (!end).then_some(index);
                return out;
            }
        }
        if end {
            break;
        }
    }
    if !raw.is_empty() {
        out.pieces.push(sanitizer.clean(&raw).to_string());
    }
    out
}

/// Collects one top-level block's events into `block`; false when none was left.
fn next_block<'a>(
    events: &mut impl Iterator<Item = Event<'a>>,
    block: &mut Vec<Event<'a>>,
) -> bool {
    let mut depth = 0usize;
    for event in events.by_ref() {
        match &event {
            Event::Start(_) => depth += 1,
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
        block.push(event);
        if depth == 0 {
            return true;
        }
    }
    !block.is_empty()
}

/// The sanitiser: ammonia's defaults (no scripts, styles, event handlers or forms), narrowed
/// to what rendered Markdown makes.
fn sanitizer() -> ammonia::Builder<'static> {
    let mut b = ammonia::Builder::default();
    b.rm_tags(["img", "area", "map"])
        .url_schemes(HashSet::from(["http", "https"]))
        .url_relative(ammonia::UrlRelative::Custom(Box::new(in_document)))
        .link_rel(Some("noopener noreferrer nofollow"))
        .add_tag_attributes("div", ["id"])
        .add_tag_attributes("input", ["type", "checked", "disabled"])
        .add_tags(["input"])
        .id_prefix(Some(ID_PREFIX))
        .add_allowed_classes("span", ["img-alt"])
        .add_allowed_classes("div", ["footnote-definition"])
        .add_allowed_classes("sup", ["footnote-definition-label", "footnote-reference"]);
    b
}

/// A relative link survives only as an anchor in the document itself, pointed at the
/// prefixed id ammonia gives the element.
fn in_document(url: &str) -> Option<Cow<'_, str>> {
    let name = url.strip_prefix('#')?;
    if name.is_empty() || name.starts_with(ID_PREFIX) {
        return Some(Cow::Borrowed(url));
    }
    Some(Cow::Owned(format!("#{ID_PREFIX}{name}")))
}

/// The event stream with what must not render taken out or made text.
struct Guarded<'a, I> {
    inner: I,
    /// Inside an image: its alt text is shown and the rest of it dropped.
    in_image: usize,
    /// For each open link, whether its start was kept (its end must match).
    links: Vec<bool>,
    /// Footnote numbers in the order of first mention, as pulldown-cmark's writer gives them;
    /// kept here because each piece has its own writer.
    footnotes: HashMap<CowStr<'a>, usize>,
    queued: Option<Event<'a>>,
    base: Option<url::Url>,
    /// The footnotes the document defines: the only ids a `#` link can reach in it.
    anchors: HashSet<String>,
}

/// The names of the footnotes `markdown` defines (`[^name]: …` at a line's start).
fn footnote_names(markdown: &str) -> HashSet<String> {
    markdown
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("[^"))
        .filter_map(|rest| rest.split_once("]:").map(|(name, _)| name.to_string()))
        .collect()
}

impl<'a, I: Iterator<Item = Event<'a>>> Guarded<'a, I> {
    fn new(inner: I, base: Option<url::Url>) -> Self {
        Self {
            base,
            anchors: HashSet::new(),
            inner,
            in_image: 0,
            links: Vec::new(),
            footnotes: HashMap::new(),
            queued: None,
        }
    }

    fn footnote(&mut self, name: CowStr<'a>) -> (String, usize) {
        let mut id = String::new();
        // Writing to a String cannot fail.
        let _ = pulldown_cmark_escape::escape_html(&mut id, &name);
        let next = self.footnotes.len() + 1;
        (id, *self.footnotes.entry(name).or_insert(next))
    }
}

/// `<br>`, `<br/>` or `<br />`, in any case: a tag with nothing in it to keep.
fn is_line_break(html: &str) -> bool {
    let inner = html.trim();
    let Some(inner) = inner.strip_prefix('<').and_then(|t| t.strip_suffix('>')) else {
        return false;
    };
    let inner = inner.strip_suffix('/').unwrap_or(inner).trim_end();
    inner.eq_ignore_ascii_case("br")
}

fn safe_target(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with('#')
}

impl<'a, I: Iterator<Item = Event<'a>>> Iterator for Guarded<'a, I> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        if let Some(e) = self.queued.take() {
            return Some(e);
        }
        loop {
            let event = self.inner.next()?;
            let out = match event {
                // The extractor writes a line break inside a table cell (or a link's text) as
                // `<br>`, the one place Markdown has none; it is that break, not its spelling.
                Event::InlineHtml(t) if is_line_break(&t) => Event::HardBreak,
                // Markup a page spelled out stays the text it is.
                Event::Html(t) | Event::InlineHtml(t) => Event::Text(t),
                // TeX is shown as the source it is, with its delimiters.
                Event::InlineMath(t) => Event::Code(format!("${t}$").into()),
                Event::DisplayMath(t) => Event::Code(format!("$${t}$$").into()),
                Event::Start(Tag::Image { .. }) => {
                    self.in_image += 1;
                    if self.in_image > 1 {
                        continue;
                    }
                    self.queued = Some(Event::Text(CowStr::Borrowed("[image: ")));
                    Event::InlineHtml(CowStr::Borrowed("<span class=\"img-alt\">"))
                }
                Event::End(TagEnd::Image) => {
                    self.in_image = self.in_image.saturating_sub(1);
                    if self.in_image > 0 {
                        continue;
                    }
                    self.queued = Some(Event::InlineHtml(CowStr::Borrowed("</span>")));
                    Event::Text(CowStr::Borrowed("]"))
                }
                Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                }) => {
                    // A relative link (a Markdown file's `docs/guide.md`) points where it did on
                    // its page; `javascript:` and the like parse as absolute and stay refused.
                    let dest_url = match (&self.base, url::Url::parse(&dest_url)) {
                        (Some(base), Err(url::ParseError::RelativeUrlWithoutBase))
                            if !dest_url.starts_with('#') =>
                        {
                            match base.join(&dest_url) {
                                Ok(absolute) => CowStr::from(absolute.to_string()),
                                Err(_) => dest_url,
                            }
                        }
                        _ => dest_url,
                    };
                    // A page's own `#fn2` points at an id its Markdown does not carry: a link
                    // that goes nowhere is plain words.
                    let reachable = dest_url
                        .strip_prefix('#')
                        .is_none_or(|name| self.anchors.contains(name));
                    // An e-mail address (`<a@b.org>`) would be written `mailto:…`, which the
                    // sanitiser drops: an anchor with nowhere to go. It stays words.
                    let keep = self.in_image == 0
                        && reachable
                        && link_type != pulldown_cmark::LinkType::Email
                        && safe_target(&dest_url);
                    self.links.push(keep);
                    if !keep {
                        continue;
                    }
                    Event::Start(Tag::Link {
                        link_type,
                        dest_url,
                        title,
                        id,
                    })
                }
                Event::End(TagEnd::Link) => {
                    if !self.links.pop().unwrap_or(false) {
                        continue;
                    }
                    Event::End(TagEnd::Link)
                }
                Event::FootnoteReference(name) if self.in_image == 0 => {
                    let (id, n) = self.footnote(name);
                    Event::InlineHtml(CowStr::from(format!(
                        "<sup class=\"footnote-reference\"><a href=\"#{id}\">{n}</a></sup>"
                    )))
                }
                // A block of its own to the piece cutter, as the footnote's `div` is.
                Event::Start(Tag::FootnoteDefinition(name)) => {
                    let (id, n) = self.footnote(name);
                    self.queued = Some(Event::Html(CowStr::from(format!(
                        "<div class=\"footnote-definition\" id=\"{id}\"><sup class=\"footnote-definition-label\">{n}</sup>"
                    ))));
                    Event::Start(Tag::HtmlBlock)
                }
                Event::End(TagEnd::FootnoteDefinition) => {
                    self.queued = Some(Event::End(TagEnd::HtmlBlock));
                    Event::Html(CowStr::Borrowed("</div>\n"))
                }
                // An image's alt text is its inner text; anything else inside it is dropped.
                Event::Text(_) | Event::Code(_) if self.in_image > 0 => event,
                _ if self.in_image > 0 => continue,
                other => other,
            };
            return Some(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders_headings_lists_tables_code_and_quotes() {
        let html = markdown_to_html(
            "# Title\n\nSome *em* and **strong**.\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```rust\nfn main() {}\n```\n\n> quoted\n",
        );
        for part in [
            "<h1>Title</h1>",
            "<em>em</em>",
            "<strong>strong</strong>",
            "<li>one</li>",
            "<table>",
            "<td>2</td>",
            "<pre><code>fn main() {}",
            "<blockquote>",
        ] {
            assert!(html.contains(part), "{part} missing from {html}");
        }
    }

    #[test]
    fn raw_html_in_the_markdown_is_shown_as_text() {
        let html = markdown_to_html(
            "<script>alert(1)</script>\n\nText <img src=x onerror=alert(2)> and <b onclick=x>bold</b>\n\n<iframe src=\"https://evil.example\"></iframe>\n",
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<b "), "{html}");
        assert!(!html.contains("<iframe"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(
            html.contains("&lt;img src=x onerror=alert(2)&gt;"),
            "{html}"
        );
    }

    /// The TeX the extractor keeps (`$…$`, `$$…$$`) reads as it was written: its backslashes,
    /// braces and stars are not Markdown's.
    #[test]
    fn tex_keeps_its_backslashes_braces_and_stars() {
        let html = markdown_to_html(
            "The volume is $$V = \\int q_s \\, dt$$ and $x^{*} \\{a\\} y^{*}$ holds.\n",
        );
        assert!(
            html.contains("<code>$$V = \\int q_s \\, dt$$</code>"),
            "{html}"
        );
        assert!(
            html.contains("<code>$x^{*} \\{a\\} y^{*}$</code>"),
            "{html}"
        );
        assert!(!html.contains("<em>"), "{html}");
        // A lone dollar is a dollar.
        for prices in [
            "It cost $5 then.",
            "From $5 to $10, or $5 and $6.",
            "Pay $5 or $ 6.",
        ] {
            let html = markdown_to_html(&format!("{prices}\n"));
            assert!(html.contains(prices) && !html.contains("<code>"), "{html}");
        }
    }

    /// A table cell's line breaks (`<br>` is the only way Markdown has to write one) are
    /// breaks, not the letters of a tag; any other tag in a cell is still its text.
    #[test]
    fn a_line_break_in_a_table_cell_is_a_break() {
        let html = markdown_to_html(
            "| Address | Note |\n|---|---|\n| 1 Main St<br>Springfield<br/>USA<BR /> | <b>x</b> |\n",
        );
        assert!(
            html.contains("<td>1 Main St<br>\nSpringfield<br>\nUSA<br>"),
            "{html}"
        );
        assert!(!html.contains("&lt;br"), "{html}");
        assert!(html.contains("&lt;b&gt;x&lt;/b&gt;"), "{html}");
    }

    #[test]
    fn markup_a_page_spelled_out_stays_literal() {
        // The extractor escapes text that looked like markup; it must read as that text.
        let html = markdown_to_html("A page said &lt;img onerror=alert(1)&gt; literally.");
        assert!(html.contains("&lt;img onerror=alert(1)&gt;"), "{html}");
        assert!(!html.contains("<img"), "{html}");
    }

    #[test]
    fn only_http_links_and_anchors_keep_their_targets() {
        let html = markdown_to_html(
            "[web](https://example.org/a) [plain](http://example.org/b) \
             [js](javascript:alert(1)) [data](data:text/html,hi) [file](file:///etc/passwd) \
             [rel](../other.md) [root](/etc) [proto](//evil.example/x) [Js](JaVaScRiPt:alert(1))\n",
        );
        assert!(html.contains("href=\"https://example.org/a\""), "{html}");
        assert!(html.contains("href=\"http://example.org/b\""), "{html}");
        for bad in [
            "javascript",
            "JaVaScRiPt",
            "data:",
            "file:",
            "../other",
            "/etc",
            "evil",
        ] {
            assert!(
                !html.contains(&format!("href=\"{bad}")),
                "{bad} kept in {html}"
            );
        }
        assert!(!html.contains("evil.example"), "{html}");
        // The words of every link stay.
        for word in ["js", "data", "file", "rel", "root", "proto"] {
            assert!(
                html.contains(&format!(">{word}<")) || html.contains(word),
                "{word}"
            );
        }
        assert!(
            html.contains("rel=\"noopener noreferrer nofollow\""),
            "{html}"
        );
    }

    /// A Markdown file fetched from the web links relative to where it was: those links point
    /// there, absolute; other schemes stay refused, and the document's own anchors stay.
    #[test]
    fn relative_links_point_where_they_did_on_their_page() {
        let md = "[guide](docs/guide.md) [up](../notes.md) [root](/about) [proto](//cdn.example/x) \
                  [js](javascript:alert(1)) [top](#usage) <maintainer@example.org>\n";
        let html = render_blocks(
            md,
            Some("https://git.example/repo/README.md"),
            0,
            usize::MAX,
            1,
        )
        .pieces
        .concat();
        for target in [
            "https://git.example/repo/docs/guide.md",
            "https://git.example/notes.md",
            "https://git.example/about",
            "https://cdn.example/x",
        ] {
            assert!(
                html.contains(&format!("href=\"{target}\"")),
                "{target}: {html}"
            );
        }
        assert!(!html.contains("javascript"), "{html}");
        // An e-mail address is its words, not an anchor with its target stripped.
        assert!(html.contains("maintainer@example.org"), "{html}");
        assert!(
            !html.contains("mailto") && !html.contains("example.org\">"),
            "{html}"
        );
        assert_eq!(html.matches("<a ").count(), 4, "{html}");
        // `#usage` is no footnote of this document: a link to nowhere is plain words.
        assert!(
            !html.contains("#doc-usage") && html.contains("top"),
            "{html}"
        );
        let notes = markdown_to_html("See [the note](#n1) and [gone](#fn2).\n\n[^n1]: A note.\n");
        assert!(notes.contains("href=\"#doc-n1\""), "{notes}");
        assert!(
            !notes.contains("#doc-fn2") && notes.contains("gone"),
            "{notes}"
        );
        // A base that is no web address makes nothing absolute.
        let file = render_blocks(md, Some("file:///etc/x.md"), 0, usize::MAX, 1)
            .pieces
            .concat();
        assert!(!file.contains("href=\"file:"), "{file}");
    }

    #[test]
    fn images_show_their_alt_text_and_never_load() {
        let html = markdown_to_html(
            "![A diagram of the set-up](https://tracker.example/pixel.png \"t\") and [![badge](https://x.example/b.svg)](https://example.org)\n",
        );
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("tracker.example"), "{html}");
        assert!(!html.contains("x.example"), "{html}");
        assert!(
            html.contains("<span class=\"img-alt\">[image: A diagram of the set-up]</span>"),
            "{html}"
        );
        assert!(html.contains("[image: badge]"), "{html}");
    }

    #[test]
    fn footnotes_link_to_their_definitions_inside_the_document() {
        let html = markdown_to_html("A claim.[^1]\n\n[^1]: The source.\n");
        assert!(html.contains("href=\"#doc-1\""), "{html}");
        assert!(html.contains("id=\"doc-1\""), "{html}");
        assert!(html.contains("The source."), "{html}");
    }

    #[test]
    fn attributes_that_could_run_or_style_are_gone() {
        let html = markdown_to_html(
            "[x](https://example.org \"title\\\" onmouseover=\\\"alert(1)\")\n\n```\n<svg onload=alert(1)>\n```\n",
        );
        assert!(!html.contains("onmouseover=\""), "{html}");
        assert!(!html.contains("<svg"), "{html}");
        assert!(html.contains("&lt;svg onload=alert(1)&gt;"), "{html}");
    }

    /// A long document with references, a footnote mentioned early and defined late, a table
    /// and a list, so a cut can land anywhere.
    fn long_document() -> String {
        let mut md = String::from("# A long one\n\nFirst mention.[^late] A [reference][r].\n\n");
        for i in 0..400 {
            md.push_str(&format!(
                "## Part {i}\n\nParagraph {i} with *emphasis* and `code` and [^n{i}] words.\n\n\
                 - item {i}\n- item {i} again\n\n| a | b |\n|---|---|\n| {i} | x |\n\n[^n{i}]: Note {i}.\n\n"
            ));
        }
        md.push_str("[r]: https://example.org/ref\n\n[^late]: Defined at the end.\n");
        md
    }

    #[test]
    fn the_pieces_make_up_the_whole_and_the_rest_starts_where_the_first_stopped() {
        let md = long_document();
        let whole = markdown_to_html(&md);
        let head = render_blocks(&md, None, 0, FIRST_PIECE_BYTES, 1);
        assert_eq!(head.pieces.len(), 1);
        assert!(
            head.pieces[0].len() < whole.len() / 4,
            "the first piece is a small part"
        );
        let from = head.next.expect("more to come");
        // Pieces much smaller than the text, so there are several cuts to check.
        let rest = render_blocks(&md, None, from, whole.len() / 8, usize::MAX);
        assert!(rest.pieces.len() > 2, "{} pieces", rest.pieces.len());
        assert_eq!(rest.next, None);
        assert_eq!(format!("{}{}", head.pieces[0], rest.pieces.concat()), whole);
        // A cut falls between top-level blocks: every piece starts with a block's tag.
        for piece in &rest.pieces {
            let start = piece.trim_start();
            assert!(
                ["<h2", "<p", "<ul", "<table", "<div"]
                    .iter()
                    .any(|t| start.starts_with(t)),
                "{}",
                &start[..start.len().min(80)]
            );
        }
    }

    #[test]
    fn footnotes_keep_their_numbers_and_links_their_references_across_pieces() {
        let md = long_document();
        let head = render_blocks(&md, None, 0, FIRST_PIECE_BYTES, 1);
        assert!(
            head.pieces[0].contains("href=\"https://example.org/ref\""),
            "a reference defined at the very end resolves"
        );
        assert!(
            head.pieces[0]
                .contains("<a href=\"#doc-late\" rel=\"noopener noreferrer nofollow\">1</a>"),
            "{}",
            &head.pieces[0][..400]
        );
        let rest = render_blocks(&md, None, head.next.unwrap_or(0), PIECE_BYTES, usize::MAX)
            .pieces
            .concat();
        assert!(
            rest.contains("<a href=\"#doc-n399\" rel=\"noopener noreferrer nofollow\">401</a>"),
            "numbers count on from the first piece"
        );
        assert!(
            rest.contains("id=\"doc-late\"><sup class=\"footnote-definition-label\">1</sup>"),
            "the late definition has the number of its first mention"
        );
    }

    #[test]
    fn a_short_document_is_one_piece_with_nothing_after_it() {
        let r = render_blocks("Just a line.\n", None, 0, FIRST_PIECE_BYTES, 1);
        assert_eq!(r.pieces, vec!["<p>Just a line.</p>\n".to_string()]);
        assert_eq!(r.next, None);
        assert_eq!(
            render_blocks("", None, 0, FIRST_PIECE_BYTES, 1),
            Rendered::default()
        );
    }
}
