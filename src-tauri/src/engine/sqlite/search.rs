//! Full-text search over the library (FTS5, migration 0019): the index row written with a
//! job's success, the ranked query, the Library view's listing and filters (migration 0020),
//! and the rebuild from the library folder.

use std::sync::LazyLock;

use rusqlite::{Transaction, params};

use super::{Store, snippet};
use crate::engine::queue::search_query::{SearchQuery, composed};
use crate::engine::queue::{Hit, Indexed, LibraryQuery, Reindexed, Result};
use crate::engine::tags::{clean, key, split_tag_terms};

/// What every hit reads after its first six columns (id, url, title, document, snippet,
/// score), in [`hit_from_row`]'s order.
const HIT_COLUMNS: &str = "j.host, lm.authors, lm.year, lm.container, \
     CASE WHEN json_valid(j.meta) THEN j.meta -> '$.tags' END, b.name, j.batch_id, lm.kind, lm.pdf";

/// The filters both queries share: a document, the host (?3), the batch (?4), and every tag
/// whose key is in the JSON array ?6, of which there are ?5.
const FILTERS: &str = "j.document IS NOT NULL AND (?3 IS NULL OR j.host = ?3) \
     AND (?4 IS NULL OR j.batch_id = ?4) \
     AND (?5 = 0 OR (SELECT count(*) FROM job_tags t WHERE t.job_id = j.id \
         AND t.tag IN (SELECT value FROM json_each(?6))) = ?5)";

/// The ranked query, in two parts. `top` ranks the matches from job ?7 on (see
/// [`RANK_WINDOW`]) by BM25, with weights title 10, authors 5, text 1 (a word in the title
/// counts as much as ten in the text), reading the index alone unless `filtered` asks for the
/// jobs' columns. Then only the best ?2 are joined to their jobs and given a snippet: computed
/// in the ranking itself, the snippet and the joins were paid for every match (BENCHMARKS.md
/// §9). The matched words are marked with control characters, made `**` by
/// [`snippet::marked`].
fn ranked_sql(filtered: bool) -> String {
    let (from, filters) = if filtered {
        (
            "search s JOIN jobs j ON j.id = s.rowid",
            format!("AND {FILTERS}"),
        )
    } else {
        ("search s", String::new())
    };
    format!(
        "WITH top AS (SELECT s.rowid AS id, bm25(search, 10.0, 5.0, 1.0) AS rank FROM {from} \
             WHERE search MATCH ?1 AND s.rowid >= ?7 {filters} ORDER BY rank LIMIT ?2) \
         SELECT j.id, j.url, j.title, j.document, \
             (SELECT snippet(search, 2, char(2), char(3), '…', 16) FROM search \
                  WHERE search MATCH ?1 AND rowid = top.id), \
             -top.rank, {HIT_COLUMNS} \
         FROM top JOIN jobs j ON j.id = top.id \
             LEFT JOIN library_meta lm ON lm.job_id = j.id \
             LEFT JOIN batches b ON b.id = j.batch_id \
         WHERE j.document IS NOT NULL ORDER BY top.rank"
    )
}

static RANKED_SQL: LazyLock<String> = LazyLock::new(|| ranked_sql(false));
static RANKED_FILTERED_SQL: LazyLock<String> = LazyLock::new(|| ranked_sql(true));

/// At most this many matches are ranked: the newest ones, when a query matches more.
///
/// BM25 costs about 2 µs a match (FTS5 reads each match's column sizes and counts its
/// hits), while walking the matches costs a tenth of that. A word in most of 100,000
/// documents took 150-300 ms to rank, and such words carry almost no weight anyway: FTS5
/// clamps the IDF of a word in more than half the documents to 1e-6. With the window, any
/// query ranks in tens of milliseconds (BENCHMARKS.md §9), and one matching fewer documents
/// than this is ranked exactly as before.
pub(super) const RANK_WINDOW: i64 = 10_000;

/// The matches ranked for a query that asks for `limit`: the window, or all it asks for (an
/// export of every match asks for 100,000, and got only the newest 10,000).
fn window_for(limit: u32) -> i64 {
    RANK_WINDOW.max(i64::from(limit))
}

/// The job id from which a query's newest [`RANK_WINDOW`] matches start; none when it has
/// fewer (walks the matches' ids only, newest first).
const WINDOW_SQL: &str =
    "SELECT rowid FROM search WHERE search MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2";

