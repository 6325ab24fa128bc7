//! The library on PostgreSQL: the Library list and its full-text index (a `tsvector` per
//! document, title and authors weighted above the text), tags, and the rebuild.
//!
//! Accents are folded in Gleaner, before the text is stored and in each query, as SQLite's
//! `remove_diacritics` does, so no server extension is needed.

use super::rows::Conn;
use super::{Db, transaction};
use crate::engine::queue::search_query::{SearchQuery, fold, in_word, searchable};
use crate::engine::queue::{Hit, Indexed, LibraryQuery, Reindexed, Result};
use crate::engine::sqlite::search::lead;
use crate::engine::sqlite::snippet::{CLOSE, OPEN, marked};
use crate::engine::tags::{clean, key, normalise, split_tag_terms};

/// A word the snippet marks: folded, and whether it is a prefix.
type Term = (String, bool);

/// Tokens a snippet spans, as SQLite's `snippet(…, 16)` does.
const SNIPPET_TOKENS: usize = 16;

/// The words of `body` around its first match of `terms`, each match between [`OPEN`] and
/// [`CLOSE`], with `…` where the text goes on: what FTS5's `snippet()` gives, made here
/// because `ts_headline` drops the punctuation at a fragment's ends.
fn snippet(body: &str, terms: &[Term]) -> String {
    snippet_found(body, terms).0
}

