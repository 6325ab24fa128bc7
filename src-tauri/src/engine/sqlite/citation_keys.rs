//! Citation keys once given out (migration 0021).

use rusqlite::params;

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
}
