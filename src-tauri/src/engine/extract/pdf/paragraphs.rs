//! Lines in reading order joined into paragraphs, words hyphenated at line ends joined again,
//! headings set on their own. See docs/ARCHITECTURE.md, "PDF text", for the rules.

use std::collections::HashSet;
use std::ops::Range;

use super::layout::{Line, PageLines};

/// The document's text as Markdown paragraphs, and its title if a heading looks like one.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Composed {
    pub text: String,
    pub title: Option<String>,
}

/// Joins the pages' lines (running headers already gone) into paragraphs.
pub(super) fn compose(pages: &[PageLines]) -> Composed {
    let lines: Vec<(usize, &Line)> = pages
        .iter()
        .enumerate()
        .flat_map(|(p, page)| page.lines.iter().map(move |l| (p, l)))
        .collect();
    let words = Vocabulary::of(pages.iter().flat_map(|p| p.lines.iter().chain(&p.aside)));
    let body = body_size(lines.iter().map(|(_, l)| *l));
    let mut paras = split(&lines);
    let mut kinds: Vec<Kind> = paras
        .iter()
        .map(|r| kind(&lines[r.clone()], body))
        .collect();
    merge_headings(&lines, &mut paras, &mut kinds);

    let first_page = lines.first().map(|(p, _)| *p);
    // The title is the first page's largest words: a figure's big panel letter on page 2, or
    // a drop cap, is no title and must not outsize it.
    let largest = lines
        .iter()
        .filter(|(p, l)| {
            Some(*p) == first_page && l.text.chars().filter(|c| c.is_alphabetic()).count() >= 4
        })
        .map(|(_, l)| l.size)
        .fold(0.0, f64::max);
    let mut title = None;
    let mut out = String::new();
    for (range, kind) in paras.iter().zip(&kinds) {
        let text = join(
            lines[range.clone()].iter().map(|(_, l)| l.text.as_str()),
            &words,
        );
        let (page, first) = lines[range.start];
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        match kind {
            Kind::Heading
                if title.is_none()
                    && Some(page) == first_page
                    && first.size >= 1.3 * body
                    && first.size >= largest - 0.1 =>
            {
                out.push_str("# ");
                title = Some(text.clone());
            }
            Kind::Heading | Kind::Numbered => out.push_str("## "),
            Kind::Body => {
                out.push_str(&escape_block_start(&text));
                continue;
            }
        }
        out.push_str(&text);
    }
    for line in pages.iter().flat_map(|p| &p.aside) {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&escape_block_start(&line.text));
    }
    Composed { text: out, title }
}

/// A paragraph of the PDF's text as Markdown text: a start Markdown would read as a block of
/// its own (`- 5 mm was…` a list, `> 40 walls…` a quote, `4. The data…` a numbered list from
/// 4, `# 3` a heading, a fence or a rule) gets a backslash. What is inside stays as it is.
fn escape_block_start(text: &str) -> std::borrow::Cow<'_, str> {
    let first = text.chars().next();
    let ordered = text
        .find(|c: char| !c.is_ascii_digit())
        .filter(|&n| (1..=9).contains(&n))
        .filter(|&n| {
            text[n..].starts_with(". ") || text[n..].starts_with(") ") || text.len() == n + 1
        })
        .filter(|&n| matches!(text.as_bytes()[n], b'.' | b')'));
    if let Some(n) = ordered {
        return format!("{}\\{}", &text[..n], &text[n..]).into();
    }
    let bullet =
        matches!(first, Some('-' | '*' | '+')) && (text[1..].starts_with(' ') || text.len() == 1);
    let rule = matches!(first, Some('-' | '*' | '_' | '='))
        && text.chars().all(|c| c == first.unwrap_or(' ') || c == ' ');
    let block = matches!(first, Some('>' | '#' | '|'))
        || text.starts_with("```")
        || text.starts_with("~~~")
        || (first == Some('[') && text.contains("]:"));
    if bullet || rule || block {
        format!("\\{text}").into()
    } else {
        text.into()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Body,
    /// Set in a larger font than the body.
    Heading,
    /// A short line that starts with a section number.
    Numbered,
}

