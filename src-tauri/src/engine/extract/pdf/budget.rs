//! How much a PDF's pages would have the reader parse, measured before it parses them. A page's
//! content stands compressed in the file; pdf-extract inflates it and parses it whole into
//! operations, about a hundred bytes of memory for each byte of it. A 44 KB PDF whose one page
//! inflated to 30 MB of drawing operators took 3.2 GB and 23 s, and a 1 MB one would have
//! taken the machine's memory. So each stream is inflated here into a counter that stops at
//! the budget, and a page over it is not read. A page pdf-extract would recurse through
//! without end (a form that draws itself, a page tree that loops) is refused here too: the
//! stack overflow aborts the whole process, which no `catch_unwind` can stop.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::rc::Rc;

use pdf_extract::{Dictionary, Document, Object, ObjectId, Stream};

use super::super::decode::find;

/// The most one page's content, or one XObject it draws, may inflate to: a page of text is
/// tens of KB, a dense vector drawing a few MB.
pub(super) const PAGE_BYTES: u64 = 4 << 20;
/// The most a page may have pdf-extract parse, its content and each XObject as many times as
/// it is drawn (a scatter plot's marker form drawn for each of 50,000 points is 10 MB).
pub(super) const PAGE_DRAWN_BYTES: u64 = 32 << 20;
/// The most pdf-extract holds parsed at once for a page: its content and the chain of forms
/// open inside one another (about a hundred bytes of memory for each).
pub(super) const HELD_BYTES: u64 = 8 << 20;
/// How deep forms may be drawn inside forms (a figure's form drawing its markers' is 2).
pub(super) const FORM_DEPTH: usize = 8;
/// The most all pages together may inflate to; a PDF's pages after it are not read. A
/// 700-page book of text is about 70 MB.
pub(super) const DOCUMENT_BYTES: u64 = 256 << 20;

/// What the file's object streams (`/Type /ObjStm`) inflate to, at most `cap + 1`: lopdf
/// inflates them all as it loads the file, before any page can be measured. Read from the
/// bytes: each one's zlib data after the `stream` keyword that follows its dictionary.
pub(super) fn object_stream_bytes(body: &[u8], cap: u64) -> u64 {
    let mut total = 0u64;
    let mut from = 0;
    while let Some(at) = find(&body[from..], b"/ObjStm") {
        let after = from + at + b"/ObjStm".len();
        let Some(keyword) = find(&body[after..], b"stream") else {
            break;
        };
        let mut data = after + keyword + b"stream".len();
        if body[data..].starts_with(b"\r\n") {
            data += 2;
        } else if body[data..].starts_with(b"\n") || body[data..].starts_with(b"\r") {
            data += 1;
        }
        total += inflate(&body[data..], cap.saturating_sub(total)).len() as u64;
        if total > cap {
            return total;
        }
        from = data;
    }
    total
}

/// Empties every image XObject (`/Subtype /Image`) of `pdf`. pdf-extract parses whatever an
/// XObject holds as content when a page draws it (`/Im0 Do`), so it inflated each image, a
/// photograph to tens of MB, to find no operators in it, and an image whose data was
/// operators (a review's 44 KB file, 30 MB of `0 0 m` labelled an image) was parsed whole.
/// An image has no text: emptied, it costs nothing to draw, and the budget need not count a
/// real figure's pixels against its page.
pub(super) fn blank_images(pdf: &mut Document) {
    for object in pdf.objects.values_mut() {
        if let Object::Stream(stream) = object
            && stream
                .dict
                .get(b"Subtype")
                .and_then(Object::as_name)
                .is_ok_and(|s| s == b"Image")
        {
            stream.set_plain_content(Vec::new());
        }
    }
}

/// Why a page is not read, as [`Budget::page`] found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// Its content, or an XObject it draws, inflates past [`PAGE_BYTES`].
    TooBig,
    /// Its content and what it draws, each XObject as often as it is drawn, pass
    /// [`PAGE_DRAWN_BYTES`].
    TooMuch,
    /// The content and the forms open inside one another at one time pass [`HELD_BYTES`].
    TooHeld,
    /// A form draws itself, directly or through others.
    Cycle,
    /// Forms drawn inside forms more than [`FORM_DEPTH`] deep.
    TooDeep,
    /// The page tree pdf-extract climbs for the page's resources or media box loops, or is
    /// deeper than [`TREE_DEPTH`].
    PageTree,
}

