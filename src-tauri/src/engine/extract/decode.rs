//! Character decoding: a byte-order mark, then the charset from the HTTP header, then the
//! page's own declaration, then sniffing; a declaration that valid UTF-8 text contradicts
//! loses to UTF-8. Invalid bytes become U+FFFD; nothing here panics.

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252};

/// Decodes an HTML body to a string. The charset comes from a byte-order mark, then the
/// HTTP header, then `<meta charset>` / `<meta http-equiv>`, then sniffing; a declared
/// charset other than UTF-8 gives way when the body is valid UTF-8 with non-ASCII text in
/// it. Invalid bytes become U+FFFD; this never panics.
pub fn decode_html(body: &[u8], content_type: Option<&str>) -> String {
    let declared = charset_from_content_type(content_type).or_else(|| meta_charset(body));
    decode_bytes(body, declared)
}

pub(super) fn decode_text(body: &[u8], content_type: Option<&str>) -> String {
    let declared = charset_from_content_type(content_type).or_else(|| xml_declared_encoding(body));
    decode_bytes(body, declared)
}

fn decode_bytes(body: &[u8], declared: Option<&'static Encoding>) -> String {
    // A BOM beats every declaration, as in browsers: it cannot be there by accident.
    if let Some((enc, bom_len)) = Encoding::for_bom(body) {
        return enc
            .decode_without_bom_handling(&body[bom_len..])
            .0
            .into_owned();
    }
    // Text really in a legacy charset is almost never valid UTF-8 once it has any non-ASCII
    // byte, and most undeclared pages today are UTF-8: a full check is cheaper and more
    // certain than statistics.
    let valid_utf8 = || std::str::from_utf8(body).is_ok();
    let enc = match declared {
        // A stale label: a page converted to UTF-8 that still says gb2312, a server that
        // calls everything ISO-8859-1.
        Some(enc) if enc != UTF_8 && !body.is_ascii() && valid_utf8() => UTF_8,
        Some(enc) => enc,
        None if valid_utf8() => UTF_8,
        None => detect_encoding(body),
    };
    enc.decode_without_bom_handling(body).0.into_owned()
}

/// The charset of a page that declares none and is not UTF-8, guessed from its bytes.
fn detect_encoding(body: &[u8]) -> &'static Encoding {
    let mut detector = EncodingDetector::new(Iso2022JpDetection::Deny);
    detector.feed(&detector_sample(body), true);
    detector.guess(None, Utf8Detection::Allow)
}

/// Bytes on either side of a non-ASCII byte that the detector sees with it.
const SAMPLE_CONTEXT: usize = 16;
/// Bounds the detector's cost on big pages.
const SAMPLE_MAX: usize = 64 * 1024;

/// What the detector reads: the text around the page's non-ASCII bytes, up to 64 KiB, with a
/// space where an ASCII run was left out. The detector learns from non-ASCII bytes and their
/// neighbours only, so markup and scripts before the first accent cost it nothing and do not
/// crowd the text out of its sample. Cuts fall inside ASCII runs only, so no multi-byte
/// character is split (a lead byte's trail, even in ASCII range, is within the context).
fn detector_sample(body: &[u8]) -> Vec<u8> {
    let mut sample = Vec::new();
    // Where the last window copied ended.
    let mut copied = 0;
    while sample.len() < SAMPLE_MAX {
        let Some(found) = body[copied..].iter().position(|b| !b.is_ascii()) else {
            break;
        };
        let hit = copied + found;
        let start = hit.saturating_sub(SAMPLE_CONTEXT).max(copied);
        // The window ends once SAMPLE_CONTEXT ASCII bytes follow its last non-ASCII byte.
        let mut end = hit + 1;
        let mut quiet = 0;
        while end < body.len() && quiet < SAMPLE_CONTEXT {
            quiet = if body[end].is_ascii() { quiet + 1 } else { 0 };
            end += 1;
        }
        if start > copied && !sample.is_empty() {
            sample.push(b' ');
        }
        let room = SAMPLE_MAX.saturating_sub(sample.len());
        sample.extend_from_slice(&body[start..end.min(start + room)]);
        copied = end;
    }
    sample
}

fn charset_from_content_type(content_type: Option<&str>) -> Option<&'static Encoding> {
    let ct = content_type?.to_ascii_lowercase();
    let label = attr_value_after(ct.as_bytes(), b"charset")?;
    Encoding::for_label(label)
}

/// A simplified version of the HTML "prescan" for a charset declaration in the
/// first few KiB of the page.
fn meta_charset(body: &[u8]) -> Option<&'static Encoding> {
    let head = body[..body.len().min(4096)].to_ascii_lowercase();
    let mut pos = 0;
    while let Some(found) = find(&head[pos..], b"<meta") {
        let start = pos + found + 5;
        let end = find(&head[start..], b">").map_or(head.len(), |e| start + e);
        if let Some(enc) =
            attr_value_after(&head[start..end], b"charset").and_then(Encoding::for_label)
        {
            // Per the HTML spec a page that parsed as ASCII-compatible cannot
            // really be UTF-16, and x-user-defined means windows-1252.
            return Some(if enc == UTF_16LE || enc == UTF_16BE {
                UTF_8
            } else if enc.name() == "x-user-defined" {
                WINDOWS_1252
            } else {
                enc
            });
        }
        pos = end;
    }
    None
}

