//! Tags (migration 0020): the `job_tags` rows and the `tags` list of `jobs.meta`, always
//! written together, at intake and when tags are set by hand.

use rusqlite::{OptionalExtension, Transaction, params};

use super::Store;
use crate::engine::queue::Result;
use crate::engine::tags::{key, normalise};

/// Add a new job's tags (already normalised) to the tag index.
pub(super) fn add_tags_in(tx: &Transaction<'_>, job_id: i64, tags: &[String]) -> Result<()> {
    let mut insert = tx
        .prepare_cached("INSERT OR IGNORE INTO job_tags (tag, job_id, name) VALUES (?1, ?2, ?3)")?;
    for tag in tags {
        insert.execute(params![key(tag), job_id, tag])?;
    }
    Ok(())
}

/// `meta` (a job's metadata, JSON) with its `tags` list set to `tags`, or taken out when there
/// are none; `None` when nothing is left. Metadata this version cannot read is replaced.
fn with_tags(meta: Option<&str>, tags: &[String]) -> Option<String> {
    let mut object = match meta.map(serde_json::from_str::<serde_json::Value>) {
        Some(Ok(serde_json::Value::Object(o))) => o,
        None => serde_json::Map::new(),
        Some(_) => {
            tracing::warn!("a job's metadata cannot be read; its tags replace it");
            serde_json::Map::new()
        }
    };
    if tags.is_empty() {
        object.remove("tags");
    } else {
        object.insert("tags".into(), serde_json::json!(tags));
    }
    (!object.is_empty()).then(|| serde_json::Value::Object(object).to_string())
}

/// Migration 0020's hook: the tag index filled from the tags already in `jobs.meta`, with the
/// list written back normalised where normalising changed it, so the two agree.
pub(super) fn fill_from_meta(tx: &Transaction<'_>) -> rusqlite_migration::HookResult {
    let mut jobs: Vec<(i64, String, Vec<String>)> = Vec::new();
    {
        let mut read = tx.prepare(
            "SELECT id, meta FROM jobs \
             WHERE CASE WHEN json_valid(meta) THEN json_type(meta, '$.tags') = 'array' END",
        )?;
        let mut rows = read.query([])?;
        while let Some(row) = rows.next()? {
            let (id, meta): (i64, String) = (row.get(0)?, row.get(1)?);
            let listed: Vec<String> = serde_json::from_str::<serde_json::Value>(&meta)
                .ok()
                .and_then(|v| v.get("tags").cloned())
                .and_then(|t| serde_json::from_value(t).ok())
                .unwrap_or_default();
            jobs.push((id, meta, listed));
        }
    }
    let mut update = tx.prepare("UPDATE jobs SET meta = ?2 WHERE id = ?1")?;
    for (id, meta, listed) in jobs {
        let tags = normalise(&listed);
        if tags != listed {
            update.execute(params![id, with_tags(Some(&meta), &tags)])?;
        }
        add_tags_in(tx, id, &tags)
            .map_err(|e| rusqlite_migration::HookError::Hook(e.to_string()))?;
    }
    Ok(())
}

impl Store {
    pub fn job_tags(&self, job_id: i64) -> Result<Vec<String>> {
        let conn = self.conn()?;
        let listed: Option<String> = conn
            .prepare_cached(
                "SELECT CASE WHEN json_valid(meta) THEN meta -> '$.tags' END FROM jobs \
                 WHERE id = ?1",
            )?
            .query_row([job_id], |r| r.get(0))
            .optional()?
            .flatten();
        Ok(listed
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default())
    }

    /// Names with their counts, from a query whose rows are (text, integer).
    fn named_counts(&self, sql: &str) -> Result<Vec<(String, u64)>> {
        let conn = self.conn()?;
        let counts = conn
            .prepare_cached(sql)?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(counts)
    }

    pub fn tag_counts(&self) -> Result<Vec<(String, u64)>> {
        self.named_counts(
            "SELECT min(name), count(*) FROM job_tags GROUP BY tag \
             ORDER BY count(*) DESC, tag",
        )
    }

    pub fn library_tag_counts(&self) -> Result<Vec<(String, u64)>> {
        self.named_counts(
            "SELECT min(t.name), count(*) FROM job_tags t \
                 JOIN library_meta lm ON lm.job_id = t.job_id \
                 JOIN jobs j ON j.id = t.job_id \
             WHERE j.document IS NOT NULL GROUP BY t.tag ORDER BY count(*) DESC, t.tag",
        )
    }

    pub fn library_hosts(&self) -> Result<Vec<crate::engine::queue::HostCount>> {
        let hosts = self.named_counts(
            "SELECT j.host, count(*) FROM library_meta lm JOIN jobs j ON j.id = lm.job_id \
             WHERE j.document IS NOT NULL GROUP BY j.host ORDER BY j.host",
        )?;
        Ok(hosts
            .into_iter()
            .map(|(host, jobs)| crate::engine::queue::HostCount { host, jobs })
            .collect())
    }

    pub fn set_tags(&self, job_id: i64, tags: &[String]) -> Result<Option<Vec<String>>> {
        let tags = normalise(tags);
        self.write(|tx| {
            let meta: Option<Option<String>> = tx
                .prepare_cached("SELECT meta FROM jobs WHERE id = ?1")?
                .query_row([job_id], |r| r.get(0))
                .optional()?;
            let Some(meta) = meta else {
                return Ok(None);
            };
            tx.prepare_cached("UPDATE jobs SET meta = ?2 WHERE id = ?1")?
                .execute(params![job_id, with_tags(meta.as_deref(), &tags)])?;
            tx.prepare_cached("DELETE FROM job_tags WHERE job_id = ?1")?
                .execute([job_id])?;
            add_tags_in(tx, job_id, &tags)?;
            Ok(Some(tags.clone()))
        })
    }
}

