//! Citation keys once given out (migration 0021).

use rusqlite::{OptionalExtension, params};

use super::Store;
use crate::engine::queue::Result;

impl Store {
    pub fn citation_keys(&self) -> Result<Vec<(i64, String)>> {
        let conn = self.conn()?;
        let keys = conn
            .prepare_cached("SELECT job_id, key FROM citation_keys")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(keys)
    }

    pub fn keep_citation_keys(&self, keys: &[(i64, String)]) -> Result<usize> {
        self.write(|tx| {
            // Not for a job deleted while the export ran: the id's next job (SQLite gives a
            // deleted last id out again) would inherit its key.
            let mut insert = tx.prepare_cached(
                "INSERT OR IGNORE INTO citation_keys (job_id, key, key_lower) \
                 SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ?1)",
            )?;
            let mut kept = 0;
            for (job_id, key) in keys {
                kept += insert.execute(params![job_id, key, key.to_lowercase()])?;
            }
            Ok(kept)
        })
    }

    pub fn adopt_citation_key(&self, job_id: i64, key: &str) -> Result<bool> {
        self.write(|tx| {
            let meta: Option<Option<String>> = tx
                .prepare_cached(
                    "SELECT meta FROM jobs WHERE id = ?1 AND status <> 'running' \
                     AND NOT EXISTS (SELECT 1 FROM citation_keys WHERE job_id = ?1)",
                )?
                .query_row([job_id], |r| r.get(0))
                .optional()?;
            let Some(meta) = meta else {
                return Ok(false);
            };
            let Some(meta) = with_citation_key(meta.as_deref(), key) else {
                return Ok(false);
            };
            tx.prepare_cached("UPDATE jobs SET meta = ?2 WHERE id = ?1")?
                .execute(params![job_id, meta])?;
            Ok(true)
        })
    }
}

/// The job's metadata with `key` as its citation key; `None` when it has one already, or its
/// metadata cannot be read (it is left as it is rather than replaced).
fn with_citation_key(meta: Option<&str>, key: &str) -> Option<String> {
    let mut object = match meta.map(serde_json::from_str::<serde_json::Value>) {
        None => serde_json::Map::new(),
        Some(Ok(serde_json::Value::Object(o))) => o,
        Some(_) => return None,
    };
    if object.get("citation_key").is_some_and(|k| !k.is_null()) {
        return None;
    }
    object.insert("citation_key".into(), serde_json::json!(key));
    Some(serde_json::Value::Object(object).to_string())
}
