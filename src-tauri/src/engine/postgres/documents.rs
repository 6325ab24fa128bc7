//! The shared library (migration 0002): each job's newest document, and its PDF up to a size
//! setting, kept in the database as its member wrote them, under paths relative to a member's
//! library folder. A member reads a job's document from its own folder (the paths it is given
//! are its folder's), from the database when its folder lacks it, and `gleaner library pull`
//! writes what it lacks.

use std::path::{Path, PathBuf};

use super::Db;
use super::rows::Conn;
use crate::engine::queue::{Result, SharedDocument, SharedEntry};

/// The setting that caps the PDFs kept in the database, in bytes.
pub const PDF_MAX_SETTING: &str = "shared_pdf_max_bytes";
/// Its value when never set: most papers fit, a scanned book does not.
pub const PDF_MAX_DEFAULT: u64 = 25 * 1024 * 1024;

/// A document about to be stored with its job's success.
#[derive(Debug, Clone)]
pub(super) struct Stored {
    pub(super) path: String,
    pub(super) content: Vec<u8>,
    pub(super) pdf: Option<(String, Vec<u8>)>,
}

/// How a member's paths and the database's relate: its library folder.
#[derive(Debug, Clone, Default)]
pub(crate) struct Paths {
    pub(super) root: Option<PathBuf>,
}

impl Stored {
    /// The bytes it sends up.
    pub(super) fn len(&self) -> u64 {
        (self.content.len() + self.pdf.as_ref().map_or(0, |(_, b)| b.len())) as u64
    }
}

impl Paths {
    /// The path as the database keeps it: relative to the library folder when inside it.
    pub(super) fn relative(&self, path: &str) -> String {
        match &self.root {
            Some(root) => Path::new(path)
                .strip_prefix(root)
                .map_or_else(|_| path.to_string(), |p| p.to_string_lossy().into_owned()),
            None => path.to_string(),
        }
    }

    /// The path in this member's folder of one the database keeps.
    pub(super) fn local(&self, path: &str) -> String {
        match &self.root {
            Some(root) if Path::new(path).is_relative() => {
                root.join(path).to_string_lossy().into_owned()
            }
            _ => path.to_string(),
        }
    }

    /// Read what a success saved in this member's folder, to store it for the others: the
    /// document, and the PDF when it is at most `pdf_max` bytes. `None` (and a warning) when
    /// the file cannot be read: the job is done all the same.
    pub(super) fn read(&self, document: &str, pdf: Option<&str>, pdf_max: u64) -> Option<Stored> {
        let content = match std::fs::read(document) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("cannot share {document} with the other machines: {e}");
                return None;
            }
        };
        let pdf = pdf.and_then(|p| {
            let len = std::fs::metadata(p).ok()?.len();
            if len > pdf_max {
                tracing::info!(
                    "{p} is larger than {PDF_MAX_SETTING} ({pdf_max} bytes): not shared"
                );
                return None;
            }
            Some((self.relative(p), std::fs::read(p).ok()?))
        });
        Some(Stored {
            path: self.relative(document),
            content,
            pdf,
        })
    }
}

pub(super) async fn store_in(tx: &impl Conn, job_id: i64, doc: &Stored) -> Result<()> {
    let (pdf_path, pdf) = match &doc.pdf {
        Some((p, b)) => (Some(p.as_str()), Some(b.as_slice())),
        None => (None, None),
    };
    tx.exec(
        "INSERT INTO documents (job_id, path, content, pdf_path, pdf) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (job_id) DO UPDATE SET path = excluded.path, content = excluded.content, \
             pdf_path = excluded.pdf_path, pdf = excluded.pdf",
        &[&job_id, &doc.path, &doc.content, &pdf_path, &pdf],
    )
    .await?;
    Ok(())
}

pub(super) async fn pdf_max(db: &Db) -> Result<u64> {
    let c = db.client().await?;
    let text = super::hosts::setting(&c, PDF_MAX_SETTING).await?;
    Ok(text
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(PDF_MAX_DEFAULT))
}

/// A row's PDF path and bytes (or hash) in its columns 3 and 4, when it has a PDF.
fn pdf_columns(r: &tokio_postgres::Row) -> Option<(String, Vec<u8>)> {
    r.get::<_, Option<String>>(3)
        .zip(r.get::<_, Option<Vec<u8>>>(4))
}

pub(super) async fn shared_listing(db: &Db, after: i64, limit: u32) -> Result<Vec<SharedEntry>> {
    let rows = db
        .client()
        .await?
        .query_rows(
            "SELECT job_id, path, content_sha256, pdf_path, pdf_sha256 FROM documents \
             WHERE job_id > $1 ORDER BY job_id LIMIT $2",
            &[&after, &i64::from(limit)],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| SharedEntry {
            job_id: r.get(0),
            path: r.get(1),
            sha256: r.get(2),
            pdf: pdf_columns(r),
        })
        .collect())
}

pub(super) async fn shared_document(db: &Db, job_id: i64) -> Result<Option<SharedDocument>> {
    let rows = db
        .client()
        .await?
        .query_rows(
            "SELECT job_id, path, content, pdf_path, pdf FROM documents WHERE job_id = $1",
            &[&job_id],
        )
        .await?;
    Ok(rows.first().map(|r| SharedDocument {
        job_id: r.get(0),
        path: r.get(1),
        content: r.get(2),
        pdf: pdf_columns(r),
    }))
}

pub(super) async fn stored_document(db: &Db, job_id: i64) -> Result<Option<Vec<u8>>> {
    let rows = db
        .client()
        .await?
        .query_rows(
            "SELECT content FROM documents WHERE job_id = $1",
            &[&job_id],
        )
        .await?;
    Ok(rows.first().map(|r| r.get(0)))
}
