//! Running headers, footers and page numbers: lines at the top or the bottom of a page that
//! recur on another page at the same height (digits aside, so "Page 3" matches "Page 4"),
//! lines there that are nothing but a page number, and a page number beside the name of a
//! section ("3 RESULTS 2", as LaTeX's `headings` style sets it).

use std::collections::{HashMap, HashSet};

use super::layout::{Line, PageLines};

/// How many distinct baselines at each end of a page can hold a running header or footer.
const ZONE_ROWS: usize = 2;

/// Drops the running lines of every page, in place.
pub(super) fn drop_running_lines(pages: &mut [PageLines]) {
    let zones: Vec<Vec<usize>> = pages.iter().map(|p| zone(&p.lines)).collect();
    // For each normalised text, where it sits on which page.
    let mut seen: HashMap<String, Vec<(usize, f64)>> = HashMap::new();
    for (page, zone) in zones.iter().enumerate() {
        for &i in zone {
            let line = &pages[page].lines[i];
            seen.entry(key(&line.text))
                .or_default()
                .push((page, line.y));
        }
    }
    // Short lines elsewhere, for a running head that names one of them.
    let elsewhere: HashSet<String> = pages
        .iter()
        .zip(&zones)
        .flat_map(|(p, zone)| {
            (0..p.lines.len())
                .filter(|i| !zone.contains(i))
                .map(|i| &p.lines[i].text)
        })
        .filter(|t| t.len() <= 120)
        .map(|t| key(t))
        .collect();
    for (page, zone) in zones.iter().enumerate() {
        let lines = &pages[page].lines;
        let mut drop: Vec<usize> = zone
            .iter()
            .copied()
            .filter(|&i| {
                let line = &lines[i];
                let tolerance = 3.0_f64.max(0.5 * line.size);
                is_page_number(&line.text)
                    || names_a_line(&line.text, &elsewhere)
                    || seen.get(&key(&line.text)).is_some_and(|places| {
                        places
                            .iter()
                            .any(|&(p, y)| p != page && (y - line.y).abs() <= tolerance)
                    })
            })
            .collect();
        drop.sort_unstable();
        let lines = &mut pages[page].lines;
        for i in drop.into_iter().rev() {
            let gone = lines.remove(i);
            // The space that set the next line apart was the space below the header.
            if let Some(next) = lines.get_mut(i) {
                next.gap_before = gone.gap_before;
            }
        }
    }
}

/// The lines on the first and the last [`ZONE_ROWS`] baselines of a page.
fn zone(lines: &[Line]) -> Vec<usize> {
    let mut ys: Vec<f64> = lines.iter().map(|l| l.y).collect();
    ys.sort_by(f64::total_cmp);
    ys.dedup_by(|b, a| (*b - *a).abs() < 1.0);
    if ys.len() <= 2 * ZONE_ROWS {
        return (0..lines.len()).collect();
    }
    let (top, bottom) = (ys[ZONE_ROWS - 1], ys[ys.len() - ZONE_ROWS]);
    (0..lines.len())
        .filter(|&i| lines[i].y < top + 1.0 || lines[i].y > bottom - 1.0)
        .collect()
}

/// Lower case, runs of digits as one `#`, single spaces.
fn key(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        let mut in_digits = false;
        for c in word.chars() {
            if c.is_ascii_digit() {
                if !in_digits {
                    out.push('#');
                }
                in_digits = true;
            } else {
                in_digits = false;
                out.extend(c.to_lowercase());
            }
        }
    }
    out
}

/// A page number first or last, and the rest of the line a line found elsewhere.
fn names_a_line(text: &str, elsewhere: &HashSet<String>) -> bool {
    let Some((first, rest)) = text.split_once(' ') else {
        return false;
    };
    let (rest_of_last, last) = text.rsplit_once(' ').unwrap_or(("", text));
    (is_page_number(first) && elsewhere.contains(&key(rest)))
        || (is_page_number(last) && elsewhere.contains(&key(rest_of_last)))
}

/// "7", "- 7 -", "Page 7", "7 of 12", "7/12", "vii".
fn is_page_number(text: &str) -> bool {
    let t = text
        .trim()
        .trim_matches(|c: char| c.is_whitespace() || matches!(c, '-' | '–' | '—'))
        .to_lowercase();
    let t = t.strip_prefix("page").map_or(t.as_str(), str::trim_start);
    let (number, total) = match t.split_once(" of ").or_else(|| t.split_once('/')) {
        Some((n, total)) => (n.trim(), Some(total.trim())),
        None => (t, None),
    };
    let digits = |s: &str| (1..=4).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit());
    (digits(number) || is_roman(number)) && total.is_none_or(digits)
}

