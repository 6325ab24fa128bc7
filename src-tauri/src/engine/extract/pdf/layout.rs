//! Words and lines built from glyph positions, and the page's reading order: columns found by
//! the empty gutter between them and read one after the other, full-width blocks (a title, an
//! abstract, a wide figure caption) read at their place above or below them. See
//! docs/ARCHITECTURE.md, "PDF text".

use std::collections::HashMap;
use std::ops::Range;

use super::glyphs::{Direction, Glyph, PageGlyphs};

/// Baselines closer than this many font sizes are one row (superscripts and subscripts included).
const ROW_TOLERANCE: f64 = 0.45;
/// A horizontal gap wider than this many font sizes separates two words.
const WORD_GAP: f64 = 0.15;
/// A gutter is at least this many font sizes wide (LaTeX's is 10 pt beside 10–12 pt text)...
const MIN_GUTTER: f64 = 0.6;
/// ...or this wide when only two lines show it, as two lines can share a wide word space.
const MIN_GUTTER_TWO_LINES: f64 = 2.0;
/// The next column's left edge moves left by less than this many font sizes from line to line
/// (a first-line indent), or the line is not in that column.
const COLUMN_EDGE_SLACK: f64 = 2.0;
/// A column is at least this many font sizes wide, so a column of labels or bullets is not one.
const MIN_COLUMN: f64 = 4.0;
/// Columns are searched for inside columns this many times (a table inside a column).
const MAX_DEPTH: u8 = 2;
/// A band whose usual size is smaller than a run's by more than this part of it (a figure's
/// tick labels beside 10 pt text) does not join the run.
const RUN_SMALLER: f64 = 0.12;
/// A band further than this many of a run's line steps above or below it (the white space
/// around a figure) does not join the run.
const RUN_GAP: f64 = 2.0;

/// One line of text in reading order, with what paragraph joining needs to know about it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Line {
    pub text: String,
    pub x0: f64,
    pub x1: f64,
    /// The baseline, growing downwards.
    pub y: f64,
    /// The size most of the line's characters have.
    pub size: f64,
    /// Width of the line's first word: would it have fitted at the end of the line above?
    pub first_word: f64,
    /// The widest gap between two words (an equation and its number, table cells).
    pub widest_gap: f64,
    /// Lines of one block share a column, a font size and a line spacing; unique per page.
    pub block: u32,
    /// The block's left edge and right edge (where most of its lines end).
    pub left: f64,
    pub right: f64,
    /// Extra vertical space or a change of size separates this line from the one above it.
    pub gap_before: bool,
}

/// A page's lines in reading order, and the lines drawn in another direction (margin stamps,
/// rotated labels), which have no place in that order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct PageLines {
    pub lines: Vec<Line>,
    pub aside: Vec<Line>,
}

#[derive(Debug, Clone)]
struct Word {
    text: String,
    x0: f64,
    x1: f64,
    y: f64,
    size: f64,
}

/// Lays out one page: the direction most glyphs run in gives the reading order; lines of other
/// directions are set aside.
pub(super) fn lay_out(page: &PageGlyphs) -> PageLines {
    let mut by_dir: HashMap<Direction, Vec<&Glyph>> = HashMap::new();
    for g in &page.glyphs {
        by_dir.entry(g.dir).or_default().push(g);
    }
    let mut groups: Vec<(Direction, Vec<&Glyph>)> = by_dir.into_iter().collect();
    // Most glyphs first; ties broken by direction so the result does not depend on hashing.
    groups.sort_by_key(|(dir, glyphs)| (std::cmp::Reverse(glyphs.len()), *dir as u8));
    let mut out = PageLines::default();
    let mut next_block = 0;
    for (i, (_, glyphs)) in groups.into_iter().enumerate() {
        let words = words(page, glyphs);
        let ids = (0..words.len()).collect();
        let lines = if i == 0 {
            &mut out.lines
        } else {
            &mut out.aside
        };
        order(&words, ids, 0, lines, &mut next_block);
    }
    out
}

/// Groups items sorted by baseline into rows: `key` gives (baseline, size).
fn rows<T>(items: &[T], key: impl Fn(&T) -> (f64, f64)) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut anchor = (0.0, 0.0);
    for (i, item) in items.iter().enumerate() {
        let (y, size) = key(item);
        if i == 0 {
            anchor = (y, size);
        } else if (y - anchor.0).abs() <= ROW_TOLERANCE * anchor.1.max(size) {
            // The row's baseline is its biggest glyph's: a superscript must not move it.
            if size > anchor.1 {
                anchor = (y, size);
            }
        } else {
            out.push(start..i);
            start = i;
            anchor = (y, size);
        }
    }
    if start < items.len() {
        out.push(start..items.len());
    }
    out
}

