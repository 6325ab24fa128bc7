//! PDF text through `pdf-extract`: the Info title or the first line as the title, panics of
//! the PDF crates caught and reported as "cannot parse".

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::{DocKind, Document, ExtractError, clean, tidy_text};
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
    // Page by page, so one broken page costs that page rather than the whole
    // document, and the first page is available for the title fallback.
    let mut texts = Vec::with_capacity(pages.len());
    let mut first_error = None;
    for &number in pages.keys() {
        let mut page = String::new();
        let result = pdf_extract::output_doc_page(
            &pdf,
            &mut pdf_extract::PlainTextOutput::new(&mut page),
            number,
        );
        match result {
            Ok(()) => texts.push(tidy_text(&page)),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    let text = texts
        .iter()
        .filter(|t| !t.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join("\n\n");
    if text.is_empty() {
        return Err(match first_error {
            Some(e) => damaged(&e),
            None => ExtractError::Unparsable(
                "the PDF has no text layer (it may be scanned images)".into(),
            ),
        });
    }

    let title = pdf_info_title(&pdf).or_else(|| {
        texts
            .first()
            .and_then(|first| first.lines().find_map(clean))
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
    clean(&title.replace('\0', ""))
}