/// A small Roman numeral (i to xxxix), as front matter is numbered.
fn is_roman(s: &str) -> bool {
    let rest = s.trim_start_matches('x');
    if s.len() - rest.len() > 3 || s.is_empty() {
        return false;
    }
    matches!(
        rest,
        "" | "i" | "ii" | "iii" | "iv" | "v" | "vi" | "vii" | "viii" | "ix"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str, y: f64) -> Line {
        Line {
            text: text.into(),
            x0: 72.0,
            x1: 300.0,
            y,
            size: 10.0,
            first_word: 20.0,
            widest_gap: 0.0,
            block: 0,
            left: 72.0,
            right: 300.0,
            gap_before: false,
        }
    }

    fn page(header: &str, number: &str, body: &[&str]) -> PageLines {
        let mut lines = vec![line(header, 50.0)];
        lines.extend(
            body.iter()
                .enumerate()
                .map(|(k, t)| line(t, 100.0 + 12.0 * k as f64)),
        );
        lines.push(line(number, 780.0));
        PageLines {
            lines,
            aside: Vec::new(),
        }
    }

    fn texts(page: &PageLines) -> Vec<&str> {
        page.lines.iter().map(|l| l.text.as_str()).collect()
    }

    #[test]
    fn repeated_headers_and_page_numbers_go_and_the_body_stays() {
        let body = ["one", "two", "three", "four", "five"];
        let more = ["six", "seven", "eight", "nine"];
        let mut pages = vec![
            page("Journal of Moss, vol. 3, p. 41", "41", &body),
            page("Journal of Moss, vol. 3, p. 42", "- 42 -", &more),
        ];
        drop_running_lines(&mut pages);
        assert_eq!(texts(&pages[0]), body);
        assert_eq!(texts(&pages[1]), more);
    }

    #[test]
    fn a_header_at_another_height_or_only_on_one_page_stays() {
        let body = ["one", "two", "three", "four", "five"];
        let more = ["six", "seven", "eight", "nine", "ten"];
        let mut pages = vec![
            page("Journal of Moss", "Page 1 of 2", &body),
            page("Something else", "ii", &more),
        ];
        pages[1].lines[0].y = 20.0;
        pages[1].lines[0].text = "Journal of Moss".into();
        drop_running_lines(&mut pages);
        assert_eq!(texts(&pages[0])[0], "Journal of Moss");
        assert_eq!(texts(&pages[1])[0], "Journal of Moss");
        assert_eq!(pages[0].lines.len(), 6);
        assert_eq!(pages[1].lines.len(), 6);
    }

    #[test]
    fn a_repeated_line_in_the_middle_of_the_page_is_body_text() {
        let body = ["one", "Results", "three", "four", "five", "six"];
        let mut pages = vec![page("a", "1", &body), page("b", "2", &body)];
        drop_running_lines(&mut pages);
        assert!(texts(&pages[0]).contains(&"Results"));
        assert!(texts(&pages[1]).contains(&"three"));
    }

    #[test]
    fn the_line_below_a_dropped_header_is_not_set_apart_by_it() {
        let mut pages = vec![
            page("Journal of Moss", "1", &["a", "b", "c", "d"]),
            page("Journal of Moss", "2", &["e", "f", "g", "h"]),
        ];
        for p in &mut pages {
            p.lines[1].gap_before = true;
        }
        drop_running_lines(&mut pages);
        assert_eq!(texts(&pages[1]), ["e", "f", "g", "h"]);
        assert!(!pages[1].lines[0].gap_before);
    }

    #[test]
    fn a_page_number_beside_a_section_name_is_a_running_head() {
        let mut pages = vec![
            page(
                "The first page",
                "1",
                &["one", "2 Methods", "three", "four", "five"],
            ),
            page("2 METHODS 2", "", &["six", "seven", "eight", "nine"]),
        ];
        drop_running_lines(&mut pages);
        assert_eq!(texts(&pages[1]), ["six", "seven", "eight", "nine", ""]);
        assert!(texts(&pages[0]).contains(&"2 Methods"));
    }

    #[test]
    fn page_numbers() {
        for yes in [
            "7",
            " 12 ",
            "– 3 –",
            "Page 9",
            "page 9 of 10",
            "3/12",
            "vii",
            "xiv",
        ] {
            assert!(is_page_number(yes), "{yes}");
        }
        for no in ["mild", "7 cats", "12345", "Figure 3", "", "xxxxi", "vv"] {
            assert!(!is_page_number(no), "{no}");
        }
        assert_eq!(key("Journal  of Moss 2024, p.41"), "journal of moss #, p.#");
    }
}