/// Words from glyphs: rows by baseline, then runs of glyphs without a space-wide gap.
fn words(page: &PageGlyphs, mut glyphs: Vec<&Glyph>) -> Vec<Word> {
    glyphs.sort_by(|a, b| a.y.total_cmp(&b.y).then(a.x0.total_cmp(&b.x0)));
    let mut out = Vec::new();
    for range in rows(&glyphs, |g| (g.y, g.size)) {
        let row = &mut glyphs[range];
        row.sort_by(|a, b| a.x0.total_cmp(&b.x0));
        let mut word: Option<(Word, f64)> = None; // and the end of its last glyph
        let mut last: Option<&Glyph> = None;
        for &g in row.iter() {
            let text = page.text_of(g);
            // Bold faked by drawing a glyph twice, a hair apart.
            if let Some(prev) = last
                && page.text_of(prev) == text
                && (g.x0 - prev.x0).abs() < 0.15 * g.size
                && (g.y - prev.y).abs() < 0.1 * g.size
            {
                continue;
            }
            last = Some(g);
            match &mut word {
                Some((w, end))
                    if !g.space_before && g.x0 - *end <= WORD_GAP * w.size.max(g.size) =>
                {
                    w.text.push_str(text);
                    w.x1 = w.x1.max(g.x1);
                    w.x0 = w.x0.min(g.x0);
                    if g.size > w.size {
                        (w.size, w.y) = (g.size, g.y);
                    }
                    *end = end.max(g.x1);
                }
                _ => {
                    if let Some((w, _)) = word.take() {
                        out.push(w);
                    }
                    let w = Word {
                        text: text.to_string(),
                        x0: g.x0,
                        x1: g.x1,
                        y: g.y,
                        size: g.size,
                    };
                    word = Some((w, g.x1));
                }
            }
        }
        if let Some((w, _)) = word {
            out.push(w);
        }
    }
    out
}

/// The lower median of `values` (0 when empty): of two line steps, the usual one is the smaller.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values
        .get(values.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0.0)
}

/// Horizontal whitespace of a band of words: the parts of `span` no word covers, at least `min`
/// wide.
fn gaps(words: &[Word], ids: &[usize], span: (f64, f64), min: f64) -> Vec<(f64, f64)> {
    let mut covered: Vec<(f64, f64)> = ids.iter().map(|&i| (words[i].x0, words[i].x1)).collect();
    covered.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = Vec::new();
    let mut reach = span.0;
    for (x0, x1) in covered {
        if x0 - reach >= min {
            out.push((reach, x0));
        }
        reach = reach.max(x1);
    }
    if span.1 - reach >= min {
        out.push((reach, span.1));
    }
    out
}

/// The parts of a run's gutters that a band's gaps keep, at least `min` wide. A gutter whose
/// right side a band's text enters by more than `slack` is not kept: that text is not set in
/// the column beside the gutter (a centred line over two blocks side by side).
fn intersect(gutters: &[(f64, f64)], band: &[(f64, f64)], min: f64, slack: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for &(a0, a1) in gutters {
        for &(b0, b1) in band {
            let (lo, hi) = (a0.max(b0), a1.min(b1));
            if hi - lo >= min && hi >= a1 - slack {
                out.push((lo, hi));
            }
        }
    }
    out
}

/// The horizontal extent of the words in each column between `gutters` (empty: +inf, -inf).
fn extents(words: &[Word], ids: &[usize], gutters: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = vec![(f64::INFINITY, f64::NEG_INFINITY); gutters.len() + 1];
    for &i in ids {
        let mid = (words[i].x0 + words[i].x1) / 2.0;
        let e = &mut out[gutters
            .iter()
            .take_while(|g| mid > (g.0 + g.1) / 2.0)
            .count()];
        *e = (e.0.min(words[i].x0), e.1.max(words[i].x1));
    }
    out
}

/// Whether a band's text in each column (`has`) lies mostly where the run has text in that
/// column already (`had`; at least half of the narrower of the two): a line of a column shares
/// its margin with the column, a centred line over two blocks side by side does not.
fn fits(had: &[(f64, f64)], has: &[(f64, f64)]) -> bool {
    had.iter().zip(has).all(|(r, b)| {
        let overlap = r.1.min(b.1) - r.0.max(b.0);
        b.0 > b.1 || r.0 > r.1 || overlap >= 0.5 * (r.1 - r.0).min(b.1 - b.0)
    })
}

/// Bands sharing a gutter: the bands (indices, in any order), their words, the gutters they
/// all leave free and the extent of their text in each column between those gutters.
struct Run {
    bands: Vec<usize>,
    words: Vec<usize>,
    gutters: Vec<(f64, f64)>,
    extents: Vec<(f64, f64)>,
    /// The usual size of the band that started it.
    size: f64,
    /// Its highest and lowest baselines, and the steps between its bands' baselines as they
    /// joined (the first few).
    top: f64,
    bottom: f64,
    steps: Vec<f64>,
}