/// The size most characters of the document have.
fn body_size<'a>(lines: impl Iterator<Item = &'a Line>) -> f64 {
    let mut counts: Vec<(f64, usize)> = Vec::new();
    for l in lines {
        let n = l.text.chars().count();
        match counts.iter_mut().find(|(s, _)| (s - l.size).abs() < 0.25) {
            Some((_, c)) => *c += n,
            None => counts.push((l.size, n)),
        }
    }
    counts
        .iter()
        .max_by_key(|(_, n)| *n)
        .map_or(10.0, |(s, _)| *s)
}

fn same_size(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.12 * a.max(b)
}

/// Centred or set apart: far from the block's left edge, and short or holding a wide gap (an
/// equation and its number).
fn display(l: &Line) -> bool {
    l.x0 - l.left > 2.5 * l.size && (l.right - l.x1 > 2.5 * l.size || l.widest_gap > 3.0 * l.size)
}

/// Indented from the block's left edge by more than half an em, but not a display line.
fn indented(l: &Line) -> bool {
    l.x0 - l.left > 0.5 * l.size && !display(l)
}

/// "[12] ", "[Hil98] ", "• ", "3. Author" at the start of a line: a list or reference entry.
fn starts_with_label(text: &str) -> bool {
    if let Some(rest) = text.strip_prefix('[') {
        return rest.find(']').is_some_and(|end| {
            end > 0 && end <= 12 && !rest[..end].contains(' ') && rest[end + 1..].starts_with(' ')
        });
    }
    if text.starts_with(['•', '◦', '▪', '‣', '∙', '●', '○', '■', '□', '►']) {
        return true;
    }
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    (1..=3).contains(&digits)
        && matches!(text.as_bytes().get(digits), Some(b'.' | b')'))
        && text[digits + 1..].starts_with(' ')
        && text[digits + 1..]
            .trim_start()
            .starts_with(char::is_uppercase)
}

/// Whether a line ends the way an item of a list or a reference does: with a sentence's end,
/// or with an address (ACM's references end with their DOI's link, no full stop).
fn ends_an_item(text: &str) -> bool {
    let text = text.trim_end();
    let last = text.rsplit(char::is_whitespace).next().unwrap_or(text);
    text.ends_with(['.', ':', ';', '?', '!'])
        || last.contains("://")
        || last.starts_with("doi:")
        || last.starts_with("arXiv:")
        || (last.starts_with("10.") && last.contains('/'))
}

/// Does `b` start a new paragraph after `a`, from what the two lines show?
fn breaks_between(a: &Line, b: &Line) -> bool {
    if !same_size(a.size, b.size) || b.gap_before {
        return true;
    }
    // A label starts an item only after a line that ended one: mid-sentence, "…reported by" /
    // "[12] and the later work" and "…in Section" / "4. The data" go on.
    if starts_with_label(&b.text) && ends_an_item(&a.text) {
        return true;
    }
    // `a` stopped short although `b`'s first word would have fitted after it.
    if a.right - a.x1 > b.first_word + a.size {
        return true;
    }
    match (display(a), display(b)) {
        (true, true) => (a.x0 - b.x0).abs() > 0.3 * a.size,
        (false, false) => false,
        _ => true,
    }
}

/// The paragraphs, as ranges of `lines`.
fn split(lines: &[(usize, &Line)]) -> Vec<Range<usize>> {
    let n = lines.len();
    let mut starts = vec![true; n];
    for k in 1..n {
        starts[k] = breaks_between(lines[k - 1].1, lines[k].1);
    }
    // Indentation is read per stretch: a first line set in (most text), or every line but the
    // first set in (hanging references).
    let mut k = 0;
    while k < n {
        let end = (k + 1..n).find(|&j| starts[j]).unwrap_or(n);
        let ind = |j: usize| indented(lines[j].1);
        let hanging = end - k >= 2 && !ind(k) && ind(k + 1) && (end - k == 2 || ind(k + 2));
        for (j, start) in starts.iter_mut().enumerate().take(end).skip(k + 1) {
            *start = if hanging {
                !ind(j) && ind(j - 1)
            } else {
                ind(j) && !ind(j - 1)
            };
        }
        k = end;
    }
    let mut out = Vec::new();
    let mut start = 0;
    for (j, _) in starts.iter().enumerate().skip(1).filter(|(_, s)| **s) {
        out.push(start..j);
        start = j;
    }
    if n > 0 {
        out.push(start..n);
    }
    out
}

