//! The Export dialog's command: the library, chosen jobs, or what the Library view finds,
//! written to the data folder's `exports` folder in one of the export formats.

use serde::Serialize;
use tauri::State;

use super::DesktopState;
use crate::engine::clock::{Clock as _, SystemClock};
use crate::engine::queue::rfc3339;

#[derive(Debug, Serialize)]
pub struct Exported {
    path: String,
    documents: usize,
    /// The format written: jsonl, bibtex, csljson or ris.
    format: &'static str,
    /// Chosen jobs that could not go out, and why.
    unusable: Vec<crate::engine::export::Unusable>,
}

/// Write the library, or the chosen jobs, or what a library search finds, or everything the
/// Library view's search and filters find (`library`, not just the page it shows), to
/// `<data-dir>/exports/library-<time>.<ext>` atomically: JSON Lines (the default), BibTeX,
/// CSL-JSON or RIS. Nothing to write is an error that says why, and leaves no file.
#[tauri::command]
pub async fn export_library(
    format: Option<String>,
    jobs: Option<Vec<i64>>,
    query: Option<String>,
    library: Option<super::library::SearchArgs>,
    state: State<'_, DesktopState>,
) -> Result<Exported, String> {
    use crate::engine::export::{self, Format, Selection};
    let format: Format = match format.as_deref() {
        None => Format::Jsonl,
        Some(name) => name.parse().map_err(|e| format!("{e}"))?,
    };
    let query = query.filter(|q| !q.trim().is_empty());
    let selection = match (jobs, query, library) {
        (Some(ids), None, None) if ids.is_empty() => {
            return Err("Choose at least one job to export.".into());
        }
        (Some(ids), None, None) => Selection::Jobs(ids),
        (None, Some(q), None) => Selection::Search(q),
        (None, None, Some(args)) => Selection::Library(args.into_query(0)),
        (None, None, None) => Selection::All,
        _ => {
            return Err(
                "Export the chosen jobs, a search, or the Library's results: one of them.".into(),
            );
        }
    };
    let store = state.store.clone();
    let dir = state.data_dir.join("exports");
    let stamp = rfc3339(SystemClock.now_ms()).replace([':', '.'], "-");
    let path = dir.join(format!("library-{stamp}.{}", format.extension()));
    // Reading every document takes a while on a big library: off the async runtime.
    tauri::async_runtime::spawn_blocking(move || {
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("Could not export to {}: {e}", dir.display()))?;
        let written = export::write_file(&*store, format, &selection, &path, false)
            .map_err(|e| format!("Could not export: {e}"))?;
        let summary = written.summary;
        if !written.file_written {
            return Err(nothing_exported(&selection, &summary.unusable));
        }
        let name = format.name();
        tracing::info!(
            documents = summary.written,
            unusable = summary.unusable.len(),
            format = name,
            path = %path.display(),
            "library exported"
        );
        Ok(Exported {
            path: path.to_string_lossy().into_owned(),
            documents: summary.written,
            format: name,
            unusable: summary.unusable,
        })
    })
    .await
    .map_err(|e| format!("The export stopped: {e}"))?
}

/// Why an export wrote nothing, in the words of what was asked.
fn nothing_exported(
    selection: &crate::engine::export::Selection,
    unusable: &[crate::engine::export::Unusable],
) -> String {
    use crate::engine::export::Selection;
    match selection {
        Selection::Jobs(_) if !unusable.is_empty() => {
            let reasons: Vec<String> = unusable
                .iter()
                .map(|u| format!("job {}: {}", u.job_id, u.reason))
                .collect();
            format!("Nothing was exported: {}.", reasons.join("; "))
        }
        Selection::All => {
            "Nothing was exported: the library has no documents yet. Fetched pages are kept there once their jobs are done.".into()
        }
        _ => "Nothing was exported: no document matches. Change the search or its filters.".into(),
    }
}