/// A band's lowest and highest baselines (y grows down the page) and its usual size.
fn band_shape(words: &[Word], ids: &[usize]) -> (f64, f64, f64) {
    let (top, bottom) = ids
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(t, b), &i| {
            (t.min(words[i].y), b.max(words[i].y))
        });
    (
        top,
        bottom,
        median(ids.iter().map(|&i| words[i].size).collect()),
    )
}

impl Run {
    fn new(
        words: &[Word],
        band: usize,
        ids: &[usize],
        shape: (f64, f64, f64),
        gutters: Vec<(f64, f64)>,
    ) -> Run {
        let (top, bottom, size) = shape;
        Run {
            bands: vec![band],
            words: ids.to_vec(),
            extents: extents(words, ids, &gutters),
            gutters,
            size,
            top,
            bottom,
            steps: Vec::new(),
        }
    }

    /// Adds a band whose gaps leave `gutters` free, if its text fits the run's columns, is
    /// not set smaller than the run and is not set apart from it by white space: a figure
    /// across both columns (its tick labels leave the gutter free too) is not read as the
    /// columns' last lines.
    fn add(
        &mut self,
        words: &[Word],
        band: usize,
        ids: &[usize],
        shape: (f64, f64, f64),
        gutters: Vec<(f64, f64)>,
    ) -> bool {
        let (top, bottom, size) = shape;
        let step = if top >= self.bottom {
            top - self.bottom
        } else if bottom <= self.top {
            self.top - bottom
        } else {
            0.0
        };
        let leading = if self.steps.is_empty() {
            1.2 * self.size
        } else {
            median(self.steps.clone()).max(self.size)
        };
        if size < (1.0 - RUN_SMALLER) * self.size || step > RUN_GAP * leading {
            return false;
        }
        // Gutters only narrow inside the old ones, so the words keep their columns and the
        // extents can be carried over; otherwise they are counted again.
        let nested = gutters.len() == self.gutters.len()
            && gutters
                .iter()
                .zip(&self.gutters)
                .all(|(n, o)| n.0 >= o.0 && n.1 <= o.1);
        let had = if nested {
            self.extents.clone()
        } else {
            extents(words, &self.words, &gutters)
        };
        let has = extents(words, ids, &gutters);
        if !fits(&had, &has) {
            return false;
        }
        self.extents = had
            .iter()
            .zip(&has)
            .map(|(r, b)| (r.0.min(b.0), r.1.max(b.1)))
            .collect();
        self.gutters = gutters;
        self.bands.push(band);
        self.words.extend_from_slice(ids);
        if step > 0.0 && self.steps.len() < 16 {
            self.steps.push(step);
        }
        self.top = self.top.min(top);
        self.bottom = self.bottom.max(bottom);
        true
    }
}

/// How many distinct baselines the words have.
fn baselines(words: &[Word], ids: &[usize], em: f64) -> usize {
    let mut ys: Vec<f64> = ids.iter().map(|&i| words[i].y).collect();
    ys.sort_by(f64::total_cmp);
    1 + ys.windows(2).filter(|w| w[1] - w[0] > 0.5 * em).count()
}

/// The x positions where a run of bands splits into columns, if it is really set in columns:
/// two baselines or more, text on both sides of each gutter, every column wide enough.
fn column_splits(words: &[Word], ids: &[usize], gutters: &[(f64, f64)], em: f64) -> Vec<f64> {
    let lines = if ids.is_empty() {
        0
    } else {
        baselines(words, ids, em)
    };
    let min = match lines {
        0 | 1 => return Vec::new(),
        2 => MIN_GUTTER_TWO_LINES * em,
        _ => MIN_GUTTER * em,
    };
    let mut cuts: Vec<(f64, f64)> = gutters
        .iter()
        .filter(|g| g.1 - g.0 >= min)
        .copied()
        .collect();
    cuts.sort_by(|a, b| a.0.total_cmp(&b.0));
    loop {
        // The extent of each column between consecutive cuts.
        let mut extents = vec![(f64::INFINITY, f64::NEG_INFINITY); cuts.len() + 1];
        for &i in ids {
            let mid = (words[i].x0 + words[i].x1) / 2.0;
            let col = cuts.iter().take_while(|c| mid > c.1).count();
            let e = &mut extents[col];
            *e = (e.0.min(words[i].x0), e.1.max(words[i].x1));
        }
        let narrow = extents
            .iter()
            // An empty column's extent is (+inf, -inf): narrower than any.
            .position(|&(x0, x1)| x1 - x0 < MIN_COLUMN * em);
        match narrow {
            None => return cuts.iter().map(|c| (c.0 + c.1) / 2.0).collect(),
            Some(_) if cuts.is_empty() => return Vec::new(),
            Some(col) => {
                // Merge the narrow column into a neighbour by dropping the narrower cut beside it.
                let width = |k: usize| cuts.get(k).map_or(f64::INFINITY, |c| c.1 - c.0);
                let drop = if col == 0 {
                    0
                } else if col == cuts.len() || width(col - 1) <= width(col) {
                    col - 1
                } else {
                    col
                };
                cuts.remove(drop);
            }
        }
    }
}

