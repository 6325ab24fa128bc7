//! Documents on disk under `<data-dir>/library/<host>/`. Writes are atomic (temp file, then
//! rename), so a crash never leaves half a document behind.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::fetch::Fetched;

#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What was saved for a done job.
#[derive(Debug, Clone)]
pub struct Saved {
    pub path: PathBuf,
    pub title: Option<String>,
    pub sha256: String,
}

#[derive(Debug, Clone)]
pub struct Library {
    root: PathBuf,
}

impl Library {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Save a fetched body for job `job_id`. Blocking I/O: call it off the async runtime.
    pub fn save(&self, job_id: i64, host: &str, fetched: &Fetched) -> Result<Saved, LibraryError> {
        let sha256 = hex::encode(Sha256::digest(&fetched.body));
        let dir = self.root.join(safe_segment(host));
        let ext = extension_for(fetched.content_type.as_deref());
        let name = format!("{}-{job_id}.{ext}", slug(&fetched.final_url));
        let path = dir.join(name);
        write_atomic(&dir, &path, &fetched.body)?;
        Ok(Saved {
            path,
            title: title_of(fetched),
            sha256,
        })
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> LibraryError + '_ {
    move |source| LibraryError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Write `bytes` to `path` through a temp file in the same folder, fsynced, then renamed.
pub fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), LibraryError> {
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io_err(dir))?;
    tmp.write_all(bytes).map_err(io_err(path))?;
    tmp.as_file().sync_all().map_err(io_err(path))?;
    tmp.persist(path).map_err(|e| LibraryError::Io {
        path: path.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

fn extension_for(content_type: Option<&str>) -> &'static str {
    let ct = content_type.unwrap_or("").to_ascii_lowercase();
    let mime = ct.split(';').next().unwrap_or("").trim();
    match mime {
        "text/html" | "application/xhtml+xml" => "html",
        "application/pdf" => "pdf",
        "text/plain" => "txt",
        "text/markdown" => "md",
        "application/json" => "json",
        "application/xml" | "text/xml" | "application/rss+xml" | "application/atom+xml" => "xml",
        _ => "bin",
    }
}

/// A file-name-safe slug from the URL's path: "2024/05/great-story" → "2024-05-great-story".
pub fn slug(url: &str) -> String {
    let path = url::Url::parse(url)
        .map(|u| u.path().to_string())
        .unwrap_or_default();
    let mut out = String::new();
    for c in path.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    let out: String = out
        .chars()
        .rev()
        .take(60)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let out = out.trim_start_matches('-');
    if out.is_empty() {
        "index".to_string()
    } else {
        out.to_string()
    }
}

fn safe_segment(host: &str) -> String {
    let s: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let s = s.trim_matches('.');
    if s.is_empty() {
        "_".to_string()
    } else {
        s.to_string()
    }
}

/// The text of the first `<title>` of an HTML body, with entities for the usual characters
/// decoded. It is stored as plain text and must only ever be shown as text.
fn title_of(fetched: &Fetched) -> Option<String> {
    let ct = fetched
        .content_type
        .as_deref()
        .unwrap_or("")
        .to_ascii_lowercase();
    if !ct.contains("html") {
        return None;
    }
    let head = &fetched.body[..fetched.body.len().min(256 * 1024)];
    let text = String::from_utf8_lossy(head);
    let lower = text.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let raw = &text[start..end];
    let decoded = raw
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    let title = decoded.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then_some(title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_atomically_under_the_host_with_a_slug() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lib = Library::new(dir.path().join("library"));
        let f = Fetched {
            status: 200,
            final_url: "https://news.example/2024/05/Great_Story.html".into(),
            content_type: Some("text/html; charset=utf-8".into()),
            body: b"<html><title> A &amp; B </title></html>".to_vec(),
        };
        let saved = lib.save(7, "news.example", &f).expect("save");
        assert_eq!(
            saved.path,
            dir.path()
                .join("library/news.example/2024-05-great-story-html-7.html")
        );
        assert_eq!(std::fs::read(&saved.path).expect("read"), f.body);
        assert_eq!(saved.title.as_deref(), Some("A & B"));
        assert_eq!(saved.sha256.len(), 64);
        let leftovers = std::fs::read_dir(saved.path.parent().expect("dir"))
            .expect("ls")
            .count();
        assert_eq!(leftovers, 1, "no temp files left behind");
    }

    #[test]
    fn slugs_are_safe() {
        assert_eq!(slug("https://x.example/"), "index");
        assert_eq!(slug("https://x.example/../../etc/passwd"), "etc-passwd");
        assert_eq!(safe_segment(".."), "_");
    }
}