impl Refused {
    /// What the page does, as a warning or an error says it ("a PDF page …").
    pub(super) fn what(self) -> &'static str {
        match self {
            Refused::TooBig => "draws more than 4 MiB of content",
            Refused::TooMuch => {
                "draws more than 32 MiB of content, its forms counted each time they are drawn"
            }
            Refused::TooHeld => "nests forms holding more than 8 MiB of content at once",
            Refused::Cycle => "draws a form that draws itself",
            Refused::TooDeep => "nests forms inside forms more than 8 deep",
            Refused::PageTree => "sits in a page tree that loops or is nested too deep",
        }
    }
}

/// What a page costs to read, as [`Budget::page`] measures it.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum PageCost {
    /// Its content and every XObject it draws, each time it draws it, in bytes.
    Fits(u64),
    Refused(Refused),
}

/// A stream inflated once: its size (at most [`PAGE_BYTES`] + 1) and the names it draws.
struct Measured {
    size: u64,
    draws: Vec<(Vec<u8>, u64)>,
}

/// An XObject with everything it draws: the bytes pdf-extract parses for one `Do` of it, the
/// most it holds at once (its own content and the deepest chain of forms below), and how many
/// forms deep it goes, itself included.
#[derive(Clone, Copy)]
struct Drawn {
    bytes: u64,
    held: u64,
    height: usize,
}

/// A resource dictionary and the object that holds it, which names it for the memo.
type Resources<'a> = (ObjectId, &'a Dictionary);

/// The document's running count: what its pages read so far inflate to, each XObject as
/// often as it is drawn (pdf-extract inflates and parses it again at each `Do`).
#[derive(Default)]
pub(super) struct Budget {
    streams: HashMap<ObjectId, Rc<Measured>>,
    drawn: HashMap<(ObjectId, ObjectId), Drawn>,
    pub total: u64,
}

impl Budget {
    /// Measures `page` as pdf-extract will read it: its content streams, then each XObject
    /// its content draws (`/Name Do`, whatever its subtype: pdf-extract parses any XObject's
    /// data as content), looked up in the page's resources, as many times as it is drawn,
    /// and the XObjects those draw in turn through their own resources (or the drawing
    /// stream's, for a form without any). A form that draws itself, or forms nested deeper
    /// than [`FORM_DEPTH`], would have pdf-extract recurse until the stack overflows, which
    /// aborts the process: such a page is refused here, before pdf-extract sees it.
    pub(super) fn page(&mut self, pdf: &Document, page: ObjectId) -> PageCost {
        let mut content = Vec::new();
        for id in pdf.get_page_contents(page) {
            if let Ok(Object::Stream(stream)) = pdf.get_object(id) {
                let room = PAGE_BYTES.saturating_sub(content.len() as u64);
                content.extend(inflated(stream, room));
                // lopdf joins a page's streams with a line break.
                content.push(b'\n');
            }
            if content.len() as u64 > PAGE_BYTES {
                return PageCost::Refused(Refused::TooBig);
            }
        }
        let resources = match page_resources(pdf, page) {
            Ok(resources) => resources,
            Err(why) => return PageCost::Refused(why),
        };
        let draws = draws(&content);
        let mut path = Vec::new();
        match self.below(pdf, content.len() as u64, &draws, resources, &mut path) {
            Ok(drawn) => {
                self.total = self.total.saturating_add(drawn.bytes);
                PageCost::Fits(drawn.bytes)
            }
            Err(why) => PageCost::Refused(why),
        }
    }

    /// A stream of `size` bytes that draws `draws` under `resources`, with what it draws.
    fn below(
        &mut self,
        pdf: &Document,
        size: u64,
        draws: &[(Vec<u8>, u64)],
        resources: Option<Resources>,
        path: &mut Vec<ObjectId>,
    ) -> Result<Drawn, Refused> {
        let (mut bytes, mut held_below, mut height) = (size, 0u64, 0usize);
        for (name, times) in draws {
            let Some((id, stream)) = resources.and_then(|(_, r)| xobject(pdf, r, name)) else {
                continue;
            };
            let child = self.xobject(pdf, id, stream, resources, path)?;
            bytes = bytes.saturating_add(child.bytes.saturating_mul(*times));
            if bytes > PAGE_DRAWN_BYTES {
                return Err(Refused::TooMuch);
            }
            held_below = held_below.max(child.held);
            height = height.max(child.height);
        }
        let held = size.saturating_add(held_below);
        if held > HELD_BYTES {
            return Err(Refused::TooHeld);
        }
        Ok(Drawn {
            bytes,
            held,
            height,
        })
    }