fn kind(lines: &[(usize, &Line)], body: f64) -> Kind {
    let Some((_, first)) = lines.first() else {
        return Kind::Body;
    };
    let words: usize = lines
        .iter()
        .map(|(_, l)| l.text.split_whitespace().count())
        .sum();
    let letters = lines
        .iter()
        .flat_map(|(_, l)| l.text.chars())
        .filter(|c| c.is_alphabetic())
        .count();
    if first.size >= 1.15 * body && words <= 30 && letters >= 2 {
        return Kind::Heading;
    }
    let text = first.text.as_str();
    if lines.len() == 1
        && words <= 12
        && !text.ends_with('.')
        && first.size >= 0.95 * body
        && first.widest_gap <= 2.5 * first.size
        && section_numbered(text)
    {
        return Kind::Numbered;
    }
    Kind::Body
}

/// "2 Methods", "2.1. Sites", "IV. Results".
fn section_numbered(text: &str) -> bool {
    let Some((number, rest)) = text.split_once(' ') else {
        return false;
    };
    let arabic = number
        .strip_suffix('.')
        .unwrap_or(number)
        .split('.')
        .all(|part| (1..=2).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_digit()));
    let roman = number
        .strip_suffix('.')
        .is_some_and(|n| !n.is_empty() && n.len() <= 5 && n.chars().all(|c| "IVX".contains(c)));
    (arabic || roman) && rest.trim_start().starts_with(char::is_uppercase)
}

/// A heading broken over two lines is one heading.
fn merge_headings(lines: &[(usize, &Line)], paras: &mut Vec<Range<usize>>, kinds: &mut Vec<Kind>) {
    let mut k = 1;
    while k < paras.len() {
        let (pa, a) = lines[paras[k - 1].end - 1];
        let (pb, b) = lines[paras[k].start];
        let step = b.y - a.y;
        if kinds[k - 1] == Kind::Heading
            && kinds[k] == Kind::Heading
            && pa == pb
            && (a.size - b.size).abs() <= 0.05 * a.size
            && step > 0.0
            && step <= 2.2 * a.size
        {
            paras[k - 1].end = paras[k].end;
            paras.remove(k);
            kinds.remove(k);
        } else {
            k += 1;
        }
    }
}

/// Every word of the document, to tell a compound broken at its hyphen ("north-" "facing",
/// written "north-facing" elsewhere) from a word hyphenated by the typesetter.
#[derive(Debug, Default)]
struct Vocabulary {
    plain: HashSet<String>,
    hyphenated: HashSet<String>,
}

impl Vocabulary {
    fn of<'a>(lines: impl Iterator<Item = &'a Line>) -> Self {
        let mut v = Vocabulary::default();
        for line in lines {
            let mut tokens = line.text.split_whitespace().peekable();
            while let Some(token) = tokens.next() {
                // The line's last word, cut by the break, is not a word of the text.
                if tokens.peek().is_none() && token.ends_with('-') {
                    continue;
                }
                let word = normal(token);
                if word.is_empty() {
                    continue;
                }
                if word.contains('-') {
                    v.hyphenated.insert(word);
                } else {
                    v.plain.insert(word);
                }
            }
        }
        v
    }
}

/// A token without surrounding punctuation, in lower case.
fn normal(token: &str) -> String {
    token
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

/// The paragraph's lines as one string.
fn join<'a>(lines: impl Iterator<Item = &'a str>, words: &Vocabulary) -> String {
    let mut out = String::new();
    for next in lines {
        append(&mut out, next, words);
    }
    out
}

