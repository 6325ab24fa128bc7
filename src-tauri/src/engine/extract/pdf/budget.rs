//! How much a PDF's pages would have the reader parse, measured before it parses them. A page's
//! content stands compressed in the file; pdf-extract inflates it and parses it whole into
//! operations, about a hundred bytes of memory for each byte of it. A 44 KB PDF whose one page
//! inflated to 30 MB of drawing operators took 3.2 GB and 23 s, and a 1 MB one would have
//! taken the machine's memory. So each stream is inflated here into a counter that stops at
//! the budget, and a page over it is not read.

use std::io::{Read, Write};

use pdf_extract::{Document, Object, ObjectId, Stream};

/// The most content (operators, its forms' included) one page may inflate to: a page of text
/// is tens of KB, a dense vector drawing a few MB.
pub(super) const PAGE_BYTES: u64 = 4 << 20;
/// The most all pages together may inflate to.
pub(super) const DOCUMENT_BYTES: u64 = 64 << 20;

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

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// What a page's content inflates to, at most `cap + 1` (so more than `cap` means too much):
/// its content streams and the form XObjects its resources name.
pub(super) fn page_bytes(pdf: &Document, page: ObjectId, cap: u64) -> u64 {
    let mut total = 0u64;
    for id in pdf.get_page_contents(page) {
        if let Ok(Object::Stream(stream)) = pdf.get_object(id) {
            total += inflated(stream, cap.saturating_sub(total));
        }
        if total > cap {
            return total;
        }
    }
    for stream in forms(pdf, page) {
        total += inflated(stream, cap.saturating_sub(total));
        if total > cap {
            return total;
        }
    }
    total
}

/// The form XObjects in a page's resources (its own and those it inherits).
fn forms(pdf: &Document, page: ObjectId) -> Vec<&Stream> {
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
        for (_, value) in xobjects.iter() {
            if let Ok((_, Object::Stream(stream))) = pdf.dereference(value)
                && stream
                    .dict
                    .get(b"Subtype")
                    .and_then(Object::as_name)
                    .is_ok_and(|s| s == b"Form")
            {
                out.push(stream);
            }
        }
    }
    out
}

/// The size `stream` inflates to through its filters, as lopdf decodes them, counted up to
/// `cap + 1`; a filter lopdf does not decode counts the stream as it stands.
fn inflated(stream: &Stream, cap: u64) -> u64 {
    let Ok(filters) = stream.filters() else {
        return stream.content.len() as u64;
    };
    let mut data: std::borrow::Cow<'_, [u8]> = (&stream.content[..]).into();
    for filter in filters {
        let next = match filter {
            b"FlateDecode" => inflate(&data, cap),
            b"LZWDecode" => unlzw(&data, cap),
            // Five characters make four bytes: never more than it was, so lopdf decodes it.
            b"ASCII85Decode" => {
                let mut dict = pdf_extract::Dictionary::new();
                dict.set("Filter", Object::Name(b"ASCII85Decode".to_vec()));
                match Stream::new(dict, data.to_vec()).decompressed_content() {
                    Ok(decoded) => decoded,
                    Err(_) => return data.len() as u64,
                }
            }
            _ => return data.len() as u64,
        };
        data = next.into();
        if data.len() as u64 > cap {
            break;
        }
    }
    data.len() as u64
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
            inflated(&stream(Some("FlateDecode"), zlib(&page)), 1 << 20),
            page.len() as u64
        );
        assert_eq!(inflated(&stream(None, page.clone()), 10), page.len() as u64);
        // 100 MB of operators from a few hundred KB: counted to the cap and no further.
        let bomb = zlib(&b"0 0 m\n".repeat(100 << 20 >> 3));
        assert!(bomb.len() < 1 << 20, "{}", bomb.len());
        let start = std::time::Instant::now();
        assert_eq!(
            inflated(&stream(Some("FlateDecode"), bomb), 1 << 20),
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
            inflated(&stream(Some("LZWDecode"), lzw.clone()), 1 << 20),
            page.len() as u64
        );
        assert_eq!(inflated(&stream(Some("LZWDecode"), lzw), 100), 101);
    }

    #[test]
    fn object_streams_are_counted_from_the_files_bytes() {
        let mut body = b"%PDF-1.5\n7 0 obj\n<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode >>\r\nstream\r\n".to_vec();
        body.extend(zlib(&b"1 0 << >> ".repeat(1000)));
        body.extend(b"\nendstream\nendobj\n");
        assert_eq!(object_stream_bytes(&body, 1 << 20), 10_000);
        let mut bomb =
            b"%PDF-1.5\n7 0 obj\n<</Type/ObjStm/N 1/First 4/Filter/FlateDecode>>stream\n".to_vec();
        bomb.extend(zlib(&vec![b' '; 100 << 20]));
        assert!(bomb.len() < 1 << 20);
        assert_eq!(object_stream_bytes(&bomb, 1 << 20), (1 << 20) + 1);
        assert!(matches!(
            super::super::extract_pdf(&bomb),
            Err(crate::engine::extract::ExtractError::Unparsable(e)) if e.contains("object streams")
        ));
        assert_eq!(object_stream_bytes(b"%PDF-1.4 no object streams", 10), 0);
    }
}
