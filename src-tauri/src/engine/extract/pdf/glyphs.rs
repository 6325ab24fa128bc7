//! The `pdf_extract::OutputDev` that collects one page's glyphs with their positions, so that
//! the layout can order text by where it is drawn rather than by the content stream's order.

use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};

/// A page holding more glyphs than this is not prose; the rest of its glyphs are ignored so a
/// hostile file cannot make the layout sort an unbounded list.
const MAX_GLYPHS_PER_PAGE: usize = 400_000;

/// Which way a glyph's baseline runs on the page, in quarter turns counter-clockwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Direction {
    Right,
    Up,
    Left,
    Down,
}

/// One drawn character (or ligature) in the coordinates of its own direction: `x` grows along
/// the baseline, `y` grows downwards across lines, both in points.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Glyph {
    pub x0: f64,
    pub x1: f64,
    /// The baseline.
    pub y: f64,
    /// Font size as drawn (text matrix included).
    pub size: f64,
    pub dir: Direction,
    /// A space character was drawn right before this glyph.
    pub space_before: bool,
    /// `text[start..end]` of the page is this glyph's text.
    pub start: u32,
    pub end: u32,
}

/// The glyphs of one page and their text.
#[derive(Debug, Default)]
pub(super) struct PageGlyphs {
    pub glyphs: Vec<Glyph>,
    pub text: String,
}

impl PageGlyphs {
    pub fn text_of(&self, glyph: &Glyph) -> &str {
        self.text
            .get(glyph.start as usize..glyph.end as usize)
            .unwrap_or("")
    }

    /// Appends a glyph whose baseline starts at (`x`, `y`) in the direction's frame.
    #[cfg(test)]
    pub fn push(&mut self, text: &str, x: f64, y: f64, width: f64, size: f64) {
        let start = self.text.len() as u32;
        self.text.push_str(text);
        self.glyphs.push(Glyph {
            x0: x,
            x1: x + width,
            y,
            size,
            dir: Direction::Right,
            space_before: false,
            start,
            end: self.text.len() as u32,
        });
    }
}

/// Collects the glyphs pdf-extract reports for one page.
#[derive(Debug, Default)]
pub(super) struct GlyphCollector {
    pub page: PageGlyphs,
    pending_space: bool,
}

impl GlyphCollector {
    fn add(&mut self, trm: &Transform, width: f64, font_size: f64, text: &str) {
        if text.chars().all(char::is_whitespace) {
            self.pending_space = true;
            return;
        }
        if self.page.glyphs.len() >= MAX_GLYPHS_PER_PAGE {
            return;
        }
        // The baseline runs along the text space's x axis; its y axis gives the drawn size.
        let (bx, by) = (trm.m11, trm.m12);
        let (ux, uy) = (trm.m21, trm.m22);
        let run = bx.hypot(by);
        let rise = ux.hypot(uy);
        let size = font_size.abs() * rise;
        if !(run > 1e-9 && size > 1e-3 && size < 5_000.0 && trm.m31.is_finite()) {
            return;
        }
        let Some(dir) = direction(bx / run, by / run) else {
            // Diagonal text (watermarks, rotated labels) has no line to belong to.
            return;
        };
        let (x, y) = frame(dir, trm.m31, trm.m32);
        if !(x.is_finite() && y.is_finite()) {
            return;
        }
        // A font without widths still needs an extent, or every glyph would look like a word.
        let advance = match width * font_size.abs() * run {
            w if w.is_finite() && w > 0.0 => w,
            _ => 0.5 * size,
        };
        let start = self.page.text.len() as u32;
        push_clean(&mut self.page.text, text);
        let end = self.page.text.len() as u32;
        if end == start {
            return;
        }
        self.page.glyphs.push(Glyph {
            x0: x,
            x1: x + advance,
            y,
            size,
            dir,
            space_before: std::mem::take(&mut self.pending_space),
            start,
            end,
        });
    }
}

