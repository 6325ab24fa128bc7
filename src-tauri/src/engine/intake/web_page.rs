//! A saved web page given as a file (a drop, `add --file page.html`) that is no bookmark
//! export. Scanned as text, it queued every address in its markup: stylesheets, scripts,
//! trackers, share buttons. Decision: a page with a `citation_doi` is that work; one that names
//! its address (canonical link, `og:url`) is that one page only if it reads as an article
//! (`citation_title`, `og:type` article, or under [`FEW_LINKS`] links outside nav, header and
//! footer); any other page, a saved reading list, is the links a reader could follow, its
//! `<a href>`s, relative ones read against `<base>`, else the address a browser noted when it
//! saved the page (`<!-- saved from url=(NNNN)… -->`), else the canonical link.

use std::cell::RefCell;
use std::collections::HashSet;
use std::io::BufRead;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use url::Url;

use super::bookmarks::CHUNK_BYTES;
use super::{Entry, Found, Item, MAX_URL_LEN};

/// The most links of a page kept: a page of more is a dump, not something read.
const MAX_LINKS: usize = 100_000;

/// Fewer links than this outside a page's nav, header and footer: an article, not a list.
const FEW_LINKS: usize = 20;

/// The most of a page's title kept.
const MAX_TITLE_BYTES: usize = 4 * 1024;

/// Whether a file is a web page: it starts (after a byte order mark, white space and
/// comments) with `<!DOCTYPE html` or `<html`, or it is named `.html`/`.htm` and holds an
/// `<html>`, `<head>` or `<body>` tag.
pub fn is_web_page(name: Option<&str>, head: &str) -> bool {
    let mut rest = head.strip_prefix('\u{feff}').unwrap_or(head);
    loop {
        rest = rest.trim_start();
        match rest
            .strip_prefix("<!--")
            .and_then(|c| c.find("-->").map(|e| &c[e + 3..]))
        {
            Some(after) => rest = after,
            None => break,
        }
    }
    let start = rest.get(..14).unwrap_or(rest).to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        return true;
    }
    let named = name.is_some_and(|n| {
        let n = n.to_ascii_lowercase();
        n.ends_with(".html") || n.ends_with(".htm") || n.ends_with(".xhtml")
    });
    let lower = head.to_ascii_lowercase();
    named
        && ["<html", "<head", "<body"]
            .iter()
            .any(|t| lower.contains(t))
}

/// The findings of a saved page: its DOI (with the page's own address and title), else its
/// own address, else each http(s) `<a href>` once, in page order. Bytes that are not UTF-8
/// become U+FFFD.
pub fn read_web_page<R: BufRead>(mut input: R) -> std::io::Result<Vec<Found>> {
    let mut decoder = encoding_rs::UTF_8.new_decoder();
    let tokenizer = Tokenizer::new(Sink::default(), TokenizerOpts::default());
    let queue = BufferQueue::default();
    loop {
        let bytes = match input.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let last = bytes.is_empty();
        let bytes = &bytes[..bytes.len().min(CHUNK_BYTES)];
        let room = decoder
            .max_utf8_buffer_length(bytes.len())
            .unwrap_or(bytes.len() * 3 + 16);
        let mut text = String::with_capacity(room);
        let (_, read, _) = decoder.decode_to_string(bytes, &mut text, last);
        input.consume(read);
        if !text.is_empty() {
            queue.push_back(StrTendril::from(text));
            // The sink never blocks the tokenizer (no scripts), so this runs to the input's end.
            let _ = tokenizer.feed(&queue);
        }
        if last {
            tokenizer.end();
            break;
        }
    }
    let page = tokenizer.sink.0.into_inner();
    Ok(page.findings())
}

#[derive(Default)]
struct Sink(RefCell<Page>);

impl TokenSink for Sink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        self.0.borrow_mut().token(token)
    }
}

/// What a page says about itself, and its links.
#[derive(Default)]
struct Page {
    doi: Option<String>,
    citation_title: Option<String>,
    og_type: Option<String>,
    canonical: Option<String>,
    og_url: Option<String>,
    base: Option<String>,
    /// The address a browser noted in a comment when it saved the page.
    saved_from: Option<String>,
    /// How deep inside nav, header and footer elements the tokenizer is.
    in_chrome: usize,
    /// Links outside them.
    content_links: usize,
    title: Option<String>,
    in_title: bool,
    links: Vec<String>,
}

fn attr(tag: &Tag, name: &str) -> Option<String> {
    tag.attrs
        .iter()
        .find(|a| &*a.name.local == name)
        .map(|a| a.value.trim().to_string())
        .filter(|v| !v.is_empty())
}

impl Page {
    fn token(&mut self, token: Token) -> TokenSinkResult<()> {
        match token {
            Token::TagToken(tag) => return self.tag(tag),
            Token::CommentToken(text) if self.saved_from.is_none() => {
                self.saved_from = saved_from(&text);
            }
            Token::CharacterTokens(text) if self.in_title => {
                let title = self.title.get_or_insert_with(String::new);
                if title.len() < MAX_TITLE_BYTES {
                    title.push_str(&text);
                }
            }
            _ => {}
        }
        TokenSinkResult::Continue
    }