/// As [`snippet`], and whether a word of `terms` is in `body`.
fn snippet_found(body: &str, terms: &[Term]) -> (String, bool) {
    let tokens: Vec<(usize, usize)> = {
        let mut out = Vec::new();
        let mut start = None;
        for (i, c) in body.char_indices() {
            match (in_word(c), start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    out.push((s, i));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            out.push((s, body.len()));
        }
        out
    };
    let matches = |&(a, b): &(usize, usize)| {
        let word = fold(&body[a..b]);
        terms.iter().any(|(t, prefix)| {
            if *prefix {
                word.starts_with(t.as_str())
            } else {
                word == *t
            }
        })
    };
    let found = tokens.iter().position(matches);
    let first = found.unwrap_or(0);
    let from = first.saturating_sub(SNIPPET_TOKENS / 4);
    let to = (from + SNIPPET_TOKENS).min(tokens.len());
    let from = to.saturating_sub(SNIPPET_TOKENS);
    let mut out = String::new();
    let mut at = match tokens.get(from) {
        Some(_) if from > 0 => {
            out.push('…');
            tokens[from].0
        }
        _ => 0,
    };
    for token in &tokens[from..to] {
        out.push_str(&body[at..token.0]);
        if matches(token) {
            out.push(OPEN);
            out.push_str(&body[token.0..token.1]);
            out.push(CLOSE);
        } else {
            out.push_str(&body[token.0..token.1]);
        }
        at = token.1;
    }
    if to < tokens.len() {
        out.push('…');
    } else {
        out.push_str(&body[at..]);
    }
    (out, found.is_some())
}

/// Write a job's document into the index and the Library list, replacing its older version.
/// How much of a document's text PostgreSQL indexes. A `tsvector` holds at most 1 MiB, and
/// a text of words that never repeat takes up to about three times its size there; a longer
/// text is kept whole (`body`, for snippets and the reader) but searched by its start.
const INDEXED_BYTES: usize = 256 * 1024;

/// The start of `text` that is indexed, cut at a character boundary.
fn indexed_part(text: &str) -> &str {
    if text.len() <= INDEXED_BYTES {
        return text;
    }
    let mut end = INDEXED_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

pub(super) async fn index_in(tx: &impl Conn, job_id: i64, doc: &Indexed) -> Result<()> {
    let authors = serde_json::to_string(&doc.author_list).ok();
    tx.exec(
        "INSERT INTO library (job_id, title, authors_line, body, authors, year, container, kind, \
             pdf, tsv) \
         VALUES ($1, $2, $3, $4, $5::text::jsonb, $6, $7, $8, $9, \
             setweight(to_tsvector('simple', $10), 'A') || setweight(to_tsvector('simple', $11), 'B') \
             || setweight(to_tsvector('simple', $12), 'D')) \
         ON CONFLICT (job_id) DO UPDATE SET title = excluded.title, \
             authors_line = excluded.authors_line, body = excluded.body, \
             authors = excluded.authors, year = excluded.year, container = excluded.container, \
             kind = excluded.kind, pdf = excluded.pdf, tsv = excluded.tsv, words_split = true",
        &[
            &job_id,
            &doc.title,
            &doc.authors,
            &doc.body,
            &authors,
            &doc.year,
            &doc.container,
            &doc.kind,
            &doc.pdf,
            &searchable(&doc.title),
            &searchable(&doc.authors),
            &searchable(indexed_part(&doc.body)),
        ],
    )
    .await?;
    Ok(())
}

/// Tag each job with its tags, in one statement: an intake of 10,000 jobs is one round trip,
/// not one per tag.
pub(super) async fn add_tags_in(tx: &impl Conn, tagged: &[(i64, &[String])]) -> Result<()> {
    let (mut keys, mut ids, mut names) = (Vec::new(), Vec::new(), Vec::new());
    for (job_id, tags) in tagged {
        for tag in tags.iter() {
            keys.push(key(tag));
            ids.push(*job_id);
            names.push(tag.as_str());
        }
    }
    if keys.is_empty() {
        return Ok(());
    }
    tx.exec(
        "INSERT INTO job_tags (tag, job_id, name) \
         SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[]) ON CONFLICT DO NOTHING",
        &[&keys, &ids, &names],
    )
    .await?;
    Ok(())
}

/// What every hit reads after its first six columns, in [`hit_from_row`]'s order.
const HIT_COLUMNS: &str = "j.host, l.authors::text, l.year, l.container, (j.meta -> 'tags')::text, \
     b.name, j.batch_id, l.kind, l.pdf";

/// The filters both queries share: a document, the host ($3), the batch ($4), and all of the
/// tag keys in $5.
const FILTERS: &str = "j.document IS NOT NULL AND ($3::text IS NULL OR j.host = $3) \
     AND ($4::bigint IS NULL OR j.batch_id = $4) \
     AND (cardinality($5::text[]) = 0 OR (SELECT count(*) FROM job_tags t \
         WHERE t.job_id = j.id AND t.tag = ANY($5)) = cardinality($5::text[]))";

/// The listing: the filters' documents, newest first, without those matching the `tsquery`
/// $1 when there is one (a filter with exclusions alone, `tag:thesis -draft`).
fn listed_sql() -> String {
    format!(
        "SELECT j.id, j.url, j.title, j.document, substr(l.body, 1, 1000), 0.0::float8, \
             {HIT_COLUMNS} \
         FROM library l JOIN jobs j ON j.id = l.job_id LEFT JOIN batches b ON b.id = j.batch_id \
         WHERE ($1::text IS NULL OR NOT l.tsv @@ to_tsquery('simple', $1)) AND {FILTERS} \
         ORDER BY l.job_id DESC LIMIT $2"
    )
}

/// How much of a hit's text goes over the wire for its snippet (characters), and how far
/// before the first match it starts: a search as one types sent up to 200,000 characters
/// per hit, on every key.
const SNIPPET_WINDOW: usize = 16_384;
const SNIPPET_BEFORE: usize = 2_000;
/// How far into a text its snippet's match is looked for (characters), and what is read when
/// the window around the first place a word appears as written holds no match of it: the
/// indexed part, past which no match made the text a hit.
const SNIPPET_SCAN: usize = INDEXED_BYTES;

/// Ranked by `ts_rank` with weights title 1.0, authors 0.5, text 0.1 (as SQLite's BM25
/// weights 10, 5, 1); each of the best hits comes with a window of its text around the first
/// place one of the words `$6` appears in its first [`SNIPPET_SCAN`] characters, or those
/// characters when none does as written (an accent the query folded: "Müller" for
/// "muller"), for [`snippet`].
fn ranked_sql() -> String {
    format!(
        "WITH q AS (SELECT to_tsquery('simple', $1) AS q), \
         top AS (SELECT l.job_id, ts_rank('{{0.1, 0.2, 0.5, 1.0}}', l.tsv, q.q)::float8 AS score \
             FROM library l JOIN jobs j ON j.id = l.job_id, q \
             WHERE l.tsv @@ q.q AND {FILTERS} ORDER BY score DESC, l.job_id DESC LIMIT $2), \
         placed AS (SELECT top.job_id, (SELECT min(nullif(strpos(lower(left(l.body, \
                 {SNIPPET_SCAN})), w), 0)) FROM unnest($6::text[]) w) AS at \
             FROM top JOIN library l ON l.job_id = top.job_id) \
         SELECT j.id, j.url, j.title, j.document, \
             CASE WHEN placed.at IS NULL THEN left(l.body, {SNIPPET_SCAN}) \
                 ELSE substr(l.body, greatest(1, placed.at - {SNIPPET_BEFORE}), {SNIPPET_WINDOW}) END, \
             top.score, \
             {HIT_COLUMNS} \
         FROM top JOIN jobs j ON j.id = top.job_id JOIN library l ON l.job_id = top.job_id \
             JOIN placed ON placed.job_id = top.job_id \
             LEFT JOIN batches b ON b.id = j.batch_id \
         ORDER BY top.score DESC, top.job_id DESC"
    )
}

fn list_of(json: Option<String>) -> Vec<String> {
    json.and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn hit_from_row(r: &tokio_postgres::Row) -> Hit {
    Hit {
        job_id: r.get(0),
        url: r.get(1),
        title: r.get(2),
        document: r.get(3),
        snippet: r.get::<_, Option<String>>(4).unwrap_or_default(),
        score: r.get(5),
        host: r.get(6),
        authors: list_of(r.get(7)),
        year: r.get(8),
        container: r.get(9),
        tags: list_of(r.get(10)),
        batch: r.get(11),
        batch_id: r.get(12),
        kind: r.get(13),
        pdf: r.get(14),
    }
}

pub(super) async fn library(db: &Db, q: &LibraryQuery) -> Result<Vec<Hit>> {
    let (text, mut tags) = split_tag_terms(&q.text);
    if let Some(k) = q.tag.as_deref().and_then(clean).map(|t| key(&t))
        && !tags.contains(&k)
    {
        tags.push(k);
    }
    let host = q.host.clone();
    let limit = i64::from(q.limit);
    let c = db.client().await?;
    // A filter and exclusions alone (`tag:thesis -draft`): the filter's documents without
    // those. With no filter they would list nearly everything.
    let filtered = host.is_some() || q.batch_id.is_some() || !tags.is_empty();
    let except = if text.trim().is_empty() || !filtered {
        None
    } else {
        SearchQuery::excluded(&text).map(|e| e.to_tsquery())
    };
    if text.trim().is_empty() || except.is_some() {
        let rows = c
            .query_rows(&listed_sql(), &[&except, &limit, &host, &q.batch_id, &tags])
            .await?;
        return Ok(rows
            .iter()
            .map(|r| {
                let mut hit = hit_from_row(r);
                hit.snippet = lead(&hit.snippet);
                hit
            })
            .collect());
    }
    let Some(parsed) = SearchQuery::parse(&text) else {
        return Ok(Vec::new());
    };
    let (query, terms) = (parsed.to_tsquery(), parsed.marks());
    let words: Vec<&str> = terms.iter().map(|(w, _)| w.as_str()).collect();
    let rows = c
        .query_rows(
            &ranked_sql(),
            &[&query, &limit, &host, &q.batch_id, &tags, &words],
        )
        .await?;
    let mut hits: Vec<Hit> = rows.iter().map(hit_from_row).collect();
    // A window placed on a word found inside another ("art" in "start") may not hold the
    // match: those hits read the text's first characters, in one more round trip.
    let mut missed = Vec::new();
    for (i, hit) in hits.iter_mut().enumerate() {
        let (text, found) = snippet_found(&hit.snippet, &terms);
        if !found {
            missed.push(i);
        }
        hit.snippet = text;
    }
    if !missed.is_empty() {
        let ids: Vec<i64> = missed.iter().map(|&i| hits[i].job_id).collect();
        let scanned: std::collections::HashMap<i64, String> = c
            .query_rows(
                &format!(
                    "SELECT job_id, left(body, {SNIPPET_SCAN}) FROM library WHERE job_id = ANY($1)"
                ),
                &[&ids],
            )
            .await?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        for i in missed {
            if let Some(body) = scanned.get(&hits[i].job_id) {
                hits[i].snippet = snippet(body, &terms);
            }
        }
    }
    for hit in &mut hits {
        hit.snippet = marked(&hit.snippet);
    }
    Ok(hits)
}

/// Rebuild the index of the documents indexed before migration 0009 (or 0010) from the text
/// the library keeps, with Gleaner's word split and fold ([`searchable`]), 100 at a time. Rows another
/// member is rebuilding are left to it.
pub(super) async fn split_words(db: &Db) -> Result<u64> {
    let mut done = 0;
    let mut total = None;
    loop {
        let n: Result<u64> = transaction!(db, |tx| {
            // The indexed part only (characters, at least as many as its bytes): a library's
            // long texts are kept whole and went over the wire whole for nothing.
            let rows = tx
                .query_rows(
                    &format!(
                        "SELECT job_id, title, authors_line, left(body, {INDEXED_BYTES}) \
                         FROM library WHERE NOT words_split \
                         ORDER BY job_id LIMIT 100 FOR UPDATE SKIP LOCKED"
                    ),
                    &[],
                )
                .await?;
            for r in &rows {
                let (title, authors, body): (String, String, String) =
                    (r.get(1), r.get(2), r.get(3));
                tx.exec(
                    "UPDATE library SET words_split = true, \
                         tsv = setweight(to_tsvector('simple', $2), 'A') \
                             || setweight(to_tsvector('simple', $3), 'B') \
                             || setweight(to_tsvector('simple', $4), 'D') \
                     WHERE job_id = $1",
                    &[
                        &r.get::<_, i64>(0),
                        &searchable(&title),
                        &searchable(&authors),
                        &searchable(indexed_part(&body)),
                    ],
                )
                .await?;
            }
            rows.len() as u64
        });
        let n = n?;
        if n == 0 {
            return Ok(done);
        }
        let before = done;
        done += n;
        if done / SPLIT_PROGRESS_EVERY > before / SPLIT_PROGRESS_EVERY {
            // A long first open after the upgrade says what it is doing.
            let total = match total {
                Some(t) => t,
                None => {
                    let c = db.client().await?;
                    let left: i64 = c
                        .query_one("SELECT count(*) FROM library WHERE NOT words_split", &[])
                        .await?
                        .get(0);
                    *total.insert(done + left as u64)
                }
            };
            tracing::info!("search index: {done} of about {total} documents brought up to date");
        }
    }
}

/// How many documents the rebuild at open brings up to date between two lines of the log.
const SPLIT_PROGRESS_EVERY: u64 = 1_000;

pub(super) async fn clear_index(db: &Db) -> Result<()> {
    transaction!(db, |tx| {
        tx.exec("DELETE FROM library", &[]).await?;
    })
}

pub(super) async fn reindex(db: &Db, documents: &[(i64, String, Indexed)]) -> Result<Reindexed> {
    transaction!(db, |tx| {
        let mut out = Reindexed::default();
        for (job_id, path, doc) in documents {
            let rows = tx
                .query_rows("SELECT document FROM jobs WHERE id = $1", &[job_id])
                .await?;
            let newest: Option<String> = rows.first().and_then(|r| r.get(0));
            if newest.as_deref() == Some(path.as_str()) {
                index_in(&tx, *job_id, doc).await?;
                out.indexed += 1;
            } else {
                out.passed_over += 1;
            }
        }
        out
    })
}

pub(super) async fn job_tags(db: &Db, job_id: i64) -> Result<Vec<String>> {
    let rows = db
        .client()
        .await?
        .query_rows(
            "SELECT (meta -> 'tags')::text FROM jobs WHERE id = $1",
            &[&job_id],
        )
        .await?;
    Ok(list_of(rows.first().and_then(|r| r.get(0))))
}

/// Names with their counts, from a query whose rows are (text, bigint).
async fn named_counts(db: &Db, sql: &str) -> Result<Vec<(String, u64)>> {
    let rows = db.client().await?.query_rows(sql, &[]).await?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), r.get::<_, i64>(1) as u64))
        .collect())
}

