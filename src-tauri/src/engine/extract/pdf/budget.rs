//! How much a PDF's pages would have the reader parse, measured before it parses them. A page's
//! content stands compressed in the file; pdf-extract inflates it and parses it whole into
//! operations, about a hundred bytes of memory for each byte of it. A 44 KB PDF whose one page
//! inflated to 30 MB of drawing operators took 3.2 GB and 23 s, and a 1 MB one would have
//! taken the machine's memory. So each stream is inflated here into a counter that stops at
//! the budget, and a page over it is not read.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};

use pdf_extract::{Document, Object, ObjectId, Stream};

use super::super::decode::find;

/// The most content (operators, its forms' included) one page may inflate to: a page of text
/// is tens of KB, a dense vector drawing a few MB.
pub(super) const PAGE_BYTES: u64 = 4 << 20;
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

/// What a page costs to read, as [`Budget::page`] measures it.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum PageCost {
    /// Its content and the forms it draws that no page before drew, in bytes.
    Fits(u64),
    /// Its content, or a form it draws, inflates past [`PAGE_BYTES`].
    TooBig,
}

/// The document's running count: what its pages read so far inflate to, each form once.
#[derive(Default)]
pub(super) struct Budget {
    forms: HashMap<ObjectId, u64>,
    pub total: u64,
}

impl Budget {
    /// Measures `page`: its content streams, and the form XObjects its content draws (`/Name
    /// Do`), looked up in its resources. A form many pages draw counts once, and one that a
    /// shared resource dictionary names but the page does not draw counts not at all.
    pub(super) fn page(&mut self, pdf: &Document, page: ObjectId) -> PageCost {
        let mut content = Vec::new();
        for id in pdf.get_page_contents(page) {
            if let Ok(Object::Stream(stream)) = pdf.get_object(id) {
                let room = PAGE_BYTES.saturating_sub(content.len() as u64);
                content.extend(inflated(stream, room));
            }
            if content.len() as u64 > PAGE_BYTES {
                return PageCost::TooBig;
            }
        }
        let mut cost = content.len() as u64;
        let drawn = drawn_names(&content);
        for (id, stream) in forms(pdf, page, &drawn) {
            let size = match self.forms.get(&id) {
                Some(size) => *size,
                None => {
                    let size = inflated(stream, PAGE_BYTES).len() as u64;
                    self.forms.insert(id, size);
                    cost += size;
                    size
                }
            };
            if size > PAGE_BYTES {
                return PageCost::TooBig;
            }
        }
        self.total += cost;
        PageCost::Fits(cost)
    }
}

/// The names a content stream draws with `Do` (`/Fm1 Do`).
fn drawn_names(content: &[u8]) -> HashSet<Vec<u8>> {
    let mut names = HashSet::new();
    let mut last_name: Option<&[u8]> = None;
    for token in content
        .split(|b| b.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
    {
        if token == b"Do" {
            if let Some(name) = last_name.take() {
                names.insert(name.to_vec());
            }
        } else {
            last_name = token.strip_prefix(b"/");
        }
    }
    names
}

/// The form XObjects named `drawn` in a page's resources (its own and those it inherits),
/// each with its object id (a direct one gets the page's).
fn forms<'a>(
    pdf: &'a Document,
    page: ObjectId,
    drawn: &HashSet<Vec<u8>>,
) -> Vec<(ObjectId, &'a Stream)> {
    if drawn.is_empty() {
        return Vec::new();
    }
    let Ok((own, inherited)) = pdf.get_page_resources(page) else {
        return Vec::new();
    };
    let dicts = own.into_iter().chain(
        inherited
            .iter()
            .filter_map(|id| pdf.get_dictionary(*id).ok()),
    );
    let mut out = Vec::new();
    for resources in dicts {
        let Ok(xobjects) = resources
            .get(b"XObject")
            .and_then(|o| pdf.dereference(o))
            .and_then(|(_, o)| o.as_dict())
        else {
            continue;
        };
        for (name, value) in xobjects.iter() {
            if !drawn.contains(name) {
                continue;
            }
            if let Ok((id, Object::Stream(stream))) = pdf.dereference(value)
                && stream
                    .dict
                    .get(b"Subtype")
                    .and_then(Object::as_name)
                    .is_ok_and(|s| s == b"Form")
            {
                out.push((id.unwrap_or(page), stream));
            }
        }
    }
    out
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
