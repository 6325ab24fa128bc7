//! The library's full-text search, driven through the real binary: pages fetched from a
//! publisher on loopback are indexed as they are saved, `gleaner search` ranks them, and
//! `gleaner library reindex` rebuilds the index from the library folder.

use gleaner_tests::scholarly::{Publisher, Reply};
use gleaner_tests::{Sandbox, stderr, stdout};
use serde_json::Value;

fn article(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><title>{title}</title></head><body><article>\
         <h1>{title}</h1><p>{body}</p><p>This paragraph is here so that the page reads as an \
         article: it has enough ordinary words in it for the extractor to keep it.</p>\
         </article></body></html>"
    )
}

fn search(sb: &Sandbox, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["search", "--json"];
    all.extend_from_slice(args);
    let out = sb.run(&all);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    serde_json::from_str::<Value>(&stdout(&out))
        .expect("search --json is JSON")
        .as_array()
        .expect("an array")
        .clone()
}

fn fetch_all(sb: &Sandbox, links: &[String]) {
    let mut args = vec!["add"];
    args.extend(links.iter().map(String::as_str));
    let add = sb.run(&args);
    assert!(add.status.success(), "{}", stdout(&add));
    let run = sb.run(&["run", "--until-idle"]);
    assert!(run.status.success(), "{}", stderr(&run));
}

/// Fetched pages are searchable at once: hits come ranked (a word in the title above the same
/// word in the text), accents fold, each hit is the JSON object the CLI promises with the
/// matched words in its snippet, and text the index's syntax cannot parse is searched as
/// plain words (exit 0).
#[test]
fn fetched_pages_are_searched_ranked_with_their_words_in_context() {
    let publisher = Publisher::start();
    publisher.page(
        "/field",
        Reply::html(
            200,
            article(
                "Notes from the field",
                "Bedload moved through the braided channel after the thaw, and the résumé of the season was short.",
            ),
        ),
    );
    publisher.page(
        "/bedload",
        Reply::html(
            200,
            article(
                "Bedload in braided rivers",
                "Measurements over two seasons of C++ (draft) loggers.",
            ),
        ),
    );
    let sb = Sandbox::new();
    let field = publisher.url("/field");
    let bedload = publisher.url("/bedload");
    fetch_all(&sb, &[field.clone(), bedload.clone()]);

    let hits = search(&sb, &["bedload"]);
    let urls: Vec<&str> = hits
        .iter()
        .map(|h| h["url"].as_str().expect("url"))
        .collect();
    assert_eq!(urls, [bedload.as_str(), field.as_str()], "{hits:?}");
    let first = hits[0].as_object().expect("object");
    let mut keys: Vec<&str> = first.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "authors",
            "batch",
            "batch_id",
            "container",
            "document",
            "host",
            "job_id",
            "kind",
            "pdf",
            "score",
            "snippet",
            "tags",
            "title",
            "url",
            "year"
        ]
    );
    assert_eq!(hits[0]["title"], "Bedload in braided rivers");
    assert!(
        hits[0]["score"].as_f64() > hits[1]["score"].as_f64(),
        "{hits:?}"
    );
    let snippet = hits[1]["snippet"].as_str().expect("snippet");
    assert!(snippet.contains("**Bedload** moved"), "{snippet}");
    let document = hits[0]["document"].as_str().expect("document");
    assert!(std::path::Path::new(document).exists(), "{document}");

    let folded = search(&sb, &["resume"]);
    assert_eq!(folded.len(), 1, "{folded:?}");
    assert_eq!(folded[0]["url"], field.as_str());
    for hostile in ["C++ (draft\"", "NEAR/", "tag:thesis", "\""] {
        let out = sb.run(&["search", hostile]);
        assert!(out.status.success(), "{hostile}: {}", stderr(&out));
    }
    let plain = search(&sb, &["C++ (draft\""]);
    assert_eq!(plain.len(), 1, "{plain:?}");
    assert_eq!(plain[0]["url"], bedload.as_str());
    let limited = search(&sb, &["--limit", "1", "braided"]);
    assert_eq!(limited.len(), 1);
    let human = sb.run(&["search", "thaw"]);
    assert!(
        stdout(&human).contains("Notes from the field"),
        "{}",
        stdout(&human)
    );
}

/// The index can be rebuilt from the library folder: after it is emptied, `library reindex`
/// brings back every job's newest document, and a page fetched again replaces its older
/// version in the index while the older file stays on disk.
#[test]
fn the_index_is_rebuilt_from_the_library_folder_with_each_pages_newest_version() {
    let publisher = Publisher::start();
    publisher.page(
        "/changing",
        Reply::html(200, article("A changing page", "The aardvark came first.")),
    );
    let sb = Sandbox::new();
    let link = publisher.url("/changing");
    fetch_all(&sb, std::slice::from_ref(&link));
    assert_eq!(search(&sb, &["aardvark"]).len(), 1);

    publisher.page(
        "/changing",
        Reply::html(200, article("A changing page", "The zebra came second.")),
    );
    let again = sb.run(&["add", "--refetch", &link]);
    assert!(again.status.success(), "{}", stdout(&again));
    let run = sb.run(&["run", "--until-idle"]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(
        search(&sb, &["aardvark"]).is_empty(),
        "the older version left the index"
    );
    assert_eq!(search(&sb, &["zebra"]).len(), 1);
    let files = std::fs::read_dir(sb.path().join("library/127.0.0.2"))
        .expect("library")
        .count();
    assert_eq!(files, 2, "both versions stay on disk");

    let conn = sb.sql();
    conn.execute("DELETE FROM search", [])
        .expect("empty the index");
    drop(conn);
    assert!(search(&sb, &["zebra"]).is_empty());
    let out = sb.run(&["library", "reindex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("indexed 1 document of 2"),
        "{}",
        stdout(&out)
    );
    assert_eq!(search(&sb, &["zebra"]).len(), 1);
    assert!(
        search(&sb, &["aardvark"]).is_empty(),
        "only the newest version"
    );
    // The same data folder spelled otherwise finds the same documents (it indexed none).
    let dotted = format!("{}/.", sb.path().display());
    let out = sb.run(&["--data-dir", &dotted, "library", "reindex"]);
    assert!(
        stdout(&out).starts_with("indexed 1 document of 2"),
        "{}",
        stdout(&out)
    );
    assert_eq!(search(&sb, &["zebra"]).len(), 1);
}
