//! Full-text search over the library (FTS5, migration 0019): the index row written with a
//! job's success, the ranked query, and the rebuild from the library folder.

use rusqlite::{Transaction, params};

use super::Store;
use crate::engine::queue::{Hit, Indexed, Reindexed, Result};

/// BM25 weights of the columns `title`, `authors`, `body`: a word in the title counts as
/// much as ten in the text.
const RANKED_SQL: &str = "SELECT s.rowid, j.url, j.title, j.document, \
         snippet(search, 2, '**', '**', '…', 16), -bm25(search, 10.0, 5.0, 1.0) \
     FROM search s JOIN jobs j ON j.id = s.rowid \
     WHERE search MATCH ?1 ORDER BY bm25(search, 10.0, 5.0, 1.0) LIMIT ?2";

/// Write a job's document into the index, replacing its older version's row.
pub(super) fn index_in(tx: &Transaction<'_>, job_id: i64, doc: &Indexed) -> Result<()> {
    tx.prepare_cached("DELETE FROM search WHERE rowid = ?1")?
        .execute([job_id])?;
    tx.prepare_cached("INSERT INTO search (rowid, title, authors, body) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![job_id, doc.title, doc.authors, doc.body])?;
    Ok(())
}

/// A query of plain words: each word of `text` a quoted string, so that nothing in it is the
/// index's syntax (`C++ (draft"`, a lone `NEAR/`, `-`, `:`). The words must all appear.
fn plain_words(text: &str) -> String {
    text.split_whitespace()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" ")
}

fn ranked(conn: &rusqlite::Connection, query: &str, limit: u32) -> rusqlite::Result<Vec<Hit>> {
    conn.prepare_cached(RANKED_SQL)?
        .query_map(params![query, limit], |r| {
            Ok(Hit {
                job_id: r.get(0)?,
                url: r.get(1)?,
                title: r.get(2)?,
                document: r.get(3)?,
                snippet: r.get(4)?,
                score: r.get(5)?,
            })
        })?
        .collect()
}

impl Store {
    pub fn search(&self, query: &str, limit: u32) -> Result<Vec<Hit>> {
        if query.split_whitespace().next().is_none() {
            return Ok(Vec::new());
        }
        let conn = self.conn()?;
        // The query as written, with the index's syntax (phrases, prefixes, OR, NEAR); what
        // that syntax cannot take is searched as plain words.
        match ranked(&conn, query, limit) {
            Ok(hits) => Ok(hits),
            Err(e) if is_query_error(&e) => {
                tracing::debug!(error = %e, "searching as plain words");
                Ok(ranked(&conn, &plain_words(query), limit)?)
            }
            Err(e) => Err(e.into()),
        }
    }

    pub fn clear_index(&self) -> Result<()> {
        self.write(|tx| {
            tx.execute("DELETE FROM search", [])?;
            Ok(())
        })
    }

    pub fn reindex(&self, documents: &[(i64, String, Indexed)]) -> Result<Reindexed> {
        self.write(|tx| {
            let mut out = Reindexed::default();
            for (job_id, path, doc) in documents {
                let newest: Option<String> = tx
                    .prepare_cached("SELECT document FROM jobs WHERE id = ?1")?
                    .query_row([job_id], |r| r.get(0))
                    .or_else(|e| match e {
                        rusqlite::Error::QueryReturnedNoRows => Ok(None),
                        e => Err(e),
                    })?;
                if newest.as_deref() == Some(path.as_str()) {
                    index_in(tx, *job_id, doc)?;
                    out.indexed += 1;
                } else {
                    out.passed_over += 1;
                }
            }
            Ok(out)
        })
    }
}

