//! PDF text through `pdf-extract`: each page's glyphs collected with their positions
//! ([`glyphs`]), put in reading order, columns included ([`layout`]), running headers and page
//! numbers dropped ([`running`]), lines joined into paragraphs with headings on their own
//! ([`paragraphs`]). The Info title, else a title-sized heading, else the first line, is the
//! title. Panics of the PDF crates are caught and reported as "cannot parse".

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::{DocKind, Document, ExtractError, clean, tidy_text};

mod budget;
mod glyphs;
mod layout;
mod paragraphs;
mod running;

pub(super) fn extract_pdf(body: &[u8]) -> Result<Document, ExtractError> {
    // pdf-extract and lopdf still panic on some malformed files (unwraps on
    // fonts, arithmetic overflow); one bad PDF must not take the worker down.
    // This relies on panic = "unwind", the default.
    catch_unwind(AssertUnwindSafe(|| extract_pdf_inner(body))).unwrap_or_else(|panic| {
        let detail = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(damaged(&format!("the PDF reader crashed ({detail})")))
    })
}

fn damaged(detail: &dyn std::fmt::Display) -> ExtractError {
    ExtractError::Unparsable(format!("the PDF is damaged or truncated: {detail}"))
}

fn encrypted() -> ExtractError {
    ExtractError::Unparsable("the PDF is encrypted".into())
}