/// The text of a glyph without control characters, ligatures spelled out (ﬁ → fi).
fn push_clean(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\u{FB00}' => out.push_str("ff"),
            '\u{FB01}' => out.push_str("fi"),
            '\u{FB02}' => out.push_str("fl"),
            '\u{FB03}' => out.push_str("ffi"),
            '\u{FB04}' => out.push_str("ffl"),
            '\u{FB05}' | '\u{FB06}' => out.push_str("st"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
}

/// The direction a unit baseline vector points to, if it is within 5° of a right angle.
fn direction(cos: f64, sin: f64) -> Option<Direction> {
    const ALIGNED: f64 = 0.996; // cos 5°
    match () {
        _ if cos >= ALIGNED => Some(Direction::Right),
        _ if sin >= ALIGNED => Some(Direction::Up),
        _ if cos <= -ALIGNED => Some(Direction::Left),
        _ if sin <= -ALIGNED => Some(Direction::Down),
        _ => None,
    }
}

/// Page coordinates (y up) turned into the direction's frame: x along the baseline, y down the
/// lines as a reader of that text would see them.
fn frame(dir: Direction, x: f64, y: f64) -> (f64, f64) {
    match dir {
        Direction::Right => (x, -y),
        Direction::Up => (y, x),
        Direction::Left => (-x, y),
        Direction::Down => (-y, -x),
    }
}

impl OutputDev for GlyphCollector {
    fn begin_page(
        &mut self,
        _page_num: u32,
        _media_box: &MediaBox,
        _art_box: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        _spacing: f64,
        font_size: f64,
        char: &str,
    ) -> Result<(), OutputError> {
        self.add(trm, width, font_size, char);
        Ok(())
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(a: f64, b: f64, c: f64, d: f64, e: f64, f: f64) -> Transform {
        Transform::row_major(a, b, c, d, e, f)
    }

    #[test]
    fn positions_sizes_and_advances_come_from_the_text_matrix() {
        let mut c = GlyphCollector::default();
        // A 10 pt font drawn at twice its size, 0.5 em wide.
        c.add(&matrix(2.0, 0.0, 0.0, 2.0, 100.0, 700.0), 0.5, 10.0, "A");
        let g = &c.page.glyphs[0];
        assert_eq!((g.x0, g.x1, g.y, g.size), (100.0, 110.0, -700.0, 20.0));
        assert_eq!(g.dir, Direction::Right);
        assert_eq!(c.page.text_of(g), "A");
    }

    #[test]
    fn spaces_mark_the_next_glyph_and_are_not_kept() {
        let mut c = GlyphCollector::default();
        let m = matrix(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
        c.add(&m, 0.5, 10.0, "a");
        c.add(&m, 0.25, 10.0, " ");
        c.add(&m, 0.5, 10.0, "b");
        let texts: Vec<_> = c.page.glyphs.iter().map(|g| c.page.text_of(g)).collect();
        assert_eq!(texts, ["a", "b"]);
        assert!(!c.page.glyphs[0].space_before && c.page.glyphs[1].space_before);
    }

    #[test]
    fn ligatures_are_spelled_out_and_control_characters_dropped() {
        let mut c = GlyphCollector::default();
        let m = matrix(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
        c.add(&m, 0.5, 10.0, "\u{FB01}");
        c.add(&m, 0.5, 10.0, "\u{1b}");
        c.add(&m, 0.5, 10.0, "\0");
        assert_eq!(c.page.text, "fi");
        assert_eq!(c.page.glyphs.len(), 1);
    }

    #[test]
    fn rotated_text_gets_its_own_frame_and_diagonal_text_is_dropped() {
        let mut c = GlyphCollector::default();
        // Rotated 90° counter-clockwise (an arXiv stamp in the left margin).
        c.add(&matrix(0.0, 1.0, -1.0, 0.0, 20.0, 300.0), 0.5, 10.0, "a");
        // 45°: a watermark.
        let r = std::f64::consts::FRAC_1_SQRT_2;
        c.add(&matrix(r, r, -r, r, 200.0, 200.0), 0.5, 10.0, "D");
        assert_eq!(c.page.glyphs.len(), 1);
        let g = &c.page.glyphs[0];
        assert_eq!((g.dir, g.x0, g.y), (Direction::Up, 300.0, 20.0));
    }

    #[test]
    fn glyphs_without_width_still_take_room_and_degenerate_matrices_are_ignored() {
        let mut c = GlyphCollector::default();
        c.add(&matrix(1.0, 0.0, 0.0, 1.0, 10.0, 0.0), 0.0, 10.0, "x");
        c.add(&matrix(0.0, 0.0, 0.0, 0.0, 10.0, 0.0), 0.5, 10.0, "y");
        c.add(&matrix(1.0, 0.0, 0.0, 1.0, f64::NAN, 0.0), 0.5, 10.0, "z");
        assert_eq!(c.page.glyphs.len(), 1);
        assert_eq!(c.page.glyphs[0].x1, 15.0);
    }
}