/// An error of the query text itself (FTS5's "syntax error", "no such column", "unknown
/// special query"), as opposed to one of the database.
fn is_query_error(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::Unknown
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::policy::Policy;
    use crate::engine::queue::{Queue as _, Success};
    use crate::engine::sqlite::testing::job;
    use std::time::Duration;

    /// A done job whose document is indexed, as the worker's success writes it.
    fn done(s: &Store, url: &str, title: &str, authors: &str, body: &str) -> i64 {
        s.enqueue(None, &[job(url)], 5, 0).expect("enqueue");
        let c = s
            .claim("w", 1, Duration::from_secs(60), 8)
            .expect("claim")
            .expect("job");
        let success = Success {
            http_status: 200,
            final_url: url.into(),
            title: Some(title.into()),
            document: Some(format!("/lib/{}.md", c.job_id)),
            index: Some(Box::new(Indexed {
                title: title.into(),
                authors: authors.into(),
                body: body.into(),
            })),
            ..Success::default()
        };
        s.complete(&c, &success, &Policy::default(), 2)
            .expect("complete")
            .expect("done");
        c.job_id
    }

    fn ids(hits: &[Hit]) -> Vec<i64> {
        hits.iter().map(|h| h.job_id).collect()
    }

    #[test]
    fn a_word_in_the_title_ranks_above_the_same_word_in_the_text() {
        let s = Store::open_in_memory().expect("store");
        let body = done(
            &s,
            "https://a.example/1",
            "Notes from the field",
            "",
            "Bedload moved through the braided channel after the thaw.",
        );
        let title = done(
            &s,
            "https://a.example/2",
            "Bedload in braided rivers",
            "Okafor, Chidi",
            "Measurements over two seasons.",
        );
        let hits = s.search("bedload", 10).expect("search");
        assert_eq!(ids(&hits), [title, body]);
        assert!(hits[0].score > hits[1].score, "{hits:?}");
        assert_eq!(
            hits[1].snippet,
            "**Bedload** moved through the braided channel after the thaw."
        );
        assert_eq!(ids(&s.search("okafor", 10).expect("authors")), [title]);
    }

    #[test]
    fn accents_fold_in_the_text_and_in_the_query() {
        let s = Store::open_in_memory().expect("store");
        let id = done(
            &s,
            "https://a.example/1",
            "Curriculum",
            "Müller, Zoë",
            "Mon résumé, déjà vu.",
        );
        for q in ["resume", "résumé", "DEJA", "muller", "zoe"] {
            assert_eq!(ids(&s.search(q, 10).expect(q)), [id], "{q}");
        }
    }

    #[test]
    fn any_text_is_a_query_and_never_an_error() {
        let s = Store::open_in_memory().expect("store");
        let id = done(
            &s,
            "https://a.example/1",
            "C++ drafts",
            "",
            "The C++ (draft) standard, and e-mail NEAR the end.",
        );
        for q in [
            "C++ (draft\"",
            "NEAR/",
            "e-mail",
            "tag:thesis",
            "\"",
            "AND",
            "*",
            "title:",
            ")",
        ] {
            let hits = s.search(q, 10);
            assert!(hits.is_ok(), "{q}: {hits:?}");
        }
        assert_eq!(ids(&s.search("C++ (draft\"", 10).expect("c++")), [id]);
        assert_eq!(ids(&s.search("e-mail", 10).expect("e-mail")), [id]);
        assert!(s.search("   ", 10).expect("blank").is_empty());
        // The index's own syntax still works where it parses: a phrase, a prefix.
        assert_eq!(
            ids(&s.search("\"draft standard\"", 10).expect("phrase")),
            [id]
        );
        assert_eq!(ids(&s.search("stand*", 10).expect("prefix")), [id]);
        assert!(
            s.search("\"standard draft\"", 10)
                .expect("phrase")
                .is_empty()
        );
    }

    #[test]
    fn a_new_version_replaces_the_old_in_the_index_and_a_deleted_job_leaves_it() {
        let s = Store::open_in_memory().expect("store");
        let id = done(
            &s,
            "https://a.example/1",
            "Page",
            "",
            "the first version said aardvark",
        );
        s.retry(&[id], 5, 3).expect("refetch");
        let c = s
            .claim("w", 4, Duration::from_secs(60), 8)
            .expect("claim")
            .expect("job");
        let success = Success {
            http_status: 200,
            document: Some("/lib/1-v2.md".into()),
            index: Some(Box::new(Indexed {
                title: "Page".into(),
                body: "the second version says zebra".into(),
                ..Indexed::default()
            })),
            ..Success::default()
        };
        s.complete(&c, &success, &Policy::default(), 5)
            .expect("complete");
        assert!(s.search("aardvark", 10).expect("old").is_empty());
        assert_eq!(ids(&s.search("zebra", 10).expect("new")), [id]);
        s.delete(&[id]).expect("delete");
        assert!(s.search("zebra", 10).expect("gone").is_empty());
    }

    #[test]
    fn a_rebuild_indexes_only_each_jobs_newest_document() {
        let s = Store::open_in_memory().expect("store");
        let id = done(&s, "https://a.example/1", "Page", "", "zebra");
        s.clear_index().expect("clear");
        assert!(s.search("zebra", 10).expect("cleared").is_empty());
        let text = |body: &str| Indexed {
            title: "Page".into(),
            body: body.into(),
            ..Indexed::default()
        };
        let docs = [
            (id, format!("/lib/{id}.md"), text("zebra")),
            (id, "/lib/older.md".to_string(), text("aardvark")),
            (999, "/lib/999.md".to_string(), text("okapi")),
        ];
        let r = s.reindex(&docs).expect("reindex");
        assert_eq!((r.indexed, r.passed_over), (1, 2));
        assert_eq!(ids(&s.search("zebra", 10).expect("zebra")), [id]);
        assert!(
            s.search("aardvark OR okapi", 10)
                .expect("others")
                .is_empty()
        );
    }
}