fn extract_pdf_inner(body: &[u8]) -> Result<Document, ExtractError> {
    use pdf_extract::{Document as Pdf, Error as PdfError};

    if budget::object_stream_bytes(body, budget::DOCUMENT_BYTES) > budget::DOCUMENT_BYTES {
        return Err(ExtractError::Unparsable(
            "the PDF's object streams inflate to more than 256 MiB; Gleaner does not read it \
             (a crafted file, not a paper)"
                .into(),
        ));
    }
    let mut pdf = Pdf::load_mem(body).map_err(|e| match e {
        PdfError::Decryption(_) | PdfError::InvalidPassword => encrypted(),
        e => damaged(&e),
    })?;
    // Owner-password-only PDFs (copy/print restrictions) open in every viewer
    // with the empty user password, so they count as readable.
    if pdf.is_encrypted() && pdf.decrypt("").is_err() {
        return Err(encrypted());
    }

    let pages = pdf.get_pages();
    if pages.is_empty() {
        return Err(damaged(&"no pages could be found"));
    }
    budget::blank_images(&mut pdf);
    // Page by page, so one broken page costs that page rather than the whole
    // document, and the first page is available for the title fallback.
    let mut laid_out = Vec::with_capacity(pages.len());
    let mut first_error = None;
    let (mut budget, mut refused, mut stopped_at) = (budget::Budget::default(), Vec::new(), None);
    for (&number, &page) in &pages {
        // Measured before pdf-extract inflates and parses it (see `budget`).
        if let budget::PageCost::Refused(why) = budget.page(&pdf, page) {
            tracing::warn!(
                page = number,
                "a PDF page {}; its text is left out",
                why.what()
            );
            refused.push(why);
            continue;
        }
        if budget.total > budget::DOCUMENT_BYTES {
            tracing::warn!(
                page = number,
                "a PDF's pages draw more than 256 MiB; the rest is left out"
            );
            stopped_at = Some(number);
            break;
        }
        let mut collector = glyphs::GlyphCollector::default();
        match pdf_extract::output_doc_page(&pdf, &mut collector, number) {
            Ok(()) => laid_out.push(layout::lay_out(&collector.page)),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    running::drop_running_lines(&mut laid_out);
    let composed = paragraphs::compose(&laid_out);
    let mut text = tidy_text(&composed.text);
    if let Some(page) = stopped_at
        && !text.is_empty()
    {
        text.push_str(&format!(
            "\n\n*Gleaner stopped reading this PDF at page {page} of {}: its pages draw more \
             than 256 MiB of content. Open the PDF for the rest.*\n",
            pages.len()
        ));
    }
    if text.is_empty() {
        return Err(match (first_error, refused.first()) {
            (None, Some(why)) if refused.len() == pages.len() => ExtractError::Unparsable(format!(
                "every page of the PDF {}; Gleaner does not read such pages (a drawing \
                     or a crafted file, not a paper)",
                why.what()
            )),
            (None, Some(why)) => ExtractError::Unparsable(format!(
                "{} of the PDF's pages cannot be read safely (the first {}), and the others \
                 have no text",
                refused.len(),
                why.what()
            )),
            (Some(e), _) => damaged(&e),
            (None, None) => ExtractError::Unparsable(
                "the PDF has no text layer (it may be scanned images)".into(),
            ),
        });
    }

    let first_line = || {
        laid_out
            .first()
            .and_then(|page| page.lines.iter().find_map(|l| clean(&l.text)))
    };
    let title = pdf_info_title(&pdf).or_else(|| {
        composed
            .title
            .as_deref()
            .and_then(clean)
            .or_else(first_line)
            .map(|line| line.chars().take(200).collect())
    });
    Ok(Document {
        title,
        text,
        ..Document::empty(DocKind::Pdf)
    })
}

fn pdf_info_title(pdf: &pdf_extract::Document) -> Option<String> {
    let info = pdf.trailer.get(b"Info").ok()?;
    let (_, info) = pdf.dereference(info).ok()?;
    let title = info.as_dict().ok()?.get(b"Title").ok()?;
    let (_, title) = pdf.dereference(title).ok()?;
    let title = pdf_extract::decode_text_string(title).ok()?;
    clean(&title.replace('\0', "")).filter(|t| !made_by_a_program(t))
}

/// An Info title a program wrote in place of one ("Microsoft Word - draft_v3.docx",
/// "paper.dvi", "untitled"): the page's own heading names the paper better.
fn made_by_a_program(title: &str) -> bool {
    let lower = title.trim().to_lowercase();
    let file = [
        ".doc", ".docx", ".dvi", ".pdf", ".tex", ".ps", ".rtf", ".odt", ".indd", ".qxd", ".pptx",
        ".ppt", ".xls", ".xlsx", ".txt",
    ]
    .iter()
    .any(|ext| lower.ends_with(ext));
    let program = ["microsoft word - ", "microsoft powerpoint - ", "untitled"]
        .iter()
        .any(|p| lower.starts_with(p));
    file || program
        || matches!(lower.as_str(), "title" | "document" | "slide 1")
        || !lower.chars().any(char::is_alphabetic)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tests/data/pdf/two-column.pdf`, made by pdflatex from `two-column.tex` beside it.
    const TWO_COLUMN: &[u8] = include_bytes!("../../../../../tests/data/pdf/two-column.pdf");
    const TWO_COLUMN_TEX: &str = include_str!("../../../../../tests/data/pdf/two-column.tex");

    fn two_column() -> Document {
        extract_pdf(TWO_COLUMN).expect("the fixture extracts")
    }

    fn paragraphs(text: &str) -> Vec<&str> {
        text.split("\n\n").collect()
    }

    /// The plain prose paragraphs of the LaTeX source (those without markup), as one line each.
    fn source_paragraphs(tex: &str) -> Vec<String> {
        let body = tex
            .split_once("\\begin{document}")
            .map_or(tex, |(_, body)| body);
        body.split("\n\n")
            .map(|chunk| {
                chunk
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("\\section"))
                    .filter(|l| !l.trim_start().starts_with("\\subsection"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|p| !p.trim().is_empty() && !p.contains(['\\', '$', '{', '%']))
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    }

    #[test]
    fn every_prose_paragraph_of_the_source_is_one_paragraph() {
        let doc = two_column();
        let out = paragraphs(&doc.text);
        let source = source_paragraphs(TWO_COLUMN_TEX);
        assert!(source.len() >= 15, "{source:#?}");
        for p in &source {
            assert!(
                out.contains(&p.as_str()),
                "missing paragraph:\n{p}\n\nin:\n{}",
                doc.text
            );
        }
    }

    #[test]
    fn running_headers_and_page_numbers_are_gone() {
        let text = two_column().text;
        assert!(!text.contains("Gleaner Fixture Journal"), "{text}");
        assert!(!text.contains("Fieldworker and Quadrat"), "{text}");
        for p in paragraphs(&text) {
            assert!(
                !p.trim().chars().all(|c| c.is_ascii_digit()),
                "{p:?} in {text}"
            );
        }
    }

    #[test]
    fn words_hyphenated_at_line_ends_are_whole_again() {
        let text = two_column().text;
        // pdftotext shows these broken at a line end in the PDF.
        for word in [
            "structures in upland",
            "Every wall",
            "fifteen minutes",
            "Characterisation of the surface",
            "Interdisciplinary comparisons",
            "The photosynthetically active",
            "practical lesson",
            "the loggers were",
            "The geographical relationships",
            "establishment of bryophytes",
        ] {
            assert!(text.contains(word), "{word:?} in {text}");
        }
        for broken in ["Interdisci-", "struc-", "pho-", "geo-"] {
            assert!(!text.contains(broken), "{broken:?} in {text}");
        }
        // Broken at its own hyphen, and written with it elsewhere: the hyphen stays.
        assert!(
            text.contains("stays wet. North-facing faces are colonised"),
            "{text}"
        );
    }

    #[test]
    fn columns_are_read_left_then_right_and_across_pages() {
        let text = two_column().text;
        let at = |s: &str| {
            text.find(s)
                .unwrap_or_else(|| panic!("{s:?} missing in {text}"))
        };
        // Page 1: the left column, then the right one; page 2 likewise.
        assert!(at("Dry stone walls are among") < at("We chose two hundred walls"));
        assert!(at("north-facing faces behave") < at("We chose two hundred walls"));
        assert!(at("Colonisation was unmistakably faster") < at("Our results support the view"));
        assert!(at("the larger feather mosses") < at("Our results support the view"));
        // A sentence that runs from the foot of page 1's right column to the top of page 2.
        assert!(
            text.contains(
                "which we call the wetness duration, and the daily range of surface temperature."
            ),
            "{text}"
        );
    }

    /// A citation or a section number at the start of a line mid-sentence does not start a
    /// paragraph (IEEE-style papers cite as `[12]`, and "Section" / "4." wraps often).
    #[test]
    fn a_label_mid_sentence_does_not_split_the_paragraph() {
        let lines = [
            "Mosses were counted on every wall, as the survey reported by",
            "[12] and the later work of [13] describe it, and on the walls",
            "rebuilt after the big flood, as we described in the closing Section",
            "4. The data are available from the station on request, too.",
            "[14] Smith, J. Mosses of the northern walls. Flora 3, 2001.",
        ];
        let drawn: Vec<(f64, f64, &str)> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| (72.0, 700.0 - 12.0 * i as f64, *l))
            .collect();
        let text = extract_pdf(&pdf_drawing(&drawn)).expect("extracts").text;
        let paras = paragraphs(&text);
        assert!(
            paras[0].contains("reported by [12] and the later work")
                && paras[0].contains("closing Section 4. The data"),
            "{paras:#?}"
        );
        assert!(
            paras[1].starts_with("[14] Smith"),
            "after a full stop, a label starts: {paras:#?}"
        );
        // A reference that ends with its DOI's link, and runs to the margin, as ACM's do.
        let refs = [
            (
                72.0,
                700.0,
                "[14] Smith, J. Mosses of walls. Flora 3, 2001, 1-9.",
            ),
            (
                72.0,
                688.0,
                "[15] Jones, K. Lichens. Flora 5. https://doi.org/10.1000/flora.5.17",
            ),
            (
                72.0,
                676.0,
                "[16] Brown, A. Ferns in the joints of old walls.",
            ),
        ];
        let text = extract_pdf(&pdf_drawing(&refs)).expect("extracts").text;
        let paras = paragraphs(&text);
        assert_eq!(paras.len(), 3, "one paragraph a reference: {paras:#?}");
    }

    /// A figure's big panel letters on page 2 do not outsize the title on page 1.
    #[test]
    fn the_title_is_the_first_pages_largest_words() {
        let one = "Mosses settle first on a rebuilt wall, and their cover tells us much.";
        let two = "The second page shows the two panels of the figure side by side.";
        let first = sized_stream(&[
            (72.0, 700.0, 18, "Moss on Walls Again"),
            (72.0, 660.0, 10, one),
        ]);
        let second = sized_stream(&[
            (100.0, 700.0, 24, "A"),
            (300.0, 700.0, 24, "B"),
            (72.0, 660.0, 10, two),
        ]);
        let doc = extract_pdf(&pdf_of_pages(vec![first, second])).expect("extracts");
        assert_eq!(
            doc.title.as_deref(),
            Some("Moss on Walls Again"),
            "{}",
            doc.text
        );
        assert!(
            doc.text.starts_with("# Moss on Walls Again"),
            "{}",
            doc.text
        );
    }

    /// An Info title a word processor wrote gives way to the first line; a real one stays.
    #[test]
    fn an_info_title_a_program_made_up_gives_way_to_the_page() {
        let with_info = |title: &str| {
            let bytes = pdf_drawing(&[(72.0, 700.0, "Wall Mosses Revisited")]);
            let mut doc = pdf_extract::Document::load_mem(&bytes).expect("load");
            let mut info = pdf_extract::Dictionary::new();
            info.set("Title", pdf_extract::Object::string_literal(title));
            let info = doc.add_object(info);
            doc.trailer.set("Info", info);
            let mut out = Vec::new();
            doc.save_to(&mut out).expect("save");
            extract_pdf(&out).expect("extracts").title
        };
        for junk in [
            "Microsoft Word - draft_v3.docx",
            "paper.dvi",
            "Untitled-1",
            "12345",
        ] {
            assert_eq!(
                with_info(junk).as_deref(),
                Some("Wall Mosses Revisited"),
                "{junk}"
            );
        }
        assert_eq!(
            with_info("Mosses on Rebuilt Walls").as_deref(),
            Some("Mosses on Rebuilt Walls")
        );
    }

    #[test]
    fn title_headings_abstract_equation_and_references() {
        let doc = two_column();
        let title = "Moss on Old Stone Walls: Colonisation Rates and Microclimate";
        assert_eq!(doc.title.as_deref(), Some(title));
        let out = paragraphs(&doc.text);
        assert_eq!(out[0], format!("# {title}"));
        // The two authors side by side, each read with their place, before the centred heading.
        assert_eq!(
            out[1..4],
            [
                "Ada Fieldworker Northern Field Station",
                "Ben Quadrat Coastal Herbarium",
                "Abstract"
            ]
        );
        for heading in [
            "## 1 Introduction",
            "## 2 Study Sites and Methods",
            "## 2.1 The walls",
            "## 2.3 Growth model",
            "## 6 Conclusion",
            "## References",
        ] {
            assert!(out.contains(&heading), "{heading:?} in {out:#?}");
        }
        assert!(
            out.iter()
                .any(|p| p.starts_with("We surveyed two hundred dry stone walls")
                    && p.ends_with("the number of hours the surface stayed wet after rain.")),
            "{out:#?}"
        );
        let equation = out
            .iter()
            .find(|p| p.starts_with("C(t) = C"))
            .unwrap_or_else(|| panic!("no equation in {out:#?}"));
        for symbol in ["=", "max", "1 −", "λt", "(1)"] {
            assert!(equation.contains(symbol), "{symbol:?} in {equation:?}");
        }
        for entry in [
            "[1] M. O. Hill and C. D. Preston. The geographical relationships of British and \
             Irish bryophytes. Journal of Bryology, 20:127–226, 1998.",
            "[2] M. C. F. Proctor. Physiological ecology of mosses growing on rock surfaces. \
             Annals of Botany, 46:91–103, 1980.",
            "[3] F. Rose and P. W. James. Lichens and mosses of walls and buildings in the \
             northern uplands. Field Studies, 4:33–58, 1974.",
            "[4] A. Stone. Wetness duration and the establishment of bryophytes on stone. \
             Journal of Applied Ecology, 12:401–415, 2003.",
        ] {
            assert!(out.contains(&entry), "{entry:?} in {out:#?}");
        }
    }

    /// A one-page PDF in Helvetica 10 pt, each `(x, y, text)` drawn in the order given.
    fn pdf_drawing(lines: &[(f64, f64, &str)]) -> Vec<u8> {
        pdf_of_pages(vec![text_stream(lines)])
    }

    /// A page's content drawing each `(x, y, text)` in Helvetica 10 pt.
    fn text_stream(lines: &[(f64, f64, &str)]) -> pdf_extract::Stream {
        let sized: Vec<(f64, f64, i64, &str)> =
            lines.iter().map(|&(x, y, t)| (x, y, 10, t)).collect();
        sized_stream(&sized)
    }

    /// A page's content drawing each `(x, y, size, text)` in Helvetica.
    fn sized_stream(lines: &[(f64, f64, i64, &str)]) -> pdf_extract::Stream {
        use pdf_extract::content::{Content, Operation};
        use pdf_extract::{Dictionary, Object, Stream};
        let mut operations = Vec::new();
        for &(x, y, size, text) in lines {
            operations.extend([
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), size.into()]),
                Operation::new("Td", vec![x.into(), y.into()]),
                Operation::new("Tj", vec![Object::string_literal(text)]),
                Operation::new("ET", vec![]),
            ]);
        }
        let content = Content { operations }.encode().expect("content encodes");
        Stream::new(Dictionary::new(), content)
    }

    /// A PDF of one page for each content stream, with Helvetica as `F1`.
    fn pdf_of_pages(contents: Vec<pdf_extract::Stream>) -> Vec<u8> {
        pdf_with_forms(contents, Vec::new())
    }

    /// As [`pdf_of_pages`], with each of `forms` a form XObject `Fx0`, `Fx1`… in the one
    /// resource dictionary every page shares.
    fn pdf_with_forms(
        contents: Vec<pdf_extract::Stream>,
        forms: Vec<pdf_extract::Stream>,
    ) -> Vec<u8> {
        use pdf_extract::{Dictionary, Object};

        let dict = |entries: Vec<(&str, Object)>| {
            let mut d = Dictionary::new();
            for (k, v) in entries {
                d.set(k, v);
            }
            d
        };
        let mut doc = pdf_extract::Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font_id = doc.add_object(dict(vec![
            ("Type", "Font".into()),
            ("Subtype", "Type1".into()),
            ("BaseFont", "Helvetica".into()),
        ]));
        let mut xobjects = Dictionary::new();
        for (i, mut form) in forms.into_iter().enumerate() {
            form.dict.set("Type", Object::Name(b"XObject".to_vec()));
            form.dict.set("Subtype", Object::Name(b"Form".to_vec()));
            form.dict
                .set("BBox", vec![0.into(), 0.into(), 612.into(), 792.into()]);
            xobjects.set(format!("Fx{i}"), doc.add_object(form));
        }
        let resources_id = doc.add_object(dict(vec![
            ("Font", dict(vec![("F1", font_id.into())]).into()),
            ("XObject", xobjects.into()),
        ]));
        let mut kids: Vec<Object> = Vec::new();
        for content in contents {
            let content_id = doc.add_object(content);
            kids.push(
                doc.add_object(dict(vec![
                    ("Type", "Page".into()),
                    ("Parent", pages_id.into()),
                    ("Contents", content_id.into()),
                    ("Resources", resources_id.into()),
                    (
                        "MediaBox",
                        vec![0.into(), 0.into(), 612.into(), 792.into()].into(),
                    ),
                ]))
                .into(),
            );
        }
        let count = kids.len() as i64;
        doc.objects.insert(
            pages_id,
            dict(vec![
                ("Type", "Pages".into()),
                ("Kids", kids.into()),
                ("Count", count.into()),
            ])
            .into(),
        );
        let catalog_id = doc.add_object(dict(vec![
            ("Type", "Catalog".into()),
            ("Pages", pages_id.into()),
        ]));
        doc.trailer.set("Root", catalog_id);
        let mut out = Vec::new();
        doc.save_to(&mut out).expect("the PDF is written");
        out
    }

    const LEFT: [&str; 4] = [
        "The left column opens this short",
        "story, and its sentences should be",
        "read in order from the top of the",
        "column down to its very last line.",
    ];
    const RIGHT: [&str; 4] = [
        "The right column carries the story",
        "on once the left column has ended,",
        "and a reader who meets it second",
        "finds the whole of it in one piece.",
    ];

    /// Pages that share one resource dictionary naming every figure of the document: each page
    /// counts the form it draws, not all of them (a review's 30-page PDF was refused whole).
    #[test]
    fn a_page_counts_the_forms_it_draws_each_once() {
        let figure = || {
            pdf_extract::Stream::new(
                pdf_extract::Dictionary::new(),
                b"0 0 m 1 1 l S\n".repeat(100_000),
            )
        };
        let words = [
            "Mosses grow first on the north face of the wall.",
            "Lichens follow them in the second year after rebuilding.",
            "Ferns root in the mortar joints once these have weathered.",
            "Grasses arrive with the birds that perch on the coping.",
            "The survey ends when the wall is covered from end to end.",
        ];
        let pages: Vec<pdf_extract::Stream> = (0..5)
            .map(|i| {
                let text = text_stream(&[(72.0, 700.0, words[i])]);
                let mut content = format!("q /Fx{i} Do Q\n").into_bytes();
                content.extend(&text.content);
                pdf_extract::Stream::new(pdf_extract::Dictionary::new(), content)
            })
            .collect();
        // Five figures of 1.4 MB: all five on every page would be 7 MB, past a page's 4 MiB.
        let pdf = pdf_with_forms(pages, (0..5).map(|_| figure()).collect());
        let doc = extract_pdf(&pdf).expect("every page is read");
        for w in words {
            assert!(doc.text.contains(w), "{w}: {}", doc.text);
        }
    }

    /// A page whose few KB of compressed content inflate to 30 MB of drawing operators is not
    /// parsed: pdf-extract took 3.2 GB and 23 s for it. The pages beside it are read.
    #[test]
    fn a_page_that_inflates_past_its_budget_is_left_out_and_the_others_are_read() {
        use std::io::Write as _;
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        zlib.write_all(&b"0 0 m\n".repeat(5_000_000))
            .expect("compress");
        let mut dict = pdf_extract::Dictionary::new();
        dict.set("Filter", pdf_extract::Object::Name(b"FlateDecode".to_vec()));
        let bomb = pdf_extract::Stream::new(dict, zlib.finish().expect("finish"));
        let words = "A page of ordinary words is read as it always was.";
        let both = pdf_of_pages(vec![bomb.clone(), text_stream(&[(72.0, 700.0, words)])]);
        assert!(both.len() < 100_000, "{}", both.len());
        let start = std::time::Instant::now();
        let doc = extract_pdf(&both).expect("the other page");
        assert!(doc.text.contains(words), "{}", doc.text);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        match extract_pdf(&pdf_of_pages(vec![bomb])) {
            Err(ExtractError::Unparsable(e)) => {
                assert!(e.contains("draws more than 4 MiB"), "{e}")
            }
            other => panic!("{other:?}"),
        }
    }

    /// The review's reproducers (`fuzz/regressions/pdf/`, also replayed by the fuzz test).
    const SELF_FORM: &[u8] = include_bytes!("../../../../../fuzz/regressions/pdf/self-form.pdf");
    const IMAGE_BOMB: &[u8] = include_bytes!("../../../../../fuzz/regressions/pdf/image-bomb.pdf");
    const REPEATED_FORM: &[u8] =
        include_bytes!("../../../../../fuzz/regressions/pdf/repeated-form.pdf");
    const NESTED_FORM: &[u8] =
        include_bytes!("../../../../../fuzz/regressions/pdf/nested-form.pdf");

    /// Extraction as the app runs it: on a thread with tokio's blocking pool's 2 MiB stack,
    /// where a recursion without end is an abort of the whole process, not a failed job.
    fn on_worker_stack(pdf: Vec<u8>) -> Result<Document, ExtractError> {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || extract_pdf(&pdf))
            .expect("spawn")
            .join()
            .expect("extraction does not panic")
    }

    /// An XObject of a test PDF: its `/Subtype` (none if `None`), its content, and its own
    /// resources' XObjects (name, index of the XObject), if it has resources of its own.
    struct X {
        subtype: Option<&'static str>,
        content: Vec<u8>,
        own: Option<Vec<(String, usize)>>,
    }

    fn form(content: &str, own: Option<Vec<(&str, usize)>>) -> X {
        X {
            subtype: Some("Form"),
            content: content.as_bytes().to_vec(),
            own: own.map(|o| o.into_iter().map(|(n, i)| (n.to_string(), i)).collect()),
        }
    }

    /// A one-page PDF: `content` under resources naming Helvetica `F1` and `names` (name,
    /// index into `xobjects`), each XObject with its own resources when it has any.
    fn pdf_with_xobjects(content: &[u8], names: &[(&str, usize)], xobjects: Vec<X>) -> Vec<u8> {
        use pdf_extract::{Dictionary, Object, Stream};
        let dict = |entries: Vec<(&str, Object)>| {
            let mut d = Dictionary::new();
            for (k, v) in entries {
                d.set(k, v);
            }
            d
        };
        let mut doc = pdf_extract::Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let ids: Vec<_> = xobjects.iter().map(|_| doc.new_object_id()).collect();
        let font_id = doc.add_object(dict(vec![
            ("Type", "Font".into()),
            ("Subtype", "Type1".into()),
            ("BaseFont", "Helvetica".into()),
        ]));
        let names_of = |names: &[(String, usize)]| {
            let mut d = Dictionary::new();
            for (n, i) in names {
                d.set(n.as_bytes().to_vec(), Object::Reference(ids[*i]));
            }
            dict(vec![
                ("XObject", d.into()),
                ("Font", dict(vec![("F1", font_id.into())]).into()),
            ])
        };
        for (x, id) in xobjects.iter().zip(&ids) {
            let mut d = dict(vec![("Type", "XObject".into())]);
            if let Some(subtype) = x.subtype {
                d.set("Subtype", Object::Name(subtype.as_bytes().to_vec()));
            }
            d.set("BBox", vec![0.into(), 0.into(), 612.into(), 792.into()]);
            if let Some(own) = &x.own {
                d.set("Resources", names_of(own));
            }
            doc.objects
                .insert(*id, Stream::new(d, x.content.clone()).into());
        }
        let page_names: Vec<(String, usize)> =
            names.iter().map(|(n, i)| (n.to_string(), *i)).collect();
        let resources = names_of(&page_names);
        let content_id = doc.add_object(Stream::new(Dictionary::new(), content.to_vec()));
        let page_id = doc.add_object(dict(vec![
            ("Type", "Page".into()),
            ("Parent", pages_id.into()),
            ("Contents", content_id.into()),
            ("Resources", resources.into()),
            (
                "MediaBox",
                vec![0.into(), 0.into(), 612.into(), 792.into()].into(),
            ),
        ]));
        doc.objects.insert(
            pages_id,
            dict(vec![
                ("Type", "Pages".into()),
                ("Kids", vec![page_id.into()].into()),
                ("Count", 1.into()),
            ])
            .into(),
        );
        let catalog_id = doc.add_object(dict(vec![
            ("Type", "Catalog".into()),
            ("Pages", pages_id.into()),
        ]));
        doc.trailer.set("Root", catalog_id);
        let mut out = Vec::new();
        doc.save_to(&mut out).expect("the PDF is written");
        out
    }

    const WORDS: &str = "BT /F1 10 Tf 72 700 Td (A page of ordinary words.) Tj ET\n";

    fn refused(pdf: Vec<u8>) -> String {
        match on_worker_stack(pdf) {
            Err(ExtractError::Unparsable(e)) => e,
            other => panic!("not refused: {other:?}"),
        }
    }

    /// A form whose own resources name it and whose content draws it: pdf-extract recursed
    /// into it until the stack overflowed, which aborts the app (and again at each retry after
    /// a restart). The page is refused before pdf-extract reads it.
    #[test]
    fn a_form_that_draws_itself_is_refused_before_the_reader_recurses() {
        let e = refused(SELF_FORM.to_vec());
        assert!(e.contains("draws a form that draws itself"), "{e}");
        // Through another form, and with the name spelled as lopdf reads it (`#46` is `F`,
        // `true` before `Do` an operand of it), without resources of its own (it draws with
        // the page's).
        for (content, names) in [
            ("q /Fm1 Do Q", Some(vec![("Fm1", 1)])),
            ("q /#46m0 trueDo Q", None),
            ("/Fm0 12Do", None),
            ("BI /W 2 /H 1 /BPC 8 /CS /DeviceGray ID (( EI /Fm0 Do", None),
        ] {
            let pdf = pdf_with_xobjects(
                format!("{WORDS}q /Fm0 Do Q\n").as_bytes(),
                &[("Fm0", 0)],
                vec![
                    form(content, names),
                    form("q /Fm0 Do Q", Some(vec![("Fm0", 0)])),
                ],
            );
            let e = refused(pdf);
            assert!(
                e.contains("draws a form that draws itself"),
                "{content}: {e}"
            );
        }
    }

    /// Forms inside forms: eight deep is read, text at the bottom included; nine deep is
    /// refused, as a chain long enough would overflow the stack as a cycle does.
    #[test]
    fn forms_are_read_eight_deep_and_refused_deeper() {
        let chain = |depth: usize| {
            let xobjects = (0..depth)
                .map(|i| {
                    if i + 1 == depth {
                        form(WORDS, Some(vec![]))
                    } else {
                        form("q /Fx Do Q", Some(vec![("Fx", i + 1)]))
                    }
                })
                .collect();
            pdf_with_xobjects(b"q /Fx Do Q\n", &[("Fx", 0)], xobjects)
        };
        let doc = on_worker_stack(chain(budget::FORM_DEPTH)).expect("eight deep is read");
        assert!(
            doc.text.contains("A page of ordinary words."),
            "{}",
            doc.text
        );
        let e = refused(chain(budget::FORM_DEPTH + 1));
        assert!(e.contains("more than 8 deep"), "{e}");
        let e = refused(chain(5_000));
        assert!(e.contains("more than 8 deep"), "{e}");
    }

    /// pdf-extract parses any XObject a page draws as content, whatever its subtype, and
    /// again at each `Do`. An image is emptied first (it has no text; a review's 44 KB image
    /// of 30 MB of operators took 3.2 GB and 23 s); any other XObject is counted as often as
    /// it is drawn, forms drawn by forms included (a review's 3.5 MiB form drawn 20,000
    /// times, from the page or from a form, would have taken hours).
    #[test]
    fn every_xobject_counts_as_often_as_it_is_drawn() {
        let start = std::time::Instant::now();
        let doc = on_worker_stack(IMAGE_BOMB.to_vec()).expect("the page is read");
        assert!(
            doc.text.contains("A page of ordinary words."),
            "{}",
            doc.text
        );
        for pdf in [REPEATED_FORM, NESTED_FORM] {
            let e = refused(pdf.to_vec());
            assert!(e.contains("more than 32 MiB"), "{e}");
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
        // A bomb labelled anything but an image is measured as a form is.
        let bomb = b"0 0 m\n".repeat(1_000_000);
        for subtype in [None, Some("PS"), Some("Form")] {
            let pdf = pdf_with_xobjects(
                format!("{WORDS}/X Do\n").as_bytes(),
                &[("X", 0)],
                vec![X {
                    subtype,
                    content: bomb.clone(),
                    own: None,
                }],
            );
            let e = refused(pdf);
            assert!(e.contains("more than 4 MiB"), "{subtype:?}: {e}");
        }
        // 1 MB drawn 40 times, from the page or from a form the page draws once.
        let mega = "0 0 m\n".repeat(170_000);
        let forty = "q /M Do Q\n".repeat(40);
        let direct = pdf_with_xobjects(
            format!("{WORDS}{forty}").as_bytes(),
            &[("M", 0)],
            vec![form(&mega, None)],
        );
        let nested = pdf_with_xobjects(
            format!("{WORDS}/F Do\n").as_bytes(),
            &[("F", 0)],
            vec![form(&forty, Some(vec![("M", 1)])), form(&mega, None)],
        );
        for pdf in [direct, nested] {
            let e = refused(pdf);
            assert!(e.contains("more than 32 MiB"), "{e}");
        }
        // A figure's marker drawn a thousand times is read.
        let markers = pdf_with_xobjects(
            format!("{WORDS}/F Do\n").as_bytes(),
            &[("F", 0)],
            vec![
                form(&"1 0 0 1 5 5 cm /M Do\n".repeat(1000), Some(vec![("M", 1)])),
                form("0 -3 m 0.8 -3 1.6 -2.7 2.1 -2.1 c h f\n", None),
            ],
        );
        let doc = on_worker_stack(markers).expect("a figure of markers");
        assert!(
            doc.text.contains("A page of ordinary words."),
            "{}",
            doc.text
        );
    }

    /// A page without resources or a media box whose `/Parent` is itself: pdf-extract looks
    /// them up the page tree without end.
    #[test]
    fn a_page_tree_that_loops_is_refused() {
        use pdf_extract::{Dictionary, Object, Stream};
        let mut doc = pdf_extract::Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let page_id = doc.new_object_id();
        let content_id = doc.add_object(Stream::new(Dictionary::new(), WORDS.as_bytes().to_vec()));
        let mut page = Dictionary::new();
        page.set("Type", Object::Name(b"Page".to_vec()));
        page.set("Parent", Object::Reference(page_id));
        page.set("Contents", Object::Reference(content_id));
        doc.objects.insert(page_id, page.into());
        let mut pages = Dictionary::new();
        pages.set("Type", Object::Name(b"Pages".to_vec()));
        pages.set("Kids", vec![Object::Reference(page_id)]);
        pages.set("Count", 1);
        doc.objects.insert(pages_id, pages.into());
        let mut catalog = Dictionary::new();
        catalog.set("Type", Object::Name(b"Catalog".to_vec()));
        catalog.set("Pages", Object::Reference(pages_id));
        let catalog_id = doc.add_object(catalog);
        doc.trailer.set("Root", catalog_id);
        let mut pdf = Vec::new();
        doc.save_to(&mut pdf).expect("the PDF is written");
        let e = refused(pdf);
        assert!(e.contains("page tree"), "{e}");
    }

    /// Fuzz-style: small documents whose forms draw one another at random, with and without
    /// resources of their own, names spelled every way lopdf reads them. None may take the
    /// process down; each is read or refused.
    #[test]
    fn random_form_graphs_never_overflow_the_stack() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let spell = [
            "/F{i} Do",
            "/F{i}Do",
            "/#46{i} Do",
            "/F{i} trueDo",
            "/F{i} 1Do",
            "/F{i} /F{i} Do",
        ];
        let (mut read, mut refused_) = (0, 0);
        for _ in 0..150 {
            let count = 1 + next(5);
            let draws = |next: &mut dyn FnMut(usize) -> usize| {
                (0..1 + next(3))
                    .map(|_| spell[next(spell.len())].replace("{i}", &next(count).to_string()))
                    .collect::<Vec<_>>()
                    .join(" q Q ")
            };
            let everyone: Vec<(String, usize)> = (0..count).map(|i| (format!("F{i}"), i)).collect();
            let xobjects = (0..count)
                .map(|_| X {
                    subtype: Some("Form"),
                    content: format!("{WORDS}{}\n", draws(&mut next)).into_bytes(),
                    own: (next(2) == 0).then(|| everyone.clone()),
                })
                .collect();
            let names: Vec<(&str, usize)> =
                everyone.iter().map(|(n, i)| (n.as_str(), *i)).collect();
            let page = format!("{WORDS}{}\n", draws(&mut next));
            match on_worker_stack(pdf_with_xobjects(page.as_bytes(), &names, xobjects)) {
                Ok(_) => read += 1,
                Err(_) => refused_ += 1,
            }
        }
        assert!(read > 0 && refused_ > 0, "{read} read, {refused_} refused");
    }

    fn check_column_order(drawn: &[(f64, f64, &str)]) {
        let doc = extract_pdf(&pdf_drawing(drawn)).expect("extracts");
        let (left, right) = (LEFT.join(" "), RIGHT.join(" "));
        let l = doc.text.find(&left);
        let r = doc.text.find(&right);
        assert!(
            l.zip(r).is_some_and(|(l, r)| l < r),
            "left then right expected in:\n{}",
            doc.text
        );
    }

    #[test]
    fn a_stream_drawn_across_both_columns_line_by_line_is_read_column_by_column() {
        let mut drawn = Vec::new();
        for row in 0..4 {
            let y = 700.0 - 12.0 * row as f64;
            drawn.push((72.0, y, LEFT[row]));
            drawn.push((320.0, y, RIGHT[row]));
        }
        check_column_order(&drawn);
    }

    #[test]
    fn a_stream_that_draws_the_right_column_first_is_read_left_first() {
        let mut drawn: Vec<_> = (0..4)
            .map(|row| (320.0, 700.0 - 12.0 * row as f64, RIGHT[row]))
            .collect();
        // And the left column from the bottom up.
        drawn.extend(
            (0..4)
                .rev()
                .map(|row| (72.0, 700.0 - 12.0 * row as f64, LEFT[row])),
        );
        check_column_order(&drawn);
    }
}
