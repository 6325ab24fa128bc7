//! The shared database this member uses when started from the window (Settings): kept in its
//! data folder, not in the queue (which it names), and used from the next start. `--database`
//! and `GLEANER_DATABASE_URL` come first.

use std::path::{Path, PathBuf};

use crate::engine::postgres::{MASK, describe_url, is_postgres_url, replace_secrets};

fn file(data_dir: &Path) -> PathBuf {
    data_dir.join("database-url")
}

/// The address saved in the data folder, if any.
pub fn saved(data_dir: &Path) -> Option<String> {
    read(data_dir).ok().flatten()
}

/// The saved address, or why it could not be read (a file this user may not read, or not
/// text): a window that quietly used its own queue then would keep links from the lab's.
pub fn read(data_dir: &Path) -> Result<Option<String>, String> {
    let path = file(data_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "the saved database address in {} cannot be read ({e})",
                path.display()
            ));
        }
    };
    let url = text.trim();
    Ok((!url.is_empty()).then(|| url.to_string()))
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
    let unmasked = saved(data_dir).map(|old| unmask(url, &old));
    let url = unmasked.as_deref().unwrap_or(url);
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

/// `url` as edited from the masked form of `old`: a password still masked is `old`'s. Editing
/// the host of `postgres://ann:***@db.lab/gleaner` must not make `***` the password.
fn unmask(url: &str, old: &str) -> String {
    let (Ok(mut new), Ok(old)) = (url::Url::parse(url), url::Url::parse(old)) else {
        return url.to_string();
    };
    if new.password() == Some(MASK) {
        let _ = new.set_password(old.password());
    }
    // As written in the old query, still percent-encoded.
    let kept = |key: &str| {
        old.query()?
            .split('&')
            .find_map(|pair| pair.split_once('=').filter(|(k, _)| *k == key))
            .map(|(_, v)| v.to_string())
    };
    replace_secrets(&mut new, |key, value| match kept(key) {
        Some(kept) if value == MASK => kept,
        _ => value.to_string(),
    });
    new.to_string()
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
        // The host edited in the masked form: the password stays the saved one.
        assert!(save(dir.path(), &masked.replace("db.lab", "db2.lab")).expect("save"));
        assert_eq!(
            saved(dir.path()).as_deref(),
            Some("postgres://ann:s3cret@db2.lab/gleaner")
        );
        // The same for a password given as a query parameter; a new one replaces it.
        let query = "postgres://db.lab/gleaner?user=ann&password=s3cret";
        assert!(save(dir.path(), query).expect("save"));
        let masked = shown(dir.path());
        assert_eq!(masked, "postgres://db.lab/gleaner?user=ann&password=***");
        assert!(save(dir.path(), &masked.replace("user=ann", "user=bob")).expect("save"));
        assert_eq!(
            saved(dir.path()).as_deref(),
            Some("postgres://db.lab/gleaner?user=bob&password=s3cret")
        );
        assert!(save(dir.path(), &masked.replace("***", "n3w")).expect("save"));
        assert_eq!(
            saved(dir.path()).as_deref(),
            Some("postgres://db.lab/gleaner?user=ann&password=n3w")
        );
        // A password with a space keeps its encoding through an edit of the host.
        let spaced = "postgres://db.lab/gleaner?options=-c%20a%3Db&password=my%20pw";
        assert!(save(dir.path(), spaced).expect("save"));
        let masked = shown(dir.path());
        assert!(save(dir.path(), &masked.replace("db.lab", "db3.lab")).expect("save"));
        assert_eq!(
            saved(dir.path()).as_deref(),
            Some("postgres://db3.lab/gleaner?options=-c%20a%3Db&password=my%20pw")
        );
        assert!(save(dir.path(), "mysql://x@y/z").is_err());
        assert!(save(dir.path(), "").expect("cleared"));
        assert_eq!(saved(dir.path()), None);
    }

    /// An address file that is there but cannot be read is an error to show, not "none".
    #[test]
    fn an_unreadable_address_is_said_not_taken_for_none() {
        let dir = tempfile::tempdir().expect("dir");
        assert_eq!(read(dir.path()), Ok(None));
        std::fs::write(file(dir.path()), b"postgres://db.lab/g\xff\xfe\n").expect("write");
        let e = read(dir.path()).expect_err("not text");
        assert!(e.contains("cannot be read"), "{e}");
        assert_eq!(saved(dir.path()), None);
    }
}
