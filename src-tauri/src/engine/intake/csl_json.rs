//! CSL-JSON files (`.json`, an array of CSL items, as Zotero exports them), read an item at a
//! time: a visitor takes the array's elements one by one, so only one item is in memory.

use std::cell::Cell;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::rc::Rc;

use serde::Deserialize as _;
use serde::Deserializer as _;
use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::entry::{Entry, Item};
use super::json_escapes::LoneSurrogates;
use super::reference_file::{
    arxiv_in_text, csl_type, is_arxiv_id, is_key_like, is_pmid, issued_from_parts, issued_from_ymd,
    split_keywords, year_in,
};

/// The longest one item may be: a longer one stops the reading rather than fill memory.
pub const MAX_ITEM_BYTES: usize = 16 * 1024 * 1024;

/// Why a CSL-JSON file could not be read to its end. Items read before it were handed over.
#[derive(Debug, thiserror::Error)]
pub enum CslJsonError {
    #[error("could not read the CSL-JSON file: {0}")]
    Read(std::io::Error),
    /// Not JSON, not an array, or JSON that breaks off (the message names line and column).
    #[error("not a CSL-JSON file (an array of items): {0}")]
    Json(serde_json::Error),
    /// An item that is not valid JSON ends the file there: JSON has no way to skip it.
    #[error(
        "item {index} of the CSL-JSON file is damaged ({source}); the {read} item(s) before it \
         were read, the rest of the file was not"
    )]
    Damaged {
        index: usize,
        read: usize,
        source: serde_json::Error,
    },
    #[error("item {index} of the CSL-JSON file is longer than {} MiB", MAX_ITEM_BYTES / (1024 * 1024))]
    ItemTooLarge { index: usize },
}

/// Read a CSL-JSON file, handing each item to `on_item` in file order. An empty file (or only
/// whitespace) has no items; one object is one item; other JSON that is not an array is an
/// error for the whole file; an element that is not an object is rejected and the others
/// still come through.
pub fn read_csl_json<R: BufRead>(
    reader: R,
    mut on_item: impl FnMut(Item),
) -> Result<(), CslJsonError> {
    let state = Rc::new(State::default());
    let input = Input {
        inner: BufReader::new(LoneSurrogates::new(reader)),
        started: false,
        pending: Vec::new(),
        state: Rc::clone(&state),
    };
    let mut de = serde_json::Deserializer::from_reader(input);
    let visitor = Items {
        on_item: &mut on_item,
        state: &state,
    };
    let result = de.deserialize_any(visitor).and_then(|()| {
        if !state.one_object.get() {
            return de.end();
        }
        // More objects after the first, one after another: JSON Lines (Gleaner's own `export
        // --format jsonl`, a list of `{"url": …}`), each an item. `end` reads only whitespace.
        while de.end().is_err() {
            state.in_items.set(true);
            state.item_bytes.set(0);
            let value = Value::deserialize(&mut de)?;
            let index = state.index.get() + 1;
            state.index.set(index);
            on_item(item_of(value, index));
        }
        Ok(())
    });
    match result {
        Ok(()) => Ok(()),
        Err(e) if e.is_eof() && !state.content.get() => Ok(()),
        Err(e) if e.is_io() => {
            let io = std::io::Error::from(e);
            if io.get_ref().is_some_and(|inner| inner.is::<TooLarge>()) {
                Err(CslJsonError::ItemTooLarge {
                    index: state.index.get() + 1,
                })
            } else {
                Err(CslJsonError::Read(io))
            }
        }
        Err(e) if state.in_items.get() => Err(CslJsonError::Damaged {
            index: state.index.get() + 1,
            read: state.index.get(),
            source: e,
        }),
        Err(e) => Err(CslJsonError::Json(e)),
    }
}

/// What the reader and the visitor share.
#[derive(Default)]
struct State {
    /// Anything but whitespace was read.
    content: Cell<bool>,
    /// Bytes read since the current item began.
    item_bytes: Cell<usize>,
    /// Items handed over.
    index: Cell<usize>,
    /// The file's array of items is being read.
    in_items: Cell<bool>,
    /// The file started with one object (an item on its own, or the first of JSON Lines).
    one_object: Cell<bool>,
}

