//! The library as JSON Lines for downstream tools: one object per saved document, its front
//! matter plus `document` (the file) and `text`. Used by `gleaner export` and the window.

use std::io::Write;

use super::library::read_document;
use super::queue::{JobFilter, Queue, QueueError, Status};

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Store(#[from] QueueError),
    #[error("cannot write the export: {0}")]
    Write(#[from] std::io::Error),
    #[error("cannot encode a document: {0}")]
    Encode(#[from] serde_json::Error),
}

/// Write every done job's document to `out`, oldest job last (newest first, as listed).
/// Documents that went missing or lost their front matter are skipped with a warning.
/// Returns how many were written.
pub fn export_jsonl(store: &dyn Queue, out: &mut dyn Write) -> Result<usize, ExportError> {
    let mut written = 0;
    let mut before_id = None;
    loop {
        let page = store.list_jobs(&JobFilter {
            status: Some(Status::Done),
            before_id,
            limit: Some(500),
            ..JobFilter::default()
        })?;
        let Some(last) = page.last() else { break };
        before_id = Some(last.id);
        for job in &page {
            let Some(path) = &job.document else { continue };
            let text = match std::fs::read_to_string(path) {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(job = job.id, "export skips {path}: {e}");
                    continue;
                }
            };
            let Some((mut meta, body)) = read_document(&text) else {
                tracing::warn!(job = job.id, "export skips {path}: no front matter");
                continue;
            };
            meta.insert("document".into(), path.clone().into());
            meta.insert("text".into(), body.into());
            serde_json::to_writer(&mut *out, &meta)?;
            out.write_all(b"\n")?;
            written += 1;
        }
    }
    out.flush()?;
    Ok(written)
}