/// The same among the matches a filter lets through: counted over all matches, a host's or a
/// tag's older documents fell outside the window of a common word and were never found.
static WINDOW_FILTERED_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT s.rowid FROM search s JOIN jobs j ON j.id = s.rowid \
         WHERE search MATCH ?1 AND {FILTERS} ORDER BY s.rowid DESC LIMIT 1 OFFSET ?2"
    )
});

/// Every document, newest job first: `library_meta` has a row per document, walked by its key.
/// Only the start of each text is read for its snippet; ?1 (the text) is none.
static LISTED_SQL: LazyLock<String> = LazyLock::new(|| listed_sql("?1 IS NULL"));

/// The listing without the documents that match ?1 (FTS5 syntax): a filter with exclusions
/// alone (`tag:thesis -draft`).
static LISTED_EXCEPT_SQL: LazyLock<String> = LazyLock::new(|| {
    listed_sql("lm.job_id NOT IN (SELECT rowid FROM search WHERE search MATCH ?1)")
});

fn listed_sql(except: &str) -> String {
    format!(
        "SELECT j.id, j.url, j.title, j.document, substr(s.body, 1, {LEAD_READ}), 0.0, {HIT_COLUMNS} \
         FROM library_meta lm JOIN jobs j ON j.id = lm.job_id \
             LEFT JOIN search s ON s.rowid = lm.job_id \
             LEFT JOIN batches b ON b.id = j.batch_id \
         WHERE {except} AND {FILTERS} \
         ORDER BY lm.job_id DESC LIMIT ?2"
    )
}

/// How much of a text a listing's snippet is cut from, and how long the snippet is at most.
const LEAD_READ: usize = 1_000;
pub(crate) const LEAD_CHARS: usize = 200;

/// The index's rows, from the table of before migration 0023 into the one it makes, composed
/// (NFC) as [`index_in`] writes them; then the old table goes.
pub(super) fn copy_into_new_index(tx: &Transaction<'_>) -> rusqlite_migration::HookResult {
    let rows: i64 = tx.query_row("SELECT count(*) FROM search_before_0023", [], |r| r.get(0))?;
    // About a minute per 10,000 long documents, once: say why the open waits.
    tracing::info!(
        "rebuilding the search index of {rows} documents so that words keep their marks (once, after this upgrade)"
    );
    {
        let mut read = tx.prepare("SELECT rowid, title, authors, body FROM search_before_0023")?;
        let mut write =
            tx.prepare("INSERT INTO search (rowid, title, authors, body) VALUES (?1, ?2, ?3, ?4)")?;
        let mut rows = read.query([])?;
        while let Some(row) = rows.next()? {
            let text = |i| -> rusqlite::Result<Option<String>> {
                Ok(row
                    .get::<_, Option<String>>(i)?
                    .map(|t| composed(&t).into_owned()))
            };
            write.execute(params![row.get::<_, i64>(0)?, text(1)?, text(2)?, text(3)?])?;
        }
    }
    tx.execute_batch("DROP TABLE search_before_0023")?;
    Ok(())
}

/// Write a job's document into the index and the Library list, replacing its older version's.
pub(super) fn index_in(tx: &Transaction<'_>, job_id: i64, doc: &Indexed) -> Result<()> {
    tx.prepare_cached("DELETE FROM search WHERE rowid = ?1")?
        .execute([job_id])?;
    tx.prepare_cached("INSERT INTO search (rowid, title, authors, body) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![
            job_id,
            composed(&doc.title),
            composed(&doc.authors),
            composed(&doc.body)
        ])?;
    // Plain strings: encoding cannot fail.
    let authors = serde_json::to_string(&doc.author_list).ok();
    tx.prepare_cached(
        "INSERT INTO library_meta (job_id, authors, year, container, kind, pdf) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (job_id) DO UPDATE SET \
         authors = excluded.authors, year = excluded.year, container = excluded.container, \
         kind = excluded.kind, pdf = excluded.pdf",
    )?
    .execute(params![
        job_id,
        authors,
        doc.year,
        doc.container,
        doc.kind,
        doc.pdf
    ])?;
    Ok(())
}