#[derive(Debug)]
struct TooLarge;

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an item is too large")
    }
}

impl std::error::Error for TooLarge {}

/// The file without its byte order mark, counting what it gives.
struct Input<R> {
    inner: R,
    started: bool,
    pending: Vec<u8>,
    state: Rc<State>,
}

impl<R: BufRead> Read for Input<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if !self.started {
            self.started = true;
            let mut head = Vec::with_capacity(3);
            (&mut self.inner).take(3).read_to_end(&mut head)?;
            if head != b"\xEF\xBB\xBF" {
                self.pending = head;
            }
        }
        let n = if self.pending.is_empty() {
            self.inner.read(out)?
        } else {
            let n = out.len().min(self.pending.len());
            out[..n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            n
        };
        let read = &out[..n];
        if !self.state.content.get() && read.iter().any(|b| !b.is_ascii_whitespace()) {
            self.state.content.set(true);
        }
        let bytes = self.state.item_bytes.get() + n;
        self.state.item_bytes.set(bytes);
        if bytes > MAX_ITEM_BYTES {
            return Err(std::io::Error::other(TooLarge));
        }
        Ok(n)
    }
}

struct Items<'a, F> {
    on_item: &'a mut F,
    state: &'a State,
}

impl<'de, F: FnMut(Item)> Visitor<'de> for Items<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of CSL-JSON items")
    }

    /// One item on its own, as citation.js and some DOI resolvers write it.
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let mut item = Map::deserialize(MapAccessDeserializer::new(map))?;
        // Zotero's web API answers `{"items": [...]}` (with `format=csl-json`).
        if let (Some(Value::Array(_)), false) = (item.get("items"), is_item(&item))
            && let Some(Value::Array(items)) = item.remove("items")
        {
            self.state.in_items.set(true);
            for value in items {
                let index = self.state.index.get() + 1;
                self.state.index.set(index);
                (self.on_item)(item_of(value, index));
            }
            return Ok(());
        }
        self.state.one_object.set(true);
        self.state.index.set(1);
        (self.on_item)(Item::Entry(entry_of(&item)));
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.state.item_bytes.set(0);
        self.state.in_items.set(true);
        while let Some(value) = seq.next_element::<Value>()? {
            self.state.item_bytes.set(0);
            let index = self.state.index.get() + 1;
            self.state.index.set(index);
            (self.on_item)(item_of(value, index));
        }
        Ok(())
    }
}

fn item_of(value: Value, index: usize) -> Item {
    let kind = match &value {
        Value::Object(_) => "",
        Value::Array(_) => "an array",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "true or false",
        Value::Null => "null",
    };
    match value {
        Value::Object(map) => Item::Entry(entry_of(&map)),
        _ => Item::Rejected {
            what: format!("item {index}"),
            reason: format!("item {index} is {kind}, not an object"),
        },
    }
}

/// Whether an object is an item itself, not a wrapper of items.
fn is_item(object: &Map<String, Value>) -> bool {
    ["type", "id", "title", "DOI", "URL", "url"]
        .iter()
        .any(|key| object.contains_key(*key))
}

/// The metadata a DOI resolver answers with (one CSL-JSON object, as Crossref and DataCite
/// send it), and its abstract as plain text; `None` if the body is no such object.
pub fn resolver_metadata(body: &[u8]) -> Option<(Entry, Option<String>)> {
    let Value::Object(item) = serde_json::from_slice::<Value>(body).ok()? else {
        return None;
    };
    let abstract_text = item
        .get("abstract")
        .and_then(Value::as_str)
        .map(without_tags)
        .filter(|a| !a.is_empty());
    // Crossref's titles are JATS and HTML: `<scp>`, `<mml:math>`, `&amp;` and any other tag
    // or entity, which a file's rich-text rule kept.
    let html = |key: &str| {
        item.get(key)
            .and_then(Value::as_str)
            .map(|t| markup_text(t, ""))
            .filter(|t| !t.is_empty())
    };
    let entry = Entry {
        title: html("title"),
        container_title: html("container-title"),
        ..entry_of(&item)
    };
    Some((entry, abstract_text))
}