pub(super) async fn tag_counts(db: &Db) -> Result<Vec<(String, u64)>> {
    named_counts(
        db,
        "SELECT min(name), count(*) FROM job_tags GROUP BY tag ORDER BY count(*) DESC, tag",
    )
    .await
}

pub(super) async fn library_tag_counts(db: &Db) -> Result<Vec<(String, u64)>> {
    named_counts(
        db,
        "SELECT min(t.name), count(*) FROM job_tags t \
             JOIN library l ON l.job_id = t.job_id JOIN jobs j ON j.id = t.job_id \
         WHERE j.document IS NOT NULL GROUP BY t.tag ORDER BY count(*) DESC, t.tag",
    )
    .await
}

pub(super) async fn library_hosts(db: &Db) -> Result<Vec<crate::engine::queue::HostCount>> {
    let hosts = named_counts(
        db,
        "SELECT j.host, count(*) FROM library l JOIN jobs j ON j.id = l.job_id \
         WHERE j.document IS NOT NULL GROUP BY j.host ORDER BY j.host",
    )
    .await?;
    Ok(hosts
        .into_iter()
        .map(|(host, jobs)| crate::engine::queue::HostCount { host, jobs })
        .collect())
}

pub(super) async fn set_tags(db: &Db, job_id: i64, tags: &[String]) -> Result<Option<Vec<String>>> {
    let tags = normalise(tags);
    let listed = serde_json::to_string(&tags)?;
    transaction!(db, |tx| {
        // A job's metadata that is not an object is replaced by its tags, as in SQLite.
        let changed = tx
            .exec(
                "UPDATE jobs SET meta = nullif(CASE WHEN jsonb_typeof(meta) = 'object' \
                     THEN meta ELSE '{}'::jsonb END - 'tags' \
                     || CASE WHEN $2::text = '[]' THEN '{}'::jsonb \
                         ELSE jsonb_build_object('tags', $2::text::jsonb) END, '{}'::jsonb) \
                 WHERE id = $1",
                &[&job_id, &listed],
            )
            .await?;
        if changed == 0 {
            None
        } else {
            tx.exec("DELETE FROM job_tags WHERE job_id = $1", &[&job_id])
                .await?;
            add_tags_in(&tx, &[(job_id, &tags)]).await?;
            // The lab's copy of the document too: other members export, read and pull that
            // one, and kept the tags it was fetched with.
            let stored = tx
                .query_rows(
                    "SELECT content FROM documents WHERE job_id = $1 FOR UPDATE",
                    &[&job_id],
                )
                .await?;
            if let Some(content) = stored.first().map(|r| r.get::<_, Vec<u8>>(0))
                && let Some(retagged) =
                    crate::engine::tags::retag_text(&String::from_utf8_lossy(&content), &tags)
            {
                tx.exec(
                    "UPDATE documents SET content = $2 WHERE job_id = $1",
                    &[&job_id, &retagged.into_bytes()],
                )
                .await?;
            }
            // Other members' windows show the tags.
            db.notify(&tx).await?;
            Some(tags.clone())
        }
    })
}

