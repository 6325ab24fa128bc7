//! What the line-at-a-time readers of reference files (BibTeX, RIS, MEDLINE) share: lines read
//! a bounded piece at a time and counted, a byte order mark dropped, and the items each line
//! finished given in file order, until the end or the first I/O error.

use std::collections::VecDeque;
use std::io::BufRead;

use super::Lines;
use super::entry::Item;

/// One format's reading of lines into items.
pub trait LineFormat {
    /// Line `number` (from 1; the first without its byte order mark), without its line end.
    fn line(&mut self, number: usize, line: &str);
    /// The file ended: what is still open is told.
    fn end(&mut self);
    /// The items finished so far, in file order.
    fn ready(&mut self) -> &mut VecDeque<Item>;
}

/// The items of a file in `F`'s format, in file order. An I/O error ends it.
pub struct LineReader<R, F> {
    lines: Lines<R>,
    number: usize,
    format: F,
    done: bool,
}

impl<R: BufRead, F: LineFormat> LineReader<R, F> {
    pub(super) fn with(reader: R, format: F) -> Self {
        Self {
            lines: Lines::new(reader),
            number: 0,
            format,
            done: false,
        }
    }
}

impl<R: BufRead, F: LineFormat> Iterator for LineReader<R, F> {
    type Item = std::io::Result<Item>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.format.ready().pop_front() {
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            match self.lines.next_line() {
                Ok(Some(line)) => {
                    self.number += 1;
                    let line = match self.number {
                        1 => line.strip_prefix('\u{feff}').unwrap_or(&line),
                        _ => &line,
                    };
                    self.format.line(self.number, line);
                }
                Ok(None) => {
                    self.done = true;
                    self.format.end();
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}