/// Reads a region of words: bands (words overlapping vertically) from top to bottom; runs of
/// bands that share a gutter are read column by column, the other bands as they come.
fn order(words: &[Word], mut ids: Vec<usize>, depth: u8, out: &mut Vec<Line>, block: &mut u32) {
    if ids.is_empty() {
        return;
    }
    let em = median(ids.iter().map(|&i| words[i].size).collect()).max(1.0);
    if depth >= MAX_DEPTH {
        emit(words, ids, out, block);
        return;
    }
    let span = ids
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |s, &i| {
            (s.0.min(words[i].x0), s.1.max(words[i].x1))
        });
    let min_gutter = MIN_GUTTER * em;
    let slack = COLUMN_EDGE_SLACK * em;

    // Bands: the x-height parts of words that overlap vertically. Two columns whose baselines
    // do not line up chain into one band, which still shows their gutter.
    let top = |w: &Word| w.y - 0.6 * w.size;
    ids.sort_by(|&a, &b| top(&words[a]).total_cmp(&top(&words[b])));
    let mut bands: Vec<Vec<usize>> = Vec::new();
    let mut bottom = f64::NEG_INFINITY;
    for &i in &ids {
        let w = &words[i];
        match bands.last_mut() {
            Some(band) if top(w) < bottom => {
                band.push(i);
                bottom = bottom.max(w.y);
            }
            _ => {
                bands.push(vec![i]);
                bottom = w.y;
            }
        }
    }
    let band_gaps: Vec<Vec<(f64, f64)>> = bands
        .iter()
        .map(|b| gaps(words, b, span, min_gutter))
        .collect();
    let shapes: Vec<(f64, f64, f64)> = bands.iter().map(|b| band_shape(words, b)).collect();

    // Bands read as they come (indices), and the run of bands sharing a gutter being gathered.
    let mut single: Vec<usize> = Vec::new();
    let mut run: Option<Run> = None;
    let words_of =
        |bs: &[usize]| -> Vec<usize> { bs.iter().flat_map(|&b| bands[b].clone()).collect() };
    let close = |mut run: Run, single: &mut Vec<usize>, out: &mut Vec<Line>, block: &mut u32| {
        run.bands.sort_unstable();
        let cuts = column_splits(words, &run.words, &run.gutters, em);
        if cuts.is_empty() {
            single.extend(run.bands);
            single.sort_unstable();
            return;
        }
        emit(words, words_of(single), out, block);
        single.clear();
        let mut columns = vec![Vec::new(); cuts.len() + 1];
        for i in run.words {
            let mid = (words[i].x0 + words[i].x1) / 2.0;
            columns[cuts.iter().take_while(|&&c| mid > c).count()].push(i);
        }
        for column in columns {
            order(words, column, depth + 1, out, block);
        }
    };
    for b in 0..bands.len() {
        if let Some(current) = &mut run {
            let both = intersect(&current.gutters, &band_gaps[b], min_gutter, slack);
            if !both.is_empty() && current.add(words, b, &bands[b], shapes[b], both) {
                continue;
            }
        }
        if let Some(finished) = run.take() {
            close(finished, &mut single, out, block);
        }
        // Only a gap with text on both sides can be a gutter; the margins beside a short line
        // cannot start a run, though they do not end one either.
        let common: Vec<(f64, f64)> = band_gaps[b]
            .iter()
            .filter(|g| g.0 > span.0 && g.1 < span.1)
            .copied()
            .collect();
        if common.is_empty() {
            single.push(b);
            continue;
        }
        // Bands just above that keep clear of the gutter belong to the run: a column that
        // starts lower than its neighbour.
        let mut started = Run::new(words, b, &bands[b], shapes[b], common);
        while let Some(&prev) = single.last() {
            let both = intersect(&started.gutters, &band_gaps[prev], min_gutter, slack);
            if both.is_empty() || !started.add(words, prev, &bands[prev], shapes[prev], both) {
                break;
            }
            single.pop();
        }
        run = Some(started);
    }
    if let Some(finished) = run.take() {
        close(finished, &mut single, out, block);
    }
    emit(words, words_of(&single), out, block);
}

/// A line being built: its words, left to right.
struct RawLine {
    ids: Vec<usize>,
    y: f64,
    size: f64,
}

