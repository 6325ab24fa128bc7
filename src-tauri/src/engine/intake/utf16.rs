//! A file saved as UTF-16 (what Windows Notepad calls "Unicode"), read as the UTF-8 every
//! reader of intake takes. Only a file that starts with UTF-16's byte order mark is taken for
//! one: without it, its NULs make it binary.

use std::io::Read;

use encoding_rs::{Decoder, Encoding, UTF_16BE, UTF_16LE};

/// How much of the file is decoded at a time.
const PIECE: usize = 16 * 1024;

/// UTF-16's encoding named by the byte order mark `head` starts with.
pub(super) fn by_its_mark(head: &[u8]) -> Option<&'static Encoding> {
    match head {
        [0xFF, 0xFE, ..] => Some(UTF_16LE),
        [0xFE, 0xFF, ..] => Some(UTF_16BE),
        _ => None,
    }
}

/// `inner`'s UTF-16, without its byte order mark, as UTF-8; a lone surrogate becomes U+FFFD.
pub(super) struct Utf8Of<R> {
    inner: R,
    decoder: Decoder,
    decoded: Vec<u8>,
    given: usize,
    ended: bool,
}

impl<R: Read> Utf8Of<R> {
    pub(super) fn new(encoding: &'static Encoding, inner: R) -> Self {
        Self {
            inner,
            decoder: encoding.new_decoder_with_bom_removal(),
            decoded: Vec::new(),
            given: 0,
            ended: false,
        }
    }
}

impl<R: Read> Read for Utf8Of<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if self.given < self.decoded.len() {
                let n = out.len().min(self.decoded.len() - self.given);
                out[..n].copy_from_slice(&self.decoded[self.given..self.given + n]);
                self.given += n;
                return Ok(n);
            }
            if self.ended {
                return Ok(0);
            }
            let mut piece = [0u8; PIECE];
            let n = match self.inner.read(&mut piece) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.ended = n == 0;
            let room = self.decoder.max_utf8_buffer_length(n).unwrap_or(n * 3 + 16);
            let mut text = String::with_capacity(room);
            // With that room the decoder takes the whole piece (an odd byte it keeps for the
            // next one).
            let _ = self
                .decoder
                .decode_to_string(&piece[..n], &mut text, self.ended);
            self.decoded = text.into_bytes();
            self.given = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16le(text: &str) -> Vec<u8> {
        let mut bytes = vec![0xFF, 0xFE];
        bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        bytes
    }

    #[test]
    fn utf16_with_its_mark_reads_as_utf8_across_pieces() {
        let text = "https://example.org/é\r\n".repeat(3_000);
        let bytes = utf16le(&text);
        assert_eq!(by_its_mark(&bytes), Some(UTF_16LE));
        let mut out = String::new();
        // One byte at a time from the file: a code unit cut in two still decodes.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(out.len()).min(1);
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        Utf8Of::new(UTF_16LE, Trickle(&bytes))
            .read_to_string(&mut out)
            .expect("utf-8");
        assert_eq!(out, text);
        let mut be = vec![0xFE, 0xFF];
        be.extend("a→b".encode_utf16().flat_map(u16::to_be_bytes));
        let mut out = String::new();
        Utf8Of::new(by_its_mark(&be).expect("mark"), &be[..])
            .read_to_string(&mut out)
            .expect("utf-8");
        assert_eq!(out, "a→b");
        assert_eq!(by_its_mark(b"https://"), None);
    }
}
