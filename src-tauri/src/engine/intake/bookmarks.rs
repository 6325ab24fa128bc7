//! Reading a browser's bookmark export: the Netscape bookmark file that Firefox, Chrome, Edge
//! and Safari write (`<!DOCTYPE NETSCAPE-Bookmark-file-1>`), as [`Item`]s in file order.
//!
//! The file is read with html5ever's tokenizer, a bounded piece at a time, and never built into
//! a document: a 20,000-bookmark export whose every bookmark carries an inline `ICON="data:…"`
//! is never in memory whole. Only an `<A>`'s `HREF` is an address; icons (`ICON`,
//! `ICON_URI`) are dropped with the tag that holds them. A folder is an `<H3>` heading and the
//! `<DL>` list after it, up to that list's `</DL>`; the folders a bookmark is in, outermost
//! first, are its tags.
//!
//! The reader only classifies: an http(s) bookmark is an [`Entry`], a smart folder, a
//! bookmarklet or a browser's own page is [`Item::Skipped`], and an address that is not a web
//! address at all is [`Item::Rejected`]. Intake vets the http(s) addresses again.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::BufRead;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use url::Url;

use super::{Entry, Item, MAX_URL_LEN, shown};

/// Why a bookmark export could not be read to its end.
#[derive(Debug, thiserror::Error)]
pub enum BookmarksError {
    /// The caller says what could not be read.
    #[error(transparent)]
    Read(#[from] std::io::Error),
}

/// The most of the input decoded and tokenized at once, whatever the reader's own buffer holds.
pub const CHUNK_BYTES: usize = 64 * 1024;

/// The most of a title or a folder name kept (a title that never ends, in a broken file, stops
/// growing here).
const MAX_TEXT_BYTES: usize = 16 * 1024;

/// The most tags one bookmark gets, from its folders and from Firefox's `TAGS` together.
const MAX_TAGS: usize = 64;

/// Whether the start of a file is a bookmark export: its first thing, after a byte order mark,
/// white space and comments, is the `<!DOCTYPE NETSCAPE-Bookmark-file-1>` every browser writes
/// (in any case).
pub fn is_bookmark_export(head: &str) -> bool {
    let mut rest = head.strip_prefix('\u{feff}').unwrap_or(head);
    loop {
        rest = rest.trim_start_matches(is_html_space);
        match rest.strip_prefix("<!--") {
            Some(comment) => match comment.find("-->") {
                Some(end) => rest = &comment[end + 3..],
                None => return false,
            },
            None => break,
        }
    }
    let Some(after) = strip_prefix_ignore_case(rest, "<!doctype") else {
        return false;
    };
    if !after.starts_with(is_html_space) {
        return false;
    }
    let name = after.trim_start_matches(is_html_space);
    strip_prefix_ignore_case(name, "netscape-bookmark-file-1")
        .is_some_and(|end| end.trim_start_matches(is_html_space).starts_with('>'))
}

fn is_html_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c')
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    s.get(..prefix.len())
        .filter(|head| head.eq_ignore_ascii_case(prefix))
        .map(|_| &s[prefix.len()..])
}

/// Read a whole bookmark export into its items, in file order. The input is read a bounded
/// piece at a time (see [`Bookmarks`]); only the items are kept.
pub fn read_bookmarks<R: BufRead>(input: R) -> Result<Vec<Item>, BookmarksError> {
    Bookmarks::new(input).collect()
}

/// A bookmark export read item by item, [`CHUNK_BYTES`] of input at most at a time: an item is
/// given as soon as its tag is closed, so what is held is one piece of input and the items it
/// finished. Bytes are UTF-8 (what every browser writes; a UTF-16 file with its byte order mark
/// is read too); bytes that are not become U+FFFD.
///
/// Not `Send` (the tokenizer's strings are reference-counted): make it on the thread that reads.
pub struct Bookmarks<R> {
    input: R,
    decoder: encoding_rs::Decoder,
    tokenizer: Tokenizer<Sink>,
    queue: BufferQueue,
    done: bool,
}

impl<R: BufRead> Bookmarks<R> {
    /// Start reading `input`; nothing is read until the first item is asked for.
    pub fn new(input: R) -> Self {
        Bookmarks {
            input,
            decoder: encoding_rs::UTF_8.new_decoder(),
            tokenizer: Tokenizer::new(Sink::default(), TokenizerOpts::default()),
            queue: BufferQueue::default(),
            done: false,
        }
    }

    /// The next item, or `None` at the end of the input. After an error, stop reading.
    pub fn next_item(&mut self) -> Result<Option<Item>, BookmarksError> {
        loop {
            if let Some(item) = self.tokenizer.sink.0.borrow_mut().items.pop_front() {
                return Ok(Some(item));
            }
            if self.done {
                return Ok(None);
            }
            self.read_piece()?;
        }
    }

