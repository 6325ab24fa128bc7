//! Full-text search over the library (FTS5, migration 0019): the index row written with a
//! job's success, the ranked query, the Library view's listing and filters (migration 0020),
//! and the rebuild from the library folder.

use std::sync::LazyLock;

use rusqlite::{Transaction, params};

use super::{Store, snippet};
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

/// The job id from which a query's newest [`RANK_WINDOW`] matches start; none when it has
/// fewer (walks the matches' ids only, newest first).
const WINDOW_SQL: &str =
    "SELECT rowid FROM search WHERE search MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2";

/// Every document, newest job first: `library_meta` has a row per document, walked by its key.
/// Only the start of each text is read for its snippet; ?1 (the text) is none.
static LISTED_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT j.id, j.url, j.title, j.document, substr(s.body, 1, {LEAD_READ}), 0.0, {HIT_COLUMNS} \
         FROM library_meta lm JOIN jobs j ON j.id = lm.job_id \
             LEFT JOIN search s ON s.rowid = lm.job_id \
             LEFT JOIN batches b ON b.id = j.batch_id \
         WHERE ?1 IS NULL AND {FILTERS} \
         ORDER BY lm.job_id DESC LIMIT ?2"
    )
});

/// How much of a text a listing's snippet is cut from, and how long the snippet is at most.
const LEAD_READ: usize = 1_000;
const LEAD_CHARS: usize = 200;