    fn tag(&mut self, tag: Tag) -> TokenSinkResult<()> {
        if tag.kind == TagKind::EndTag {
            match &*tag.name {
                "title" => self.in_title = false,
                "nav" | "header" | "footer" => self.in_chrome = self.in_chrome.saturating_sub(1),
                _ => {}
            }
            return TokenSinkResult::Continue;
        }
        match &*tag.name {
            "a" | "area" if self.links.len() < MAX_LINKS => {
                if let Some(href) = attr(&tag, "href") {
                    if self.in_chrome == 0 {
                        self.content_links += 1;
                    }
                    self.links.push(href);
                }
            }
            "nav" | "header" | "footer" if !tag.self_closing => self.in_chrome += 1,
            "link" => {
                let canonical = attr(&tag, "rel").is_some_and(|rel| {
                    rel.split_ascii_whitespace()
                        .any(|r| r.eq_ignore_ascii_case("canonical"))
                });
                if canonical && self.canonical.is_none() {
                    self.canonical = attr(&tag, "href");
                }
            }
            "meta" => {
                let name = attr(&tag, "name")
                    .or_else(|| attr(&tag, "property"))
                    .map(|n| n.to_ascii_lowercase());
                let slot = match name.as_deref() {
                    Some("citation_doi") => &mut self.doi,
                    Some("citation_title") => &mut self.citation_title,
                    Some("og:type") => &mut self.og_type,
                    Some("og:url") => &mut self.og_url,
                    _ => return TokenSinkResult::Continue,
                };
                if slot.is_none() {
                    *slot = attr(&tag, "content");
                }
            }
            "base" if self.base.is_none() => self.base = attr(&tag, "href"),
            "title" if self.title.is_none() => {
                self.in_title = true;
                return TokenSinkResult::RawData(RawKind::Rcdata);
            }
            // Their content is text, not tags: a script's string holding `<a href>` is none.
            "script" => return TokenSinkResult::RawData(RawKind::ScriptData),
            "style" | "xmp" | "iframe" | "noembed" | "noframes" => {
                return TokenSinkResult::RawData(RawKind::Rawtext);
            }
            "textarea" => return TokenSinkResult::RawData(RawKind::Rcdata),
            _ => {}
        }
        TokenSinkResult::Continue
    }

    /// `href` as an http(s) address: absolute, or against `base`.
    fn absolute(href: &str, base: Option<&Url>) -> Option<String> {
        // A link within the page is no other work.
        if href.starts_with('#') {
            return None;
        }
        let url = Url::parse(href)
            .ok()
            .or_else(|| base.and_then(|b| b.join(href).ok()))?;
        (matches!(url.scheme(), "http" | "https") && url.as_str().len() <= MAX_URL_LEN)
            .then(|| url.to_string())
    }

    fn findings(self) -> Vec<Found> {
        let own = [&self.canonical, &self.og_url]
            .into_iter()
            .flatten()
            .find_map(|u| Url::parse(u).ok())
            .filter(|u| matches!(u.scheme(), "http" | "https"));
        let title = self
            .title
            .as_deref()
            .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|t| !t.is_empty());
        let article = self.doi.is_some()
            || self.citation_title.is_some()
            || self
                .og_type
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case("article"))
            || self.content_links < FEW_LINKS;
        if self.doi.is_some() || (own.is_some() && article) {
            let entry = Entry {
                doi: self.doi.clone(),
                url: own.as_ref().map(Url::to_string),
                title,
                ..Entry::default()
            };
            return vec![super::entries::found(
                Item::Entry(entry),
                super::entries::EntrySource::Bookmarks,
            )];
        }
        // Relative links: against `<base>`, else where the page was saved from, else its
        // canonical address.
        let base = [&self.base, &self.saved_from, &self.canonical]
            .into_iter()
            .flatten()
            .find_map(|u| Url::parse(u).ok());
        let mut seen = HashSet::new();
        self.links
            .iter()
            .filter_map(|href| Self::absolute(href, base.as_ref()))
            .filter(|url| seen.insert(url.clone()))
            .map(|url| super::vet(&url))
            .collect()
    }
}