#[cfg(test)]
mod tests {

    use rusqlite::Connection;

    use super::*;

    use crate::engine::sqlite::migrations::migrations;
    use crate::engine::sqlite::testing::job;

    use crate::engine::queue::suite::tags::{strings, tagged};

    /// The tag index's rows of a job, by key.
    fn index_rows(s: &Store, job_id: i64) -> Vec<(String, String)> {
        s.conn()
            .expect("conn")
            .prepare("SELECT tag, name FROM job_tags WHERE job_id = ?1 ORDER BY tag")
            .expect("prepare")
            .query_map([job_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows")
    }

    #[test]
    fn set_tags_replaces_both_and_counts_follow() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(
            None,
            &[
                tagged("https://a.example/1", &["thesis", "ml"]),
                tagged("https://a.example/2", &["Thesis"]),
                job("https://a.example/3"),
            ],
            5,
            0,
        )
        .expect("enqueue");
        assert_eq!(
            s.tag_counts().expect("counts"),
            [("Thesis".to_string(), 2), ("ml".to_string(), 1)]
        );
        let kept = s
            .set_tags(3, &strings(&["  reading   group ", "Reading Group", "ml"]))
            .expect("set")
            .expect("job 3 is there");
        assert_eq!(kept, ["reading group", "ml"]);
        assert_eq!(s.job_tags(3).expect("tags"), kept);
        let meta: String = s
            .conn()
            .expect("conn")
            .query_row("SELECT meta FROM jobs WHERE id = 3", [], |r| r.get(0))
            .expect("meta");
        assert_eq!(meta, r#"{"tags":["reading group","ml"]}"#);
        // Taking them all away leaves a plain link as it was, and keeps another's metadata.
        assert_eq!(s.set_tags(3, &[]).expect("clear"), Some(vec![]));
        let meta: Option<String> = s
            .conn()
            .expect("conn")
            .query_row("SELECT meta FROM jobs WHERE id = 3", [], |r| r.get(0))
            .expect("meta");
        assert_eq!(meta, None);
        s.set_tags(1, &[]).expect("clear");
        let r = s
            .job(1)
            .expect("job")
            .expect("there")
            .reference
            .expect("ref");
        assert_eq!(r.title.as_deref(), Some("Entry"));
        assert!(r.tags.is_empty());
        assert!(index_rows(&s, 1).is_empty());
        assert_eq!(s.tag_counts().expect("counts"), [("Thesis".to_string(), 1)]);
        assert_eq!(s.set_tags(99, &strings(&["x"])).expect("no job"), None);
    }

    #[test]
    fn the_migration_fills_the_index_from_the_tags_already_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v19.db");
        {
            let mut conn = Connection::open(&path).expect("open");
            migrations().to_version(&mut conn, 19).expect("v19");
            conn.execute_batch(
                "INSERT INTO batches (id, name, source, created_at) VALUES (1, 'b', 'file', 1); \
                 INSERT INTO jobs (id, url, url_key, host, batch_id, status, run_at, max_retries, \
                     budget_started_at, created_at, updated_at, meta, document) VALUES \
                 (1, 'u1', 'u1', 'a.example', 1, 'done', 1, 5, 1, 1, 1, \
                     '{\"title\":\"A\",\"authors\":[\"Kucsko, G.\"],\"issued\":\"2013-07-31\",\
                      \"container_title\":\"Nature\",\"tags\":[\"Über\",\"über\",\" quantum  sensing \"]}', '/lib/1.md'), \
                 (2, 'u2', 'u2', 'a.example', 1, 'pending', 1, 5, 1, 1, 1, '{\"tags\":[\"Research\"]}', NULL), \
                 (3, 'u3', 'u3', 'a.example', 1, 'done', 1, 5, 1, 1, 1, NULL, '/lib/3.md'), \
                 (4, 'u4', 'u4', 'a.example', 1, 'pending', 1, 5, 1, 1, 1, 'not json', NULL);",
            )
            .expect("v19 rows");
        }
        let s = Store::open(&path).expect("migrate");
        assert_eq!(s.job_tags(1).expect("tags"), ["Über", "quantum sensing"]);
        assert_eq!(
            index_rows(&s, 1),
            [
                ("quantum sensing".to_string(), "quantum sensing".to_string()),
                ("über".to_string(), "Über".to_string())
            ]
        );
        assert_eq!(s.job_tags(2).expect("tags"), ["Research"]);
        assert!(index_rows(&s, 3).is_empty());
        type Row = (i64, Option<String>, Option<String>, Option<String>);
        let listed: Vec<Row> = s
            .conn()
            .expect("conn")
            .prepare("SELECT job_id, authors, year, container FROM library_meta ORDER BY job_id")
            .expect("prepare")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows");
        assert_eq!(
            listed,
            [
                (
                    1,
                    Some(r#"["Kucsko, G."]"#.to_string()),
                    Some("2013".to_string()),
                    Some("Nature".to_string())
                ),
                (3, None, None, None)
            ]
        );
    }
}