/// Appends a line to the paragraph so far: with a space, or glued to a line-final hyphen.
fn append(out: &mut String, next: &str, words: &Vocabulary) {
    let (Some(last), Some(first)) = (out.chars().next_back(), next.chars().next()) else {
        out.push_str(next);
        return;
    };
    let stem = out.rsplit(' ').next().unwrap_or("");
    let before = stem.chars().rev().nth(1);
    // A link wrapped after its own hyphen, slash, underscore, `=`, `?`… goes on without a
    // space, its hyphen kept (`…/moss-` `survey` was `mosssurvey`); after a dot only before
    // a lowercase letter or a digit, since a sentence may end with a link.
    let link = stem.contains("://") || stem.starts_with("www.") || stem.contains("doi.org");
    if link
        && (matches!(last, '-' | '/' | '_' | '=' | '?' | '&' | '#' | '~' | '%')
            || (last == '.' && (first.is_lowercase() || first.is_ascii_digit())))
    {
        out.push_str(next);
        return;
    }
    let glue = match last {
        // A soft hyphen marks a hyphenation point and nothing else.
        '\u{AD}' => {
            out.pop();
            true
        }
        '-' | '\u{2010}' if before.is_some_and(char::is_alphabetic) && first.is_lowercase() => {
            if !keeps_hyphen(stem, next, words) {
                out.pop();
            }
            true
        }
        // "Franco-" "Prussian", "COVID-" "19", "127–" "226", "word—" "word".
        '-' | '\u{2010}' | '–' | '—' => {
            before.is_some_and(char::is_alphanumeric) && first.is_alphanumeric()
        }
        _ => false,
    };
    if !glue {
        out.push(' ');
    }
    out.push_str(next);
}

/// Heads that make compounds with a hyphen (`self-consistent`, `non-zero`, `well-known`), and
/// that a typesetter's hyphenation of one word rarely ends on.
const COMPOUND_HEADS: &[&str] = &["self", "non", "well", "ill", "cross", "half", "quasi"];