/// A listing's snippet: the start of the text as plain words ([`snippet::plain`]), cut after
/// a whole word.
pub(crate) fn lead(text: &str) -> String {
    let plain = snippet::plain(text);
    let mut out = String::new();
    for word in plain.split(' ').filter(|w| !w.is_empty()) {
        let len = out.chars().count() + usize::from(!out.is_empty()) + word.chars().count();
        if len > LEAD_CHARS {
            if out.is_empty() {
                out = word.chars().take(LEAD_CHARS).collect();
            }
            out.push('…');
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

fn list_of(json: Option<String>) -> Vec<String> {
    json.and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn hit_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Hit> {
    Ok(Hit {
        job_id: r.get(0)?,
        url: r.get(1)?,
        title: r.get(2)?,
        document: r.get(3)?,
        snippet: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
        score: r.get(5)?,
        host: r.get(6)?,
        authors: list_of(r.get(7)?),
        year: r.get(8)?,
        container: r.get(9)?,
        tags: list_of(r.get(10)?),
        batch: r.get(11)?,
        batch_id: r.get(12)?,
        kind: r.get(13)?,
        pdf: r.get(14)?,
    })
}

/// The filters of a query, as bound: host, batch, how many tags, their keys (JSON).
struct Filters<'a> {
    host: Option<&'a str>,
    batch_id: Option<i64>,
    tags: Vec<String>,
}

/// The listing: `f`'s documents, newest first, without those matching `except` (FTS5
/// syntax).
fn listed(
    conn: &rusqlite::Connection,
    limit: u32,
    f: &Filters<'_>,
    except: Option<&str>,
) -> rusqlite::Result<Vec<Hit>> {
    // A list of strings: encoding cannot fail.
    let keys = serde_json::to_string(&f.tags).unwrap_or_else(|_| "[]".into());
    let sql = if except.is_some() {
        &LISTED_EXCEPT_SQL
    } else {
        &LISTED_SQL
    };
    let mut hits: Vec<Hit> = conn
        .prepare_cached(sql)?
        .query_map(
            params![except, limit, f.host, f.batch_id, f.tags.len(), keys],
            hit_from_row,
        )?
        .collect::<rusqlite::Result<_>>()?;
    for hit in &mut hits {
        hit.snippet = lead(&hit.snippet);
    }
    Ok(hits)
}

/// `f`'s documents that match `text` (FTS5 syntax), best first, ranked within the window.
fn ranked(
    conn: &rusqlite::Connection,
    text: &str,
    limit: u32,
    f: &Filters<'_>,
    window: i64,
) -> rusqlite::Result<Vec<Hit>> {
    let keys = serde_json::to_string(&f.tags).unwrap_or_else(|_| "[]".into());
    let unfiltered = f.host.is_none() && f.batch_id.is_none() && f.tags.is_empty();
    let first = |found: rusqlite::Result<i64>| match found {
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(i64::MIN),
        other => other,
    };
    let mut from = first(
        conn.prepare_cached(WINDOW_SQL)?
            .query_row(params![text, window - 1], |r| r.get(0)),
    )?;
    // The filter's walk joins each match to its job: only a query with more matches than the
    // window pays for it.
    if from != i64::MIN && !unfiltered {
        from = first(conn.prepare_cached(&WINDOW_FILTERED_SQL)?.query_row(
            params![text, window - 1, f.host, f.batch_id, f.tags.len(), keys],
            |r| r.get(0),
        ))?;
    }
    let sql = if unfiltered {
        &RANKED_SQL
    } else {
        &RANKED_FILTERED_SQL
    };
    let mut hits: Vec<Hit> = conn
        .prepare_cached(sql)?
        .query_map(
            params![text, limit, f.host, f.batch_id, f.tags.len(), keys, from],
            hit_from_row,
        )?
        .collect::<rusqlite::Result<_>>()?;
    for hit in &mut hits {
        hit.snippet = snippet::marked(&hit.snippet);
    }
    Ok(hits)
}

impl Store {
    pub fn library(&self, q: &LibraryQuery) -> Result<Vec<Hit>> {
        let (text, mut tags) = split_tag_terms(&q.text);
        if let Some(k) = q.tag.as_deref().and_then(clean).map(|t| key(&t))
            && !tags.contains(&k)
        {
            tags.push(k);
        }
        let filters = Filters {
            host: q.host.as_deref(),
            batch_id: q.batch_id,
            tags,
        };
        let conn = self.conn()?;
        if text.is_empty() {
            return Ok(listed(&conn, q.limit, &filters, None)?);
        }
        // The same query language as PostgreSQL's, written in FTS5's syntax with every term
        // quoted, so that no text is an error of the index's own syntax.
        let Some(parsed) = SearchQuery::parse_lower(&text) else {
            // A filter and exclusions alone (`tag:thesis -draft`): the filter's documents
            // without those. With no filter they would list nearly everything.
            let filtered =
                filters.host.is_some() || filters.batch_id.is_some() || !filters.tags.is_empty();
            if filtered && let Some(excluded) = SearchQuery::excluded_lower(&text) {
                let except = excluded.to_fts5();
                return Ok(listed(&conn, q.limit, &filters, Some(&except))?);
            }
            return Ok(Vec::new());
        };
        Ok(ranked(
            &conn,
            &parsed.to_fts5(),
            q.limit,
            &filters,
            window_for(q.limit),
        )?)
    }

    pub fn clear_index(&self) -> Result<()> {
        self.write(|tx| {
            tx.execute("DELETE FROM search", [])?;
            tx.execute("DELETE FROM library_meta", [])?;
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
                if newest.as_deref().is_some_and(|n| same_file(n, path)) {
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

/// Whether two spellings of a path name one file: the data folder given as `./data`, through a
/// symlink, or with a trailing `/.` writes the same documents as its plain form.
fn same_file(a: &str, b: &str) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::engine::queue::suite::search::{done, ids, query, tagged};

    #[test]
    fn a_query_matching_more_than_the_window_ranks_its_newest_matches() {
        let s = Store::open_in_memory().expect("store");
        // The oldest has the word in its title, so it ranks first when it is in the window.
        let oldest = done(&s, "https://a.example/0", "River notes", "", "A river.");
        let newer: Vec<i64> = (1..=4)
            .map(|n| {
                let url = format!("https://a.example/{n}");
                done(&s, &url, "Notes", "", &format!("Text {n} about a river."))
            })
            .collect();
        let f = Filters {
            host: None,
            batch_id: None,
            tags: Vec::new(),
        };
        let conn = s.conn().expect("conn");
        let all = ranked(&conn, "river", 10, &f, 10).expect("search");
        assert_eq!(all.len(), 5);
        assert_eq!(all[0].job_id, oldest, "ranked exactly within the window");
        let windowed = ranked(&conn, "river", 10, &f, 3).expect("search");
        let mut got = ids(&windowed);
        got.sort_unstable();
        assert_eq!(got, newer[1..], "only the three newest matches are ranked");
    }

    #[test]
    fn a_query_asking_for_more_than_the_window_ranks_as_many() {
        assert_eq!(window_for(50), RANK_WINDOW);
        assert_eq!(window_for(100_000), 100_000);
    }

    #[test]
    fn a_filtered_query_counts_its_window_among_the_matches_it_lets_through() {
        let s = Store::open_in_memory().expect("store");
        let thesis: Vec<i64> = (0..2)
            .map(|n| {
                tagged(
                    &s,
                    &format!("https://a.example/t{n}"),
                    &["thesis"],
                    "a river",
                )
            })
            .collect();
        for n in 0..5 {
            tagged(&s, &format!("https://b.example/{n}"), &[], "a river");
        }
        let conn = s.conn().expect("conn");
        let f = Filters {
            host: None,
            batch_id: None,
            tags: vec!["thesis".into()],
        };
        let mut got = ids(&ranked(&conn, "river", 10, &f, 2).expect("search"));
        got.sort_unstable();
        assert_eq!(
            got, thesis,
            "both older thesis documents, though 5 newer matches exist"
        );
        let host = Filters {
            host: Some("a.example"),
            ..f
        };
        assert_eq!(ranked(&conn, "river", 10, &host, 2).expect("host").len(), 2);
    }

    #[test]
    fn a_deleted_job_leaves_the_library_list() {
        let s = Store::open_in_memory().expect("store");
        let id = tagged(&s, "https://a.example/1", &["thesis"], "qubit");
        let rows = |table: &str| -> i64 {
            s.conn()
                .expect("conn")
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
                .expect("count")
        };
        assert_eq!((rows("library_meta"), rows("job_tags")), (1, 1));
        s.delete(&[id]).expect("delete");
        assert_eq!((rows("library_meta"), rows("job_tags")), (0, 0));
        assert!(s.library(&query("")).expect("empty").is_empty());
    }

    #[test]
    fn the_listing_walks_the_list_by_its_key_without_sorting() {
        let s = Store::open_in_memory().expect("store");
        tagged(&s, "https://a.example/1", &["thesis"], "qubit");
        let conn = s.conn().expect("conn");
        let plan = crate::engine::sqlite::testing::query_plan(
            &conn,
            &LISTED_SQL,
            params![
                None::<String>,
                10,
                None::<String>,
                None::<i64>,
                1,
                "[\"thesis\"]"
            ],
        );
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
    }
}
