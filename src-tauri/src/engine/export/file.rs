//! An export written to a file atomically: a temporary file beside it, renamed over it once
//! complete, so a failed or empty export never leaves a half-written or emptied file behind.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::{ExportError, Format, Selection, Summary, export};
use crate::engine::queue::Queue;

/// What [`write_file`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub summary: Summary,
    /// Whether the file was written; not when nothing went out and that was not wanted.
    pub file_written: bool,
}

/// Write the selected documents in `format` to `path`. A link is written through, to the file
/// it names; an existing file keeps its mode, and a new one gets the mode any new file gets
/// (0666 less the umask), not the temporary file's 0600. When no document went out, the file
/// is left as it was unless `write_empty`; it never is when jobs were chosen and none could go.
pub fn write_file(
    store: &dyn Queue,
    format: Format,
    selection: &Selection,
    path: &Path,
    write_empty: bool,
) -> Result<Written, ExportError> {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let fail = |source: std::io::Error| ExportError::File {
        path: path.clone(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mode = std::fs::metadata(&path).map(|m| m.permissions());
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let tmp = builder.tempfile_in(&dir).map_err(fail)?;
    if let Ok(mode) = mode {
        tmp.as_file().set_permissions(mode).map_err(fail)?;
    }
    let mut out = std::io::BufWriter::new(tmp);
    let summary = export(store, format, selection, &mut out)?;
    out.flush().map_err(fail)?;
    let tmp = out.into_inner().map_err(|e| fail(e.into_error()))?;
    let file_written = summary.written > 0 || (write_empty && summary.unusable.is_empty());
    if file_written {
        tmp.persist(&path).map_err(|e| fail(e.error))?;
    }
    Ok(Written {
        summary,
        file_written,
    })
}
