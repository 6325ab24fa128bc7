//! The Library view used as a person would: the real window under Xvfb, driven through
//! tauri-driver + WebKitWebDriver, pages fetched from the fault server on loopback. Controls are
//! found by role and accessible name. Screenshots (light and dark) go to `target/screenshots/`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fantoccini::Locator;
use gleaner_tests::desktop::{DesktopSession, gui};
use gleaner_tests::server::{Behavior, FaultServer};
use serde_json::{Value, json};

const DOWN: &str = "\u{E015}";
const ENTER: &str = "\u{E007}";
const ESCAPE: &str = "\u{E00C}";

/// An article page with enough prose for the extractor to keep it.
fn article(title: &str, paragraphs: &[&str]) -> Behavior {
    let mut html = format!(
        "<!doctype html><html><head><title>{title}</title>\
         <meta name=\"author\" content=\"Ada Example\"></head><body>\
         <nav><a href=\"/\">Home</a> <a href=\"/about\">About</a></nav><article><h1>{title}</h1>"
    );
    for p in paragraphs {
        html.push_str(&format!("<p>{p}</p>"));
    }
    html.push_str("</article><footer>Footer text</footer></body></html>");
    Behavior::Respond {
        status: 200,
        headers: vec![("Content-Type".into(), "text/html; charset=utf-8".into())],
        body: html.into_bytes(),
    }
}

const PROSE: &str = "The measurements were repeated over several weeks, and the results held \
    across every instrument the group had, which is what a careful reader would want to see \
    before trusting a claim of this kind.";

