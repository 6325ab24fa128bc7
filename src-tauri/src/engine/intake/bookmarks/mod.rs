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

pub mod firefox_json;

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
            let folders = self.folders.iter().flatten().map(String::as_str);
            let tags = tags_of(folders, anchor.tags.as_deref());
            self.items.push_back(item(anchor, tags));
        }
    }
}

/// A bookmark as an item: an http(s) address is an [`Entry`] with `tags`; other schemes are
/// skipped or rejected, each with its reason.
fn item(anchor: Anchor, tags: Vec<String>) -> Item {
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
        tags,
        ..Entry::default()
    })
}

/// The folders a bookmark is in, outermost first, then Firefox's own tags for it (`TAGS="a,b"`
/// in an export, `"tags":"a,b"` in a backup), each once.
fn tags_of<'a>(folders: impl Iterator<Item = &'a str>, firefox: Option<&'a str>) -> Vec<String> {
    let mut tags: Vec<String> = Vec::new();
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
mod tests;
