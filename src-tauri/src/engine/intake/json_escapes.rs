//! JSON as JavaScript writes it: `JSON.stringify` escapes a UTF-16 surrogate it finds alone
//! (`"\ud83d"`, an emoji cut in half by a title's truncation), which serde_json refuses as
//! invalid Unicode, ending the whole file at that item. Zotero's CSL-JSON and Firefox's
//! bookmark backups are written by JavaScript; such an escape is read as U+FFFD.

use std::io::{BufRead, Read};

/// What replaces a lone surrogate's escape.
const REPLACEMENT: &[u8] = b"\\uFFFD";

/// `inner` with every `\uD800`–`\uDFFF` escape that is not half of a pair rewritten as
/// `\uFFFD`, a piece at a time.
pub struct LoneSurrogates<R> {
    inner: R,
    /// Rewritten bytes not yet given out, from `at`.
    out: Vec<u8>,
    at: usize,
    /// The start of an escape that the piece read so far ends in the middle of.
    carry: Vec<u8>,
    eof: bool,
}

impl<R: BufRead> LoneSurrogates<R> {
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            out: Vec::new(),
            at: 0,
            carry: Vec::new(),
            eof: false,
        }
    }

    /// Read the next piece of `inner` and rewrite it into `out`.
    fn refill(&mut self) -> std::io::Result<()> {
        self.out.clear();
        self.at = 0;
        let mut piece = std::mem::take(&mut self.carry);
        let read = loop {
            match self.inner.fill_buf() {
                Ok(bytes) => break bytes,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        self.eof = read.is_empty();
        piece.extend_from_slice(read);
        let n = read.len();
        self.inner.consume(n);
        let done = rewrite(&piece, self.eof, &mut self.out);
        self.carry = piece[done..].to_vec();
        Ok(())
    }
}

impl<R: BufRead> Read for LoneSurrogates<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.out.len() {
            if self.eof && self.carry.is_empty() {
                return Ok(0);
            }
            self.refill()?;
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The code unit of the `\uXXXX` escape at the start of `bytes`.
fn escape_at(bytes: &[u8]) -> Option<u16> {
    let hex = bytes.strip_prefix(b"\\u")?.get(..4)?;
    u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
}

/// Rewrite `bytes` into `out`; how many were taken (the rest is an escape cut off by the
/// piece's end, unless `last`).
fn rewrite(bytes: &[u8], last: bool, out: &mut Vec<u8>) -> usize {
    let mut i = 0;
    while i < bytes.len() {
        let Some(slash) = bytes[i..].iter().position(|&b| b == b'\\') else {
            out.extend_from_slice(&bytes[i..]);
            return bytes.len();
        };
        out.extend_from_slice(&bytes[i..i + slash]);
        i += slash;
        let rest = &bytes[i..];
        // `\uXXXX\uXXXX` is the longest escape a decision needs.
        if !last && rest.len() < 12 && (rest.len() < 2 || rest[1] == b'u') {
            return i;
        }
        match (rest.get(1), escape_at(rest)) {
            (Some(b'u'), Some(unit @ 0xD800..=0xDBFF)) => {
                if escape_at(&rest[6..]).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low)) {
                    out.extend_from_slice(&rest[..12]);
                    i += 12;
                } else {
                    tracing::debug!(unit, "a lone surrogate's escape read as U+FFFD");
                    out.extend_from_slice(REPLACEMENT);
                    i += 6;
                }
            }
            (Some(b'u'), Some(0xDC00..=0xDFFF)) => {
                out.extend_from_slice(REPLACEMENT);
                i += 6;
            }
            // Any other escape (`\\`, `\"`, `\u00e9`), or a broken one serde will name.
            (Some(_), _) => {
                let n = if rest[1] == b'u' && escape_at(rest).is_some() {
                    6
                } else {
                    2
                };
                out.extend_from_slice(&rest[..n]);
                i += n;
            }
            (None, _) => {
                out.push(b'\\');
                i += 1;
            }
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(text: &str, piece: usize) -> String {
        let reader = std::io::BufReader::with_capacity(piece, text.as_bytes());
        let mut out = String::new();
        LoneSurrogates::new(reader)
            .read_to_string(&mut out)
            .expect("read");
        out
    }

    #[test]
    fn a_lone_surrogate_escape_becomes_the_replacement_and_pairs_stay() {
        let text = r#"["cut \ud83d", "pair \ud83d\ude00", "low \ude00 x", "\\ud83d", "\u00e9\ud83d\u0041", "\ud83d\""]"#;
        let want = r#"["cut \uFFFD", "pair \ud83d\ude00", "low \uFFFD x", "\\ud83d", "\u00e9\uFFFD\u0041", "\uFFFD\""]"#;
        // Any piece size: an escape cut by a piece's end is decided once the rest is read.
        for piece in [1, 2, 3, 5, 7, 11, 13, 64, 4096] {
            assert_eq!(through(text, piece), want, "pieces of {piece}");
        }
        let values: Vec<String> = serde_json::from_str(want).expect("valid");
        assert_eq!(values[0], "cut \u{fffd}");
        assert_eq!(values[1], "pair \u{1f600}");
        // A backslash at the very end is left for serde to name.
        assert_eq!(through("\"a\\", 2), "\"a\\");
    }
}