/// The element with this ARIA role (explicit, or the one its tag implies) and accessible name
/// (aria-label, aria-labelledby, its label, or its text), marked so WebDriver can find it.
async fn by_role(s: &DesktopSession, role: &str, name: &str) -> fantoccini::elements::Element {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let found = s
            .js(
                "const [role, name] = arguments;\
                 const implied = { button: 'button', searchbox: 'input[type=search]',\
                   textbox: 'input[type=text], input:not([type]), textarea', list: 'ol, ul',\
                   region: 'section[aria-label], section[aria-labelledby]', tab: '', combobox: 'select' };\
                 const sel = [`[role=\"${role}\"]`, implied[role]].filter(Boolean).join(', ');\
                 const nameOf = (e) => {\
                   if (e.getAttribute('aria-label')) return e.getAttribute('aria-label');\
                   const by = e.getAttribute('aria-labelledby');\
                   if (by) return by.split(' ').map((id) => document.getElementById(id)?.textContent ?? '').join(' ');\
                   if (e.id) { const l = document.querySelector(`label[for=\"${e.id}\"]`); if (l) return l.textContent; }\
                   const wrap = e.closest('label'); if (wrap) return wrap.firstChild?.textContent ?? '';\
                   return e.textContent; };\
                 const hit = Array.from(document.querySelectorAll(sel)).find((e) =>\
                   (e.getAttribute('role') ?? role) === role && nameOf(e).trim() === name\
                   && e.getClientRects().length > 0);\
                 if (!hit) return false;\
                 document.querySelectorAll('[data-found]').forEach((e) => e.removeAttribute('data-found'));\
                 hit.setAttribute('data-found', '1'); return true;",
                vec![json!(role), json!(name)],
            )
            .await;
        if found == json!(true) {
            return s
                .client
                .find(Locator::Css("[data-found=\"1\"]"))
                .await
                .expect("the marked element");
        }
        assert!(
            Instant::now() < deadline,
            "no visible {role} named {name:?}\n--- app log ---\n{}",
            s.app_log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Empty a text field as a person does: select all of it, then delete.
async fn erase(field: &fantoccini::elements::Element) {
    field
        .send_keys("\u{E009}a\u{E000}\u{E003}")
        .await
        .expect("select all and delete");
}

async fn press(s: &DesktopSession, key: &str) {
    s.client
        .active_element()
        .await
        .expect("a focused element")
        .send_keys(key)
        .await
        .expect("key press");
}

/// What the Results list shows: each result's title, meta line, snippet (with the marked words
/// in brackets) and tags.
async fn results(s: &DesktopSession) -> Vec<Value> {
    let v = s
        .js(
            "return Array.from(document.querySelectorAll('#results button.result'), (b) => ({\
               id: Number(b.dataset.id),\
               title: b.querySelector('.result-title')?.textContent ?? '',\
               meta: b.querySelector('.result-meta')?.textContent ?? '',\
               snippet: Array.from(b.querySelector('.result-snippet').childNodes, (n) =>\
                 n.nodeName === 'MARK' ? `[${n.textContent}]` : n.textContent).join(''),\
               tags: Array.from(b.querySelectorAll('.tag'), (t) => t.textContent) }));",
            vec![],
        )
        .await;
    v.as_array().cloned().unwrap_or_default()
}

async fn wait_results(s: &DesktopSession, ok: impl Fn(&[Value]) -> bool, what: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = results(s).await;
        if ok(&r) {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; the results are {r:?}; status: {:?}\n--- app log ---\n{}",
            s.text("status").await,
            s.app_log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn focused(s: &DesktopSession) -> Value {
    s.js(
        "const a = document.activeElement; \
         return a.id || (a.dataset && a.dataset.id ? 'result ' + a.dataset.id : a.tagName);",
        vec![],
    )
    .await
}

/// Queue `paths` from `server` by pasting them, and wait until every job is done.
async fn fetch_all(s: &DesktopSession, server: &FaultServer, paths: &[&str]) {
    let text: Vec<String> = paths.iter().map(|p| server.url(p)).collect();
    s.type_into("urls", &text.join("\n")).await;
    s.click("add").await;
    s.wait_rows(
        |r| {
            r.len() == paths.len()
                && r.iter()
                    .all(|r| r.get("Status").map(String::as_str) == Some("done"))
        },
        "every page to be fetched",
    )
    .await;
}

fn document_of(s: &DesktopSession, job: i64) -> PathBuf {
    let path: String = s
        .sql()
        .query_row("SELECT document FROM jobs WHERE id = ?1", [job], |r| {
            r.get(0)
        })
        .expect("a saved document");
    PathBuf::from(path)
}

fn front_matter_line(doc: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(doc).expect("read the document");
    text.lines()
        .skip(1)
        .take_while(|l| *l != "---")
        .find(|l| l.starts_with(&format!("{key}: ")))
        .map(String::from)
}

/// Search as you type, the list, the keyboard (/, arrows, Enter, Escape), the reader with its
/// metadata and buttons, tags added and removed by hand (and written into the front matter),
/// the tag filter and `tag:` search, and the details pane's Read button. Light and dark.
#[test]
fn the_library_finds_reads_and_tags_what_was_fetched() {
    gui(async {
        let server = FaultServer::start();
        server.script(
            "/quantum",
            vec![article(
                "Diamond sensors at the quantum limit",
                &[
                    "Nitrogen-vacancy centres in diamond measure magnetic fields at the scale of single cells.",
                    PROSE,
                    "A second section covers the thermometry of living tissue with the same centres.",
                ],
            )],
        );
        server.script(
            "/soil",
            vec![article(
                "Soil carbon under cover crops",
                &[
                    "Cover crops raised soil carbon over a decade of field trials.",
                    PROSE,
                ],
            )],
        );
        server.script(
            "/rivers",
            vec![article(
                "Sediment in braided rivers",
                &[
                    "Braided rivers move sediment in pulses after floods.",
                    PROSE,
                ],
            )],
        );
        let data = tempfile::tempdir().expect("data dir");
        let s = DesktopSession::launch_in(data.path()).await;
        fetch_all(&s, &server, &["/quantum", "/soil", "/rivers"]).await;

        // "/" from anywhere outside a text box opens the Library with its search focused.
        s.client
            .find(Locator::Css("body"))
            .await
            .expect("body")
            .send_keys("/")
            .await
            .expect("type /");
        let search = by_role(&s, "searchbox", "Search library").await;
        assert_eq!(focused(&s).await, "library-search");
        by_role(&s, "list", "Results").await;
        let all = wait_results(&s, |r| r.len() == 3, "the three documents, newest first").await;
        assert!(
            all[0]["title"].as_str().unwrap_or("").contains("braided"),
            "{all:?}"
        );
        // The host menu offers the library's hosts (read through their own command).
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let hosts = s
                .js(
                    "return [...document.getElementById('library-host').options].map(o => o.value);",
                    vec![],
                )
                .await;
            if hosts
                .as_array()
                .is_some_and(|h| h.iter().any(|v| v == "127.0.0.1"))
            {
                break;
            }
            assert!(Instant::now() < deadline, "host menu: {hosts}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        // Results as you type: ranked, with the matched words marked.
        search.send_keys("nitrogen").await.expect("type");
        let hits = wait_results(&s, |r| r.len() == 1, "one match for nitrogen").await;
        assert_eq!(hits[0]["title"], "Diamond sensors at the quantum limit");
        assert!(
            hits[0]["snippet"]
                .as_str()
                .unwrap_or("")
                .contains("[Nitrogen]"),
            "the matched word is marked: {hits:?}"
        );
        assert!(
            hits[0]["meta"].as_str().unwrap_or("").contains("127.0.0.1"),
            "the site is named: {hits:?}"
        );
        let quantum = hits[0]["id"].as_i64().expect("id");
        s.screenshot("library-search-light").await;

        // Down to the result, Enter opens it in the Reader.
        press(&s, DOWN).await;
        assert_eq!(focused(&s).await, json!(format!("result {quantum}")));
        press(&s, ENTER).await;
        let reader = by_role(&s, "region", "Reader").await;
        s.wait_text(
            "reader-title",
            |t| t == "Diamond sensors at the quantum limit",
            "the reader to open",
        )
        .await;
        let text = reader.text().await.expect("reader text");
        assert!(text.contains("thermometry of living tissue"), "{text}");
        assert!(text.contains("Ada Example"), "the byline shows: {text}");
        for name in ["Original page", "File", "Close"] {
            by_role(&s, "button", name).await;
        }
        let pdf_shown = s
            .js(
                "return !document.getElementById('reader-pdf').hidden;",
                vec![],
            )
            .await;
        assert_eq!(pdf_shown, json!(false), "a web page has no PDF button");

        // Tags by hand: added, shown, written into the front matter, filterable, searchable.
        let doc = document_of(&s, quantum);
        by_role(&s, "textbox", "New tag")
            .await
            .send_keys("thesis")
            .await
            .expect("type a tag");
        by_role(&s, "button", "Add tag")
            .await
            .click()
            .await
            .expect("add");
        by_role(&s, "button", "Remove tag thesis").await;
        s.click("reader-tag-input").await;
        s.by_id("reader-tag-input")
            .await
            .send_keys(&format!("magnetometry{ENTER}"))
            .await
            .expect("type a second tag");
        by_role(&s, "button", "Remove tag magnetometry").await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while front_matter_line(&doc, "tags").as_deref()
            != Some(r#"tags: ["thesis","magnetometry"]"#)
        {
            assert!(
                Instant::now() < deadline,
                "the tags reach the front matter: {:?}",
                front_matter_line(&doc, "tags")
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let hits = wait_results(
            &s,
            |r| r.len() == 1 && r[0]["tags"] == json!(["thesis", "magnetometry"]),
            "the result to show its tags",
        )
        .await;
        assert_eq!(hits[0]["id"], json!(quantum));
        s.screenshot("library-reader-light").await;

        by_role(&s, "button", "Remove tag magnetometry")
            .await
            .click()
            .await
            .expect("remove");
        let deadline = Instant::now() + Duration::from_secs(10);
        while front_matter_line(&doc, "tags").as_deref() != Some(r#"tags: ["thesis"]"#) {
            assert!(Instant::now() < deadline, "the removal reaches the file");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // The removed tag's button is gone; the keyboard stays in the tag editor.
        let deadline = Instant::now() + Duration::from_secs(10);
        while focused(&s).await != json!("reader-tag-input") {
            assert!(
                Instant::now() < deadline,
                "the focus moves to the new-tag box"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        // Escape closes the reader and gives the focus back to its result.
        press(&s, ESCAPE).await;
        s.wait_text("reader-title", |t| t.is_empty(), "the reader to close")
            .await;
        let hidden = s
            .js(
                "return document.getElementById('reader-doc').hidden;",
                vec![],
            )
            .await;
        assert_eq!(hidden, json!(true));
        assert_eq!(focused(&s).await, json!(format!("result {quantum}")));

        // The tag filter, and `tag:` in the words.
        erase(&search).await;
        wait_results(&s, |r| r.len() == 3, "all three again").await;
        by_role(&s, "combobox", "Tag")
            .await
            .select_by_value("thesis")
            .await
            .expect("choose the tag");
        wait_results(
            &s,
            |r| r.len() == 1 && r[0]["id"] == json!(quantum),
            "the tagged one",
        )
        .await;
        by_role(&s, "combobox", "Tag")
            .await
            .select_by_value("")
            .await
            .expect("all tags");
        wait_results(&s, |r| r.len() == 3, "all three again").await;
        search.send_keys("tag:thesis").await.expect("type");
        wait_results(
            &s,
            |r| r.len() == 1 && r[0]["id"] == json!(quantum),
            "tag: finds it",
        )
        .await;

        // Export what the search found, as BibTeX, from the window's Export dialog.
        by_role(&s, "button", "Export")
            .await
            .click()
            .await
            .expect("Export");
        s.client
            .find(Locator::Css(
                "input[name=\"export-format\"][value=\"bibtex\"]",
            ))
            .await
            .expect("the BibTeX choice")
            .click()
            .await
            .expect("choose BibTeX");
        s.by_id("export-scope-results")
            .await
            .click()
            .await
            .expect("choose the results");
        let words = s.text("export-results-words").await;
        assert_eq!(words, "The 1 document of the Library's results");
        s.screenshot("library-export-light").await;
        s.click("export-go").await;
        let said = s
            .wait_text("status", |t| t.starts_with("Exported"), "the export")
            .await;
        let path = said
            .strip_prefix("Exported 1 document to ")
            .and_then(|rest| rest.split(" (BibTeX)").next())
            .unwrap_or_else(|| panic!("the status line names the file: {said:?}"));
        assert!(path.ends_with(".bib"), "{path}");
        let bib = std::fs::read_to_string(path).expect("the export file");
        assert_eq!(
            bib.matches("\n@").count() + usize::from(bib.starts_with('@')),
            1,
            "{bib}"
        );
        assert!(
            bib.contains("Diamond sensors at the quantum limit"),
            "{bib}"
        );
        assert!(bib.contains("keywords"), "the tag goes with it: {bib}");

        // The job table's details pane reads a job's document in the Library.
        by_role(&s, "tab", "Jobs")
            .await
            .click()
            .await
            .expect("Jobs tab");
        let rows = s.rows().await;
        let soil = rows
            .iter()
            .find(|r| r.get("Title").is_some_and(|t| t.starts_with("Soil carbon")))
            .and_then(|r| r.get("id").cloned())
            .expect("the soil row");
        s.select_row(&soil).await;
        by_role(&s, "button", "Read")
            .await
            .click()
            .await
            .expect("Read");
        s.wait_text(
            "reader-title",
            |t| t == "Soil carbon under cover crops",
            "the Read button to open the reader",
        )
        .await;
        assert_eq!(focused(&s).await, "reader-close");
        s.finish().await;

        // A dark desktop: the same library, read in dark colours.
        let s =
            DesktopSession::launch_in_with_env(data.path(), &[("GTK_THEME", "Adwaita:dark")]).await;
        let dark = s
            .js(
                "return matchMedia('(prefers-color-scheme: dark)').matches;",
                vec![],
            )
            .await;
        assert_eq!(dark, json!(true), "the page follows the dark desktop");
        by_role(&s, "tab", "Library")
            .await
            .click()
            .await
            .expect("Library tab");
        let search = by_role(&s, "searchbox", "Search library").await;
        search.send_keys("centres").await.expect("type");
        wait_results(
            &s,
            |r| r.len() == 1 && r[0]["id"] == json!(quantum),
            "the quantum page",
        )
        .await;
        s.click_css("#results button.result").await;
        s.wait_text("reader-title", |t| t.starts_with("Diamond"), "the reader")
            .await;
        by_role(&s, "button", "Remove tag thesis").await;
        s.screenshot("library-reader-dark").await;
        s.finish().await;
    });
}

/// A hostile document: markup spelled out in a page, and a library file holding raw HTML,
/// scripts, a javascript: link and remote images. Nothing runs, nothing loads, the markup reads
/// as text, and a link goes to the system browser (a stand-in `xdg-open` that writes down what
/// it was given), never into the window.
#[test]
fn a_hostile_document_is_read_as_text_and_nothing_in_it_runs() {
    gui(async {
        let server = FaultServer::start();
        let pixel = server.url("/pixel.png");
        let elsewhere = server.url("/elsewhere");
        let page = format!(
            "<!doctype html><html><head><title>Hostile page</title></head><body><article>\
             <h1>Hostile page</h1>\
             <p>The page spells out &lt;img src=x onerror=\"document.title='pwned'\"&gt; as text.</p>\
             <p>{PROSE}</p>\
             <p>A <a href=\"javascript:document.title='pwned'\">script link</a> and \
                <a href=\"{elsewhere}\">a real link</a>.</p>\
             <p><img src=\"{pixel}\" alt=\"A tracking pixel\"></p>\
             <script>document.title='pwned'</script>\
             </article></body></html>"
        );
        server.script(
            "/hostile",
            vec![Behavior::Respond {
                status: 200,
                headers: vec![("Content-Type".into(), "text/html; charset=utf-8".into())],
                body: page.into_bytes(),
            }],
        );
        // A browser that only writes down the link it was asked to open.
        let bin = tempfile::tempdir().expect("bin dir");
        let opened = bin.path().join("opened.txt");
        let fake = bin.path().join("xdg-open");
        std::fs::write(
            &fake,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n",
                opened.display()
            ),
        )
        .expect("write the stand-in browser");
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        let path = format!(
            "{}:{}",
            bin.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let data = tempfile::tempdir().expect("data dir");
        let s = DesktopSession::launch_in_with_env(data.path(), &[("PATH", &path)]).await;
        fetch_all(&s, &server, &["/hostile"]).await;

        // The file itself made hostile too, as if the extractor had let raw HTML through.
        let doc = document_of(&s, 1);
        let text = std::fs::read_to_string(&doc).expect("read");
        let hostile = format!(
            "{text}\n\n<script>document.title='pwned'</script>\n\n\
             <img src=\"{pixel}?raw\" onerror=\"document.title='pwned'\">\n\n\
             <iframe src=\"{elsewhere}?frame\"></iframe>\n\n\
             [markdown script](javascript:document.title='pwned') \
             ![remote image]({pixel}?md)\n\n\
             <a href=\"{elsewhere}?raw\" onclick=\"document.title='pwned'\">raw link</a>\n"
        );
        std::fs::write(&doc, hostile).expect("rewrite the document");

        by_role(&s, "tab", "Library")
            .await
            .click()
            .await
            .expect("Library tab");
        wait_results(&s, |r| r.len() == 1, "the hostile page").await;
        s.click_css("#results button.result").await;
        s.wait_text("reader-title", |t| t == "Hostile page", "the reader")
            .await;
        tokio::time::sleep(Duration::from_millis(500)).await;

        let page = s
            .js(
                "const body = document.getElementById('reader-body');\
                 return { title: document.title, href: location.href,\
                   active: body.querySelectorAll('script, img, iframe, object, embed, svg, style, link, form').length,\
                   handlers: Array.from(body.querySelectorAll('*')).filter((e) =>\
                     Array.from(e.attributes).some((a) => a.name.startsWith('on') || a.name === 'style')).length,\
                   links: Array.from(body.querySelectorAll('a[href]'), (a) => a.getAttribute('href')),\
                   text: body.textContent };",
                vec![],
            )
            .await;
        assert_eq!(page["title"], "Gleaner", "no script ran: {page}");
        assert_eq!(page["active"], 0, "no active element was made: {page}");
        assert_eq!(page["handlers"], 0, "no handler or style attribute: {page}");
        let text = page["text"].as_str().unwrap_or("");
        assert!(
            text.contains("<img src=x onerror=\"document.title='pwned'\">"),
            "the markup the page spelled out reads literally: {text}"
        );
        assert!(
            text.contains("<script>document.title='pwned'</script>"),
            "{text}"
        );
        assert!(
            text.contains("[image: A tracking pixel]") || text.contains("A tracking pixel"),
            "{text}"
        );
        assert!(
            text.contains("[image: remote image]"),
            "alt text shows: {text}"
        );
        let links: Vec<String> = serde_json::from_value(page["links"].clone()).unwrap_or_default();
        assert!(
            links
                .iter()
                .all(|l| l.starts_with("http://") || l.starts_with('#')),
            "only http(s) links keep a target: {links:?}"
        );
        assert!(
            links.contains(&elsewhere),
            "the real link survives: {links:?}"
        );
        assert_eq!(server.hits_prefix("/pixel.png"), 0, "no image was loaded");
        assert_eq!(
            server.hits_prefix("/elsewhere"),
            0,
            "no frame or link was loaded"
        );
        s.screenshot("library-hostile").await;

        // A click on the link goes to the system browser; the window stays on the app.
        let before = page["href"].clone();
        s.client
            .find(Locator::Css(&format!(
                "#reader-body a[href=\"{elsewhere}\"]"
            )))
            .await
            .expect("the real link")
            .click()
            .await
            .expect("click the link");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(&opened).unwrap_or_default().trim() != elsewhere {
            assert!(
                Instant::now() < deadline,
                "the browser was handed the link; it got {:?}; status: {:?}\n--- app log ---\n{}",
                std::fs::read_to_string(&opened).ok(),
                s.text("status").await,
                s.app_log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let after = s.js("return location.href;", vec![]).await;
        assert_eq!(after, before, "the window did not navigate");
        assert_eq!(
            server.hits_prefix("/elsewhere"),
            0,
            "the window fetched nothing"
        );
        let title = s.js("return document.title;", vec![]).await;
        assert_eq!(title, "Gleaner");
        s.finish().await;
    });
}

/// A long document is on screen from its first piece, then grows to the whole text: every
/// section once, in order, and the reader is no longer marked busy.
#[test]
fn a_long_document_is_shown_whole_a_piece_at_a_time() {
    gui(async {
        let server = FaultServer::start();
        let s = DesktopSession::launch().await;
        fetch_all(&s, &server, &["/article?kb=400"]).await;
        let doc = std::fs::read_to_string(document_of(&s, 1)).expect("the document");
        let sections: Vec<&str> = doc.lines().filter_map(|l| l.strip_prefix("## ")).collect();
        assert!(sections.len() > 500, "{} sections", sections.len());

        by_role(&s, "tab", "Library")
            .await
            .click()
            .await
            .expect("Library tab");
        wait_results(&s, |r| r.len() == 1, "the article").await;
        s.click_css("#results button.result").await;
        s.wait_text("reader-title", |t| t == "A long report", "the reader")
            .await;
        let deadline = Instant::now() + Duration::from_secs(30);
        let shown = loop {
            let v = s
                .js(
                    "const b = document.getElementById('reader-body');\
                     if (b.hasAttribute('aria-busy')) return null;\
                     return Array.from(b.querySelectorAll('h2'), (h) => h.textContent);",
                    vec![],
                )
                .await;
            if !v.is_null() {
                break v;
            }
            assert!(Instant::now() < deadline, "the whole text to arrive");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(shown, json!(sections), "every section once, in order");
        s.finish().await;
    });
}