    /// One XObject drawn under `parent` (the drawing stream's resources), with what it
    /// draws; `path` holds the forms open around it.
    fn xobject(
        &mut self,
        pdf: &Document,
        id: ObjectId,
        stream: &Stream,
        parent: Option<Resources>,
        path: &mut Vec<ObjectId>,
    ) -> Result<Drawn, Refused> {
        if path.contains(&id) {
            return Err(Refused::Cycle);
        }
        if path.len() >= FORM_DEPTH {
            return Err(Refused::TooDeep);
        }
        // As pdf-extract: the form's own resources, else those of the stream drawing it.
        let own = stream
            .dict
            .get(b"Resources")
            .ok()
            .and_then(|o| pdf.dereference(o).ok())
            .and_then(|(rid, o)| Some((rid.unwrap_or(id), o.as_dict().ok()?)));
        let resources = own.or(parent);
        let key = (id, resources.map_or(id, |(rid, _)| rid));
        if let Some(drawn) = self.drawn.get(&key) {
            return if path.len() + drawn.height <= FORM_DEPTH {
                Ok(*drawn)
            } else {
                Err(Refused::TooDeep)
            };
        }
        let measured = self.measure(id, stream);
        if measured.size > PAGE_BYTES {
            return Err(Refused::TooBig);
        }
        path.push(id);
        let drawn = self.below(pdf, measured.size, &measured.draws, resources, path);
        path.pop();
        let mut drawn = drawn?;
        drawn.height += 1;
        self.drawn.insert(key, drawn);
        Ok(drawn)
    }

    /// A stream inflated (up to the cap) and read for what it draws, once per document.
    fn measure(&mut self, id: ObjectId, stream: &Stream) -> Rc<Measured> {
        Rc::clone(self.streams.entry(id).or_insert_with(|| {
            let data = inflated(stream, PAGE_BYTES);
            Rc::new(Measured {
                size: data.len() as u64,
                draws: draws(&data),
            })
        }))
    }
}

/// How deep a page may sit in the page tree below the node it inherits from.
const TREE_DEPTH: usize = 64;

/// A key as pdf-extract inherits it (`get_inherited`): the page's own value if it is of the
/// right kind (`is`), else its parent's, and so on up. pdf-extract walks up without a bound,
/// so a tree whose parents loop, or one deeper than the stack, overflowed the stack when no
/// node had the key (a page whose `/Parent` was itself): that is `Err`. `Ok(None)` when the
/// walk ends without it.
fn inherited<'a>(
    pdf: &'a Document,
    page: ObjectId,
    key: &[u8],
    is: impl Fn(&Object) -> bool,
) -> Result<Option<(ObjectId, &'a Object)>, Refused> {
    let Ok(mut node) = pdf.get_dictionary(page) else {
        return Ok(None);
    };
    let mut node_id = page;
    let mut seen = vec![page];
    loop {
        if let Ok(value) = node.get(key)
            && let Ok((id, object)) = pdf.dereference(value)
            && is(object)
        {
            return Ok(Some((id.unwrap_or(node_id), object)));
        }
        let Some(parent) = node.get(b"Parent").ok().and_then(|p| p.as_reference().ok()) else {
            return Ok(None);
        };
        if seen.contains(&parent) || seen.len() > TREE_DEPTH {
            return Err(Refused::PageTree);
        }
        seen.push(parent);
        let Ok(parent_node) = pdf.get_dictionary(parent) else {
            return Ok(None);
        };
        node = parent_node;
        node_id = parent;
    }
}

/// The page's resources as pdf-extract takes them: its own `/Resources`, else the nearest
/// ancestor's in the page tree (not merged); `Err` for a tree pdf-extract would not get out
/// of, looking for them or for the media box.
fn page_resources(pdf: &Document, page: ObjectId) -> Result<Option<Resources<'_>>, Refused> {
    inherited(pdf, page, b"MediaBox", |o| o.as_array().is_ok())?;
    let found = inherited(pdf, page, b"Resources", |o| o.as_dict().is_ok())?;
    Ok(found.and_then(|(id, o)| Some((id, o.as_dict().ok()?))))
}

