//! Tags through the real binary: a BibTeX file's keywords and a bookmark export's folders
//! become tags, `gleaner search 'tag:…'` filters by them, `gleaner tags` changes them in the
//! queue and in the document's front matter, and a re-fetch keeps the tags set by hand.

use gleaner_tests::scholarly::{Publisher, Reply};
use gleaner_tests::{Sandbox, stderr, stdout};
use serde_json::{Value, json};

fn article(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><title>{title}</title></head><body><article>\
         <h1>{title}</h1><p>{body}</p><p>This paragraph is here so that the page reads as an \
         article: it has enough ordinary words in it for the extractor to keep it.</p>\
         </article></body></html>"
    )
}

fn search(sb: &Sandbox, query: &str) -> Vec<Value> {
    let out = sb.run(&["search", "--json", query]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    serde_json::from_str::<Value>(&stdout(&out))
        .expect("search --json is JSON")
        .as_array()
        .expect("an array")
        .clone()
}

fn succeed(sb: &Sandbox, args: &[&str]) -> String {
    let out = sb.run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

/// The `tags:` line of a document's front matter, parsed; `None` if it has none.
fn front_matter_tags(path: &str) -> Option<Value> {
    let text = std::fs::read_to_string(path).expect("document");
    let front = text
        .strip_prefix("---\n")
        .and_then(|r| r.split_once("\n---\n"))
        .map(|(f, _)| f)
        .expect("front matter");
    front
        .lines()
        .find_map(|l| l.strip_prefix("tags: "))
        .map(|v| serde_json::from_str(v).expect("one JSON array on one line"))
}

fn document_of(sb: &Sandbox, id: &str) -> String {
    let job = sb.json(&["jobs", "show", id, "--json"]);
    assert_eq!(job["status"], "done", "{job}");
    job["document"].as_str().expect("document").to_string()
}

/// A browser's bookmark export holding `url` in the folder `folder`.
fn bookmark_in(folder: &str, url: &str) -> String {
    format!(
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<TITLE>Bookmarks</TITLE>\n<H1>Bookmarks</H1>\n\
         <DL><p>\n    <DT><H3>{folder}</H3>\n    <DL><p>\n        \
         <DT><A HREF=\"{url}\">Braided rivers</A>\n    </DL><p>\n</DL><p>\n"
    )
}

#[test]
fn keywords_and_folders_are_tags_that_filter_search_and_are_set_by_hand() {
    let publisher = Publisher::start();
    publisher.page(
        "/diamonds",
        Reply::html(
            200,
            article(
                "Quantum sensing with diamonds",
                "Nitrogen-vacancy centres measure the temperature inside a living cell.",
            ),
        ),
    );
    publisher.page(
        "/rivers",
        Reply::html(
            200,
            article(
                "Braided rivers",
                "Bedload moved through the braided channel after the thaw.",
            ),
        ),
    );
    let sb = Sandbox::new();
    let diamonds = publisher.url("/diamonds");
    let rivers = publisher.url("/rivers");
    let bib = sb.path().join("thesis.bib");
    std::fs::write(
        &bib,
        format!(
            "@article{{okafor2020,\n  title = {{Quantum Sensing with Diamonds}},\n  \
             author = {{Okafor, Chidi}},\n  year = {{2020}},\n  journal = {{Journal of Examples}},\n  \
             url = {{{diamonds}}},\n  keywords = {{thesis, quantum sensing}},\n}}\n"
        ),
    )
    .expect("bib");
    let bookmarks = sb.path().join("bookmarks.html");
    std::fs::write(&bookmarks, bookmark_in("Reading group", &rivers)).expect("bookmarks");
    let added = succeed(&sb, &["add", "--file", bib.to_str().expect("path")]);
    assert!(added.contains("queued 1 "), "{added}");
    let added = succeed(&sb, &["add", "--file", bookmarks.to_str().expect("path")]);
    assert!(added.contains("queued 2 "), "{added}");
    let run = sb.run(&["run", "--until-idle"]);
    assert!(run.status.success(), "{}", stderr(&run));

    // Keywords are tags; the hit says what the Library list shows.
    let hits = search(&sb, "tag:thesis");
    assert_eq!(hits.len(), 1, "{hits:?}");
    let hit = &hits[0];
    assert_eq!(hit["url"], diamonds.as_str());
    assert_eq!(hit["tags"], json!(["thesis", "quantum sensing"]));
    assert_eq!(hit["authors"], json!(["Okafor, Chidi"]));
    assert_eq!(hit["year"], "2020");
    assert_eq!(hit["container"], "Journal of Examples");
    assert_eq!(hit["host"], "127.0.0.2");
    for key in ["job_id", "url", "title", "document", "snippet", "score"] {
        assert!(hit.get(key).is_some(), "{key}: {hit}");
    }
    assert!(
        search(&sb, "tag:thesis bedload").is_empty(),
        "every term is required"
    );
    // A folder is a tag, quoted when it has a space, matched without regard to case.
    let folder = search(&sb, "tag:\"reading GROUP\" braided");
    assert_eq!(folder.len(), 1, "{folder:?}");
    assert_eq!(folder[0]["url"], rivers.as_str());
    assert_eq!(folder[0]["tags"], json!(["Reading group"]));

    let counts = succeed(&sb, &["tags"]);
    for tag in ["thesis", "quantum sensing", "Reading group"] {
        assert!(
            counts
                .lines()
                .any(|l| l.trim_start() == format!("1  {tag}")),
            "{tag}: {counts}"
        );
    }
    assert_eq!(succeed(&sb, &["tags", "2"]).trim(), "job 2: Reading group");

    // Set by hand: the queue and the front matter change together.
    let doc = document_of(&sb, "2");
    assert_eq!(front_matter_tags(&doc), Some(json!(["Reading group"])));
    let before = std::fs::read_to_string(&doc).expect("document");
    let set = succeed(&sb, &["tags", "2", "--add", "x", "Two  words"]);
    assert_eq!(set.trim(), "job 2: Reading group, x, Two words");
    assert_eq!(
        front_matter_tags(&doc),
        Some(json!(["Reading group", "x", "Two words"]))
    );
    let after = std::fs::read_to_string(&doc).expect("document");
    let others = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with("tags: "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        others(&before),
        others(&after),
        "only the tags line changed"
    );
    let found = search(&sb, "tag:x");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["job_id"], 2);
    let set = succeed(
        &sb,
        &["tags", "2", "--remove", "reading group", "--add", "y"],
    );
    assert_eq!(set.trim(), "job 2: x, Two words, y");
    assert!(search(&sb, "tag:\"reading group\"").is_empty());

    // A bad id is a sentence and exit 1, and changes nothing.
    for args in [&["tags", "99"][..], &["tags", "99", "--add", "x"][..]] {
        let out = sb.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stdout(&out));
        assert!(
            stderr(&out).contains("there is no job 99"),
            "{}",
            stderr(&out)
        );
    }

    // A re-fetch writes the tags set by hand into its new document.
    publisher.page(
        "/rivers",
        Reply::html(
            200,
            article(
                "Braided rivers",
                "Bedload moved again, and the channel split in two after the flood.",
            ),
        ),
    );
    succeed(&sb, &["add", "--refetch", &rivers]);
    let run = sb.run(&["run", "--until-idle"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let refetched = document_of(&sb, "2");
    assert_ne!(refetched, doc, "the changed page is a new version");
    assert_eq!(
        front_matter_tags(&refetched),
        Some(json!(["x", "Two words", "y"]))
    );
    assert_eq!(search(&sb, "tag:y flood").len(), 1);

    // The bookmarks exported again after the link moved to another folder: the duplicate's
    // new folder is added to its job and its document, and the line says so.
    std::fs::write(&bookmarks, bookmark_in("Field work", &rivers)).expect("bookmarks");
    let again = succeed(&sb, &["add", "--file", bookmarks.to_str().expect("path")]);
    assert!(
        again.contains("duplicate 2 ") && again.contains("(done; tags added: Field work;"),
        "{again}"
    );
    assert_eq!(
        succeed(&sb, &["tags", "2"]).trim(),
        "job 2: x, Two words, y, Field work"
    );
    assert_eq!(
        front_matter_tags(&refetched),
        Some(json!(["x", "Two words", "y", "Field work"]))
    );
    let same = succeed(&sb, &["add", "--file", bookmarks.to_str().expect("path")]);
    assert!(!same.contains("tags added"), "nothing new: {same}");
}
