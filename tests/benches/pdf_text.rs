//! PDF text on the LaTeX fixtures (`tests/data/pdf/*.pdf`, made from the `.tex` beside them):
//! the previous extractor (pdf-extract's `PlainTextOutput`, page by page), the current one
//! (positions, columns, running headers, paragraphs) and poppler's `pdftotext`, if installed.
//!
//! Run: `cargo bench -p gleaner-tests --bench pdf_text` (BENCHMARKS.md §11). Each extractor's
//! output is written to `target/pdf-text/` for reading; with `PDF_TEXT_VERBOSE=1` the sentences
//! an extractor missed or put out of order are listed.
//!
//! - Sentences: the source's sentences (markup stripped, math left out) found in the output as
//!   written (whitespace aside), and found at all when only letters and digits are compared
//!   (so a hyphen left at a line end does not count against the reading order); "in order" is
//!   the share of consecutive source sentences whose matches come one after the other.
//! - Leaks: running-header text and lines that are only a page number.
//! - Paragraphs: the source's prose paragraphs found whole on one output line, and output
//!   lines per source paragraph (1.0 when every paragraph is one line).
//! - Speed: in-process median of 7 rounds of at least 0.5 s, the two extractors in turn;
//!   pdftotext per run including its process start (median of 11).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use gleaner::engine::extract::extract;

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/pdf")
}

/// Fixture name, and the running-header text its pages carry.
const FIXTURES: [(&str, &[&str]); 2] = [
    (
        "two-column",
        &["Gleaner Fixture Journal", "Fieldworker and Quadrat"],
    ),
    // `\pagestyle{headings}` sets the section name in capitals beside the page number.
    ("one-column", &["RESULTS"]),
];

/// The source's paragraphs (headings, reference entries and footnotes included), the prose
/// paragraphs among them (no math), and the footnotes, which are read at the foot of the page.
struct Source {
    paragraphs: Vec<String>,
    prose: Vec<String>,
    notes: Vec<String>,
}

/// `\cmd{x}` → `x` for the text commands the fixtures use.
fn unwrap_commands(s: &str) -> String {
    let mut out = s.to_string();
    for cmd in ["\\emph{", "\\textbf{", "\\textit{"] {
        while let Some(start) = out.find(cmd) {
            let Some(len) = out[start..].find('}') else {
                break;
            };
            let inner = out[start + cmd.len()..start + len].to_string();
            out.replace_range(start..start + len + 1, &inner);
        }
    }
    out.replace('~', " ").replace("--", "–").replace("\\,", " ")
}

fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `body` without its `\footnote{…}`s, and their texts.
fn take_footnotes(body: &str) -> (String, Vec<String>) {
    let mut rest = body.to_string();
    let mut notes = Vec::new();
    while let Some(start) = rest.find("\\footnote{") {
        let open = start + "\\footnote{".len();
        let mut depth = 1;
        let end = rest[open..]
            .char_indices()
            .find(|&(_, c)| {
                depth += match c {
                    '{' => 1,
                    '}' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .map_or(rest.len(), |(i, _)| open + i);
        notes.push(squeeze(&unwrap_commands(&rest[open..end])));
        rest.replace_range(start..(end + 1).min(rest.len()), "");
    }
    (rest, notes)
}

fn source(tex: &str) -> Source {
    let body = tex
        .split_once("\\begin{document}")
        .and_then(|(_, b)| b.split_once("\\end{document}"))
        .map_or(tex, |(b, _)| b);
    let (body, notes) = take_footnotes(body);
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut in_math = false;
    let mut bib = 0;
    let flush = |current: &mut String, paragraphs: &mut Vec<String>| {
        let p = squeeze(current);
        if !p.is_empty() {
            paragraphs.push(p);
        }
        current.clear();
    };
    for line in body.lines() {
        let t = line.trim();
        if t.starts_with('%') {
            continue;
        }
        if t.starts_with("\\begin{equation}") {
            in_math = true;
        }
        if in_math {
            in_math = !t.starts_with("\\end{equation}");
            continue;
        }
        if t.is_empty() {
            flush(&mut current, &mut paragraphs);
        } else if let Some(rest) = t
            .strip_prefix("\\section{")
            .or(t.strip_prefix("\\subsection{"))
        {
            flush(&mut current, &mut paragraphs);
            paragraphs.push(rest.trim_end_matches('}').to_string());
        } else if let Some(rest) = t.strip_prefix("\\bibitem{") {
            flush(&mut current, &mut paragraphs);
            bib += 1;
            let text = rest.split_once('}').map_or("", |(_, text)| text);
            current = format!("[{bib}] {}", unwrap_commands(text));
        } else if let Some(rest) = t.strip_prefix("\\item") {
            flush(&mut current, &mut paragraphs);
            current = unwrap_commands(rest);
        } else if !t.starts_with('\\') && t != "]" {
            current.push(' ');
            current.push_str(&unwrap_commands(t));
        }
    }
    flush(&mut current, &mut paragraphs);
    let prose = paragraphs
        .iter()
        .filter(|p| !p.contains(['$', '\\']))
        .cloned()
        .collect();
    paragraphs.extend(notes.iter().cloned());
    Source {
        paragraphs,
        prose,
        notes,
    }
}

/// Sentences of a paragraph: split after `.`, `!` or `?` when a capital follows and the word
/// before is not an initial.
fn sentences(paragraph: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes: Vec<(usize, char)> = paragraph.char_indices().collect();
    for k in 0..bytes.len() {
        let (i, c) = bytes[k];
        if !matches!(c, '.' | '!' | '?') {
            continue;
        }
        let next_is_capital = bytes.get(k + 1).is_some_and(|&(_, c)| c == ' ')
            && bytes.get(k + 2).is_some_and(|&(_, c)| c.is_uppercase());
        let word = paragraph[start..i].rsplit(' ').next().unwrap_or("");
        if next_is_capital && word.chars().filter(|c| c.is_alphabetic()).count() > 1 {
            out.push(paragraph[start..=i].trim().to_string());
            start = i + 1;
        }
    }
    if start < paragraph.len() {
        out.push(paragraph[start..].trim().to_string());
    }
    out.into_iter().filter(|s| s.len() > 12).collect()
}

fn alnum(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

struct Scores {
    exact: f64,
    lenient: f64,
    in_order: f64,
    header_leaks: usize,
    number_lines: usize,
    whole_paragraphs: f64,
    lines_per_paragraph: f64,
}

fn score(text: &str, src: &Source, headers: &[&str]) -> Scores {
    let flat = squeeze(text);
    let flat_alnum = alnum(text);
    let all: Vec<String> = src.prose.iter().flat_map(|p| sentences(p)).collect();
    let exact = all.iter().filter(|s| flat.contains(s.as_str())).count();
    // Each sentence looked for after the one before it first, so a short sentence that also
    // occurs earlier (a title word) is not taken for a jump back.
    let mut from = 0;
    let positions: Vec<Option<usize>> = all
        .iter()
        .map(|s| {
            let needle = alnum(s);
            let at = flat_alnum[from..]
                .find(&needle)
                .map(|i| i + from)
                .or_else(|| flat_alnum.find(&needle));
            if let Some(at) = at {
                from = at;
            }
            at
        })
        .collect();
    let lenient = positions.iter().flatten().count();
    let pairs = positions
        .windows(2)
        .filter(|w| w[0].is_some() && w[1].is_some());
    let (ordered, total) = pairs.fold((0, 0), |(o, t), w| (o + usize::from(w[0] < w[1]), t + 1));
    if std::env::var_os("PDF_TEXT_VERBOSE").is_some() {
        for (k, s) in all.iter().enumerate() {
            if positions[k].is_none() {
                println!("  missed: {s}");
            } else if k > 0 && positions[k - 1].is_some() && positions[k - 1] > positions[k] {
                println!("  out of order: {s}");
            }
        }
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let whole = src
        .prose
        .iter()
        .chain(&src.notes)
        .filter(|p| lines.iter().any(|l| squeeze(l).contains(p.as_str())))
        .count();
    Scores {
        exact: exact as f64 / all.len() as f64,
        lenient: lenient as f64 / all.len() as f64,
        in_order: ordered as f64 / f64::from(total.max(1)),
        header_leaks: headers.iter().map(|h| text.matches(h).count()).sum(),
        number_lines: lines
            .iter()
            .filter(|l| l.len() <= 3 && l.bytes().all(|b| b.is_ascii_digit()))
            .count(),
        whole_paragraphs: whole as f64 / (src.prose.len() + src.notes.len()) as f64,
        lines_per_paragraph: lines.len() as f64 / src.paragraphs.len() as f64,
    }
}

/// What Gleaner did before issue 22: pdf-extract's plain text output, page by page, pages
/// joined by a blank line, trailing spaces and runs of blank lines squeezed.
fn previous(body: &[u8]) -> String {
    let pdf = pdf_extract::Document::load_mem(body).expect("the fixture loads");
    let mut pages = Vec::new();
    for &number in pdf.get_pages().keys() {
        let mut page = String::new();
        let mut out = pdf_extract::PlainTextOutput::new(&mut page);
        if pdf_extract::output_doc_page(&pdf, &mut out, number).is_ok() {
            let mut tidy = String::new();
            let mut blank = false;
            for line in page.lines().map(str::trim_end) {
                if line.trim().is_empty() {
                    blank = !tidy.is_empty();
                    continue;
                }
                if !tidy.is_empty() {
                    tidy.push_str(if blank { "\n\n" } else { "\n" });
                }
                blank = false;
                tidy.push_str(line);
            }
            pages.push(tidy);
        }
    }
    pages.join("\n\n")
}

fn current(body: &[u8]) -> String {
    extract(body, Some("application/pdf"), "")
        .expect("the fixture extracts")
        .text
}

fn pdftotext(path: &Path, layout: bool) -> Option<String> {
    let mut cmd = Command::new("pdftotext");
    if layout {
        cmd.arg("-layout");
    }
    let out = cmd.arg(path).arg("-").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Words wrapped into lines of at most `width` characters.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = vec![String::new()];
    for word in text.split_whitespace() {
        let last = lines.last_mut().expect("one line");
        if !last.is_empty() && last.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

/// A one-page PDF (Helvetica 10 pt) with `left` and `right` set in two columns, its content
/// stream drawing them row by row across both columns, right column first: the order a
/// PDF made by a layout program that does not group its text by column has.
fn across_columns(left: &str, right: &str) -> Vec<u8> {
    use pdf_extract::content::{Content, Operation};
    use pdf_extract::{Dictionary, Object, Stream};

    let dict = |entries: Vec<(&str, Object)>| {
        let mut d = Dictionary::new();
        for (k, v) in entries {
            d.set(k, v);
        }
        d
    };
    let (left, right) = (wrap(left, 44), wrap(right, 44));
    let mut doc = pdf_extract::Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dict(vec![
        ("Type", "Font".into()),
        ("Subtype", "Type1".into()),
        ("BaseFont", "Helvetica".into()),
    ]));
    let fonts = dict(vec![("F1", font_id.into())]);
    let resources_id = doc.add_object(dict(vec![("Font", fonts.into())]));
    let mut operations = Vec::new();
    for row in 0..left.len().max(right.len()) {
        for (x, column) in [(320.0, &right), (72.0, &left)] {
            if let Some(text) = column.get(row) {
                let y = 720.0 - 12.0 * row as f64;
                operations.extend([
                    Operation::new("BT", vec![]),
                    Operation::new("Tf", vec!["F1".into(), 10.into()]),
                    Operation::new("Td", vec![x.into(), y.into()]),
                    Operation::new("Tj", vec![Object::string_literal(text.as_str())]),
                    Operation::new("ET", vec![]),
                ]);
            }
        }
    }
    let content = Content { operations }.encode().expect("content encodes");
    let content_id = doc.add_object(Stream::new(Dictionary::new(), content));
    let media_box = vec![0.into(), 0.into(), 612.into(), 792.into()];
    let page_id = doc.add_object(dict(vec![
        ("Type", "Page".into()),
        ("Parent", pages_id.into()),
        ("Contents", content_id.into()),
        ("Resources", resources_id.into()),
        ("MediaBox", media_box.into()),
    ]));
    let pages = dict(vec![
        ("Type", "Pages".into()),
        ("Kids", vec![page_id.into()].into()),
        ("Count", 1.into()),
    ]);
    doc.objects.insert(pages_id, pages.into());
    let catalog = dict(vec![("Type", "Catalog".into()), ("Pages", pages_id.into())]);
    let catalog_id = doc.add_object(catalog);
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("the PDF is written");
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median seconds per call of `a` and of `b`: 7 rounds each of at least 0.5 s, taken in turn so
/// that a change in the machine's load weighs on both alike.
fn per_call(mut a: impl FnMut(), mut b: impl FnMut()) -> (f64, f64) {
    let round = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        let mut n = 0u32;
        while start.elapsed() < Duration::from_millis(500) || n < 3 {
            f();
            n += 1;
        }
        start.elapsed().as_secs_f64() / f64::from(n)
    };
    a();
    b();
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        ta.push(round(&mut a));
        tb.push(round(&mut b));
    }
    (median(ta), median(tb))
}

fn main() {
    let out_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/pdf-text");
    std::fs::create_dir_all(&out_dir).expect("output folder");
    let has_pdftotext = pdftotext(&data().join("two-column.pdf"), false).is_some();
    let mut quality = Vec::new();
    let mut speed = Vec::new();
    let mut cases: Vec<(String, PathBuf, Source, &[&str])> = FIXTURES
        .iter()
        .map(|&(name, headers)| {
            let tex = std::fs::read_to_string(data().join(format!("{name}.tex"))).expect("source");
            (
                name.to_string(),
                data().join(format!("{name}.pdf")),
                source(&tex),
                headers,
            )
        })
        .collect();
    // The first two long paragraphs of the two-column fixture, one per column.
    let two = source(&std::fs::read_to_string(data().join("two-column.tex")).expect("source"));
    let mut long = two.prose.into_iter().filter(|p| p.len() > 300);
    let (left, right) = (
        long.next().expect("a paragraph"),
        long.next().expect("another"),
    );
    let across = out_dir.join("across-columns.pdf");
    std::fs::write(&across, across_columns(&left, &right)).expect("write the PDF");
    let src = Source {
        paragraphs: vec![left.clone(), right.clone()],
        prose: vec![left, right],
        notes: Vec::new(),
    };
    cases.push((
        "across-columns (stream row by row)".into(),
        across,
        src,
        &[],
    ));
    for (name, pdf_path, src, headers) in cases {
        let body = std::fs::read(&pdf_path).expect("fixture PDF");
        let pages = pdf_extract::Document::load_mem(&body)
            .expect("loads")
            .get_pages()
            .len();
        let mut outputs = vec![
            ("previous (PlainTextOutput)", previous(&body)),
            ("current (layout)", current(&body)),
        ];
        if has_pdftotext {
            for layout in [false, true] {
                let label = if layout {
                    "pdftotext -layout"
                } else {
                    "pdftotext"
                };
                outputs.push((label, pdftotext(&pdf_path, layout).expect("pdftotext runs")));
            }
        }
        let sentences: usize = src.prose.iter().map(|p| sentences(p).len()).sum();
        for (label, text) in &outputs {
            let file = label.split(' ').next().unwrap_or(label).to_string()
                + if label.contains("-layout") {
                    "-layout"
                } else {
                    ""
                };
            let stem = name.split(' ').next().unwrap_or(&name);
            std::fs::write(out_dir.join(format!("{stem}.{file}.txt")), text).expect("write");
            if std::env::var_os("PDF_TEXT_VERBOSE").is_some() {
                println!("{name}, {label}:");
            }
            let s = score(text, &src, headers);
            quality.push(format!(
                "| {name} ({pages} p., {sentences} sentences, {} paragraphs) | {label} | {:.0}% | {:.0}% | {:.0}% | {} | {} | {:.0}% | {:.2} |",
                src.paragraphs.len(),
                100.0 * s.exact,
                100.0 * s.lenient,
                100.0 * s.in_order,
                s.header_leaks,
                s.number_lines,
                100.0 * s.whole_paragraphs,
                s.lines_per_paragraph,
            ));
        }
        let mb = body.len() as f64 / 1e6;
        let mut row = |label: &str, secs: f64| {
            speed.push(format!(
                "| {name} ({:.0} KB, {pages} p.) | {label} | {:.2} | {:.2} |",
                body.len() as f64 / 1024.0,
                mb / secs,
                secs * 1000.0 / pages as f64
            ));
        };
        let (before, now) = per_call(
            || {
                std::hint::black_box(previous(&body));
            },
            || {
                std::hint::black_box(current(&body));
            },
        );
        row("previous (PlainTextOutput)", before);
        row("current (layout)", now);
        if has_pdftotext {
            let runs = (0..11).map(|_| {
                let start = Instant::now();
                std::hint::black_box(pdftotext(&pdf_path, true));
                start.elapsed().as_secs_f64()
            });
            row("pdftotext -layout (own process)", median(runs.collect()));
        }
    }
    if !has_pdftotext {
        println!("(pdftotext not found: install poppler-utils to compare with it)");
    }
    println!("\n## Reading order and paragraphs\n");
    println!(
        "| fixture | extractor | sentences as written | sentences, letters only | in order | header leaks | page-number lines | paragraphs whole | lines per paragraph |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for row in quality {
        println!("{row}");
    }
    println!("\n## Speed (release build)\n");
    println!("| fixture | extractor | MB/s | ms per page |");
    println!("|---|---|---:|---:|");
    for row in speed {
        println!("{row}");
    }
    println!("\nOutputs: {}", out_dir.display());
}