    /// Decode and tokenize the next piece of input, or finish at its end.
    fn read_piece(&mut self) -> std::io::Result<()> {
        let bytes = loop {
            match self.input.fill_buf() {
                Ok(bytes) => break bytes,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        let last = bytes.is_empty();
        let bytes = &bytes[..bytes.len().min(CHUNK_BYTES)];
        let room = self
            .decoder
            .max_utf8_buffer_length(bytes.len())
            .unwrap_or(bytes.len() * 3 + 16);
        let mut text = String::with_capacity(room);
        // With that room the decoder takes every byte; if it ever took fewer, the rest is read
        // again next time.
        let (_, read, _) = self.decoder.decode_to_string(bytes, &mut text, last);
        self.input.consume(read);
        if !text.is_empty() {
            self.queue.push_back(StrTendril::from(text));
            // The sink never blocks the tokenizer (no scripts), so this runs to the input's end.
            let _ = self.tokenizer.feed(&self.queue);
        }
        if last {
            self.tokenizer.end();
            self.done = true;
        }
        Ok(())
    }
}

impl<R: BufRead> Iterator for Bookmarks<R> {
    type Item = Result<Item, BookmarksError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_item() {
            Ok(item) => item.map(Ok),
            Err(e) => {
                // An error ends the reading: the iterator does not try the input again.
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// What the tokenizer's tokens are given to. The tokenizer calls it through `&self`.
#[derive(Default)]
struct Sink(RefCell<Shape>);

impl TokenSink for Sink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        self.0.borrow_mut().token(token)
    }
}

/// Where the reading is in the file's shape: the folders open, the heading or bookmark being
/// read, and the items finished but not yet taken.
#[derive(Default)]
struct Shape {
    /// One per open `<DL>`: the folder it lists, or `None` for a list no heading named (the
    /// export's top list, under its `<H1>`).
    folders: Vec<Option<String>>,
    /// A folder's heading read, waiting for its `<DL>` (Firefox puts a `<DD>` description
    /// between them).
    pending: Option<String>,
    heading: Option<Heading>,
    anchor: Option<Anchor>,
    items: VecDeque<Item>,
}

/// An `<H3>` being read.
struct Heading {
    /// Safari marks its Reading List with `id="com.apple.ReadingList"`.
    id: Option<String>,
    text: String,
}

/// An `<A>` being read: the attributes that count, and its text so far.
struct Anchor {
    href: Option<String>,
    add_date: Option<String>,
    tags: Option<String>,
    title: String,
}

impl Shape {
    fn token(&mut self, token: Token) -> TokenSinkResult<()> {
        match token {
            Token::TagToken(tag) => return self.tag(tag),
            Token::CharacterTokens(text) => self.text(&text),
            Token::EOFToken => self.end_text(),
            _ => {}
        }
        TokenSinkResult::Continue
    }

    fn tag(&mut self, tag: Tag) -> TokenSinkResult<()> {
        let start = tag.kind == TagKind::StartTag;
        match &*tag.name {
            "a" if start => {
                self.end_text();
                self.pending = None;
                self.anchor = Some(Anchor::of(&tag));
            }
            "a" => self.end_anchor(),
            "h3" if start => {
                self.end_text();
                self.pending = None;
                self.heading = Some(Heading {
                    id: attr(&tag, "id"),
                    text: String::new(),
                });
            }
            "h3" => self.end_heading(),
            "dl" if start => {
                self.end_text();
                let folder = self.pending.take();
                self.folders.push(folder);
            }
            "dl" => {
                self.end_text();
                self.pending = None;
                // A stray `</DL>` with no list open is passed over.
                self.folders.pop();
            }
            // The tags that end an unclosed `<A>` or `<H3>` in real exports (`<DT>` is never
            // closed, `<DD>` descriptions and `<HR>` separators follow bookmarks).
            "dt" | "dd" | "hr" | "p" | "h1" | "h2" | "h4" | "h5" | "h6" | "li" | "ul" | "ol"
            | "div" | "table" | "tr" | "td" => self.end_text(),
            // What a tree builder would do: their content is text, not tags or bookmarks.
            "script" if start => return TokenSinkResult::RawData(RawKind::ScriptData),
            "style" | "xmp" | "iframe" | "noembed" | "noframes" if start => {
                return TokenSinkResult::RawData(RawKind::Rawtext);
            }
            "title" | "textarea" if start => return TokenSinkResult::RawData(RawKind::Rcdata),
            _ => {}
        }
        TokenSinkResult::Continue
    }

    fn text(&mut self, text: &str) {
        if let Some(anchor) = &mut self.anchor {
            push_capped(&mut anchor.title, text);
        } else if let Some(heading) = &mut self.heading {
            push_capped(&mut heading.text, text);
        }
    }

    fn end_text(&mut self) {
        self.end_anchor();
        self.end_heading();
    }

    fn end_heading(&mut self) {
        if let Some(heading) = self.heading.take() {
            self.pending = Some(folder_name(heading));
        }
    }

    fn end_anchor(&mut self) {
        if let Some(anchor) = self.anchor.take() {
            let item = self.item(anchor);
            self.items.push_back(item);
        }
    }

    fn item(&self, anchor: Anchor) -> Item {
        let title = Some(collapse(&anchor.title)).filter(|t| !t.is_empty());
        let Some(href) = anchor.href else {
            return Item::Rejected {
                what: shown(title.as_deref().unwrap_or("an untitled bookmark")),
                reason: "no address (the bookmark has no HREF)".into(),
            };
        };
        // As a URL parser does: leading and trailing spaces and control characters are not
        // part of the address.
        let href = href.trim_matches(|c: char| c <= ' ').to_string();
        let what = shown(title.as_deref().unwrap_or(&href));
        let refuse = |reason: String| Item::Rejected {
            what: what.clone(),
            reason,
        };
        if href.is_empty() {
            return refuse("no address (its HREF is empty)".into());
        }
        let Some(scheme) = scheme_of(&href) else {
            return refuse("not a full web address (it has no scheme such as https://)".into());
        };
        if scheme != "http" && scheme != "https" {
            return match skip_reason(&scheme) {
                Some(reason) => Item::Skipped { what, reason },
                None => refuse(format!(
                    "{scheme}: links cannot be fetched; only http:// and https:// are taken"
                )),
            };
        }
        if href.len() > MAX_URL_LEN {
            return refuse(format!("address longer than {MAX_URL_LEN} characters"));
        }
        match Url::parse(&href) {
            Err(e) => return refuse(format!("malformed address: {e}")),
            Ok(url) if url.host_str().is_none_or(str::is_empty) => {
                return refuse("malformed address: no host".into());
            }
            Ok(_) => {}
        }
        Item::Entry(Entry {
            key: Some(title.clone().unwrap_or_else(|| href.clone())),
            title,
            url: Some(href),
            issued: anchor.add_date.as_deref().and_then(day_of),
            tags: self.tags(anchor.tags.as_deref()),
            ..Entry::default()
        })
    }

    /// The folders a bookmark is in, outermost first, then Firefox's own tags for it (its
    /// `TAGS="a,b"`), each once.
    fn tags(&self, firefox: Option<&str>) -> Vec<String> {
        let mut tags: Vec<String> = Vec::new();
        let folders = self.folders.iter().flatten().map(String::as_str);
        let own = firefox.into_iter().flat_map(|list| list.split(','));
        for tag in folders.chain(own) {
            if tags.len() == MAX_TAGS {
                break;
            }
            let tag = collapse(tag);
            if !tag.is_empty() && !tags.contains(&tag) {
                tags.push(tag);
            }
        }
        tags
    }
}

impl Anchor {
    fn of(tag: &Tag) -> Anchor {
        Anchor {
            href: attr(tag, "href"),
            add_date: attr(tag, "add_date"),
            tags: attr(tag, "tags"),
            title: String::new(),
        }
    }
}

/// An attribute's value, entities decoded (the tokenizer lower-cases names and keeps the first
/// of a repeated one).
fn attr(tag: &Tag, name: &str) -> Option<String> {
    tag.attrs
        .iter()
        .find(|a| &*a.name.local == name)
        .map(|a| a.value.to_string())
}

// Folder roots: the <H1> (the export's title) is never a tag; every <H3> folder is, roots too.
// The browser's own roots ("Bookmarks Toolbar", "Bookmarks bar", "Other bookmarks", "Favorites")
// are where the researcher filed a bookmark and sees it, so they stay, named as the browser names
// them; Safari's internal names become the names Safari shows, and its Reading List is always
// "Reading List" (whatever the language), the tag a researcher looks for.
fn folder_name(heading: Heading) -> String {
    let name = collapse(&heading.text);
    let reading_list = "com.apple.ReadingList";
    if heading.id.as_deref() == Some(reading_list) || name == reading_list {
        return "Reading List".into();
    }
    match name.as_str() {
        "BookmarksBar" => "Favorites".into(),
        "BookmarksMenu" => "Bookmarks Menu".into(),
        _ => name,
    }
}

/// Why a bookmark with this (lower-case) scheme is left out, for the schemes that name
/// something real that is not a web page. Other schemes are rejected.
fn skip_reason(scheme: &str) -> Option<String> {
    let reason = match scheme {
        "place" => "a Firefox smart folder (place:), not a page",
        "javascript" => "a bookmarklet (javascript:), not a page",
        "vbscript" => "a script (vbscript:), not a page",
        "file" => "a file on a computer (file:), not a web page",
        "data" => "data kept in the bookmark itself (data:), not a web page",
        "blob" => "an object inside a browser (blob:), not a web page",
        "mailto" => "an e-mail address (mailto:), not a web page",
        "tel" | "sms" => return Some(format!("a phone number ({scheme}:), not a web page")),
        "ftp" | "ftps" | "sftp" => {
            return Some(format!(
                "a file server ({scheme}:), not a web page; only http:// and https:// are taken"
            ));
        }
        "feed" => "a feed reader's link (feed:); only http:// and https:// are taken",
        "about" | "chrome" | "edge" | "opera" | "vivaldi" | "brave" | "view-source"
        | "resource" | "chrome-extension" | "moz-extension" | "safari-extension" | "extension" => {
            return Some(format!(
                "a page of the browser itself ({scheme}:), not a web page"
            ));
        }
        _ => return None,
    };
    Some(reason.into())
}

/// The scheme of an absolute address, lower-cased: a letter, then letters, digits, `+`, `-`
/// or `.`, then `:`.
fn scheme_of(href: &str) -> Option<String> {
    let (scheme, _) = href.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then(|| scheme.to_ascii_lowercase())
}

/// `ADD_DATE` as `YYYY-MM-DD` (UTC). Browsers write seconds since 1970; some tools write
/// milliseconds, microseconds (Firefox's own unit) or nanoseconds, which are told apart by
/// size: a number of seconds past 10^11 would be after the year 5000. Zero, negative or
/// unreadable dates are no date.
fn day_of(stamp: &str) -> Option<String> {
    let whole = stamp.trim().split('.').next()?;
    let n: i64 = whole.parse().ok()?;
    if n <= 0 {
        return None;
    }
    let seconds = if n < 100_000_000_000 {
        n
    } else if n < 100_000_000_000_000 {
        n / 1_000
    } else if n < 100_000_000_000_000_000 {
        n / 1_000_000
    } else {
        n / 1_000_000_000
    };
    let day = time::OffsetDateTime::from_unix_timestamp(seconds).ok()?;
    Some(format!(
        "{:04}-{:02}-{:02}",
        day.year(),
        u8::from(day.month()),
        day.day()
    ))
}

/// Text with its runs of white space made one space, and trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Append `text`, keeping `buf` within [`MAX_TEXT_BYTES`] and its characters whole.
fn push_capped(buf: &mut String, text: &str) {
    let room = MAX_TEXT_BYTES.saturating_sub(buf.len());
    if text.len() <= room {
        buf.push_str(text);
        return;
    }
    let mut end = room;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    buf.push_str(&text[..end]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::io::{Cursor, Read};
    use std::rc::Rc;

    const FIXTURES: &[&str] = &["firefox.html", "chrome.html", "safari.html"];

    fn fixture(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests-fixtures/bookmarks")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn read(bytes: &[u8]) -> Vec<Item> {
        read_bookmarks(bytes).expect("reading from memory")
    }

    /// An export's items, one line each: an entry as `key <url> issued [tags]`.
    fn brief(items: &[Item]) -> Vec<String> {
        items
            .iter()
            .map(|item| match item {
                Item::Entry(e) => format!(
                    "{} <{}> {} [{}]",
                    e.key.as_deref().unwrap_or("?"),
                    e.url.as_deref().unwrap_or("?"),
                    e.issued.as_deref().unwrap_or("-"),
                    e.tags.join(" / ")
                ),
                Item::Skipped { what, reason } => format!("skipped {what}: {reason}"),
                Item::Rejected { what, reason } => format!("rejected {what}: {reason}"),
            })
            .collect()
    }

    fn entries(items: &[Item]) -> Vec<&Entry> {
        items
            .iter()
            .filter_map(|item| match item {
                Item::Entry(e) => Some(e),
                _ => None,
            })
            .collect()
    }

    /// A small export around `body`, as a browser would start it.
    fn export(body: &str) -> Vec<u8> {
        format!("<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<TITLE>Bookmarks</TITLE>\n<H1>Bookmarks</H1>\n<DL><p>\n{body}\n</DL><p>\n")
            .into_bytes()
    }

    #[test]
    fn a_firefox_export_reads_as_the_researcher_filed_it() {
        let items = read(&fixture("firefox.html"));
        assert_eq!(
            brief(&items),
            [
                "Deep learning | Nature <https://www.nature.com/articles/nature14539> 2023-07-14 []",
                "Get Help <https://support.mozilla.org/products/firefox> 2023-03-28 [Mozilla Firefox]",
                "Customize Firefox <https://support.mozilla.org/kb/customize-firefox-controls-buttons-and-toolbars?utm_source=firefox-browser&utm_medium=default-bookmarks&utm_campaign=customize> 2023-03-28 [Mozilla Firefox]",
                "Get Involved <https://www.mozilla.org/contribute/> 2023-03-28 [Mozilla Firefox]",
                "About Us <https://www.mozilla.org/about/> 2023-03-28 [Mozilla Firefox]",
                "[1706.03762] Attention Is All You Need <https://arxiv.org/abs/1706.03762> 2023-07-22 [Research / Machine learning / transformers / attention]",
                "attention is all you need - Google Scholar <https://scholar.google.com/scholar?hl=en&as_sdt=0%2C5&q=attention+is+all+you+need> 2023-07-22 [Research / Machine learning]",
                "Ten Simple Rules for Reproducible Computational Research & Data <https://www.ncbi.nlm.nih.gov/pmc/articles/PMC3812051/> 2023-09-18 [Research / reproducibility / methods]",
                "skipped Most Visited: a Firefox smart folder (place:), not a page",
                "Getting Started <https://www.mozilla.org/en-US/firefox/central/> 2023-03-28 [Bookmarks Toolbar]",
                "skipped Save to Wayback: a bookmarklet (javascript:), not a page",
                "Highly accurate protein structure prediction with AlphaFold | Nature <https://doi.org/10.1038/s41586-021-03819-2> 2023-11-14 [Bookmarks Toolbar]",
                "skipped Settings: a page of the browser itself (about:), not a web page",
                "skipped Recent Tags: a Firefox smart folder (place:), not a page",
                "Bayes' theorem - Wikipedia <https://en.wikipedia.org/wiki/Bayes%27_theorem> 2023-11-14 [Other Bookmarks / statistics]",
                "skipped draft.pdf: a file on a computer (file:), not a web page",
                "https://example.org/untitled <https://example.org/untitled> 2023-11-14 [Other Bookmarks]",
            ]
        );
        // The whole entry, not only what the summary shows.
        assert_eq!(
            items[5],
            Item::Entry(Entry {
                key: Some("[1706.03762] Attention Is All You Need".into()),
                title: Some("[1706.03762] Attention Is All You Need".into()),
                url: Some("https://arxiv.org/abs/1706.03762".into()),
                issued: Some("2023-07-22".into()),
                tags: vec![
                    "Research".into(),
                    "Machine learning".into(),
                    "transformers".into(),
                    "attention".into()
                ],
                ..Entry::default()
            })
        );
    }

    #[test]
    fn a_chrome_export_keeps_its_roots_as_tags() {
        let items = read(&fixture("chrome.html"));
        assert_eq!(
            brief(&items),
            [
                "Gut microbiome and health - PubMed <https://pubmed.ncbi.nlm.nih.gov/31452104/> 2021-02-03 [Bookmarks bar]",
                "Single-cell atlas | bioRxiv <https://www.biorxiv.org/content/10.1101/2020.03.12.988246v1> 2022-04-15 [Bookmarks bar / Reading group]",
                "PLOS ONE: Sci-Hub downloads <https://journals.plos.org/plosone/article?id=10.1371/journal.pone.0185809> 2024-04-05 [Bookmarks bar / Reading group / Week 3]",
                "skipped Settings: a page of the browser itself (chrome:), not a web page",
                "graph neural networks | Semantic Scholar <https://www.semanticscholar.org/search?q=graph%20neural%20networks&sort=relevance> 2023-11-29 [Other bookmarks]",
                "LoRA: Low-Rank Adaptation of Large Language Models <https://arxiv.org/pdf/2106.09685> 2023-11-29 [Other bookmarks]",
                "skipped Save to Zotero: a bookmarklet (javascript:), not a page",
                "How the Brain Distinguishes Memories From Perceptions | Quanta Magazine <https://www.quantamagazine.org/how-the-brain-distinguishes-memories-from-perceptions-20221214/> 2023-12-19 [Mobile bookmarks]",
            ]
        );
    }

    #[test]
    fn a_safari_export_files_its_reading_list_under_reading_list() {
        let items = read(&fixture("safari.html"));
        assert_eq!(
            brief(&items),
            [
                "Apple <https://www.apple.com/> - [Favorites]",
                "Œuvres — café culture · Google Scholar <https://scholar.google.com/scholar?q=caf%C3%A9+culture&hl=fr> - [Favorites]",
                "protocols.io <https://www.protocols.io/> - [Bookmarks Menu / Lab]",
                "skipped Mail the lab: an e-mail address (mailto:), not a web page",
                "Hacker News <https://news.ycombinator.com/> - []",
                "The Physicist Who Bets That Gravity Can’t Be Quantized <https://www.quantamagazine.org/the-physicist-who-bets-that-gravity-cant-be-quantized-20230710/> - [Reading List]",
                "Neuroscience: How we learn <https://elifesciences.org/articles/82580> - [Reading List]",
            ]
        );
        // The `<DD>` preview after a Reading List bookmark is no part of any title.
        assert!(
            entries(&items)
                .iter()
                .all(|e| { !e.title.as_deref().is_some_and(|t| t.contains("Oppenheim")) })
        );
    }

    #[test]
    fn safaris_own_names_and_its_reading_list_in_any_language_are_named_as_safari_shows_them() {
        let items = read(&export(
            r#"<DT><H3 FOLDED>BookmarksBar</H3>
<DL><p><DT><A HREF="https://bar.example/">Bar</A></DL><p>
<DT><H3 FOLDED>BookmarksMenu</H3>
<DL><p><DT><A HREF="https://menu.example/">Menu</A></DL><p>
<DT><H3 FOLDED>com.apple.ReadingList</H3>
<DL><p><DT><A HREF="https://later.example/">Later</A></DL><p>
<DT><H3 FOLDED id="com.apple.ReadingList">Leseliste</H3>
<DL><p><DT><A HREF="https://spaeter.example/">Später</A></DL><p>"#,
        ));
        assert_eq!(
            brief(&items),
            [
                "Bar <https://bar.example/> - [Favorites]",
                "Menu <https://menu.example/> - [Bookmarks Menu]",
                "Later <https://later.example/> - [Reading List]",
                "Später <https://spaeter.example/> - [Reading List]",
            ]
        );
    }

    #[test]
    fn only_an_anchors_href_is_an_address_never_an_icon() {
        let items = read(&export(
            r#"<DT><A ICON_URI="https://icons.example/favicon.ico" HREF="https://page.example/a" ICON="data:image/png;base64,iVBORw0KGgo=">Page</A>
<DT><A ICON_URI="https://icons.example/only-an-icon.ico" ICON="data:image/png;base64,iVBORw0KGgo=">Icon only</A>
<DT><H3 HREF="https://heading.example/">Folder</H3>
<DL><p>
<LINK HREF="https://link.example/"><IMG SRC="https://img.example/x.png">
</DL><p>"#,
        ));
        assert_eq!(
            brief(&items),
            [
                "Page <https://page.example/a> - []",
                "rejected Icon only: no address (the bookmark has no HREF)",
            ]
        );
        let all = format!("{items:?}");
        assert!(!all.contains("icons.example") && !all.contains("data:image"));
    }

    #[test]
    fn entities_are_decoded_in_addresses_and_titles_as_a_browser_decodes_them() {
        let items = read(&export(
            r#"<DT><A HREF="https://a.example/s?x=1&amp;y=2&amp;z=&quot;3&quot;">Q&amp;A &#8212; &lt;tags&gt; &#x27;quoted&#39; &eacute;t&eacute;</A>
<DT><A HREF="https://b.example/s?q=x&sect=2&copy=3&lang=de">Raw ampersands</A>"#,
        ));
        assert_eq!(
            brief(&items),
            [
                "Q&A — <tags> 'quoted' été <https://a.example/s?x=1&y=2&z=\"3\"> - []",
                // A legacy entity name without `;` before `=` is not one, in an attribute.
                "Raw ampersands <https://b.example/s?q=x&sect=2&copy=3&lang=de> - []",
            ]
        );
    }

    #[test]
    fn smart_folders_and_bookmarklets_are_skipped_naming_the_bookmark() {
        let long = format!("javascript:void({})", "x".repeat(300));
        let items = read(&export(&format!(
            r#"<DT><A HREF="place:sort=8&maxResults=10">Most Visited</A>
<DT><A HREF="PLACE:type=6&amp;sort=14">Recent Tags</A>
<DT><A HREF="javascript:alert(document.title)">Show title</A>
<DT><A HREF="  JavaScript:void(0)">Spaced</A>
<DT><A HREF="{long}"></A>"#
        )));
        assert_eq!(
            brief(&items)[..4],
            [
                "skipped Most Visited: a Firefox smart folder (place:), not a page",
                "skipped Recent Tags: a Firefox smart folder (place:), not a page",
                "skipped Show title: a bookmarklet (javascript:), not a page",
                "skipped Spaced: a bookmarklet (javascript:), not a page",
            ]
        );
        // An untitled one is named by its address, cut as rejected input is.
        let Item::Skipped { what, reason } = &items[4] else {
            panic!("not skipped: {:?}", items[4]);
        };
        assert_eq!(reason, "a bookmarklet (javascript:), not a page");
        assert!(what.starts_with("javascript:void(xxx"), "{what}");
        assert!(what.ends_with("… (317 characters)"), "{what}");
    }

    #[test]
    fn other_schemes_are_skipped_and_what_is_no_web_address_is_rejected() {
        let items = read(&export(
            r#"<DT><A HREF="file:///C:/Users/ana/thesis.pdf">Thesis</A>
<DT><A HREF="about:config">Config</A>
<DT><A HREF="chrome://flags/">Flags</A>
<DT><A HREF="edge://settings">Edge settings</A>
<DT><A HREF="data:text/html,<h1>hi</h1>">Data</A>
<DT><A HREF="mailto:ana@example.edu">Mail</A>
<DT><A HREF="ftp://ftp.example.org/pub/">FTP</A>
<DT><A HREF="chrome-extension://abcdef/options.html">Extension</A>
<DT><A HREF="magnet:?xt=urn:btih:abc">Magnet</A>
<DT><A HREF="htps://typo.example/">Typo</A>
<DT><A HREF="www.example.com/page">No scheme</A>
<DT><A HREF="/relative/path">Relative</A>
<DT><A HREF="https://">No host</A>
<DT><A HREF="http://exa mple.com/">Space in host</A>
<DT><A HREF="">Empty</A>
<DT><A HREF="https://ok.example/">Fine</A>"#,
        ));
        assert_eq!(
            brief(&items),
            [
                "skipped Thesis: a file on a computer (file:), not a web page",
                "skipped Config: a page of the browser itself (about:), not a web page",
                "skipped Flags: a page of the browser itself (chrome:), not a web page",
                "skipped Edge settings: a page of the browser itself (edge:), not a web page",
                "skipped Data: data kept in the bookmark itself (data:), not a web page",
                "skipped Mail: an e-mail address (mailto:), not a web page",
                "skipped FTP: a file server (ftp:), not a web page; only http:// and https:// are taken",
                "skipped Extension: a page of the browser itself (chrome-extension:), not a web page",
                "rejected Magnet: magnet: links cannot be fetched; only http:// and https:// are taken",
                "rejected Typo: htps: links cannot be fetched; only http:// and https:// are taken",
                "rejected No scheme: not a full web address (it has no scheme such as https://)",
                "rejected Relative: not a full web address (it has no scheme such as https://)",
                "rejected No host: malformed address: empty host",
                "rejected Space in host: malformed address: invalid international domain name",
                "rejected Empty: no address (its HREF is empty)",
                "Fine <https://ok.example/> - []",
            ]
        );
        let long = format!("https://long.example/{}", "a".repeat(MAX_URL_LEN));
        let items = read(&export(&format!(r#"<DT><A HREF="{long}">Long</A>"#)));
        assert_eq!(
            brief(&items),
            [format!(
                "rejected Long: address longer than {MAX_URL_LEN} characters"
            )]
        );
    }

    #[test]
    fn add_date_becomes_the_day_whatever_its_unit() {
        for (stamp, day) in [
            ("1700000000", Some("2023-11-14")), // seconds, as browsers write
            ("1700000000000", Some("2023-11-14")), // milliseconds
            ("1700000000000000", Some("2023-11-14")), // microseconds
            ("1700000000000000000", Some("2023-11-14")), // nanoseconds
            (" 1700000000 ", Some("2023-11-14")),
            ("1700000000.75", Some("2023-11-14")),
            ("946684799", Some("1999-12-31")),
            ("946684800", Some("2000-01-01")),
            ("0", None),
            ("-868878000", None),
            ("", None),
            ("soon", None),
            ("1e9", None),
            ("99999999999999999999999", None),
        ] {
            assert_eq!(day_of(stamp).as_deref(), day, "ADD_DATE={stamp:?}");
        }
        let items = read(&export(
            r#"<DT><A HREF="https://a.example/" ADD_DATE="1612345700" LAST_MODIFIED="1712345000">Dated</A>
<DT><A HREF="https://b.example/" LAST_MODIFIED="1712345000">Only modified</A>
<DT><A HREF="https://c.example/" ADD_DATE="1612345700000000">Microseconds</A>"#,
        ));
        let issued: Vec<_> = entries(&items).iter().map(|e| e.issued.clone()).collect();
        assert_eq!(
            issued,
            [Some("2021-02-03".into()), None, Some("2021-02-03".into())]
        );
    }

    #[test]
    fn an_untitled_bookmark_is_keyed_by_its_address() {
        let items = read(&export(
            r#"<DT><A HREF="https://untitled.example/page"></A>
<DT><A HREF="https://blank.example/">   
   </A>"#,
        ));
        assert_eq!(
            items,
            [
                Item::Entry(Entry {
                    key: Some("https://untitled.example/page".into()),
                    url: Some("https://untitled.example/page".into()),
                    ..Entry::default()
                }),
                Item::Entry(Entry {
                    key: Some("https://blank.example/".into()),
                    url: Some("https://blank.example/".into()),
                    ..Entry::default()
                }),
            ]
        );
    }

    #[test]
    fn firefox_tags_follow_the_folder_path_each_once() {
        let items = read(&export(
            r#"<DT><H3>Thesis</H3>
<DL><p>
<DT><A HREF="https://a.example/" TAGS="methods, to read ,,Thesis,methods">A</A>
<DT><A HREF="https://b.example/" TAGS="">B</A>
</DL><p>
<DT><A HREF="https://c.example/" TAGS="loose">C</A>"#,
        ));
        assert_eq!(
            brief(&items),
            [
                "A <https://a.example/> - [Thesis / methods / to read]",
                "B <https://b.example/> - [Thesis]",
                "C <https://c.example/> - [loose]",
            ]
        );
    }

    #[test]
    fn the_quirks_of_real_exports_keep_their_folders() {
        let items = read(
            b"<!doctype netscape-bookmark-file-1>\r\n\
<dl><p>\r\n\
<dt><h3 FOLDED>Unclosed   heading\r\n\
<dd>its description\r\n\
<DL><P>\r\n\
<DT><A HREF=\"https://a.example/one\">One\r\n\
<DT><a href='https://a.example/two' add_date=1700000000>Two</a>\r\n\
<HR>\r\n\
<DT><A HREF=\"https://a.example/three\">Three\r\n   spread over\r\n   lines</A>\r\n\
<DD>About three, <b>not</b> its title\r\n\
<DT><A HREF=\"https://a.example/bold\">A <b>bold</b> title</A>\r\n\
</DL><p>\r\n\
<DT><H3>Empty without a list</H3>\r\n\
<DT><A HREF=\"https://a.example/four\">Four</A>\r\n\
<DT><H3></H3>\r\n\
<DL><p><DT><A HREF=\"https://a.example/nameless\">In a nameless folder</A></DL><p>\r\n\
</DL>\r\n\
</DL>\r\n\
</DL>\r\n\
<DT><A HREF=\"https://a.example/five\">Five</A>\r\n\
<DT><A HREF=\"https://a.example/six\">Six at the end",
        );
        assert_eq!(
            brief(&items),
            [
                "One <https://a.example/one> - [Unclosed heading]",
                "Two <https://a.example/two> 2023-11-14 [Unclosed heading]",
                "Three spread over lines <https://a.example/three> - [Unclosed heading]",
                "A bold title <https://a.example/bold> - [Unclosed heading]",
                "Four <https://a.example/four> - []",
                "In a nameless folder <https://a.example/nameless> - []",
                "Five <https://a.example/five> - []",
                "Six at the end <https://a.example/six> - []",
            ]
        );
    }

    #[test]
    fn a_bookmark_in_folders_deeper_than_the_tag_limit_keeps_the_outermost() {
        let mut body = String::new();
        for depth in 0..1000 {
            body.push_str(&format!("<DT><H3>F{depth}</H3>\n<DL><p>\n"));
        }
        body.push_str(r#"<DT><A HREF="https://deep.example/">Deep</A>"#);
        let items = read(&export(&body));
        let [Item::Entry(deep)] = &items[..] else {
            panic!("{items:?}");
        };
        assert_eq!(deep.tags.len(), MAX_TAGS);
        assert_eq!(deep.tags[0], "F0");
        assert_eq!(deep.tags[MAX_TAGS - 1], format!("F{}", MAX_TAGS - 1));
    }

    #[test]
    fn script_and_style_content_is_not_read_as_bookmarks() {
        let items = read(&export(
            r#"<script>document.write('<DT><A HREF="https://script.example/">x</A>')</script>
<style>a[href="<A HREF='https://style.example/'>"] {}</style>
<TITLE><A HREF="https://title.example/">t</A></TITLE>
<DT><A HREF="https://real.example/">Real</A>"#,
        ));
        assert_eq!(brief(&items), ["Real <https://real.example/> - []"]);
    }

    /// A reader that offers `step` bytes at a time.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.data.len().min(self.step).min(out.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    impl BufRead for Trickle<'_> {
        fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
            Ok(&self.data[..self.data.len().min(self.step)])
        }
        fn consume(&mut self, n: usize) {
            self.data = &self.data[n..];
        }
    }

    #[test]
    fn an_export_reads_the_same_however_its_input_is_cut() {
        for name in FIXTURES {
            let bytes = fixture(name);
            let whole = read(&bytes);
            assert!(whole.len() >= 7, "{name}");
            let crlf = String::from_utf8(bytes.clone())
                .expect("fixtures are UTF-8")
                .replace('\n', "\r\n");
            assert_eq!(read(crlf.as_bytes()), whole, "{name} with CRLF");
            for step in [1, 2, 3, 7, 64, 4096] {
                let cut =
                    read_bookmarks(Trickle { data: &bytes, step }).expect("reading from memory");
                // Characters, entities and tags split between pieces are read whole.
                assert_eq!(cut, whole, "{name} read {step} bytes at a time");
            }
        }
    }

    #[test]
    fn a_byte_order_mark_is_dropped_and_utf16_is_read() {
        let bytes = export(r#"<DT><A HREF="https://bom.example/">Café</A>"#);
        let want = ["Café <https://bom.example/> - []"];
        let utf8: Vec<u8> = b"\xef\xbb\xbf".iter().chain(&bytes).copied().collect();
        assert_eq!(brief(&read(&utf8)), want);
        let text = String::from_utf8(bytes).expect("UTF-8");
        let utf16: Vec<u8> = [0xff, 0xfe]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        assert_eq!(brief(&read(&utf16)), want);
        let latin1 = export("<DT><A HREF=\"https://latin1.example/\">Caf\u{e9}</A>")
            .into_iter()
            .flat_map(|b| {
                if b == 0xc3 {
                    None
                } else if b == 0xa9 {
                    Some(0xe9)
                } else {
                    Some(b)
                }
            })
            .collect::<Vec<u8>>();
        assert_eq!(
            brief(&read(&latin1)),
            ["Caf\u{fffd} <https://latin1.example/> - []"]
        );
    }

    /// Gives `good`, then fails: interrupted once (which is tried again), then for good.
    struct Failing {
        good: Cursor<Vec<u8>>,
        interrupted: bool,
    }

    impl Read for Failing {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.good.read(out)?;
            if n > 0 {
                return Ok(n);
            }
            if !self.interrupted {
                self.interrupted = true;
                return Err(std::io::ErrorKind::Interrupted.into());
            }
            Err(std::io::Error::other("the disk went away"))
        }
    }

    #[test]
    fn an_io_error_ends_the_reading_as_an_error() {
        let good = export(r#"<DT><A HREF="https://before.example/">Before</A>"#);
        let good = good[..good.len() - 10].to_vec();
        let failing = || {
            std::io::BufReader::new(Failing {
                good: Cursor::new(good.clone()),
                interrupted: false,
            })
        };
        let mut marks = Bookmarks::new(failing());
        let first = marks
            .next_item()
            .expect("the first bookmark comes before the error");
        assert_eq!(
            brief(&first.into_iter().collect::<Vec<_>>()),
            ["Before <https://before.example/> - []"]
        );
        let Err(BookmarksError::Read(e)) = marks.next_item() else {
            panic!("the error is not returned");
        };
        assert_eq!(e.to_string(), "the disk went away");
        assert!(read_bookmarks(failing()).is_err());
        let mut iter = Bookmarks::new(failing());
        assert!(matches!(iter.next(), Some(Ok(_))));
        assert!(matches!(iter.next(), Some(Err(_))));
        assert!(iter.next().is_none(), "the iterator ends after an error");
    }

    #[test]
    fn truncated_exports_never_panic_and_keep_what_came_before() {
        for name in FIXTURES {
            let bytes = fixture(name);
            let whole = read(&bytes);
            for cut in 0..bytes.len() {
                let part = read(&bytes[..cut]);
                assert!(part.len() <= whole.len(), "{name} cut at {cut}");
                // All but the last item, which the cut may have shortened, are as in the
                // whole file.
                let settled = part.len().saturating_sub(1);
                assert_eq!(part[..settled], whole[..settled], "{name} cut at {cut}");
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        const PIECES: &[&str] = &[
            "<DT>",
            "<A HREF=\"",
            "https://x.example/",
            "\">",
            "</A>",
            "<H3>",
            "</H3>",
            "<DL><p>",
            "</DL>",
            "&amp",
            "&#",
            "x;",
            "<!--",
            "-->",
            "'",
            "\"",
            "<",
            ">",
            "=",
            "<script>",
            "</script",
            "<DD>",
            "place:",
            "javascript:",
            " ",
            "\n",
            "é",
            "\u{feff}",
            "<TITLE>",
            "ADD_DATE=99999999999999999999",
            " TAGS=\",,\"",
            "<!DOCTYPE ",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..300 {
            let mut input = Vec::new();
            for _ in 0..(next() % 400) {
                let r = next();
                if r.is_multiple_of(4) {
                    input.push((r >> 8) as u8);
                } else {
                    input.extend_from_slice(PIECES[(r >> 8) as usize % PIECES.len()].as_bytes());
                }
            }
            let step = 1 + (next() % 50) as usize;
            assert!(read_bookmarks(Trickle { data: &input, step }).is_ok());
            let _ = is_bookmark_export(&String::from_utf8_lossy(&input));
        }
    }

    const ICON_CHARS: usize = 2048;

    /// A 20,000-bookmark export made as it is read, in folders of 1,000, every bookmark with a
    /// 2 KB icon, offered a megabyte at a time. It notes where each bookmark's `</A>` ends,
    /// how much the reader has consumed, and the most it consumed at once.
    struct Synthetic {
        count: usize,
        next: usize,
        icon: String,
        buf: Vec<u8>,
        at: usize,
        /// Bytes made before `buf[0]`.
        before: u64,
        ends: Vec<u64>,
        consumed: Rc<Cell<u64>>,
        most_at_once: Rc<Cell<usize>>,
        finished: bool,
    }

    const OFFER: usize = 1024 * 1024;

    impl Synthetic {
        fn make_more(&mut self) {
            let i = self.next;
            if i == 0 {
                self.buf.extend_from_slice(
                    b"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<META HTTP-EQUIV=\"Content-Type\" CONTENT=\"text/html; charset=UTF-8\">\n<TITLE>Bookmarks</TITLE>\n<H1>Bookmarks</H1>\n<DL><p>\n",
                );
            }
            if i.is_multiple_of(1000) {
                if i > 0 {
                    self.buf.extend_from_slice(b"    </DL><p>\n");
                }
                self.buf.extend_from_slice(
                    format!(
                        "    <DT><H3 ADD_DATE=\"1600000000\">Folder {}</H3>\n    <DL><p>\n",
                        i / 1000
                    )
                    .as_bytes(),
                );
            }
            let line = format!(
                "        <DT><A HREF=\"https://example.org/paper/{i}?v=1&amp;lang=en\" ADD_DATE=\"{}\" ICON=\"{}\">Paper {i}</A>\n",
                1_600_000_000 + i,
                self.icon
            );
            self.buf.extend_from_slice(line.as_bytes());
            self.ends.push(self.before + (self.buf.len() - 1) as u64);
            self.next += 1;
            if self.next == self.count {
                self.buf.extend_from_slice(b"    </DL><p>\n</DL><p>\n");
                self.finished = true;
            }
        }
    }

    impl Read for Synthetic {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let available = self.fill_buf()?;
            let n = available.len().min(out.len());
            out[..n].copy_from_slice(&available[..n]);
            self.consume(n);
            Ok(n)
        }
    }

    impl BufRead for Synthetic {
        fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
            if self.buf.len() - self.at < OFFER && !self.finished {
                self.before += self.at as u64;
                self.buf.drain(..self.at);
                self.at = 0;
                while self.buf.len() < OFFER && !self.finished {
                    self.make_more();
                }
            }
            Ok(&self.buf[self.at..])
        }
        fn consume(&mut self, n: usize) {
            self.at += n;
            self.consumed.set(self.consumed.get() + n as u64);
            self.most_at_once.set(self.most_at_once.get().max(n));
        }
    }

    #[test]
    fn twenty_thousand_bookmarks_with_big_icons_are_read_in_bounded_pieces() {
        let count = 20_000;
        let icon: String = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9h"
            .chars()
            .cycle()
            .take(ICON_CHARS)
            .collect();
        let consumed = Rc::new(Cell::new(0));
        let most_at_once = Rc::new(Cell::new(0));
        let mut marks = Bookmarks::new(Synthetic {
            count,
            next: 0,
            icon,
            buf: Vec::new(),
            at: 0,
            before: 0,
            ends: Vec::with_capacity(count),
            consumed: consumed.clone(),
            most_at_once: most_at_once.clone(),
            finished: false,
        });
        let mut read = 0;
        let mut most_ahead = 0;
        while let Some(item) = marks.next_item().expect("reading a made-up export") {
            let Item::Entry(entry) = &item else {
                panic!("bookmark {read}: {item:?}");
            };
            assert_eq!(
                entry.title.as_deref(),
                Some(format!("Paper {read}").as_str())
            );
            assert_eq!(
                entry.url.as_deref(),
                Some(format!("https://example.org/paper/{read}?v=1&lang=en").as_str())
            );
            assert_eq!(entry.tags, [format!("Folder {}", read / 1000)]);
            // Each bookmark is given once its `</A>` is read, and before much more is.
            let end = marks.input.ends[read];
            let now = consumed.get();
            assert!(now > end, "bookmark {read} given before its end was read");
            most_ahead = most_ahead.max(now - end);
            read += 1;
        }
        assert_eq!(read, count);
        assert!(
            most_ahead <= CHUNK_BYTES as u64,
            "read {most_ahead} bytes ahead"
        );
        assert!(
            most_at_once.get() <= CHUNK_BYTES,
            "{} bytes at once",
            most_at_once.get()
        );
        // The whole file is far bigger than what was ever held.
        assert!(
            consumed.get() > 40 * 1024 * 1024,
            "{} bytes",
            consumed.get()
        );
    }

    #[test]
    fn bookmark_exports_are_detected_by_their_doctype() {
        for name in FIXTURES {
            let bytes = fixture(name);
            assert!(
                is_bookmark_export(&String::from_utf8_lossy(&bytes[..200])),
                "{name}"
            );
        }
        for head in [
            "<!DOCTYPE NETSCAPE-Bookmark-file-1>",
            "<!doctype netscape-bookmark-file-1>\n<DL>",
            "\u{feff}<!DOCTYPE NETSCAPE-Bookmark-file-1>",
            " \r\n\t<!-- exported by a tool -->\n<!---->  <!DOCTYPE\tNETSCAPE-Bookmark-file-1 >",
            "<!DocType  Netscape-Bookmark-File-1>",
        ] {
            assert!(is_bookmark_export(head), "{head:?}");
        }
    }

    #[test]
    fn text_and_ordinary_pages_are_not_bookmark_exports() {
        for head in [
            "",
            "https://example.com/a\nhttps://example.com/b\n",
            "My bookmarks: <!DOCTYPE NETSCAPE-Bookmark-file-1>",
            "<!DOCTYPE html>\n<html><head><title>Bookmarks</title></head><body><a href=\"https://x.example/\">x</a></body></html>",
            "<html><body><pre><!DOCTYPE NETSCAPE-Bookmark-file-1></pre></body></html>",
            "<!-- an unended comment <!DOCTYPE NETSCAPE-Bookmark-file-1>",
            "<!DOCTYPE NETSCAPE-Bookmark-file-10>",
            "<!DOCTYPENETSCAPE-Bookmark-file-1>",
            "<!DOCTYPE NETSCAPE-Bookmark-file",
            "<?xml version=\"1.0\"?><!DOCTYPE NETSCAPE-Bookmark-file-1>",
            "\u{e9}\u{e9}\u{e9}",
        ] {
            assert!(!is_bookmark_export(head), "{head:?}");
        }
    }
}