/// Text without any markup: Crossref's abstracts are JATS (`<jats:p>…</jats:p>`), often
/// headed by a `<jats:title>Abstract</jats:title>` that says what the field already says.
/// A tag parts words; a `<` or `>` that starts no tag (DataCite's plain-text abstracts:
/// "n < 50") is text.
fn without_tags(text: &str) -> String {
    let trimmed = text.trim_start();
    let text = match (
        trimmed.starts_with("<jats:title"),
        trimmed.find("</jats:title>"),
    ) {
        (true, Some(end)) => &trimmed[end + "</jats:title>".len()..],
        _ => text,
    };
    markup_text(text, " ")
}

/// The text of markup as HTML reads it: any tag (`<jats:p>`, `<scp>`, `<mml:math>`) left
/// out, `between_tags` in its place, entities decoded (`&amp;`, `&#x2013;`), a `<` that
/// starts no tag kept as text, whitespace collapsed.
fn markup_text(text: &str, between_tags: &'static str) -> String {
    use html5ever::tendril::StrTendril;
    use html5ever::tokenizer::{
        BufferQueue, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
    };
    use std::cell::RefCell;

    struct Sink {
        out: RefCell<String>,
        between_tags: &'static str,
    }
    impl TokenSink for Sink {
        type Handle = ();
        fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
            match token {
                Token::CharacterTokens(t) => self.out.borrow_mut().push_str(&t),
                Token::TagToken(_) => self.out.borrow_mut().push_str(self.between_tags),
                _ => {}
            }
            TokenSinkResult::Continue
        }
    }

    if !text.contains(['<', '&']) {
        return text.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    let sink = Sink {
        out: RefCell::new(String::with_capacity(text.len())),
        between_tags,
    };
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let queue = BufferQueue::default();
    queue.push_back(StrTendril::from(text));
    let _ = tokenizer.feed(&queue);
    tokenizer.end();
    let out = tokenizer.sink.out.borrow();
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A CSL item as an [`Entry`]. A field of the wrong JSON type is passed over.
fn entry_of(item: &Map<String, Value>) -> Entry {
    let text = |name: &str| item.get(name).filter(|v| v.is_string()).and_then(as_text);
    let id = |name: &str| item.get(name).and_then(as_text);
    let mut entry = Entry {
        // CSL's own key field, else an `id` that can be one.
        key: text("citation-key").or_else(|| id("id").filter(|k| is_key_like(k))),
        // Lower case as Gleaner's own JSON Lines export writes them, and a list of `{"url": …}`.
        doi: text("DOI").or_else(|| text("doi")),
        url: text("URL").or_else(|| text("url")),
        pmid: id("PMID").filter(|p| is_pmid(p)),
        pmcid: text("PMCID"),
        title: text("title").map(|t| plain(&t)).filter(|t| !t.is_empty()),
        authors: match item.get("author") {
            Some(Value::Array(people)) => people.iter().filter_map(person).collect(),
            _ => Vec::new(),
        },
        issued: item.get("issued").and_then(issued),
        container_title: text("container-title")
            .map(|t| plain(&t))
            .filter(|t| !t.is_empty()),
        kind: text("type").and_then(|t| csl_type(&t)).map(str::to_string),
        ..Entry::default()
    };
    // Zotero keeps an arXiv preprint's id as its number (`arXiv:1706.03762`), publisher arXiv.
    let from_arxiv = text("publisher").is_some_and(|p| p.eq_ignore_ascii_case("arxiv"));
    entry.arxiv = text("number")
        .filter(|n| is_arxiv_id(n) && (from_arxiv || n.to_ascii_lowercase().starts_with("arxiv:")))
        .or_else(|| text("container-title").and_then(|t| arxiv_in_text(&t)));
    match item.get("keyword") {
        Some(Value::String(words)) => split_keywords(words, &mut entry.tags),
        Some(Value::Array(words)) => {
            for word in words.iter().filter_map(Value::as_str) {
                split_keywords(word, &mut entry.tags);
            }
        }
        _ => {}
    }
    entry
}

/// A string, or a number as written (`"id": 12`, `"PMID": 31452104`), trimmed, if not empty.
fn as_text(value: &Value) -> Option<String> {
    let text = match value {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// CSL's rich text without its markup (`<i>`, `<b>`, `<sup>`, `<sub>`, `<span …>`), whitespace
/// collapsed. A file's other `<…>` is text (a resolver's answer is read as HTML instead:
/// [`resolver_metadata`]).
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let tag = &rest[open..];
        let end = tag.find('>');
        let name = tag[1..]
            .trim_start_matches('/')
            .split(|c: char| !c.is_ascii_alphabetic())
            .next()
            .unwrap_or_default();
        match end {
            Some(end) if matches!(name, "i" | "b" | "sup" | "sub" | "sc" | "span") => {
                rest = &tag[end + 1..];
            }
            _ => {
                out.push('<');
                rest = &tag[1..];
            }
        }
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A CSL name as "Family, Given": its particles go with the family (`van Beethoven`) or the
/// given names, its suffix after them; a `literal` name as it is, and so Crossref's `name`
/// of an organisation (`{"name": "GTEx Consortium"}`, which was dropped).
fn person(name: &Value) -> Option<String> {
    let name = name.as_object()?;
    let part = |key: &str| name.get(key).and_then(as_text);
    if let Some(literal) = part("literal").or_else(|| part("name")) {
        return Some(literal);
    }
    let family = [part("non-dropping-particle"), part("family")]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    let given = [part("given"), part("dropping-particle"), part("suffix")]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    match (family.is_empty(), given.is_empty()) {
        (true, true) => None,
        (false, true) => Some(family),
        (true, false) => Some(given),
        (false, false) => Some(format!("{family}, {given}")),
    }
}

/// A CSL date: `{"date-parts": [[2013, 7, 31]]}` (numbers or strings), else `{"raw": …}` or
/// `{"literal": …}`.
fn issued(date: &Value) -> Option<String> {
    let date = date.as_object()?;
    let parts = date
        .get("date-parts")
        .and_then(Value::as_array)
        .and_then(|ranges| ranges.first())
        .and_then(Value::as_array);
    if let Some(parts) = parts {
        let number = |i: usize| -> Option<u32> {
            match parts.get(i)? {
                Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            }
        };
        if let Some(year) = number(0) {
            return issued_from_parts(year, number(1), number(2));
        }
    }
    let raw = date
        .get("raw")
        .or_else(|| date.get("literal"))
        .and_then(Value::as_str)?;
    issued_from_ymd(raw).or_else(|| year_in(raw).and_then(|y| issued_from_parts(y, None, None)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIBRARY: &str = include_str!("../../../tests-fixtures/references/library.json");

    fn read_bytes(bytes: &[u8]) -> (Vec<Item>, Result<(), CslJsonError>) {
        let mut items = Vec::new();
        let result = read_csl_json(bytes, |item| items.push(item));
        (items, result)
    }

    fn read(text: &str) -> Vec<Item> {
        let (items, result) = read_bytes(text.as_bytes());
        if let Err(e) = result {
            panic!("{text}: {e}");
        }
        items
    }

    fn entries(items: &[Item]) -> Vec<&Entry> {
        items
            .iter()
            .filter_map(|i| match i {
                Item::Entry(e) => Some(e),
                _ => None,
            })
            .collect()
    }

    fn one(json: &str) -> Entry {
        match read(&format!("[{json}]")).as_slice() {
            [Item::Entry(e)] => e.clone(),
            other => panic!("{json}: {other:?}"),
        }
    }

    fn error(text: &str) -> String {
        match read_bytes(text.as_bytes()).1 {
            Err(e) => e.to_string(),
            Ok(()) => panic!("{text}: no error"),
        }
    }

    #[test]
    fn a_zotero_export_maps_every_field() {
        let items = read(LIBRARY);
        let all = entries(&items);
        assert_eq!(all.len(), 6);
        let authors = [
            "Kucsko, G.",
            "Maurer, P. C.",
            "Yao, N. Y.",
            "Kubo, M.",
            "Noh, H. J.",
            "Lo, P. K.",
            "Park, H.",
            "Lukin, M. D.",
        ];
        assert_eq!(
            *all[0],
            Entry {
                // Zotero's item URI is no citation key.
                key: None,
                doi: Some("10.1038/nature12373".into()),
                arxiv: None,
                pmid: None,
                pmcid: None,
                url: Some("https://www.nature.com/articles/nature12373".into()),
                title: Some("Nanometre-scale thermometry in a living cell".into()),
                authors: authors.iter().map(|a| a.to_string()).collect(),
                issued: Some("2013-07-31".into()),
                container_title: Some("Nature".into()),
                tags: vec!["Nanoscale materials".into(), "Quantum physics".into()],
                kind: Some("article-journal".into()),
            }
        );
        let attention = all[1];
        assert_eq!(attention.key.as_deref(), Some("vaswaniAttentionAllYou2017"));
        assert_eq!(attention.arxiv.as_deref(), Some("arXiv:1706.03762"));
        assert_eq!(attention.doi.as_deref(), Some("10.48550/arXiv.1706.03762"));
        assert_eq!(attention.issued.as_deref(), Some("2017-06-12"));
        assert_eq!(attention.authors[6], "Kaiser, Łukasz");
        assert_eq!(
            all[2].title.as_deref(),
            Some("A Programmable Dual-RNA–Guided DNA Endonuclease in Adaptive Bacterial Immunity")
        );
        assert_eq!(all[2].arxiv, None, "an issue number is no arXiv id");
        let who = all[3];
        assert_eq!(who.authors, ["World Health Organization"]);
        assert_eq!(who.issued.as_deref(), Some("2020-03-11"));
        assert_eq!(all[4].pmid.as_deref(), Some("31452104"));
        assert_eq!(all[4].issued.as_deref(), Some("2019"));
        let thesis = all[5];
        assert_eq!(thesis.authors, ["van der Waals, Johannes Diderik"]);
        assert_eq!(
            (&thesis.doi, &thesis.url),
            (&None, &None),
            "nothing to fetch, still an entry"
        );
    }

    #[test]
    fn fields_of_other_shapes() {
        let e = one(
            r#"{"id": 12, "PMID": 31452104, "keyword": ["a, b", "c"], "title": " <i>E. coli</i> at 10<sup>3</sup> K <not a tag> "}"#,
        );
        assert_eq!(e.key, None, "a number is a database's id");
        assert_eq!(e.pmid.as_deref(), Some("31452104"));
        assert_eq!(e.tags, ["a", "b", "c"]);
        assert_eq!(e.title.as_deref(), Some("E. coli at 103 K <not a tag>"));
        let e = one(r#"{"PMID": "PMC6712345", "title": 5, "author": "Smith", "issued": "2013"}"#);
        assert_eq!(
            (e.pmid, e.title, e.issued),
            (None, None, None),
            "wrong types are passed over"
        );
        assert!(e.authors.is_empty());
        let e = one(
            r#"{"author": [{"given": "Cher"}, {"family": "Smith", "given": "John", "suffix": "Jr."}, {}, "x", {"family": "Fontaine", "given": "Jean", "dropping-particle": "de la"}]}"#,
        );
        assert_eq!(
            e.authors,
            ["Cher", "Smith, John Jr.", "Fontaine, Jean de la"]
        );
    }

    #[test]
    fn dates_in_every_shape() {
        let issued = |date: &str| one(&format!(r#"{{"issued": {date}}}"#)).issued;
        assert_eq!(
            issued(r#"{"date-parts": [[2013, 7, 31]]}"#).as_deref(),
            Some("2013-07-31")
        );
        assert_eq!(
            issued(r#"{"date-parts": [["2013", "7"]]}"#).as_deref(),
            Some("2013-07")
        );
        assert_eq!(
            issued(r#"{"date-parts": [[2013, 13, 1]]}"#).as_deref(),
            Some("2013")
        );
        assert_eq!(
            issued(r#"{"date-parts": [[2013, 7], [2014, 1]]}"#).as_deref(),
            Some("2013-07"),
            "a range starts"
        );
        assert_eq!(
            issued(r#"{"raw": "2013/07/31"}"#).as_deref(),
            Some("2013-07-31")
        );
        assert_eq!(
            issued(r#"{"raw": "July 31, 2013"}"#).as_deref(),
            Some("2013")
        );
        assert_eq!(
            issued(r#"{"literal": "Spring 1999"}"#).as_deref(),
            Some("1999")
        );
        assert_eq!(issued(r#"{"date-parts": [[-50]]}"#), None);
        assert_eq!(issued(r#"{"date-parts": []}"#), None);
    }

    #[test]
    fn an_element_that_is_no_object_is_rejected_and_the_rest_read() {
        let items = read(r#"[{"id": "a"}, "stray", 3, null, [1], {"id": "b"}]"#);
        let reasons: Vec<(String, String)> = items
            .iter()
            .filter_map(|i| match i {
                Item::Rejected { what, reason } => Some((what.clone(), reason.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            reasons,
            [
                (
                    "item 2".to_string(),
                    "item 2 is a string, not an object".to_string()
                ),
                ("item 3".into(), "item 3 is a number, not an object".into()),
                ("item 4".into(), "item 4 is null, not an object".into()),
                ("item 5".into(), "item 5 is an array, not an object".into()),
            ]
        );
        assert_eq!(entries(&items).len(), 2);
    }

    #[test]
    fn json_that_is_no_array_is_an_error_for_the_file() {
        assert_eq!(
            error("\"text\""),
            "not a CSL-JSON file (an array of items): invalid type: string \"text\", expected an \
             array of CSL-JSON items at line 1 column 6"
        );
        assert!(error("42").contains("expected an array of CSL-JSON items"));
        assert!(error("https://example.com\n").contains("expected value at line 1 column 1"));
    }

    #[test]
    fn one_item_on_its_own_is_read_as_a_file_of_one() {
        let (items, result) = read_bytes(
            br#"{"id": "k", "type": "article-journal", "title": "Alone", "DOI": "10.1000/one"}"#,
        );
        result.expect("one object");
        let entries = entries(&items);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].doi.as_deref(), Some("10.1000/one"));
        assert_eq!(entries[0].title.as_deref(), Some("Alone"));
        // What follows an object is read as JSON Lines: an array there is no item.
        let (items, result) = read_bytes(br#"{"id": "k"} [1]"#);
        result.expect("JSON Lines");
        assert!(
            matches!(&items[1], Item::Rejected { what, .. } if what == "item 2"),
            "{items:?}"
        );
        let (_, result) = read_bytes(br#"{"id": "k"} trailing"#);
        assert!(result.is_err(), "no JSON after the object");
    }

    #[test]
    fn broken_json_ends_the_file_after_the_items_before_it() {
        let (items, result) =
            read_bytes(b"[{\"id\": \"a\"},\n {\"id\": \"b\",, }, {\"id\": \"c\"}]");
        assert_eq!(entries(&items).len(), 1);
        let message = result.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("line 2 column 13"), "{message}");
        let (items, result) = read_bytes(b"[{\"id\": \"a\"}] trailing");
        assert_eq!(entries(&items).len(), 1);
        assert!(result.is_err(), "trailing characters");
    }

    /// `JSON.stringify` writes a lone surrogate as `\ud83d` (an emoji cut in half); serde
    /// refuses it, which ended the file there and blamed the whole file.
    #[test]
    fn a_lone_surrogate_escape_is_read_and_a_damaged_item_is_named() {
        let (items, result) = read_bytes(
            br#"[{"id":"a","DOI":"10.1000/a1"},
{"id":"b","DOI":"10.1000/b1", "title": "cut emoji \ud83d"},
{"id":"c","DOI":"10.1000/c1", "title": "pair \ud83d\ude00"}]"#,
        );
        result.expect("read to the end");
        let all = entries(&items);
        assert_eq!(all.len(), 3);
        assert_eq!(all[1].title.as_deref(), Some("cut emoji \u{fffd}"));
        assert_eq!(all[2].title.as_deref(), Some("pair \u{1f600}"));
        let (items, result) = read_bytes(
            b"[{\"id\": \"a\"}, {\"id\": \"b\"},\n {\"id\": \"c\",, }, {\"id\": \"d\"}]",
        );
        assert_eq!(entries(&items).len(), 2);
        let message = result.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.starts_with("item 3 of the CSL-JSON file is damaged (")
                && message
                    .ends_with("the 2 item(s) before it were read, the rest of the file was not"),
            "{message}"
        );
    }

    /// Gleaner's own `export --format jsonl` read back failed at its second line, and a list
    /// of `{"url": …}` lines too; Zotero's web API's `{"items": [...]}` was one empty item.
    #[test]
    fn json_lines_and_zotero_s_items_wrapper_are_items() {
        let (items, result) = read_bytes(
            b"{\"url\": \"https://example.com/a\"}\n{\"url\": \"https://example.com/b\"}\n\n",
        );
        result.expect("JSON Lines");
        let urls: Vec<_> = entries(&items).iter().map(|e| e.url.clone()).collect();
        assert_eq!(
            urls,
            [
                Some("https://example.com/a".to_string()),
                Some("https://example.com/b".to_string())
            ]
        );
        let (items, result) = read_bytes(
            br#"{"job_id":4,"url":"http://127.0.0.1:1/page1","title":"Page"}
{"job_id":3,"url":"doi:10.1000/x3","doi":"10.1000/x3","title":"Third paper"}
{"job_id":2,"url":"doi:10.1000/x2","doi":"10.1000/x2"}
"#,
        );
        result.expect("Gleaner's JSON Lines");
        let all = entries(&items);
        assert_eq!(all.len(), 3);
        assert_eq!(all[1].doi.as_deref(), Some("10.1000/x3"));
        assert_eq!(all[1].title.as_deref(), Some("Third paper"));
        // A damaged line ends the file there, naming it.
        let (items, result) = read_bytes(b"{\"url\": \"https://a.example/\"}\n{\"url\": }\n");
        assert_eq!(items.len(), 1);
        let message = result.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.starts_with("item 2 of the CSL-JSON file is damaged"),
            "{message}"
        );
        let (items, result) = read_bytes(
            br#"{"items":[{"id":"12047273/KC6WFG78","type":"webpage","title":"Zotero","URL":"https://www.zotero.org/support/"},{"id":"x","DOI":"10.1000/q"}]}"#,
        );
        result.expect("the web API's answer");
        let all = entries(&items);
        assert_eq!(all.len(), 2);
        assert_eq!(
            all[0].url.as_deref(),
            Some("https://www.zotero.org/support/")
        );
        assert_eq!(all[1].doi.as_deref(), Some("10.1000/q"));
    }

    /// Zotero's ids are URIs or `library/item`, or numbers: none is a key a paper cites, and
    /// an export kept them as keys for good. CSL's own `citation-key` is the key.
    #[test]
    fn only_an_id_that_can_be_a_citation_key_is_one() {
        let key = |json: &str| one(json).key;
        assert_eq!(
            key(
                r#"{"id": "http://zotero.org/users/local/aBcD1234/items/QWERTY12", "DOI": "10.1/a"}"#
            ),
            None
        );
        assert_eq!(key(r#"{"id": "12047273/KC6WFG78", "DOI": "10.1/a"}"#), None);
        assert_eq!(key(r#"{"id": 7, "DOI": "10.1/a"}"#), None);
        assert_eq!(
            key(r#"{"id": "doe2020", "DOI": "10.1/a"}"#).as_deref(),
            Some("doe2020")
        );
        assert_eq!(
            key(r#"{"id": "http://zotero.org/x/items/Q", "citation-key": "Doe:2020", "DOI": "10.1/a"}"#)
                .as_deref(),
            Some("Doe:2020")
        );
    }

    #[test]
    fn an_item_keeps_its_type() {
        let kind = |t: &str| one(&format!(r#"{{"type": "{t}", "DOI": "10.1/a"}}"#)).kind;
        assert_eq!(
            kind("paper-conference").as_deref(),
            Some("paper-conference")
        );
        assert_eq!(kind("chapter").as_deref(), Some("chapter"));
        assert_eq!(kind("article"), None, "CSL's article is no journal's");
        assert_eq!(kind("webpage"), None);
    }

    #[test]
    fn empty_files_crlf_and_a_byte_order_mark() {
        assert_eq!(read(""), []);
        assert_eq!(read(" \r\n\t\n"), []);
        assert_eq!(read("[]"), []);
        assert_eq!(read(&LIBRARY.replace('\n', "\r\n")), read(LIBRARY));
        assert_eq!(read(&format!("\u{feff}{LIBRARY}")), read(LIBRARY));
        assert_eq!(read("\u{feff}"), []);
        assert!(read_bytes(b"\xEF\xBB").1.is_err(), "half a mark is no JSON");
    }

    #[test]
    fn a_5000_item_file_reads() {
        let items: Vec<String> = (0..5000)
            .map(|n| format!(r#"{{"id": "i{n}", "DOI": "10.1000/{n}", "title": "Paper {n}"}}"#))
            .collect();
        let text = format!("[{}]", items.join(",\n"));
        let got = read(&text);
        assert_eq!(entries(&got).len(), 5000);
        assert_eq!(entries(&got)[4999].doi.as_deref(), Some("10.1000/4999"));
    }

    #[test]
    fn an_item_past_the_size_limit_stops_the_reading() {
        let text = format!(
            r#"[{{"id": "small"}}, {{"id": "big", "abstract": "{}"}}, {{"id": "after"}}]"#,
            "x".repeat(MAX_ITEM_BYTES)
        );
        let (items, result) = read_bytes(text.as_bytes());
        assert_eq!(entries(&items).len(), 1);
        assert!(
            matches!(result, Err(CslJsonError::ItemTooLarge { index: 2 })),
            "{result:?}"
        );
    }

    #[test]
    fn every_truncation_reads_without_panic_and_keeps_the_items_before_the_cut() {
        let full = read(LIBRARY);
        // Where each item ends: its closing brace at depth 1 of the array.
        let (mut ends, mut depth, mut string, mut escape) = (Vec::new(), 0, false, false);
        for (i, b) in LIBRARY.bytes().enumerate() {
            match b {
                _ if escape => escape = false,
                b'\\' if string => escape = true,
                b'"' => string = !string,
                b'{' | b'[' if !string => depth += 1,
                b'}' | b']' if !string => {
                    depth -= 1;
                    if depth == 1 && b == b'}' {
                        ends.push(i + 1);
                    }
                }
                _ => {}
            }
        }
        assert_eq!(ends.len(), full.len());
        for cut in (0..=LIBRARY.len()).step_by(7).chain([LIBRARY.len()]) {
            let (items, result) = read_bytes(&LIBRARY.as_bytes()[..cut]);
            let complete = ends.iter().filter(|&&e| e <= cut).count();
            assert!(items.len() >= complete, "cut at {cut}");
            assert_eq!(items[..complete], full[..complete], "cut at {cut}");
            if cut < LIBRARY.len() - 2 {
                assert!(
                    cut == 0 || result.is_err(),
                    "cut at {cut}: the file breaks off"
                );
            }
        }
    }

    /// What Crossref and DataCite really send: organisation authors as `name`, titles with
    /// JATS, MathML and entities, a plain-text abstract with `<` and `>` in its prose.
    #[test]
    fn a_resolvers_names_titles_and_abstracts_are_read_as_it_writes_them() {
        let body = r#"{"DOI": "10.1126/science.aaz1776",
            "title": "The <scp>GTEx</scp> Consortium atlas of <mml:math xmlns:mml=\"http://www.w3.org/1998/Math/MathML\"><mml:mi>cis</mml:mi></mml:math>-QTLs &amp; tissues",
            "container-title": "Science &amp; Society",
            "author": [{"name": "GTEx Consortium"}, {"family": "Aguet", "given": "François"}],
            "abstract": "We sampled n < 50 sites where the ratio > 2 and &lt;jats:p&gt; stays text."}"#;
        let (entry, abstract_text) = resolver_metadata(body.as_bytes()).expect("an item");
        assert_eq!(
            entry.title.as_deref(),
            Some("The GTEx Consortium atlas of cis-QTLs & tissues")
        );
        assert_eq!(entry.container_title.as_deref(), Some("Science & Society"));
        assert_eq!(entry.authors, ["GTEx Consortium", "Aguet, François"]);
        assert_eq!(
            abstract_text.as_deref(),
            Some("We sampled n < 50 sites where the ratio > 2 and <jats:p> stays text.")
        );
        let jats = br#"{"abstract": "<jats:title>Abstract</jats:title><jats:p>Heat&#x2013;shock at 10<jats:sup>3</jats:sup> K.</jats:p>"}"#;
        let (_, abstract_text) = resolver_metadata(jats).expect("an item");
        assert_eq!(abstract_text.as_deref(), Some("Heat–shock at 10 3 K."));
    }

    #[test]
    fn a_pmc_id_is_read() {
        let e = one(r#"{"id": "pmc_only", "PMCID": "PMC6738313"}"#);
        assert_eq!(e.pmcid.as_deref(), Some("PMC6738313"));
    }
}