/// The XObject `name` in `resources`, with its object id.
fn xobject<'a>(
    pdf: &'a Document,
    resources: &'a Dictionary,
    name: &[u8],
) -> Option<(ObjectId, &'a Stream)> {
    let (_, xobjects) = pdf.dereference(resources.get(b"XObject").ok()?).ok()?;
    let (id, stream) = pdf
        .dereference(xobjects.as_dict().ok()?.get(name).ok()?)
        .ok()?;
    // Streams are indirect objects; a direct one (only a program can make it) gets an id
    // no object has.
    let id = id.unwrap_or((u32::MAX, u16::MAX));
    Some((id, stream.as_stream().ok()?))
}

fn is_white(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\0' | b'\x0C')
}

fn is_regular(c: u8) -> bool {
    !is_white(c)
        && !matches!(
            c,
            b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
        )
}

/// What lopdf's content parser reads as an operator's letters.
fn is_operator(c: u8) -> bool {
    c.is_ascii_alphabetic() || matches!(c, b'*' | b'\'' | b'"')
}

/// The names a content stream draws with `Do`, each with how many times, read as lopdf's
/// content parser reads them (pdf-extract draws what it parses): names decoded (`/F#6d0` is
/// `Fm0`), strings, arrays and dictionaries skipped whole, `true`, `false` and `null` before
/// an operator's letters (`trueDo`) taken as operands, an inline image's data skipped as
/// lopdf skips it. Every name operand of a `Do` counts (pdf-extract takes the first), so a
/// stream this reads differently from lopdf is counted for more, never for less.
fn draws(content: &[u8]) -> Vec<(Vec<u8>, u64)> {
    let mut counts: HashMap<Vec<u8>, u64> = HashMap::new();
    // The name operands since the last operator, and an inline image's dictionary as read.
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut image: Option<Vec<Token>> = None;
    // Whether no operand came since the last operator: only then is `BI` an inline image.
    let mut fresh = true;
    let mut nesting = 0usize;
    let n = content.len();
    let mut i = 0;
    while i < n {
        let c = content[i];
        let was_fresh = fresh;
        if nesting == 0 && !is_white(c) && c != b'%' && c != b')' && c != b'>' && c != b']' {
            // An operand starts here, or an operator (which sets it again below).
            fresh = false;
        }
        match c {
            _ if is_white(c) => i += 1,
            b'%' => {
                while i < n && content[i] != b'\n' && content[i] != b'\r' {
                    i += 1;
                }
            }
            b'(' => {
                i = after_string(content, i);
                if nesting == 0 {
                    push(&mut image, Token::Other);
                }
            }
            b'<' if content.get(i + 1) == Some(&b'<') => {
                nesting += 1;
                i += 2;
            }
            b'<' => {
                i = content[i..]
                    .iter()
                    .position(|&b| b == b'>')
                    .map_or(n, |p| i + p + 1);
                if nesting == 0 {
                    push(&mut image, Token::Other);
                }
            }
            b'>' if content.get(i + 1) == Some(&b'>') => {
                nesting = nesting.saturating_sub(1);
                i += 2;
                if nesting == 0 {
                    push(&mut image, Token::Other);
                }
            }
            b'[' => {
                nesting += 1;
                i += 1;
            }
            b']' => {
                nesting = nesting.saturating_sub(1);
                i += 1;
                if nesting == 0 {
                    push(&mut image, Token::Other);
                }
            }
            b'/' => {
                let (name, end) = read_name(content, i + 1);
                if nesting == 0 {
                    if image.is_some() {
                        push(&mut image, Token::Name(name));
                    } else {
                        names.push(name);
                    }
                }
                i = end;
            }
            _ if !is_regular(c) => i += 1,
            _ => {
                fresh = was_fresh;
                let end = content[i..]
                    .iter()
                    .position(|&b| !is_regular(b))
                    .map_or(n, |p| i + p);
                let mut j = i;
                i = end;
                while j < end {
                    let letters = is_operator(content[j]);
                    let k = content[j..end]
                        .iter()
                        .position(|&b| is_operator(b) != letters)
                        .map_or(end, |p| j + p);
                    let mut word = &content[j..k];
                    j = k;
                    if nesting > 0 {
                        continue;
                    }
                    if !letters {
                        let number = std::str::from_utf8(word).ok().and_then(|w| w.parse().ok());
                        push(&mut image, Token::Number(number));
                        fresh = false;
                        continue;
                    }
                    // lopdf tries an operand before an operator at each place.
                    while let Some(rest) = [&b"true"[..], b"false", b"null"]
                        .iter()
                        .find_map(|p| word.strip_prefix(*p))
                    {
                        let token = match &word[..4] {
                            b"true" => Token::Bool(true),
                            b"fals" => Token::Bool(false),
                            _ => Token::Other,
                        };
                        push(&mut image, token);
                        fresh = false;
                        word = rest;
                    }
                    if word.is_empty() {
                        continue;
                    }
                    match word {
                        b"Do" => {
                            for name in names.drain(..) {
                                *counts.entry(name).or_default() += 1;
                            }
                        }
                        // An operation that starts with `BI` is an inline image; after
                        // operands it is an operator like any other.
                        b"BI" if fresh => image = Some(Vec::new()),
                        b"ID" if image.is_some() => {
                            let tokens = image.take().unwrap_or_default();
                            i = after_inline_image(content, k, &tokens);
                            names.clear();
                            fresh = true;
                            break;
                        }
                        _ => names.clear(),
                    }
                    if image.is_none() {
                        fresh = true;
                    }
                }
            }
        }
    }
    counts.into_iter().collect()
}