/// The address of Chrome's and Internet Explorer's `saved from url=(0042)https://…` comment.
fn saved_from(comment: &str) -> Option<String> {
    let rest = comment.trim().strip_prefix("saved from url=(")?;
    let rest = &rest[rest.find(')')? + 1..];
    let url = rest.split_whitespace().next()?;
    Url::parse(url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .map(|u| u.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(found: &[Found]) -> Vec<String> {
        found
            .iter()
            .map(|f| match f {
                Found::Url { url, .. } => url.clone(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_paper_s_page_is_its_doi_and_a_page_without_one_is_its_canonical_link() {
        let page = r#"<!DOCTYPE html><html><head><title>Nanometre-scale thermometry | Nature</title>
<link rel="stylesheet" href="https://static.example/main.css">
<link rel="canonical" href="https://www.nature.com/articles/nature12373">
<meta name="citation_doi" content="10.1038/nature12373">
<script src="https://www.googletagmanager.com/gtm.js"></script></head>
<body><a href="https://www.nature.com/">Nature</a></body></html>"#;
        let found = read_web_page(page.as_bytes()).expect("read");
        assert_eq!(urls(&found), ["doi:10.1038/nature12373"]);
        let Found::Url { reference, .. } = &found[0] else {
            panic!("{found:?}")
        };
        let title = reference.as_ref().and_then(|r| r.title.as_deref());
        assert_eq!(title, Some("Nanometre-scale thermometry | Nature"));
        let blog = r#"<html><head><meta property="og:url" content="https://blog.example/post">
</head><body><a href="/other">x</a></body></html>"#;
        assert_eq!(
            urls(&read_web_page(blog.as_bytes()).expect("read")),
            ["https://blog.example/post"]
        );
    }

    #[test]
    fn a_page_that_names_no_work_is_its_links_once_each() {
        let page = r##"<!doctype html><html><head><base href="https://list.example/dir/">
<script>document.write('<a href="https://script.example/">')</script>
<link rel="icon" href="https://list.example/favicon.ico"></head><body>
<a href="https://a.example/1">one</a> <a href="two">two</a> <a href="https://a.example/1">again</a>
<a href="mailto:x@example.com">mail</a> <a href="#top">top</a> <a>none</a>
<img src="https://img.example/x.png"></body></html>"##;
        let found = read_web_page(page.as_bytes()).expect("read");
        assert_eq!(
            urls(&found),
            ["https://a.example/1", "https://list.example/dir/two"]
        );
    }

    /// A saved reading list names its own address too: it is its links, not that one page,
    /// unless it reads as an article.
    #[test]
    fn a_page_with_its_own_address_is_that_page_only_if_it_reads_as_an_article() {
        let links: String = (0..25)
            .map(|i| format!("<li><a href=\"https://paper.example/{i}\">{i}</a></li>\n"))
            .collect();
        let head = r#"<link rel="canonical" href="https://list.example/reading">
<meta property="og:url" content="https://list.example/reading">"#;
        let list = format!("<html><head>{head}</head><body><ul>{links}</ul></body></html>");
        let found = urls(&read_web_page(list.as_bytes()).expect("read"));
        assert_eq!(found.len(), 25, "{found:?}");
        assert_eq!(found[0], "https://paper.example/0");
        for marks in [
            r#"<meta property="og:type" content="article">"#,
            r#"<meta name="citation_title" content="A study">"#,
        ] {
            let article = format!("<html><head>{head}{marks}</head><body>{links}</body></html>");
            assert_eq!(
                urls(&read_web_page(article.as_bytes()).expect("read")),
                ["https://list.example/reading"],
                "{marks}"
            );
        }
        // Links in its nav, header and footer do not make a page a list.
        let nav = format!(
            "<html><head>{head}</head><body><nav>{links}</nav><p><a href=\"/x\">x</a></p>\
             <footer>{links}</footer></body></html>"
        );
        assert_eq!(
            urls(&read_web_page(nav.as_bytes()).expect("read")),
            ["https://list.example/reading"]
        );
    }

    /// Without `<base>`, relative links are read against the address a browser noted when it
    /// saved the page, else against the canonical link (they were dropped).
    #[test]
    fn relative_links_are_read_against_where_the_page_was_saved_from() {
        let links: String = (0..20)
            .map(|i| format!("<a href=\"p/{i}\">{i}</a>"))
            .collect();
        let saved = format!(
            "<!-- saved from url=(0029)https://saved.example/list/ -->\n<html><head>\
             <link rel=\"canonical\" href=\"https://canon.example/\"></head><body>{links}\
             </body></html>"
        );
        let found = urls(&read_web_page(saved.as_bytes()).expect("read"));
        assert_eq!(found.len(), 20, "{found:?}");
        assert_eq!(found[0], "https://saved.example/list/p/0");
        let canonical = saved.replace("saved from url=(0029)https://saved.example/list/", "");
        let found = urls(&read_web_page(canonical.as_bytes()).expect("read"));
        assert_eq!(found[0], "https://canon.example/p/0");
    }

    #[test]
    fn a_page_is_told_by_its_start_or_its_name_and_tags() {
        assert!(is_web_page(
            None,
            "\u{feff} <!-- saved -->\n<!DOCTYPE html><html>"
        ));
        assert!(is_web_page(None, "<HTML lang=en>"));
        assert!(is_web_page(Some("Page.HTM"), "<meta charset=utf-8><body>"));
        assert!(!is_web_page(Some("links.html"), "https://a.example/\n"));
        assert!(!is_web_page(Some("notes.txt"), "<body> is a tag"));
    }
}