pub(super) async fn citation_keys(db: &Db) -> Result<Vec<(i64, String)>> {
    let rows = db
        .client()
        .await?
        .query_rows("SELECT job_id, key FROM citation_keys", &[])
        .await?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

pub(super) async fn adopt_citation_key(db: &Db, job_id: i64, key: &str) -> Result<bool> {
    transaction!(db, |tx| {
        // Metadata that is not an object is left as it is, as in SQLite.
        let changed = tx
            .exec(
                "UPDATE jobs SET meta = coalesce(meta, '{}'::jsonb) \
                     || jsonb_build_object('citation_key', $2::text) \
                 WHERE id = $1 AND status <> 'running' \
                   AND (meta IS NULL OR jsonb_typeof(meta) = 'object' \
                        AND coalesce(jsonb_typeof(meta -> 'citation_key'), 'null') = 'null') \
                   AND NOT EXISTS (SELECT 1 FROM citation_keys WHERE job_id = $1)",
                &[&job_id, &key],
            )
            .await?;
        if changed == 0 {
            false
        } else {
            // The lab's copy of the document too, which other members export.
            let stored = tx
                .query_rows(
                    "SELECT content FROM documents WHERE job_id = $1 FOR UPDATE",
                    &[&job_id],
                )
                .await?;
            if let Some(content) = stored.first().map(|r| r.get::<_, Vec<u8>>(0))
                && let Some(keyed) = crate::engine::tags::with_citation_key_line(
                    &String::from_utf8_lossy(&content),
                    key,
                )
            {
                tx.exec(
                    "UPDATE documents SET content = $2 WHERE job_id = $1",
                    &[&job_id, &keyed.into_bytes()],
                )
                .await?;
            }
            true
        }
    })
}

/// A key of a job deleted meanwhile is not kept (its row is gone).
pub(super) async fn keep_citation_keys(db: &Db, keys: &[(i64, String)]) -> Result<usize> {
    transaction!(db, |tx| {
        let mut kept = 0;
        for (job_id, key) in keys {
            kept += tx
                .exec(
                    "INSERT INTO citation_keys (job_id, key, key_lower) \
                     SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM jobs WHERE id = $1) \
                     ON CONFLICT DO NOTHING",
                    &[job_id, key, &key.to_lowercase()],
                )
                .await?;
        }
        kept as usize
    })
}

#[cfg(test)]
mod tests {
    use crate::engine::postgres::PgStore;
    use crate::engine::postgres::testing::{execute, fresh_database_url};
    use crate::engine::queue::Queue;
    use crate::engine::queue::suite::search::done;

    /// A library indexed before the index held Gleaner's words (PostgreSQL's parser's tokens,
    /// `bedload/suspended` whole) is rebuilt when a member opens the queue: its documents are
    /// found by the words inside their compounds without a reindex by hand.
    #[test]
    fn an_index_of_the_parsers_tokens_is_rebuilt_at_open() {
        let url = fresh_database_url();
        let store = PgStore::open(&url, "m").expect("open");
        let id = done(
            &store,
            "https://a.example/1",
            "Transport",
            "",
            "bedload/suspended",
        );
        drop(store);
        // As migration 0009 found a row written before it.
        execute(
            &url,
            "UPDATE library SET words_split = false, \
                 tsv = setweight(to_tsvector('simple', 'bedload/suspended'), 'D')",
        );
        let store = PgStore::open(&url, "m").expect("reopen");
        let found: Vec<i64> = store
            .search("suspended", 10)
            .expect("search")
            .iter()
            .map(|h| h.job_id)
            .collect();
        assert_eq!(found, [id]);
    }

    /// What a subscriber of this thread writes, kept for the test to read.
    #[derive(Clone, Default)]
    struct Log(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Log {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("log").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The rebuild at the first open after the upgrade says how far it has come, so a long
    /// one is not a silent window, and reads each text's indexed part only.
    #[test]
    fn the_rebuild_at_open_logs_its_progress() {
        let url = fresh_database_url();
        let store = PgStore::open(&url, "m").expect("open");
        let jobs: Vec<_> = (0..1_000)
            .map(|i| crate::engine::sqlite::testing::job(&format!("https://a.example/{i}")))
            .collect();
        store.enqueue(None, &jobs, 5, 0).expect("enqueue");
        drop(store);
        // As migration 0009 found rows written before it, one text longer than is indexed.
        execute(
            &url,
            "INSERT INTO library (job_id, title, authors_line, body, tsv) \
             SELECT id, 'Transport', '', 'bedload/suspended', to_tsvector('simple', 'x') FROM jobs; \
             UPDATE library SET words_split = false; \
             UPDATE library SET body = body || repeat(' tail', 100000) \
                 WHERE job_id = (SELECT min(job_id) FROM library)",
        );
        let log = Log::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(tracing::Level::INFO)
            .finish();
        let store = tracing::subscriber::with_default(subscriber, || {
            PgStore::open(&url, "m").expect("reopen")
        });
        let text = String::from_utf8_lossy(&log.0.lock().expect("log")).into_owned();
        assert!(text.contains("1000 of about 1000 documents"), "{text}");
        drop(store);
        execute(
            &url,
            "DO $$ BEGIN IF (SELECT count(*) FROM library WHERE words_split \
                 AND tsv @@ to_tsquery('simple', 'suspended')) <> 1000 \
             THEN RAISE EXCEPTION 'not rebuilt'; END IF; END $$",
        );
    }

    /// A library indexed with every combining mark dropped ("काम" as "कम", found in "कमी") is
    /// rebuilt when a member opens the queue after migration 0010.
    #[test]
    fn an_index_without_its_marks_is_rebuilt_at_open() {
        let url = fresh_database_url();
        let store = PgStore::open(&url, "m").expect("open");
        let work = done(&store, "https://a.example/1", "A", "", "हम काम करते हैं");
        let lack = done(&store, "https://a.example/2", "D", "", "उसकी कमी है");
        drop(store);
        // As migration 0010 found these rows: indexed the old way, and up to date for 0009.
        execute(
            &url,
            &format!(
                "UPDATE library SET words_split = true, tsv = setweight(to_tsvector('simple', \
                     CASE job_id WHEN {work} THEN 'हम कम करत ह' ELSE 'उसक कम ह' END), 'D'); \
                 DELETE FROM gleaner_schema WHERE version >= 10"
            ),
        );
        let store = PgStore::open(&url, "m").expect("reopen");
        let found = |q: &str| -> Vec<i64> {
            store
                .search(q, 10)
                .expect(q)
                .iter()
                .map(|h| h.job_id)
                .collect()
        };
        assert_eq!(found("काम"), [work]);
        assert_eq!(found("कमी"), [lack]);
    }
}