/// Turns the words of one column (or full-width stretch) into lines, top to bottom, split into
/// blocks where the spacing or the font size changes.
fn emit(words: &[Word], mut ids: Vec<usize>, out: &mut Vec<Line>, block: &mut u32) {
    if ids.is_empty() {
        return;
    }
    ids.sort_by(|&a, &b| {
        words[a]
            .y
            .total_cmp(&words[b].y)
            .then(words[a].x0.total_cmp(&words[b].x0))
    });
    let mut raw: Vec<RawLine> = rows(&ids, |&i| (words[i].y, words[i].size))
        .into_iter()
        .map(|r| {
            let mut line_ids = ids[r].to_vec();
            line_ids.sort_by(|&a, &b| words[a].x0.total_cmp(&words[b].x0));
            let (y, size) = line_ids.iter().map(|&i| (words[i].y, words[i].size)).fold(
                (0.0, 0.0),
                |best, (y, s)| if s > best.1 { (y, s) } else { best },
            );
            RawLine {
                ids: line_ids,
                y,
                size,
            }
        })
        .collect();
    merge_symbol_rows(words, &mut raw);

    let lines: Vec<Line> = raw.iter().map(|r| line(words, r)).collect();
    // Typical baseline step per size, from consecutive lines of the same size.
    let steps: Vec<f64> = lines
        .windows(2)
        .filter(|w| same_size(w[0].size, w[1].size))
        .map(|w| (w[1].y - w[0].y) / w[0].size)
        .filter(|r| *r > 0.5 && *r < 3.0)
        .collect();
    let leading = if steps.is_empty() {
        1.2
    } else {
        median(steps).clamp(0.9, 2.0)
    };
    let mut start = 0;
    let mut blocks = Vec::new();
    for k in 1..=lines.len() {
        let split = k == lines.len() || {
            let (a, b) = (&lines[k - 1], &lines[k]);
            !same_size(a.size, b.size) || b.y - a.y > 1.3 * leading * a.size
        };
        if split {
            blocks.push(start..k);
            start = k;
        }
    }
    for (n, range) in blocks.into_iter().enumerate() {
        let mut x1s: Vec<f64> = lines[range.clone()].iter().map(|l| l.x1).collect();
        x1s.sort_by(f64::total_cmp);
        // Where most lines end: the longest tenth is left out, for an overlong line.
        let last = x1s.len().saturating_sub(1);
        let right = x1s.get(last - last / 10).copied().unwrap_or(0.0);
        let left = lines[range.clone()]
            .iter()
            .map(|l| l.x0)
            .fold(f64::INFINITY, f64::min);
        for (k, l) in lines[range].iter().enumerate() {
            out.push(Line {
                block: *block,
                left,
                right,
                gap_before: n > 0 && k == 0,
                ..l.clone()
            });
        }
        *block += 1;
    }
}

fn same_size(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.12 * a.max(b)
}

/// Rows with no letter or digit (the big brackets of an equation, drawn from a baseline far
/// from the formula's) join the nearest row with text that they overlap horizontally.
fn merge_symbol_rows(words: &[Word], raw: &mut Vec<RawLine>) {
    let alnum: Vec<bool> = raw
        .iter()
        .map(|r| {
            r.ids
                .iter()
                .any(|&i| words[i].text.chars().any(char::is_alphanumeric))
        })
        .collect();
    if alnum.iter().all(|&a| a) {
        return;
    }
    let extent: Vec<(f64, f64)> = raw
        .iter()
        .map(|r| {
            r.ids
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |e, &i| {
                    (e.0.min(words[i].x0), e.1.max(words[i].x1))
                })
        })
        .collect();
    let reach = 1.5 * raw.iter().map(|r| r.size).fold(0.0, f64::max);
    let mut into: Vec<Option<usize>> = vec![None; raw.len()];
    for k in (0..raw.len()).filter(|&k| !alnum[k]) {
        let (x0, x1) = extent[k];
        let y = raw[k].y;
        // Rows are in baseline order, so the candidates are the neighbours within reach.
        let near = |j: &usize| (raw[*j].y - y).abs() <= reach;
        let above = (0..k).rev().take_while(near);
        let below = (k + 1..raw.len()).take_while(near);
        into[k] = above
            .chain(below)
            .filter(|&j| alnum[j] && extent[j].0 < x1 && x0 < extent[j].1)
            .filter(|&j| (raw[j].y - y).abs() <= 1.5 * raw[j].size)
            // The nearest; on a tie the one below, as big delimiters hang from their baseline.
            .min_by(|&a, &b| {
                let d = |j: usize| ((raw[j].y - y).abs(), y - raw[j].y);
                let (da, db) = (d(a), d(b));
                da.0.total_cmp(&db.0).then(da.1.total_cmp(&db.1))
            });
    }
    for (k, target) in into.iter().enumerate() {
        if let Some(&t) = target.as_ref() {
            let moved = std::mem::take(&mut raw[k].ids);
            raw[t].ids.extend(moved);
            raw[t]
                .ids
                .sort_by(|&a, &b| words[a].x0.total_cmp(&words[b].x0));
        }
    }
    raw.retain(|r| !r.ids.is_empty());
}

