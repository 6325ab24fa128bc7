//! The shared database this member uses when started from the window (Settings): kept in its
//! data folder, not in the queue (which it names), and used from the next start. `--database`
//! and `GLEANER_DATABASE_URL` come first.

use std::path::{Path, PathBuf};

use crate::engine::postgres::{describe_url, is_postgres_url};

fn file(data_dir: &Path) -> PathBuf {
    data_dir.join("database-url")
}

/// The address saved in the data folder, if any.
pub fn saved(data_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file(data_dir)).ok()?;
    let url = text.trim();
    (!url.is_empty()).then(|| url.to_string())
}

/// The saved address as the window shows it: its password masked.
pub fn shown(data_dir: &Path) -> String {
    saved(data_dir)
        .map(|u| describe_url(&u))
        .unwrap_or_default()
}

/// Save `url` (empty: the data folder's own queue again), unless it is the masked form of the
/// one saved already. Readable by this user alone: it may hold a password.
pub fn save(data_dir: &Path, url: &str) -> Result<bool, String> {
    let url = url.trim();
    if url == shown(data_dir) {
        return Ok(false);
    }
    if !url.is_empty() && (!is_postgres_url(url) || url.parse::<tokio_postgres::Config>().is_err())
    {
        return Err(
            "The shared database must be a PostgreSQL address, like postgres://user:password@host:5432/gleaner."
                .into(),
        );
    }
    let path = file(data_dir);
    let written = if url.is_empty() {
        std::fs::remove_file(&path).or_else(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Ok(())
            } else {
                Err(e)
            }
        })
    } else {
        write_private(&path, url)
    };
    written.map_err(|e| {
        format!(
            "Could not save the database address in {}: {e}",
            path.display()
        )
    })?;
    Ok(true)
}

fn write_private(path: &Path, url: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options.open(path)?;
    f.write_all(url.as_bytes())?;
    f.write_all(b"\n")?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_address_comes_back_masked_and_a_masked_one_changes_nothing() {
        let dir = tempfile::tempdir().expect("dir");
        assert_eq!(shown(dir.path()), "");
        assert!(save(dir.path(), "postgres://ann:s3cret@db.lab/gleaner").expect("save"));
        assert_eq!(
            saved(dir.path()).as_deref(),
            Some("postgres://ann:s3cret@db.lab/gleaner")
        );
        let masked = shown(dir.path());
        assert!(!masked.contains("s3cret"), "{masked}");
        assert!(!save(dir.path(), &masked).expect("unchanged"));
        assert_eq!(
            saved(dir.path()).as_deref(),
            Some("postgres://ann:s3cret@db.lab/gleaner")
        );
        assert!(save(dir.path(), "mysql://x@y/z").is_err());
        assert!(save(dir.path(), "").expect("cleared"));
        assert_eq!(saved(dir.path()), None);
    }
}