/// A token of an inline image's dictionary, as far as its data's length depends on it.
enum Token {
    Name(Vec<u8>),
    Number(Option<i64>),
    Bool(bool),
    Other,
}

/// A token for the inline image's dictionary being read, if one is.
fn push(image: &mut Option<Vec<Token>>, token: Token) {
    if let Some(tokens) = image {
        tokens.push(token);
    }
}

/// A name's bytes from `from` (after its `/`), `#xx` decoded, and where it ends.
fn read_name(content: &[u8], mut from: usize) -> (Vec<u8>, usize) {
    let mut name = Vec::new();
    while let Some(&c) = content.get(from) {
        if c == b'#' {
            let hex = content
                .get(from + 1..from + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => {
                    name.push(b);
                    from += 3;
                }
                None => break,
            }
        } else if is_regular(c) {
            name.push(c);
            from += 1;
        } else {
            break;
        }
    }
    (name, from)
}

/// Where a literal string starting at `at` (its `(`) ends: after its balancing `)`, a
/// backslash escaping the byte after it.
fn after_string(content: &[u8], at: usize) -> usize {
    let mut depth = 0usize;
    let mut i = at;
    while i < content.len() {
        match content[i] {
            b'\\' => i += 1,
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    content.len()
}

/// Where the content goes on after an inline image's `ID` (ending at `from`), as lopdf
/// reads it: data of the length its dictionary gives (width, height, bits, colours) when it
/// has no filter, else up to the first `EI` between whitespace.
fn after_inline_image(content: &[u8], from: usize, dict: &[Token]) -> usize {
    let space = |mut i: usize| {
        while i < content.len() && b" \t\r\n".contains(&content[i]) {
            i += 1;
        }
        i
    };
    let data = space(from);
    // Key and value pairs, the last of a key winning, as lopdf builds the dictionary.
    let get = |short: &[u8], long: &[u8]| {
        let at = |key: &[u8]| {
            dict.chunks(2)
                .rev()
                .find(|pair| matches!(&pair[0], Token::Name(n) if n == key))
                .and_then(|pair| pair.get(1))
        };
        at(short).or_else(|| at(long))
    };
    let int = |short: &[u8], long: &[u8]| match get(short, long) {
        Some(Token::Number(Some(v))) => Some(*v as usize),
        _ => None,
    };
    let colours = || match get(b"IM", b"ImageMask") {
        Some(Token::Bool(true)) => Some(1usize),
        _ => match get(b"CS", b"ColorSpace") {
            Some(Token::Name(cs)) => match cs.as_slice() {
                b"DeviceGray" | b"Gray" => Some(1),
                b"DeviceRGB" | b"RGB" => Some(3),
                b"DeviceRGBA" | b"RGBA" | b"DeviceCMYK" | b"CMYK" => Some(4),
                _ => None,
            },
            _ => None,
        },
    };
    let length = (|| {
        let (w, h, bpc) = (
            int(b"W", b"Width")?,
            int(b"H", b"Height")?,
            int(b"BPC", b"BitsPerComponent")?,
        );
        let colours = colours()?;
        if get(b"F", b"Filter").is_some() {
            return None;
        }
        // lopdf's own arithmetic, as a release build does it.
        let stride = w.wrapping_mul(colours.wrapping_mul(bpc)).div_ceil(8);
        Some(h.wrapping_mul(stride))
    })();
    match length {
        Some(length) if length <= content.len() - data => data + length,
        _ => content[data..]
            .windows(4)
            .position(|w| b" \n\r".contains(&w[0]) && &w[1..3] == b"EI" && b" \n\r".contains(&w[3]))
            .map_or(content.len(), |p| data + p + 3),
    }
}

/// What `stream` inflates to through its filters, as lopdf decodes them, up to `cap + 1`
/// bytes; a filter lopdf does not decode leaves it as it stands.
fn inflated(stream: &Stream, cap: u64) -> Vec<u8> {
    let Ok(filters) = stream.filters() else {
        return stream.content.clone();
    };
    let mut data = stream.content.clone();
    for filter in filters {
        data = match filter {
            b"FlateDecode" => inflate(&data, cap),
            b"LZWDecode" => unlzw(&data, cap),
            // Five characters make four bytes: never more than it was, so lopdf decodes it.
            b"ASCII85Decode" => {
                let mut dict = pdf_extract::Dictionary::new();
                dict.set("Filter", Object::Name(b"ASCII85Decode".to_vec()));
                match Stream::new(dict, data.clone()).decompressed_content() {
                    Ok(decoded) => decoded,
                    Err(_) => return data,
                }
            }
            _ => return data,
        };
        if data.len() as u64 > cap {
            break;
        }
    }
    data
}

/// Zlib, as lopdf reads it (raw deflate after the header when the zlib stream is damaged),
/// up to `cap + 1` bytes.
fn inflate(input: &[u8], cap: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let zlib = flate2::read::ZlibDecoder::new(input)
        .take(cap + 1)
        .read_to_end(&mut out);
    if zlib.is_err() && input.len() > 2 {
        let mut raw = Vec::new();
        let _ = flate2::read::DeflateDecoder::new(&input[2..])
            .take(cap + 1)
            .read_to_end(&mut raw);
        if raw.len() > out.len() {
            return raw;
        }
    }
    out
}

/// LZW with PDF's early change, up to `cap + 1` bytes.
fn unlzw(input: &[u8], cap: u64) -> Vec<u8> {
    let mut out = Capped {
        bytes: Vec::new(),
        cap: cap + 1,
    };
    let mut decoder = weezl::decode::Decoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8);
    let _ = decoder.into_stream(&mut out).decode_all(input);
    out.bytes
}

/// A buffer that refuses to grow past `cap`.
struct Capped {
    bytes: Vec<u8>,
    cap: u64,
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.cap.saturating_sub(self.bytes.len() as u64) as usize;
        if room == 0 {
            return Err(std::io::Error::other("over the budget"));
        }
        let n = buf.len().min(room);
        self.bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pdf_extract::{Dictionary, Stream};

    fn zlib(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(bytes).expect("compress");
        e.finish().expect("finish")
    }

    fn size(stream: &Stream, cap: u64) -> u64 {
        inflated(stream, cap).len() as u64
    }

    fn stream(filter: Option<&str>, content: Vec<u8>) -> Stream {
        let mut dict = Dictionary::new();
        if let Some(f) = filter {
            dict.set("Filter", Object::Name(f.as_bytes().to_vec()));
        }
        Stream::new(dict, content)
    }

    #[test]
    fn a_stream_is_counted_as_it_inflates_and_no_further_than_the_cap() {
        let page = b"BT /F1 12 Tf (Hello) Tj ET\n".repeat(1000);
        assert_eq!(
            size(&stream(Some("FlateDecode"), zlib(&page)), 1 << 20),
            page.len() as u64
        );
        assert_eq!(size(&stream(None, page.clone()), 10), page.len() as u64);
        // 100 MB of operators from a few hundred KB: counted to the cap and no further.
        let bomb = zlib(&b"0 0 m\n".repeat(100 << 20 >> 3));
        assert!(bomb.len() < 1 << 20, "{}", bomb.len());
        let start = std::time::Instant::now();
        assert_eq!(
            size(&stream(Some("FlateDecode"), bomb), 1 << 20),
            (1 << 20) + 1
        );
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
        // LZW, as old PDFs have it.
        let mut lzw = Vec::new();
        weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8)
            .into_stream(&mut lzw)
            .encode_all(&page[..])
            .status
            .expect("lzw");
        assert_eq!(
            size(&stream(Some("LZWDecode"), lzw.clone()), 1 << 20),
            page.len() as u64
        );
        assert_eq!(size(&stream(Some("LZWDecode"), lzw), 100), 101);
    }

    /// Fuzz-style, against lopdf's own parser (what pdf-extract draws from): for random
    /// content made of the constructs that hide or spell a `Do` (strings with parentheses and
    /// escapes, hex strings, arrays, dictionaries, comments, inline images with and without a
    /// length, `#` escapes, operands glued to operators), every `Do` lopdf parses is counted,
    /// under its first operand's name, at least as often.
    #[test]
    fn draws_counts_every_do_lopdf_parses() {
        use pdf_extract::content::Content;
        let pieces: &[&[u8]] = &[
            b"/Fm0",
            b"/F#6d0",
            b"/Fm1",
            b"/Fm#31",
            b"Do",
            b"trueDo",
            b"nullDo",
            b"12Do",
            b"q",
            b"Q",
            b"(a string)",
            b"(a (nested) one)",
            b"(\\))",
            b"(\\(Do)",
            b"(",
            b")",
            b"<48656c6c6f>",
            b"<< /Fm0 1 >>",
            b"[/Fm0 1]",
            b"[",
            b"]",
            b"1",
            b"0.5",
            b"-3",
            b"%Do /Fm0\n",
            b"BI /W 2 /H 1 /BPC 8 /CS /DeviceGray ID ((",
            b"BI /W 4 /H 1 /BPC 8 /CS /G ID /Fm0 Do",
            b"BI /W 1 /H 1 /BPC 8 /CS /RGB ID ( )",
            b"EI",
            b"Tj",
            b"BT",
            b"ET",
            b"/Fm0 Do",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut seen = 0;
        for _ in 0..20_000 {
            let mut content = Vec::new();
            for _ in 0..1 + next(12) {
                content.extend(pieces[next(pieces.len())]);
                content.extend([&b" "[..], b"\n", b"", b"\r\n"][next(4)]);
            }
            let Ok(parsed) = Content::decode(&content) else {
                continue;
            };
            let ours: HashMap<Vec<u8>, u64> = draws(&content).into_iter().collect();
            let mut theirs: HashMap<Vec<u8>, u64> = HashMap::new();
            for op in parsed.operations.iter().filter(|o| o.operator == "Do") {
                if let Some(Ok(name)) = op.operands.first().map(Object::as_name) {
                    *theirs.entry(name.to_vec()).or_default() += 1;
                    seen += 1;
                }
            }
            for (name, times) in theirs {
                assert!(
                    ours.get(&name).copied().unwrap_or(0) >= times,
                    "{:?} drawn {times} times by lopdf, {:?} counted in {:?}",
                    String::from_utf8_lossy(&name),
                    ours.get(&name),
                    String::from_utf8_lossy(&content)
                );
            }
        }
        assert!(seen > 1000, "{seen}");
    }

    #[test]
    fn object_streams_are_counted_from_the_files_bytes() {
        let mut body = b"%PDF-1.5\n7 0 obj\n<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode >>\r\nstream\r\n".to_vec();
        body.extend(zlib(&b"1 0 << >> ".repeat(1000)));
        body.extend(b"\nendstream\nendobj\n");
        assert_eq!(object_stream_bytes(&body, 1 << 20), 10_000);
        let mut bomb =
            b"%PDF-1.5\n7 0 obj\n<</Type/ObjStm/N 1/First 4/Filter/FlateDecode>>stream\n".to_vec();
        bomb.extend(zlib(&vec![b' '; 300 << 20]));
        assert!(bomb.len() < 1 << 20);
        assert_eq!(object_stream_bytes(&bomb, 1 << 20), (1 << 20) + 1);
        assert!(matches!(
            super::super::extract_pdf(&bomb),
            Err(crate::engine::extract::ExtractError::Unparsable(e)) if e.contains("object streams")
        ));
        assert_eq!(object_stream_bytes(b"%PDF-1.4 no object streams", 10), 0);
    }
}