/// A line's text and measures from its words (left to right).
fn line(words: &[Word], raw: &RawLine) -> Line {
    let ws: Vec<&Word> = raw.ids.iter().map(|&i| &words[i]).collect();
    let text = ws
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    // The size most characters have, so one big symbol does not make the line a heading.
    let mut weights: Vec<(f64, usize)> = Vec::new();
    for w in &ws {
        let n = w.text.chars().count();
        match weights.iter_mut().find(|(s, _)| (s - w.size).abs() < 0.1) {
            Some((_, count)) => *count += n,
            None => weights.push((w.size, n)),
        }
    }
    let size = weights
        .iter()
        .max_by_key(|(_, n)| *n)
        .map_or(raw.size, |(s, _)| *s);
    let widest_gap = ws.windows(2).map(|p| p[1].x0 - p[0].x1).fold(0.0, f64::max);
    Line {
        text,
        x0: ws.first().map_or(0.0, |w| w.x0),
        x1: ws.iter().map(|w| w.x1).fold(f64::NEG_INFINITY, f64::max),
        y: raw.y,
        size,
        first_word: ws.first().map_or(0.0, |w| w.x1 - w.x0),
        widest_gap,
        block: 0,
        left: 0.0,
        right: 0.0,
        gap_before: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Draws `text` as glyphs 0.5 em wide with spaces between words, baseline `y` (downwards).
    fn draw(page: &mut PageGlyphs, text: &str, x: f64, y: f64, size: f64) {
        let mut x = x;
        for c in text.chars() {
            if c == ' ' {
                x += 0.3 * size;
                continue;
            }
            page.push(&c.to_string(), x, y, 0.5 * size, size);
            x += 0.5 * size;
        }
    }

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(|l| l.text.clone()).collect()
    }

    #[test]
    fn words_come_from_gaps_not_from_the_drawing_order() {
        let mut page = PageGlyphs::default();
        // "world" drawn before "hello", and "hello" drawn backwards.
        draw(&mut page, "world", 50.0, 100.0, 10.0);
        for (k, c) in "olleh".chars().enumerate() {
            page.push(&c.to_string(), 20.0 - 5.0 * k as f64, 100.0, 5.0, 10.0);
        }
        assert_eq!(texts(&lay_out(&page).lines), ["hello world"]);
    }

    #[test]
    fn superscripts_stay_on_their_line_and_fake_bold_is_read_once() {
        let mut page = PageGlyphs::default();
        draw(&mut page, "x", 0.0, 100.0, 10.0);
        page.push("2", 5.0, 96.0, 3.5, 7.0);
        draw(&mut page, "B", 20.0, 100.0, 10.0);
        draw(&mut page, "B", 20.4, 100.0, 10.0);
        draw(&mut page, "next line", 0.0, 112.0, 10.0);
        assert_eq!(texts(&lay_out(&page).lines), ["x2 B", "next line"]);
    }

    /// Two columns of `rows` lines each, drawn row by row across both columns (the order a
    /// stream that is not in column order has).
    fn two_columns(page: &mut PageGlyphs, rows: usize, top: f64) {
        for r in 0..rows {
            let y = top + 12.0 * r as f64;
            draw(page, &format!("right column line {r}"), 320.0, y, 10.0);
            draw(page, &format!("left column line {r}"), 72.0, y, 10.0);
        }
    }

    /// Two columns of `rows` rows from `top`, numbered from `from`: "L03 …", "R03 …".
    fn numbered_columns(page: &mut PageGlyphs, rows: std::ops::Range<usize>, top: f64) {
        for (k, r) in rows.enumerate() {
            let y = top + 12.0 * k as f64;
            draw(
                page,
                &format!("L{r:02} left column text runs on in this column ok"),
                72.0,
                y,
                10.0,
            );
            draw(
                page,
                &format!("R{r:02} right column text runs on in this colum ok"),
                318.0,
                y,
                10.0,
            );
        }
    }

    /// A chart across both columns below them: its tick labels leave the gutter free, but
    /// they are smaller and set apart by white space, so they are not the columns' last lines
    /// (a review found "0 10 20 30" read after the left column and "40 … 80" after the right).
    #[test]
    fn a_figure_across_both_columns_is_not_torn_into_them() {
        let mut page = PageGlyphs::default();
        numbered_columns(&mut page, 0..20, 100.0);
        for (k, tick) in ["0", "10", "20", "30", "40", "50", "60", "70", "80"]
            .iter()
            .enumerate()
        {
            draw(&mut page, tick, 90.0 + 55.0 * k as f64, 360.0, 8.0);
        }
        draw(&mut page, "Wetness duration (h)", 260.0, 372.0, 8.0);
        let caption = "Figure 1: Colonisation rate against wetness duration for the walls.";
        draw(&mut page, caption, 72.0, 390.0, 9.0);
        let t = texts(&lay_out(&page).lines);
        let at = |start: &str| t.iter().position(|l| l.starts_with(start)).expect(start);
        assert!(at("L19") < at("R00"), "{t:#?}");
        assert_eq!(
            t[40..],
            ["0 10 20 30 40 50 60 70 80", "Wetness duration (h)", caption]
        );

        // Between two stretches of columns: two panels side by side, each with its letter and
        // ticks, then the caption, read between the stretches.
        let mut page = PageGlyphs::default();
        numbered_columns(&mut page, 0..8, 100.0);
        draw(&mut page, "(a)", 90.0, 210.0, 9.0);
        draw(&mut page, "(b)", 336.0, 210.0, 9.0);
        for (k, tick) in ["0", "5", "10", "15"].iter().enumerate() {
            draw(&mut page, tick, 100.0 + 50.0 * k as f64, 300.0, 8.0);
            draw(&mut page, tick, 346.0 + 50.0 * k as f64, 300.0, 8.0);
        }
        let caption = "Figure 2: (a) North faces; (b) south faces, cover against the years.";
        draw(&mut page, caption, 72.0, 320.0, 9.0);
        numbered_columns(&mut page, 8..14, 350.0);
        let t = texts(&lay_out(&page).lines);
        let at = |start: &str| t.iter().position(|l| l.starts_with(start)).expect(start);
        assert_eq!((at("L07"), at("R00"), at("R07")), (7, 8, 15), "{t:#?}");
        assert_eq!(
            t[16..19],
            ["(a) (b)", "0 5 10 15 0 5 10 15", caption],
            "{t:#?}"
        );
        assert_eq!((at("L08"), at("L13"), at("R08")), (19, 24, 25), "{t:#?}");
    }

    #[test]
    fn columns_are_read_one_after_the_other() {
        let mut page = PageGlyphs::default();
        two_columns(&mut page, 6, 100.0);
        let lines = lay_out(&page).lines;
        let want: Vec<String> = (0..6)
            .map(|r| format!("left column line {r}"))
            .chain((0..6).map(|r| format!("right column line {r}")))
            .collect();
        assert_eq!(texts(&lines), want);
    }

    #[test]
    fn full_width_blocks_are_read_at_their_place() {
        let mut page = PageGlyphs::default();
        draw(
            &mut page,
            "A Title Spanning The Whole Width Of The Page Here",
            100.0,
            60.0,
            16.0,
        );
        two_columns(&mut page, 4, 100.0);
        draw(
            &mut page,
            "a full width caption below both columns of the page text",
            72.0,
            200.0,
            10.0,
        );
        let lines = lay_out(&page).lines;
        let t = texts(&lines);
        assert_eq!(t[0], "A Title Spanning The Whole Width Of The Page Here");
        assert_eq!(t[1], "left column line 0");
        assert_eq!(t[5], "right column line 0");
        assert_eq!(
            t[9],
            "a full width caption below both columns of the page text"
        );
    }

    #[test]
    fn columns_whose_baselines_do_not_line_up_are_still_columns() {
        let mut page = PageGlyphs::default();
        for r in 0..5 {
            draw(
                &mut page,
                &format!("left column line {r}"),
                72.0,
                100.0 + 12.0 * r as f64,
                10.0,
            );
            draw(
                &mut page,
                &format!("right column line {r}"),
                320.0,
                105.0 + 13.0 * r as f64,
                10.0,
            );
        }
        let t = texts(&lay_out(&page).lines).join("|");
        assert!(
            t.starts_with("left column line 0|left column line 1|left column line 2|left column line 3|left column line 4|right column line 0"),
            "{t}"
        );
    }

    #[test]
    fn a_list_with_aligned_labels_is_not_two_columns() {
        let mut page = PageGlyphs::default();
        for r in 0..5 {
            let y = 100.0 + 12.0 * r as f64;
            draw(&mut page, "[1]", 72.0, y, 10.0);
            draw(
                &mut page,
                &format!("an entry of the list number {r}"),
                100.0,
                y,
                10.0,
            );
        }
        let t = texts(&lay_out(&page).lines);
        assert_eq!(t[0], "[1] an entry of the list number 0");
        assert_eq!(t.len(), 5);
    }

    #[test]
    fn two_blocks_side_by_side_are_columns_unless_narrow_and_a_centred_line_is_neither() {
        let mut page = PageGlyphs::default();
        // Authors over a centred heading: each author's name and place read together.
        draw(&mut page, "Ada Fieldworker", 120.0, 100.0, 12.0);
        draw(&mut page, "Ben Quadrat", 360.0, 100.0, 12.0);
        draw(&mut page, "Northern Field Station", 100.0, 114.0, 12.0);
        draw(&mut page, "Coastal Herbarium", 350.0, 114.0, 12.0);
        // Centred, so it reaches into the left block a little.
        draw(&mut page, "Abstract", 220.0, 140.0, 10.0);
        // Two rows of narrow cells stay rows.
        draw(&mut page, "Method", 72.0, 200.0, 10.0);
        draw(&mut page, "Score", 200.0, 200.0, 10.0);
        draw(&mut page, "Ours", 72.0, 212.0, 10.0);
        draw(&mut page, "95", 200.0, 212.0, 10.0);
        let t = texts(&lay_out(&page).lines);
        assert_eq!(
            t,
            [
                "Ada Fieldworker",
                "Northern Field Station",
                "Ben Quadrat",
                "Coastal Herbarium",
                "Abstract",
                "Method Score",
                "Ours 95"
            ]
        );
    }

    #[test]
    fn a_column_that_starts_lower_or_ends_higher_is_still_a_column() {
        let mut page = PageGlyphs::default();
        for r in 0..8 {
            let y = 100.0 + 12.0 * r as f64;
            // The right column has a figure above it and ends early.
            if (3..6).contains(&r) {
                draw(&mut page, &format!("right column line {r}"), 320.0, y, 10.0);
            }
            draw(&mut page, &format!("left column line {r}"), 72.0, y, 10.0);
        }
        let t = texts(&lay_out(&page).lines);
        let want: Vec<String> = (0..8)
            .map(|r| format!("left column line {r}"))
            .chain((3..6).map(|r| format!("right column line {r}")))
            .collect();
        assert_eq!(t, want);
    }

    #[test]
    fn blocks_split_at_size_changes_and_extra_space() {
        let mut page = PageGlyphs::default();
        draw(&mut page, "1 Heading", 72.0, 100.0, 14.0);
        draw(&mut page, "body line one", 72.0, 120.0, 10.0);
        draw(&mut page, "body line two", 72.0, 132.0, 10.0);
        draw(&mut page, "after a gap", 72.0, 160.0, 10.0);
        let lines = lay_out(&page).lines;
        let flags: Vec<bool> = lines.iter().map(|l| l.gap_before).collect();
        assert_eq!(flags, [false, true, false, true]);
        assert_eq!(lines[1].block, lines[2].block);
        assert_ne!(lines[2].block, lines[3].block);
    }

    #[test]
    fn a_blocks_right_edge_is_where_its_lines_end_one_overlong_line_aside() {
        let mut page = PageGlyphs::default();
        draw(&mut page, "a short line", 72.0, 100.0, 10.0);
        draw(
            &mut page,
            "a line that is a good deal longer",
            72.0,
            112.0,
            10.0,
        );
        draw(&mut page, "short", 72.0, 124.0, 10.0);
        let lines = lay_out(&page).lines;
        assert_eq!(lines[0].right, lines[1].x1);

        let mut page = PageGlyphs::default();
        for r in 0..12 {
            let text = if r == 3 {
                "an overlong line running into the margin"
            } else {
                "a full line of text"
            };
            draw(&mut page, text, 72.0, 100.0 + 12.0 * r as f64, 10.0);
        }
        let lines = lay_out(&page).lines;
        assert_eq!(lines[0].right, lines[0].x1);
        assert!(lines[3].x1 > lines[0].right);
    }

    #[test]
    fn equation_brackets_drawn_off_the_baseline_join_their_formula() {
        let mut page = PageGlyphs::default();
        draw(&mut page, "text above the formula here", 72.0, 88.0, 10.0);
        draw(&mut page, "C = 1 - e", 100.0, 110.0, 10.0);
        page.push("(", 113.5, 101.0, 2.0, 10.0);
        page.push(")", 150.0, 101.0, 5.0, 10.0);
        let t = texts(&lay_out(&page).lines);
        assert_eq!(t, ["text above the formula here", "C = ( 1 - e )"]);
    }

    #[test]
    fn a_huge_page_of_columns_and_symbol_rows_lays_out_in_time() {
        // 2 columns × 1,500 lines of 20 glyphs, and 1,500 rows of lone symbols between them:
        // nothing on the page may cost the square of its lines.
        let mut page = PageGlyphs::default();
        for r in 0..1_500 {
            let y = 2.0 * r as f64;
            for c in 0..20 {
                page.push("a", 72.0 + 5.0 * c as f64, y, 4.0, 1.0);
                page.push("b", 320.0 + 5.0 * c as f64, y, 4.0, 1.0);
            }
            page.push("+", 100.0, y + 1.0, 1.0, 1.0);
        }
        let start = std::time::Instant::now();
        let lines = lay_out(&page).lines;
        assert!(lines.len() >= 3_000, "{}", lines.len());
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn text_in_another_direction_is_set_aside() {
        let mut page = PageGlyphs::default();
        draw(&mut page, "the page text", 72.0, 100.0, 10.0);
        draw(&mut page, "more page text", 72.0, 112.0, 10.0);
        draw(&mut page, "stamp", 300.0, 20.0, 10.0);
        for g in page.glyphs.iter_mut().rev().take(5) {
            g.dir = Direction::Up;
        }
        let laid = lay_out(&page);
        assert_eq!(texts(&laid.lines), ["the page text", "more page text"]);
        assert_eq!(texts(&laid.aside), ["stamp"]);
    }
}