/// Whether a line-final hyphen between two lowercase parts is the word's own: the part before
/// holds a hyphen already ("state-of-the-"), the document writes the word with a hyphen
/// elsewhere and never without, or the part before is a compound's head (`self-`) and the
/// document never writes the two closed up.
fn keeps_hyphen(stem: &str, next: &str, words: &Vocabulary) -> bool {
    let head = normal(stem);
    if head.contains('-') {
        return true;
    }
    let tail = normal(next.split_whitespace().next().unwrap_or(""));
    let tail = tail.split('-').next().unwrap_or("");
    let closed = words.plain.contains(&format!("{head}{tail}"));
    (words.hyphenated.contains(&format!("{head}-{tail}"))
        || COMPOUND_HEADS.contains(&head.as_str()))
        && !closed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the reader then renders: each paragraph as the words it is, no list, quote or
    /// heading made of it.
    #[test]
    fn a_paragraph_that_starts_like_markdown_is_escaped_to_read_as_text() {
        for (text, escaped) in [
            (
                "- 5 mm was the smallest value",
                "\\- 5 mm was the smallest value",
            ),
            ("> 40 walls were excluded", "\\> 40 walls were excluded"),
            ("4. The data are available", "4\\. The data are available"),
            ("12) Results follow", "12\\) Results follow"),
            ("# 3 on the list", "\\# 3 on the list"),
            ("* starred", "\\* starred"),
            ("---", "\\---"),
            ("```code", "\\```code"),
            ("[1]: http://x.example", "\\[1]: http://x.example"),
        ] {
            assert_eq!(escape_block_start(text), escaped, "{text}");
            let html = crate::engine::render::markdown_to_html(escaped);
            assert!(
                !html.contains("<li")
                    && !html.contains("<blockquote")
                    && !html.contains("<h1")
                    && !html.contains("<hr")
                    && !html.contains("<pre"),
                "{text}: {html}"
            );
        }
        for plain in [
            "2013 was a dry year.",
            "-5 degrees",
            "3.14 is pi",
            "[12] and later",
            "The end.",
        ] {
            assert_eq!(escape_block_start(plain), plain);
        }
    }

    /// A line of 10 pt text in a block from x = 72 to 300, on baselines 12 pt apart.
    fn line(text: &str, row: usize, x0: f64, x1: f64) -> Line {
        Line {
            text: text.into(),
            x0,
            x1,
            y: 100.0 + 12.0 * row as f64,
            size: 10.0,
            first_word: 5.0 * text.split(' ').next().map_or(0, str::len) as f64,
            widest_gap: 3.0,
            block: 0,
            left: 72.0,
            right: 300.0,
            gap_before: false,
        }
    }

    fn full(text: &str, row: usize) -> Line {
        line(text, row, 72.0, 300.0)
    }

    fn compose_lines(lines: Vec<Line>) -> String {
        compose(&[PageLines {
            lines,
            aside: Vec::new(),
        }])
        .text
    }

    #[test]
    fn lines_join_into_paragraphs_at_short_lines_and_indents() {
        let text = compose_lines(vec![
            full("The first paragraph runs over", 0),
            full("two full lines and then ends", 1),
            line("here.", 2, 72.0, 100.0),
            line("The second paragraph starts", 3, 87.0, 300.0),
            full("with an indent and ends with a", 4),
            full("full line.", 5),
            line("A third is indented.", 6, 87.0, 200.0),
        ]);
        assert_eq!(
            text,
            "The first paragraph runs over two full lines and then ends here.\n\n\
             The second paragraph starts with an indent and ends with a full line.\n\n\
             A third is indented."
        );
    }

    #[test]
    fn hyphenated_words_are_joined_but_real_hyphens_stay() {
        let text = compose_lines(vec![
            full("the infor-", 0),
            full("mation of a state-of-the-", 1),
            full("art north-facing wall, a North-", 2),
            full("facing one, a Franco-", 3),
            full("Prussian map of COVID-", 4),
            full("19 pages 127–", 5),
            full("226 and a dash -", 6),
            full("here.", 7),
        ]);
        assert_eq!(
            text,
            "the information of a state-of-the-art north-facing wall, a North-facing one, a \
             Franco-Prussian map of COVID-19 pages 127–226 and a dash - here."
        );
    }

    /// A compound whose head is `self-`, `non-` or `well-` keeps its hyphen at a line's end,
    /// unless the document writes it closed up elsewhere.
    #[test]
    fn a_compounds_hyphen_at_a_line_end_stays() {
        let text = compose_lines(vec![
            full("a self-", 0),
            full("consistent and non-", 1),
            full("zero field of well-", 2),
            full("known mosses, nonlinear and non-", 3),
            full("linear alike.", 4),
        ]);
        assert_eq!(
            text,
            "a self-consistent and non-zero field of well-known mosses, nonlinear and \
             nonlinear alike."
        );
    }

    #[test]
    fn a_soft_hyphen_and_a_broken_url_are_glued() {
        let text = compose_lines(vec![
            full("a hyphen\u{AD}", 0),
            full("ation at https://example.org/", 1),
            full("paper.pdf done", 2),
        ]);
        assert_eq!(text, "a hyphenation at https://example.org/paper.pdf done");
    }

    /// A link in a reference wrapped after its own punctuation is one link again: its hyphen
    /// kept (it was dropped as a typesetter's), no space after `.`, `_`, `=` or `?` (one was
    /// put there). A link that ends a sentence is still followed by a space.
    #[test]
    fn a_link_wrapped_at_its_own_punctuation_is_whole() {
        for (first, second, joined) in [
            (
                "at https://example.org/moss-",
                "survey and",
                "at https://example.org/moss-survey and",
            ),
            (
                "at https://doi.org/10.5555/moss.",
                "2023.42 and",
                "at https://doi.org/10.5555/moss.2023.42 and",
            ),
            (
                "at www.example.org/field_",
                "notes and",
                "at www.example.org/field_notes and",
            ),
            (
                "at https://example.org/?page=",
                "2&q=moss and",
                "at https://example.org/?page=2&q=moss and",
            ),
            (
                "at https://example.org/search?",
                "q=moss and",
                "at https://example.org/search?q=moss and",
            ),
            (
                "see https://example.org/moss.",
                "The walls",
                "see https://example.org/moss. The walls",
            ),
            ("a well-", "known wall", "a well-known wall"),
        ] {
            let text = compose_lines(vec![full(first, 0), full(second, 1)]);
            assert_eq!(text, joined);
        }
    }

    #[test]
    fn headings_by_size_or_number_stand_alone_and_the_title_gets_one_hash() {
        let mut title = line("Moss on Walls", 0, 120.0, 250.0);
        title.size = 17.0;
        let mut section = line("1 Introduction", 2, 72.0, 160.0);
        section.size = 14.0;
        let text = compose_lines(vec![
            title,
            section,
            full("Mosses settle on walls and this", 3),
            line("is the body.", 4, 72.0, 150.0),
            line("2.1 The walls", 5, 72.0, 140.0),
            line("We chose walls.", 6, 72.0, 150.0),
        ]);
        assert_eq!(
            text,
            "# Moss on Walls\n\n## 1 Introduction\n\nMosses settle on walls and this is the \
             body.\n\n## 2.1 The walls\n\nWe chose walls."
        );
    }

    #[test]
    fn a_two_line_heading_is_one_heading() {
        let mut a = line("A Long Title That Needs", 0, 100.0, 280.0);
        let mut b = line("Two Lines", 2, 150.0, 220.0);
        (a.size, b.size, b.y) = (17.0, 17.0, a.y + 21.0);
        let body = (4..8).map(|r| full("Body text of the paper, in the size most of it has.", r));
        let composed = compose(&[PageLines {
            lines: [a, b].into_iter().chain(body).collect(),
            aside: Vec::new(),
        }]);
        assert_eq!(
            composed.title.as_deref(),
            Some("A Long Title That Needs Two Lines")
        );
    }

    #[test]
    fn display_lines_and_references_stay_separate() {
        let text = compose_lines(vec![
            full("We describe it with a curve", 0),
            Line {
                widest_gap: 60.0,
                ..line("C(t) = 1 − e −λt , (1)", 1, 120.0, 300.0)
            },
            full("where C is the cover and t the", 2),
            line("time.", 3, 72.0, 100.0),
            full("[1] M. O. Hill. The geographical", 4),
            line("relationships of bryophytes.", 5, 84.0, 300.0),
            line("Journal of Bryology, 1998.", 6, 84.0, 200.0),
            full("[2] M. C. F. Proctor. Ecology of", 7),
            line("mosses on rock. 1980.", 8, 84.0, 200.0),
        ]);
        assert_eq!(
            text,
            "We describe it with a curve\n\nC(t) = 1 − e −λt , (1)\n\nwhere C is the cover \
             and t the time.\n\n[1] M. O. Hill. The geographical relationships of bryophytes. \
             Journal of Bryology, 1998.\n\n[2] M. C. F. Proctor. Ecology of mosses on rock. 1980."
        );
    }

    #[test]
    fn hanging_entries_without_labels_are_one_paragraph_each() {
        let text = compose_lines(vec![
            full("Hill, M. O. (1998). The geograph-", 0),
            line("ical relationships of mosses.", 1, 84.0, 200.0),
            full("Proctor, M. C. F. (1980). Physiolog-", 2),
            line("ical ecology of mosses growing on", 3, 84.0, 300.0),
            line("rock surfaces.", 4, 84.0, 160.0),
        ]);
        assert_eq!(
            text,
            "Hill, M. O. (1998). The geographical relationships of mosses.\n\n\
             Proctor, M. C. F. (1980). Physiological ecology of mosses growing on rock surfaces."
        );
    }

    #[test]
    fn a_paragraph_goes_on_across_a_column_or_a_page_and_sizes_split() {
        let mut next = full("this line ends the paragraph.", 0);
        next.block = 1;
        let mut footnote = line("1 A footnote in small type.", 9, 72.0, 200.0);
        footnote.size = 8.0;
        let pages = [
            PageLines {
                lines: vec![full("A paragraph that goes on at the", 20), footnote],
                aside: Vec::new(),
            },
            PageLines {
                lines: vec![full("top of the next page and then", 0), next],
                aside: vec![full("arXiv:2401.00001v1", 0)],
            },
        ];
        let text = compose(&pages).text;
        assert_eq!(
            text,
            "A paragraph that goes on at the\n\n1 A footnote in small type.\n\ntop of the next \
             page and then this line ends the paragraph.\n\narXiv:2401.00001v1"
        );
    }
}
