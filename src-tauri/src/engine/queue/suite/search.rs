//! The library's search and listing.
//!
//! Each test runs on every backend (see [`super`]).

#![allow(unused_imports)]

use std::time::Duration;

use crate::engine::clock::Millis;
use crate::engine::policy::{Decision, Failure, FailureKind, HostIntervals, NO_INTERVALS, Policy};
use crate::engine::queue::{
    ActionResult, ClaimRequest, Claimed, Enqueued, Finish, Hit, Indexed, LibraryQuery, Liveness,
    NewJob, Next, Queue, Reference, Settled, Stage, StallKind, StallState, Status, Success,
};
use crate::engine::sqlite::search::LEAD_CHARS;
use crate::engine::sqlite::testing::job;

/// A done job whose document is indexed, as the worker's success writes it.
pub(crate) fn done(s: &dyn Queue, url: &str, title: &str, authors: &str, body: &str) -> i64 {
    let doc = Indexed {
        title: title.into(),
        authors: authors.into(),
        body: body.into(),
        ..Indexed::default()
    };
    done_with(s, job(url), None, doc)
}

/// `new` queued (into `batch`, or a batch of its own), fetched and indexed as `doc`.
pub(crate) fn done_with(s: &dyn Queue, new: NewJob, batch: Option<i64>, doc: Indexed) -> i64 {
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
pub(crate) fn tagged(s: &dyn Queue, url: &str, tags: &[&str], body: &str) -> i64 {
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

pub(crate) fn query(text: &str) -> LibraryQuery {
    LibraryQuery {
        text: text.into(),
        ..LibraryQuery::default()
    }
}

pub(crate) fn ids(hits: &[Hit]) -> Vec<i64> {
    hits.iter().map(|h| h.job_id).collect()
}

super::on_every_backend! {
    fn a_turkish_capital_dotted_i_and_hundreds_of_exclusions_are_queries_like_any(s) {
        let id = done(s, "https://a.example/tr", "Şehirler", "", "İstanbul ve İzmir kıyıda.");
        for typed in ["İstanbul", "istanbul", "İZMİR"] {
            assert_eq!(ids(&s.search(typed, 10).expect("search")), [id], "{typed}");
        }
        let many: String = (0..300).map(|n| format!(" -w{n}")).collect();
        let hits = s.search(&format!("istanbul{many}"), 10).expect("no error");
        assert_eq!(ids(&hits), [id]);
    }

    /// A very long text of words that never repeat (1.3 MB) is kept and found by a word near
    /// its start: PostgreSQL's index of one document holds at most 1 MiB, and going over it
    /// failed the step, which stalled the queue on that job again and again.
    fn a_huge_document_of_distinct_words_is_indexed_and_found(s) {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut body = String::from("quokka ");
        while body.len() < 1_300_000 {
            for _ in 0..9 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                body.push(char::from(b'a' + (state % 26) as u8));
            }
            body.push(' ');
        }
        let id = done(s, "https://big.example/", "A long list", "", &body);
        assert_eq!(ids(&s.search("quokka", 10).expect("search")), [id]);
    }

    fn a_word_in_the_title_ranks_above_the_same_word_in_the_text(s) {
        let body = done(
            s,
            "https://a.example/1",
            "Notes from the field",
            "",
            "Bedload moved through the braided channel after the thaw.",
        );
        let title = done(
            s,
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

    fn a_snippet_is_plain_text_and_marks_only_the_matched_words(s) {
        done(
            s,
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

    /// A match far into a long text is shown marked in its snippet (PostgreSQL read the
    /// first 200,000 characters of each hit for it, and showed the text's start unmarked).
    fn a_match_far_into_a_long_text_is_marked_in_its_snippet(s) {
        let body = format!("{}the needle is here. {}", "filler words. ".repeat(15_000), "tail. ".repeat(100));
        done(s, "https://a.example/1", "Long", "", &body);
        let hits = s.library(&query("needle")).expect("search");
        assert_eq!(hits.len(), 1);
        assert!(hits[0].snippet.contains("**needle**"), "{}", hits[0].snippet);
        assert!(hits[0].snippet.len() < 1_000, "{}", hits[0].snippet.len());
        // An accent the query folded: "Müller" at 30,000 characters, searched as "muller".
        let body = format!("{}Müller wrote it. {}", "filler words. ".repeat(2_150), "tail. ".repeat(100));
        done(s, "https://a.example/2", "Accented", "", &body);
        let hits = s.library(&query("muller")).expect("search");
        assert_eq!(hits.len(), 1);
        assert!(hits[0].snippet.contains("**Müller**"), "{}", hits[0].snippet);
        // A short word found first inside another ("art" in "start"), and as a word far on.
        let body = format!("start here. {}the art of it. {}", "filler words. ".repeat(2_150), "tail. ".repeat(100));
        done(s, "https://a.example/3", "Short", "", &body);
        let hits = s.library(&query("art")).expect("search");
        assert_eq!(hits.len(), 1);
        assert!(hits[0].snippet.contains("**art**"), "{}", hits[0].snippet);
    }

    fn accents_fold_in_the_text_and_in_the_query(s) {
        let id = done(
            s,
            "https://a.example/1",
            "Curriculum",
            "Müller, Zoë",
            "Mon résumé, déjà vu.",
        );
        for q in ["resume", "résumé", "DEJA", "muller", "zoe"] {
            assert_eq!(ids(&s.search(q, 10).expect(q)), [id], "{q}");
        }
        // The same words decomposed (a letter and a combining accent), as some keyboards and
        // pastes from macOS file names give them.
        for q in ["re\u{301}sume\u{301}", "de\u{301}ja\u{300}", "Mu\u{308}ller"] {
            assert_eq!(ids(&s.search(q, 10).expect(q)), [id], "{q:?}");
        }
    }

    /// Words of scripts whose letters decompose (Cyrillic й, Greek accents, Hangul syllables,
    /// kana with their voicing marks, Devanagari's vowel signs) are found as written: folded
    /// like Latin accents on one side only, SQLite found none of them.
    fn words_of_every_script_are_found_as_written(s) {
        let id = done(
            s,
            "https://a.example/1",
            "Учебник",
            "",
            "Русский язык — новый учебник. Ελληνικά κείμενα. 한국어 문장. がっこう. हिन्दी भाषा. İstanbul",
        );
        for q in ["новый", "Русский", "Ελληνικά", "κείμενα", "한국어", "がっこう", "हिन्दी", "İstanbul", "istanbul"] {
            assert_eq!(ids(&s.search(q, 10).expect(q)), [id], "{q}");
        }
    }

    /// A mark that is no Latin accent is part of its letter, on both backends: SQLite split
    /// words at each vowel sign ("काम" was the phrase "क म", found in "कुमार" and "किमी"), and
    /// PostgreSQL dropped every mark ("काम" was "कम", found in "कमी"; "мои" found "мой",
    /// "かっこう" "がっこう"). Text indexed decomposed is found as typed, composed.
    fn marks_that_are_no_latin_accents_keep_words_apart(s) {
        let work = done(s, "https://a.example/1", "A", "", "हम काम करते हैं");
        let name = done(s, "https://a.example/2", "B", "", "कुमार");
        let km = done(s, "https://a.example/3", "C", "", "किमी दूर");
        let lack = done(s, "https://a.example/4", "D", "", "उसकी कमी है");
        let mine = done(s, "https://a.example/5", "E", "", "мой дом");
        let school = done(s, "https://a.example/6", "F", "", "がっこう");
        // Decomposed: и and a breve, か and a voicing mark, Hangul jamo, e and an acute.
        let nfd = done(s, "https://a.example/7", "G", "", "и\u{306} か\u{3099}くせい \u{1112}\u{1161}\u{11ab} cafe\u{301}");
        let sorted = |q: &str| {
            let mut found = ids(&s.search(q, 10).expect(q));
            found.sort_unstable();
            found
        };
        assert_eq!(sorted("काम"), [work]);
        assert_eq!(sorted("कमी"), [lack]);
        assert_eq!(sorted("कुमार"), [name]);
        assert_eq!(sorted("किमी"), [km]);
        assert!(sorted("мои").is_empty(), "мои is not мой");
        assert_eq!(sorted("мой"), [mine]);
        assert!(sorted("かっこう").is_empty(), "かっこう is not がっこう");
        assert_eq!(sorted("がっこう"), [school]);
        for q in ["й", "がくせい", "한", "cafe", "café", "cafe\u{301}"] {
            assert_eq!(sorted(q), [nfd], "{q:?}");
        }
    }

    fn any_text_is_a_query_and_never_an_error(s) {
        let id = done(
            s,
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

    /// One query language on both backends. SQLite passed the text to FTS5 as it was: `-word`
    /// was an error there, searched again as plain words, so it found the pages *with* the
    /// word; a lower-case `or` was a word a page had to hold.
    fn exclusions_or_and_numbers_mean_the_same_on_every_backend(s) {
        let diamond = done(s, "https://a.example/1", "Sensing", "", "quantum diamond sensing");
        let computing = done(s, "https://a.example/2", "Computing", "", "quantum computing");
        let pi = done(s, "https://a.example/3", "Pi", "", "pi is 3.14 roughly, or 14 3 read backwards");
        let cats = done(s, "https://a.example/4", "Cats", "", "cats only");
        let sorted = |q: &str| {
            let mut found = ids(&s.search(q, 10).expect(q));
            found.sort_unstable();
            found
        };
        assert_eq!(sorted("quantum -diamond"), [computing]);
        assert_eq!(sorted("quantum -\"diamond sensing\""), [computing]);
        assert_eq!(sorted("cats or computing"), [computing, cats]);
        assert_eq!(sorted("cats OR computing"), [computing, cats]);
        assert_eq!(sorted("3.14"), [pi]);
        assert_eq!(sorted("\"14 3\""), [pi]);
        assert_eq!(sorted("comput* -sens*"), [computing]);
        assert!(sorted("-quantum").is_empty(), "exclusions alone find nothing");
        let _ = diamond;
    }

    /// The words inside compounds are found on both backends. PostgreSQL's parser kept
    /// `bedload/suspended`, `TiO2/SiO2`, `Node.js` and `2.0.1` as one token each and read
    /// `COVID-19` as `covid` and `-19`, so a search for a word inside one found nothing there,
    /// where SQLite found it.
    fn words_inside_compounds_are_found_on_every_backend(s) {
        let id = done(
            s,
            "https://a.example/1",
            "Bedload/suspended transport",
            "",
            "TiO2/SiO2 films, a Node.js server 2.0.1, and COVID-19 cases.",
        );
        for q in [
            "suspended",
            "bedload",
            "SiO2",
            "tio2",
            "Node.js",
            "js",
            "node",
            "2.0.1",
            "\"0 1\"",
            "COVID-19",
            "covid",
            "19",
            "\"covid 19\"",
            "susp*",
            "sio*",
        ] {
            assert_eq!(ids(&s.search(q, 10).expect(q)), [id], "{q}");
        }
        assert!(s.search("\"19 covid\"", 10).expect("order").is_empty());
    }

    fn a_new_version_replaces_the_old_in_the_index_and_a_deleted_job_leaves_it(s) {
        let id = done(
            s,
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

    fn a_rebuild_indexes_only_each_jobs_newest_document(s) {
        let id = done(s, "https://a.example/1", "Page", "", "zebra");
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

    fn tag_terms_filter_the_ranked_hits_and_all_of_them_are_required(s) {
        let both = tagged(
            s,
            "https://a.example/1",
            &["thesis", "Quantum sensing"],
            "qubit noise",
        );
        let thesis = tagged(
            s,
            "https://a.example/2",
            &["Thesis"],
            "qubit qubit decoherence",
        );
        let none = tagged(s, "https://a.example/3", &[], "qubit");
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

    fn a_query_of_tags_only_lists_newest_first_with_the_start_of_each_text(s) {
        let long = "## Abstract\n\nThe **bedload** of braided rivers ".to_string()
            + &"moves in pulses after each thaw ".repeat(10);
        let older = tagged(s, "https://a.example/1", &["thesis"], &long);
        let untagged = tagged(s, "https://a.example/2", &[], "Nothing here.");
        let newer = tagged(s, "https://a.example/3", &["thesis"], "Short text.");
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

    /// A filter with exclusions alone lists the filter's documents without those (it found
    /// nothing); exclusions alone, with no filter, still find nothing.
    fn a_filter_with_exclusions_alone_lists_its_documents_without_them(s) {
        let kept = tagged(s, "https://a.example/1", &["thesis"], "final chapter");
        let _draft = tagged(s, "https://a.example/2", &["thesis"], "a draft chapter");
        let _other = tagged(s, "https://b.example/3", &[], "final notes");
        let old = tagged(s, "https://a.example/4", &["thesis"], "Old notes, résumé");
        assert_eq!(
            ids(&s.search("tag:thesis -draft", 10).expect("text")),
            [old, kept]
        );
        assert_eq!(
            ids(&s.search("tag:thesis -draft -\"old notes\" -resume", 10).expect("several")),
            [kept]
        );
        let menu = LibraryQuery {
            tag: Some("thesis".into()),
            ..query("-draft")
        };
        assert_eq!(ids(&s.library(&menu).expect("menu")), [old, kept]);
        let host = LibraryQuery {
            host: Some("a.example".into()),
            ..query("-chapter")
        };
        assert_eq!(ids(&s.library(&host).expect("host")), [old]);
        let limited = LibraryQuery {
            limit: 1,
            ..menu
        };
        assert_eq!(ids(&s.library(&limited).expect("limit")), [old]);
        assert!(s.search("-draft", 10).expect("no filter").is_empty());
    }

    /// The Library's filter menus count documents, not jobs, and offer every host with one,
    /// by name: a pending job counted in its tag's number, and hosts were the 500 with most
    /// jobs.
    fn the_librarys_filters_count_documents_and_offer_every_host_by_name(s) {
        tagged(s, "https://z.example/1", &["thesis"], "one");
        tagged(s, "https://a.example/2", &["thesis", "draft"], "two");
        tagged(s, "https://a.example/3", &[], "three");
        let pending = NewJob {
            reference: Some(Box::new(Reference {
                tags: vec!["thesis".into(), "later".into()],
                ..Reference::default()
            })),
            ..job("https://m.example/4")
        };
        s.enqueue(None, &[pending], 5, 3).expect("enqueue");
        assert_eq!(
            s.library_tag_counts().expect("tags"),
            [("thesis".to_string(), 2), ("draft".to_string(), 1)]
        );
        let hosts: Vec<(String, u64)> = s
            .library_hosts()
            .expect("hosts")
            .into_iter()
            .map(|h| (h.host, h.jobs))
            .collect();
        assert_eq!(
            hosts,
            [("a.example".to_string(), 2), ("z.example".to_string(), 1)]
        );
    }

    fn a_job_without_a_document_is_not_in_the_library(s) {
        let listed = tagged(s, "https://a.example/1", &["thesis"], "qubit");
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

    fn host_and_batch_narrow_the_ranked_hits_and_the_listing(s) {
        let first = s.create_batch("reading list", "file", 0).expect("batch");
        let second = s.create_batch("paste", "paste", 0).expect("batch");
        let doc = |body: &str| Indexed {
            title: "Notes".into(),
            body: body.into(),
            ..Indexed::default()
        };
        let a1 = done_with(s, job("https://a.example/1"), Some(first), doc("qubit"));
        let b1 = done_with(s, job("https://b.example/1"), Some(first), doc("qubit"));
        let a2 = done_with(s, job("https://a.example/2"), Some(second), doc("qubit"));
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

    fn a_hit_names_a_references_authors_year_and_journal_and_a_pages_byline_and_site(s) {
        let paper = NewJob {
            reference: Some(Box::new(Reference {
                authors: vec!["Kucsko, G.".into(), "Maurer, P. C.".into()],
                tags: vec!["quantum sensing".into()],
                ..Reference::default()
            })),
            ..job("https://www.nature.com/articles/nature12373")
        };
        let paper = done_with(
            s,
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
            s,
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
}