fn xml_declared_encoding(body: &[u8]) -> Option<&'static Encoding> {
    let head = body[..body.len().min(512)].to_ascii_lowercase();
    let decl = head.strip_prefix(b"<?xml")?;
    let end = find(decl, b"?>")?;
    attr_value_after(&decl[..end], b"encoding").and_then(Encoding::for_label)
}

/// Finds `key` followed by optional spaces, `=`, and a quoted or bare value.
/// Works for both `charset="x"` attributes and `text/html; charset=x` headers.
fn attr_value_after<'a>(haystack: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut pos = 0;
    while let Some(found) = find(&haystack[pos..], key) {
        let mut i = pos + found + key.len();
        pos = i;
        while haystack.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        if haystack.get(i) != Some(&b'=') {
            continue;
        }
        i += 1;
        while haystack.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        let quote = haystack
            .get(i)
            .copied()
            .filter(|q| *q == b'"' || *q == b'\'');
        if quote.is_some() {
            i += 1;
        }
        let rest = &haystack[i.min(haystack.len())..];
        let len = rest
            .iter()
            .position(|&b| match quote {
                Some(q) => b == q,
                None => b.is_ascii_whitespace() || matches!(b, b';' | b'"' | b'\'' | b'>' | b'/'),
            })
            .unwrap_or(rest.len());
        if len > 0 {
            return Some(&rest[..len]);
        }
    }
    None
}

pub(super) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0); // `windows(0)` would panic
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undeclared_page_is_sniffed_from_its_text_however_much_markup_comes_first() {
        // 100 KiB of ASCII script, then Russian in windows-1251: the first 64 KiB hold no
        // evidence, and windows-1252 would turn the text into accented Latin.
        let mut body = b"<html><head><script>".to_vec();
        while body.len() < 100 * 1024 {
            body.extend_from_slice(b"var counter = counter + 1; // keeps the page busy\n");
        }
        body.extend_from_slice(b"</script></head><body><p>");
        let text = "Привет, мир! Это статья о реках и озёрах Сибири, их берегах и рыбах.";
        body.extend_from_slice(&encoding_rs::WINDOWS_1251.encode(text).0);
        body.extend_from_slice(b"</p></body></html>");
        let decoded = decode_html(&body, None);
        assert!(
            decoded.contains(text),
            "{}",
            &decoded[decoded.len() - 300..]
        );
    }

    #[test]
    fn a_declared_charset_that_valid_utf8_contradicts_gives_way_to_utf8() {
        let text = "谷歌在2014年收购的人工智能公司DeepMind开发出一款计算机。";
        let page = format!(
            "<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=gb2312\">\
             </head><body><p>{text}</p></body></html>"
        );
        assert!(decode_html(page.as_bytes(), None).contains(text));
        // The header's label gives way too: "Müller" served as ISO-8859-1 in UTF-8 bytes.
        let latin = "<p>Café Müller</p>".as_bytes();
        let decoded = decode_html(latin, Some("text/html; charset=ISO-8859-1"));
        assert_eq!(decoded, "<p>Café Müller</p>");
        // A page that really is in its declared charset keeps it.
        let gbk = encoding_rs::GBK.encode(&page).0;
        assert!(std::str::from_utf8(&gbk).is_err());
        assert!(decode_html(&gbk, None).contains(text));
        let cp1252 = b"<meta charset=windows-1252><p>caf\xE9 cr\xE8me</p>";
        assert!(decode_html(cp1252, None).ends_with("<p>café crème</p>"));
        // Plain ASCII under any label decodes the same; a feed's declaration is judged alike.
        assert_eq!(
            decode_html(b"<p>plain</p>", Some("text/html; charset=shift_jis")),
            "<p>plain</p>"
        );
        let feed = "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><title>Zoë</title>";
        assert!(decode_text(feed.as_bytes(), None).ends_with("<title>Zoë</title>"));
    }

    #[test]
    fn the_detector_sees_every_non_ascii_byte_with_its_neighbours() {
        let mut body = vec![b'a'; 1000];
        body.extend_from_slice(b"caf\xe9 ");
        body.extend(std::iter::repeat_n(b'b', 1000));
        body.extend_from_slice(b"\x82\xa0\x82\xa2");
        let sample = detector_sample(&body);
        let first = &body[1003 - SAMPLE_CONTEXT..1004 + SAMPLE_CONTEXT];
        assert!(sample.starts_with(first), "{sample:?}");
        assert!(sample.ends_with(&body[body.len() - 4 - SAMPLE_CONTEXT..]));
        assert_eq!(sample.len(), first.len() + 1 + SAMPLE_CONTEXT + 4);
        assert!(detector_sample(&[b'x'; 10]).is_empty());
        // A page of accents fills the sample and no more.
        assert_eq!(detector_sample(&[0xE9; 100_000]).len(), SAMPLE_MAX);
    }
}