/// Write a job's document into the index and the Library list, replacing its older version's.
pub(super) fn index_in(tx: &Transaction<'_>, job_id: i64, doc: &Indexed) -> Result<()> {
    tx.prepare_cached("DELETE FROM search WHERE rowid = ?1")?
        .execute([job_id])?;
    tx.prepare_cached("INSERT INTO search (rowid, title, authors, body) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![job_id, doc.title, doc.authors, doc.body])?;
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

/// A query of plain words: each word of `text` a quoted string, so that nothing in it is the
/// index's syntax (`C++ (draft"`, a lone `NEAR/`, `-`, `:`). The words must all appear.
fn plain_words(text: &str) -> String {
    text.split_whitespace()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A listing's snippet: the start of the text as plain words ([`snippet::plain`]), cut after
/// a whole word.
fn lead(text: &str) -> String {
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

/// The listing: `f`'s documents, newest first.
fn listed(conn: &rusqlite::Connection, limit: u32, f: &Filters<'_>) -> rusqlite::Result<Vec<Hit>> {
    // A list of strings: encoding cannot fail.
    let keys = serde_json::to_string(&f.tags).unwrap_or_else(|_| "[]".into());
    let mut hits: Vec<Hit> = conn
        .prepare_cached(&LISTED_SQL)?
        .query_map(
            params![None::<&str>, limit, f.host, f.batch_id, f.tags.len(), keys],
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
    let from: i64 = match conn
        .prepare_cached(WINDOW_SQL)?
        .query_row(params![text, window - 1], |r| r.get(0))
    {
        Ok(id) => id,
        Err(rusqlite::Error::QueryReturnedNoRows) => i64::MIN,
        Err(e) => return Err(e),
    };
    let keys = serde_json::to_string(&f.tags).unwrap_or_else(|_| "[]".into());
    let unfiltered = f.host.is_none() && f.batch_id.is_none() && f.tags.is_empty();
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
            return Ok(listed(&conn, q.limit, &filters)?);
        }
        // The query as written, with the index's syntax (phrases, prefixes, OR, NEAR); what
        // that syntax cannot take is searched as plain words.
        match ranked(&conn, &text, q.limit, &filters, RANK_WINDOW) {
            Ok(hits) => Ok(hits),
            Err(e) if is_query_error(&e) => {
                tracing::debug!(error = %e, "searching as plain words");
                Ok(ranked(
                    &conn,
                    &plain_words(&text),
                    q.limit,
                    &filters,
                    RANK_WINDOW,
                )?)
            }
            Err(e) => Err(e.into()),
        }
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
    use crate::engine::queue::{NewJob, Queue as _, Reference, Success};
    use crate::engine::sqlite::testing::job;
    use std::time::Duration;

    /// A done job whose document is indexed, as the worker's success writes it.
    fn done(s: &Store, url: &str, title: &str, authors: &str, body: &str) -> i64 {
        let doc = Indexed {
            title: title.into(),
            authors: authors.into(),
            body: body.into(),
            ..Indexed::default()
        };
        done_with(s, job(url), None, doc)
    }

    /// `new` queued (into `batch`, or a batch of its own), fetched and indexed as `doc`.
    fn done_with(s: &Store, new: NewJob, batch: Option<i64>, doc: Indexed) -> i64 {
        let url = new.url.clone();
        s.enqueue(batch, &[new], 5, 0).expect("enqueue");
        let c = s
            .claim("w", 1, Duration::from_secs(60), 8)
            .expect("claim")
            .expect("job");
        let success = Success {
            http_status: 200,
            final_url: url,
            title: Some(doc.title.clone()),
            document: Some(format!("/lib/{}.md", c.job_id)),
            index: Some(Box::new(doc)),
            ..Success::default()
        };
        s.complete(&c, &success, &Policy::default(), 2)
            .expect("complete")
            .expect("done");
        c.job_id
    }

    /// A done job with `tags`, whose text is `body`.
    fn tagged(s: &Store, url: &str, tags: &[&str], body: &str) -> i64 {
        let new = NewJob {
            reference: Some(Box::new(Reference {
                tags: tags.iter().map(|t| t.to_string()).collect(),
                ..Reference::default()
            })),
            ..job(url)
        };
        let doc = Indexed {
            title: format!("Page {url}"),
            body: body.into(),
            ..Indexed::default()
        };
        done_with(s, new, None, doc)
    }

    fn query(text: &str) -> LibraryQuery {
        LibraryQuery {
            text: text.into(),
            ..LibraryQuery::default()
        }
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
    fn a_snippet_is_plain_text_and_marks_only_the_matched_words() {
        let s = Store::open_in_memory().expect("store");
        done(
            &s,
            "https://a.example/1",
            "Notes",
            "",
            "The **bold** claim, see [the paper](https://x.example/p) on \\<sediment\\>.",
        );
        let hits = s.library(&query("sediment")).expect("search");
        assert_eq!(
            hits[0].snippet,
            "The bold claim, see the paper on <**sediment**>."
        );
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

    #[test]
    fn tag_terms_filter_the_ranked_hits_and_all_of_them_are_required() {
        let s = Store::open_in_memory().expect("store");
        let both = tagged(
            &s,
            "https://a.example/1",
            &["thesis", "Quantum sensing"],
            "qubit noise",
        );
        let thesis = tagged(
            &s,
            "https://a.example/2",
            &["Thesis"],
            "qubit qubit decoherence",
        );
        let none = tagged(&s, "https://a.example/3", &[], "qubit");
        let mut all = ids(&s.search("qubit", 10).expect("all"));
        all.sort_unstable();
        assert_eq!(all, [both, thesis, none]);
        let mut got = ids(&s.search("tag:thesis qubit", 10).expect("one tag"));
        got.sort_unstable();
        assert_eq!(got, [both, thesis]);
        assert_eq!(
            ids(&s
                .search("qubit TAG:THESIS tag:\"quantum SENSING\"", 10)
                .expect("two")),
            [both]
        );
        assert!(
            s.search("tag:nope qubit", 10)
                .expect("no such tag")
                .is_empty()
        );
        // The window's tag menu is one more filter, matched the same way.
        let q = LibraryQuery {
            tag: Some(" quantum   sensing ".into()),
            ..query("qubit")
        };
        assert_eq!(ids(&s.library(&q).expect("menu")), [both]);
        // The rest of the text keeps the index's syntax.
        assert_eq!(
            ids(&s.search("tag:thesis deco*", 10).expect("prefix")),
            [thesis]
        );
        assert_eq!(
            ids(&s.search("tag:thesis \"qubit noise\"", 10).expect("phrase")),
            [both]
        );
        let hits = s.search("tag:thesis qubit", 10).expect("tags shown");
        let shown = hits.iter().find(|h| h.job_id == both).expect("both");
        assert_eq!(shown.tags, ["thesis", "Quantum sensing"]);
    }

    #[test]
    fn a_query_of_tags_only_lists_newest_first_with_the_start_of_each_text() {
        let s = Store::open_in_memory().expect("store");
        let long = "## Abstract\n\nThe **bedload** of braided rivers ".to_string()
            + &"moves in pulses after each thaw ".repeat(10);
        let older = tagged(&s, "https://a.example/1", &["thesis"], &long);
        let untagged = tagged(&s, "https://a.example/2", &[], "Nothing here.");
        let newer = tagged(&s, "https://a.example/3", &["thesis"], "Short text.");
        let hits = s.search("tag:thesis", 10).expect("listing");
        assert_eq!(ids(&hits), [newer, older]);
        assert_eq!(hits[0].snippet, "Short text.");
        assert_eq!(hits[0].score, 0.0);
        let lead = &hits[1].snippet;
        assert!(
            lead.starts_with("Abstract The bedload of braided rivers moves in pulses"),
            "{lead}"
        );
        // Cut after a whole word, within the length.
        let plain = "Abstract The bedload of braided rivers ".to_string()
            + &"moves in pulses after each thaw ".repeat(10);
        let kept = lead.strip_suffix('…').expect("cut");
        assert!(plain.starts_with(&format!("{kept} ")), "{lead}");
        assert!(kept.chars().count() <= LEAD_CHARS, "{lead}");
        assert!(kept.chars().count() > LEAD_CHARS - 32, "{lead}");
        assert!(!lead.contains("**"), "{lead}");
        // No text and no filter: the whole library, newest first; the limit holds.
        let all = s.library(&query("")).expect("everything");
        assert_eq!(ids(&all), [newer, untagged, older]);
        let q = LibraryQuery {
            limit: 1,
            ..query("  ")
        };
        assert_eq!(ids(&s.library(&q).expect("limited")), [newer]);
        // `gleaner search` with no words at all finds nothing, as before.
        assert!(s.search("   ", 10).expect("blank").is_empty());
    }

    #[test]
    fn a_job_without_a_document_is_not_in_the_library() {
        let s = Store::open_in_memory().expect("store");
        let listed = tagged(&s, "https://a.example/1", &["thesis"], "qubit");
        let pending = NewJob {
            reference: Some(Box::new(Reference {
                tags: vec!["thesis".into()],
                ..Reference::default()
            })),
            ..job("https://a.example/2")
        };
        s.enqueue(None, &[pending], 5, 3).expect("enqueue");
        assert_eq!(ids(&s.search("tag:thesis", 10).expect("listing")), [listed]);
        assert_eq!(ids(&s.library(&query("")).expect("all")), [listed]);
    }

    #[test]
    fn host_and_batch_narrow_the_ranked_hits_and_the_listing() {
        let s = Store::open_in_memory().expect("store");
        let first = s.create_batch("reading list", "file", 0).expect("batch");
        let second = s.create_batch("paste", "paste", 0).expect("batch");
        let doc = |body: &str| Indexed {
            title: "Notes".into(),
            body: body.into(),
            ..Indexed::default()
        };
        let a1 = done_with(&s, job("https://a.example/1"), Some(first), doc("qubit"));
        let b1 = done_with(&s, job("https://b.example/1"), Some(first), doc("qubit"));
        let a2 = done_with(&s, job("https://a.example/2"), Some(second), doc("qubit"));
        let on = |host: Option<&str>, batch: Option<i64>, text: &str| {
            let q = LibraryQuery {
                host: host.map(str::to_string),
                batch_id: batch,
                ..query(text)
            };
            let mut got = ids(&s.library(&q).expect("query"));
            got.sort_unstable();
            got
        };
        assert_eq!(on(Some("a.example"), None, "qubit"), [a1, a2]);
        assert_eq!(on(Some("a.example"), None, ""), [a1, a2]);
        assert_eq!(on(None, Some(first), "qubit"), [a1, b1]);
        assert_eq!(on(None, Some(first), ""), [a1, b1]);
        assert_eq!(on(Some("a.example"), Some(second), "qubit"), [a2]);
        assert!(on(Some("c.example"), None, "").is_empty());
        let hit = &s.search("qubit", 10).expect("hits")[0];
        assert!(hit.batch.is_some() && hit.batch_id.is_some(), "{hit:?}");
        let b = s.library(&query("")).expect("all");
        let b1_hit = b.iter().find(|h| h.job_id == b1).expect("b1");
        assert_eq!(
            (
                b1_hit.batch.as_deref(),
                b1_hit.batch_id,
                b1_hit.host.as_str()
            ),
            (Some("reading list"), Some(first), "b.example")
        );
    }

    #[test]
    fn a_hit_names_a_references_authors_year_and_journal_and_a_pages_byline_and_site() {
        let s = Store::open_in_memory().expect("store");
        let paper = NewJob {
            reference: Some(Box::new(Reference {
                authors: vec!["Kucsko, G.".into(), "Maurer, P. C.".into()],
                tags: vec!["quantum sensing".into()],
                ..Reference::default()
            })),
            ..job("https://www.nature.com/articles/nature12373")
        };
        let paper = done_with(
            &s,
            paper,
            None,
            Indexed {
                title: "Nanometre-scale thermometry".into(),
                authors: "Kucsko, G.; Maurer, P. C.".into(),
                body: "Thermometry in a living cell.".into(),
                author_list: vec!["Kucsko, G.".into(), "Maurer, P. C.".into()],
                year: Some("2013".into()),
                container: Some("Nature".into()),
                kind: Some("pdf".into()),
                pdf: Some("/lib/www.nature.com/nature12373.pdf".into()),
            },
        );
        let page = done_with(
            &s,
            job("https://news.example/story"),
            None,
            Indexed {
                title: "A story".into(),
                authors: "Jane Doe".into(),
                body: "Thermometry at the fair.".into(),
                author_list: vec!["Jane Doe".into()],
                year: Some("2024".into()),
                container: Some("The Daily Example".into()),
                kind: Some("html".into()),
                pdf: None,
            },
        );
        let hits = s.search("thermometry", 10).expect("hits");
        let of = |id: i64| hits.iter().find(|h| h.job_id == id).expect("hit");
        let p = of(paper);
        assert_eq!(p.authors, ["Kucsko, G.", "Maurer, P. C."]);
        assert_eq!(
            (p.year.as_deref(), p.container.as_deref(), p.kind.as_deref()),
            (Some("2013"), Some("Nature"), Some("pdf"))
        );
        assert_eq!(
            p.pdf.as_deref(),
            Some("/lib/www.nature.com/nature12373.pdf")
        );
        assert_eq!(p.tags, ["quantum sensing"]);
        assert_eq!(p.host, "www.nature.com");
        let w = of(page);
        assert_eq!(w.authors, ["Jane Doe"]);
        assert_eq!(
            (w.year.as_deref(), w.container.as_deref(), w.kind.as_deref()),
            (Some("2024"), Some("The Daily Example"), Some("html"))
        );
        assert!(w.tags.is_empty() && w.pdf.is_none());
        let json = serde_json::to_value(p).expect("json");
        for key in ["job_id", "url", "title", "document", "snippet", "score"] {
            assert!(json.get(key).is_some(), "{key}: {json}");
        }
        // A rebuild replaces the list's row with what the front matter says.
        s.clear_index().expect("clear");
        assert!(s.library(&query("")).expect("cleared").is_empty());
        let again = Indexed {
            title: "A story".into(),
            body: "Thermometry at the fair.".into(),
            author_list: vec!["John Roe".into()],
            ..Indexed::default()
        };
        s.reindex(&[(page, format!("/lib/{page}.md"), again)])
            .expect("reindex");
        let listed = s.library(&query("")).expect("rebuilt");
        assert_eq!(ids(&listed), [page]);
        assert_eq!(listed[0].authors, ["John Roe"]);
        assert_eq!(listed[0].year, None);
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
