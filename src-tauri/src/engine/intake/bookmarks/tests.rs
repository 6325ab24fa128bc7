//! The bookmark reader against the exports of Firefox, Chrome and Safari, and against input
//! that is cut, damaged or huge.

use super::*;
use std::cell::Cell;
use std::io::{Cursor, Read};
use std::rc::Rc;

const FIXTURES: &[&str] = &["firefox.html", "chrome.html", "safari.html"];

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests-fixtures/bookmarks")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read(bytes: &[u8]) -> Vec<Item> {
    read_bookmarks(bytes).expect("reading from memory")
}

/// An export's items, one line each: an entry as `key <url> issued [tags]`.
fn brief(items: &[Item]) -> Vec<String> {
    items
        .iter()
        .map(|item| match item {
            Item::Entry(e) => format!(
                "{} <{}> {} [{}]",
                e.key.as_deref().unwrap_or("?"),
                e.url.as_deref().unwrap_or("?"),
                e.issued.as_deref().unwrap_or("-"),
                e.tags.join(" / ")
            ),
            Item::Skipped { what, reason } => format!("skipped {what}: {reason}"),
            Item::Rejected { what, reason } => format!("rejected {what}: {reason}"),
        })
        .collect()
}

fn entries(items: &[Item]) -> Vec<&Entry> {
    items
        .iter()
        .filter_map(|item| match item {
            Item::Entry(e) => Some(e),
            _ => None,
        })
        .collect()
}

/// A small export around `body`, as a browser would start it.
fn export(body: &str) -> Vec<u8> {
    format!("<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<TITLE>Bookmarks</TITLE>\n<H1>Bookmarks</H1>\n<DL><p>\n{body}\n</DL><p>\n")
        .into_bytes()
}

#[test]
fn a_firefox_export_reads_as_the_researcher_filed_it() {
    let items = read(&fixture("firefox.html"));
    assert_eq!(
        brief(&items),
        [
            "Deep learning | Nature <https://www.nature.com/articles/nature14539> 2023-07-14 []",
            "Get Help <https://support.mozilla.org/products/firefox> 2023-03-28 [Mozilla Firefox]",
            "Customize Firefox <https://support.mozilla.org/kb/customize-firefox-controls-buttons-and-toolbars?utm_source=firefox-browser&utm_medium=default-bookmarks&utm_campaign=customize> 2023-03-28 [Mozilla Firefox]",
            "Get Involved <https://www.mozilla.org/contribute/> 2023-03-28 [Mozilla Firefox]",
            "About Us <https://www.mozilla.org/about/> 2023-03-28 [Mozilla Firefox]",
            "[1706.03762] Attention Is All You Need <https://arxiv.org/abs/1706.03762> 2023-07-22 [Research / Machine learning / transformers / attention]",
            "attention is all you need - Google Scholar <https://scholar.google.com/scholar?hl=en&as_sdt=0%2C5&q=attention+is+all+you+need> 2023-07-22 [Research / Machine learning]",
            "Ten Simple Rules for Reproducible Computational Research & Data <https://www.ncbi.nlm.nih.gov/pmc/articles/PMC3812051/> 2023-09-18 [Research / reproducibility / methods]",
            "skipped Most Visited: a Firefox smart folder (place:), not a page",
            "Getting Started <https://www.mozilla.org/en-US/firefox/central/> 2023-03-28 [Bookmarks Toolbar]",
            "skipped Save to Wayback: a bookmarklet (javascript:), not a page",
            "Highly accurate protein structure prediction with AlphaFold | Nature <https://doi.org/10.1038/s41586-021-03819-2> 2023-11-14 [Bookmarks Toolbar]",
            "skipped Settings: a page of the browser itself (about:), not a web page",
            "skipped Recent Tags: a Firefox smart folder (place:), not a page",
            "Bayes' theorem - Wikipedia <https://en.wikipedia.org/wiki/Bayes%27_theorem> 2023-11-14 [Other Bookmarks / statistics]",
            "skipped draft.pdf: a file on a computer (file:), not a web page",
            "https://example.org/untitled <https://example.org/untitled> 2023-11-14 [Other Bookmarks]",
        ]
    );
    // The whole entry, not only what the summary shows.
    assert_eq!(
        items[5],
        Item::Entry(Entry {
            key: Some("[1706.03762] Attention Is All You Need".into()),
            title: Some("[1706.03762] Attention Is All You Need".into()),
            url: Some("https://arxiv.org/abs/1706.03762".into()),
            issued: Some("2023-07-22".into()),
            tags: vec![
                "Research".into(),
                "Machine learning".into(),
                "transformers".into(),
                "attention".into()
            ],
            ..Entry::default()
        })
    );
}

#[test]
fn a_chrome_export_keeps_its_roots_as_tags() {
    let items = read(&fixture("chrome.html"));
    assert_eq!(
        brief(&items),
        [
            "Gut microbiome and health - PubMed <https://pubmed.ncbi.nlm.nih.gov/31452104/> 2021-02-03 [Bookmarks bar]",
            "Single-cell atlas | bioRxiv <https://www.biorxiv.org/content/10.1101/2020.03.12.988246v1> 2022-04-15 [Bookmarks bar / Reading group]",
            "PLOS ONE: Sci-Hub downloads <https://journals.plos.org/plosone/article?id=10.1371/journal.pone.0185809> 2024-04-05 [Bookmarks bar / Reading group / Week 3]",
            "skipped Settings: a page of the browser itself (chrome:), not a web page",
            "graph neural networks | Semantic Scholar <https://www.semanticscholar.org/search?q=graph%20neural%20networks&sort=relevance> 2023-11-29 [Other bookmarks]",
            "LoRA: Low-Rank Adaptation of Large Language Models <https://arxiv.org/pdf/2106.09685> 2023-11-29 [Other bookmarks]",
            "skipped Save to Zotero: a bookmarklet (javascript:), not a page",
            "How the Brain Distinguishes Memories From Perceptions | Quanta Magazine <https://www.quantamagazine.org/how-the-brain-distinguishes-memories-from-perceptions-20221214/> 2023-12-19 [Mobile bookmarks]",
        ]
    );
}

#[test]
fn a_safari_export_files_its_reading_list_under_reading_list() {
    let items = read(&fixture("safari.html"));
    assert_eq!(
        brief(&items),
        [
            "Apple <https://www.apple.com/> - [Favorites]",
            "Œuvres — café culture · Google Scholar <https://scholar.google.com/scholar?q=caf%C3%A9+culture&hl=fr> - [Favorites]",
            "protocols.io <https://www.protocols.io/> - [Bookmarks Menu / Lab]",
            "skipped Mail the lab: an e-mail address (mailto:), not a web page",
            "Hacker News <https://news.ycombinator.com/> - []",
            "The Physicist Who Bets That Gravity Can’t Be Quantized <https://www.quantamagazine.org/the-physicist-who-bets-that-gravity-cant-be-quantized-20230710/> - [Reading List]",
            "Neuroscience: How we learn <https://elifesciences.org/articles/82580> - [Reading List]",
        ]
    );
    // The `<DD>` preview after a Reading List bookmark is no part of any title.
    assert!(
        entries(&items)
            .iter()
            .all(|e| { !e.title.as_deref().is_some_and(|t| t.contains("Oppenheim")) })
    );
}

#[test]
fn safaris_own_names_and_its_reading_list_in_any_language_are_named_as_safari_shows_them() {
    let items = read(&export(
        r#"<DT><H3 FOLDED>BookmarksBar</H3>
<DL><p><DT><A HREF="https://bar.example/">Bar</A></DL><p>
<DT><H3 FOLDED>BookmarksMenu</H3>
<DL><p><DT><A HREF="https://menu.example/">Menu</A></DL><p>
<DT><H3 FOLDED>com.apple.ReadingList</H3>
<DL><p><DT><A HREF="https://later.example/">Later</A></DL><p>
<DT><H3 FOLDED id="com.apple.ReadingList">Leseliste</H3>
<DL><p><DT><A HREF="https://spaeter.example/">Später</A></DL><p>"#,
    ));
    assert_eq!(
        brief(&items),
        [
            "Bar <https://bar.example/> - [Favorites]",
            "Menu <https://menu.example/> - [Bookmarks Menu]",
            "Later <https://later.example/> - [Reading List]",
            "Später <https://spaeter.example/> - [Reading List]",
        ]
    );
}

#[test]
fn only_an_anchors_href_is_an_address_never_an_icon() {
    let items = read(&export(
        r#"<DT><A ICON_URI="https://icons.example/favicon.ico" HREF="https://page.example/a" ICON="data:image/png;base64,iVBORw0KGgo=">Page</A>
<DT><A ICON_URI="https://icons.example/only-an-icon.ico" ICON="data:image/png;base64,iVBORw0KGgo=">Icon only</A>
<DT><H3 HREF="https://heading.example/">Folder</H3>
<DL><p>
<LINK HREF="https://link.example/"><IMG SRC="https://img.example/x.png">
</DL><p>"#,
    ));
    assert_eq!(
        brief(&items),
        [
            "Page <https://page.example/a> - []",
            "rejected Icon only: no address (the bookmark has no HREF)",
        ]
    );
    let all = format!("{items:?}");
    assert!(!all.contains("icons.example") && !all.contains("data:image"));
}

#[test]
fn entities_are_decoded_in_addresses_and_titles_as_a_browser_decodes_them() {
    let items = read(&export(
        r#"<DT><A HREF="https://a.example/s?x=1&amp;y=2&amp;z=&quot;3&quot;">Q&amp;A &#8212; &lt;tags&gt; &#x27;quoted&#39; &eacute;t&eacute;</A>
<DT><A HREF="https://b.example/s?q=x&sect=2&copy=3&lang=de">Raw ampersands</A>"#,
    ));
    assert_eq!(
        brief(&items),
        [
            "Q&A — <tags> 'quoted' été <https://a.example/s?x=1&y=2&z=\"3\"> - []",
            // A legacy entity name without `;` before `=` is not one, in an attribute.
            "Raw ampersands <https://b.example/s?q=x&sect=2&copy=3&lang=de> - []",
        ]
    );
}

#[test]
fn smart_folders_and_bookmarklets_are_skipped_naming_the_bookmark() {
    let long = format!("javascript:void({})", "x".repeat(300));
    let items = read(&export(&format!(
        r#"<DT><A HREF="place:sort=8&maxResults=10">Most Visited</A>
<DT><A HREF="PLACE:type=6&amp;sort=14">Recent Tags</A>
<DT><A HREF="javascript:alert(document.title)">Show title</A>
<DT><A HREF="  JavaScript:void(0)">Spaced</A>
<DT><A HREF="{long}"></A>"#
    )));
    assert_eq!(
        brief(&items)[..4],
        [
            "skipped Most Visited: a Firefox smart folder (place:), not a page",
            "skipped Recent Tags: a Firefox smart folder (place:), not a page",
            "skipped Show title: a bookmarklet (javascript:), not a page",
            "skipped Spaced: a bookmarklet (javascript:), not a page",
        ]
    );
    // An untitled one is named by its address, cut as rejected input is.
    let Item::Skipped { what, reason } = &items[4] else {
        panic!("not skipped: {:?}", items[4]);
    };
    assert_eq!(reason, "a bookmarklet (javascript:), not a page");
    assert!(what.starts_with("javascript:void(xxx"), "{what}");
    assert!(what.ends_with("… (317 characters)"), "{what}");
}

#[test]
fn other_schemes_are_skipped_and_what_is_no_web_address_is_rejected() {
    let items = read(&export(
        r#"<DT><A HREF="file:///C:/Users/ana/thesis.pdf">Thesis</A>
<DT><A HREF="about:config">Config</A>
<DT><A HREF="chrome://flags/">Flags</A>
<DT><A HREF="edge://settings">Edge settings</A>
<DT><A HREF="data:text/html,<h1>hi</h1>">Data</A>
<DT><A HREF="mailto:ana@example.edu">Mail</A>
<DT><A HREF="ftp://ftp.example.org/pub/">FTP</A>
<DT><A HREF="chrome-extension://abcdef/options.html">Extension</A>
<DT><A HREF="magnet:?xt=urn:btih:abc">Magnet</A>
<DT><A HREF="htps://typo.example/">Typo</A>
<DT><A HREF="www.example.com/page">No scheme</A>
<DT><A HREF="/relative/path">Relative</A>
<DT><A HREF="https://">No host</A>
<DT><A HREF="http://exa mple.com/">Space in host</A>
<DT><A HREF="">Empty</A>
<DT><A HREF="https://ok.example/">Fine</A>"#,
    ));
    assert_eq!(
        brief(&items),
        [
            "skipped Thesis: a file on a computer (file:), not a web page",
            "skipped Config: a page of the browser itself (about:), not a web page",
            "skipped Flags: a page of the browser itself (chrome:), not a web page",
            "skipped Edge settings: a page of the browser itself (edge:), not a web page",
            "skipped Data: data kept in the bookmark itself (data:), not a web page",
            "skipped Mail: an e-mail address (mailto:), not a web page",
            "skipped FTP: a file server (ftp:), not a web page; only http:// and https:// are taken",
            "skipped Extension: a page of the browser itself (chrome-extension:), not a web page",
            "rejected Magnet: magnet: links cannot be fetched; only http:// and https:// are taken",
            "rejected Typo: htps: links cannot be fetched; only http:// and https:// are taken",
            "rejected No scheme: not a full web address (it has no scheme such as https://)",
            "rejected Relative: not a full web address (it has no scheme such as https://)",
            "rejected No host: malformed address: empty host",
            "rejected Space in host: malformed address: invalid international domain name",
            "rejected Empty: no address (its HREF is empty)",
            "Fine <https://ok.example/> - []",
        ]
    );
    let long = format!("https://long.example/{}", "a".repeat(MAX_URL_LEN));
    let items = read(&export(&format!(r#"<DT><A HREF="{long}">Long</A>"#)));
    assert_eq!(
        brief(&items),
        [format!(
            "rejected Long: address longer than {MAX_URL_LEN} characters"
        )]
    );
}

#[test]
fn add_date_becomes_the_day_whatever_its_unit() {
    for (stamp, day) in [
        ("1700000000", Some("2023-11-14")), // seconds, as browsers write
        ("1700000000000", Some("2023-11-14")), // milliseconds
        ("1700000000000000", Some("2023-11-14")), // microseconds
        ("1700000000000000000", Some("2023-11-14")), // nanoseconds
        (" 1700000000 ", Some("2023-11-14")),
        ("1700000000.75", Some("2023-11-14")),
        ("946684799", Some("1999-12-31")),
        ("946684800", Some("2000-01-01")),
        ("0", None),
        ("-868878000", None),
        ("", None),
        ("soon", None),
        ("1e9", None),
        ("99999999999999999999999", None),
    ] {
        assert_eq!(day_of(stamp).as_deref(), day, "ADD_DATE={stamp:?}");
    }
    let items = read(&export(
        r#"<DT><A HREF="https://a.example/" ADD_DATE="1612345700" LAST_MODIFIED="1712345000">Dated</A>
<DT><A HREF="https://b.example/" LAST_MODIFIED="1712345000">Only modified</A>
<DT><A HREF="https://c.example/" ADD_DATE="1612345700000000">Microseconds</A>"#,
    ));
    let issued: Vec<_> = entries(&items).iter().map(|e| e.issued.clone()).collect();
    assert_eq!(
        issued,
        [Some("2021-02-03".into()), None, Some("2021-02-03".into())]
    );
}

#[test]
fn an_untitled_bookmark_is_keyed_by_its_address() {
    let items = read(&export(
        r#"<DT><A HREF="https://untitled.example/page"></A>
<DT><A HREF="https://blank.example/">   
   </A>"#,
    ));
    assert_eq!(
        items,
        [
            Item::Entry(Entry {
                key: Some("https://untitled.example/page".into()),
                url: Some("https://untitled.example/page".into()),
                ..Entry::default()
            }),
            Item::Entry(Entry {
                key: Some("https://blank.example/".into()),
                url: Some("https://blank.example/".into()),
                ..Entry::default()
            }),
        ]
    );
}

#[test]
fn firefox_tags_follow_the_folder_path_each_once() {
    let items = read(&export(
        r#"<DT><H3>Thesis</H3>
<DL><p>
<DT><A HREF="https://a.example/" TAGS="methods, to read ,,Thesis,methods">A</A>
<DT><A HREF="https://b.example/" TAGS="">B</A>
</DL><p>
<DT><A HREF="https://c.example/" TAGS="loose">C</A>"#,
    ));
    assert_eq!(
        brief(&items),
        [
            "A <https://a.example/> - [Thesis / methods / to read]",
            "B <https://b.example/> - [Thesis]",
            "C <https://c.example/> - [loose]",
        ]
    );
}

#[test]
fn the_quirks_of_real_exports_keep_their_folders() {
    let items = read(
        b"<!doctype netscape-bookmark-file-1>\r\n\
<dl><p>\r\n\
<dt><h3 FOLDED>Unclosed   heading\r\n\
<dd>its description\r\n\
<DL><P>\r\n\
<DT><A HREF=\"https://a.example/one\">One\r\n\
<DT><a href='https://a.example/two' add_date=1700000000>Two</a>\r\n\
<HR>\r\n\
<DT><A HREF=\"https://a.example/three\">Three\r\n   spread over\r\n   lines</A>\r\n\
<DD>About three, <b>not</b> its title\r\n\
<DT><A HREF=\"https://a.example/bold\">A <b>bold</b> title</A>\r\n\
</DL><p>\r\n\
<DT><H3>Empty without a list</H3>\r\n\
<DT><A HREF=\"https://a.example/four\">Four</A>\r\n\
<DT><H3></H3>\r\n\
<DL><p><DT><A HREF=\"https://a.example/nameless\">In a nameless folder</A></DL><p>\r\n\
</DL>\r\n\
</DL>\r\n\
</DL>\r\n\
<DT><A HREF=\"https://a.example/five\">Five</A>\r\n\
<DT><A HREF=\"https://a.example/six\">Six at the end",
    );
    assert_eq!(
        brief(&items),
        [
            "One <https://a.example/one> - [Unclosed heading]",
            "Two <https://a.example/two> 2023-11-14 [Unclosed heading]",
            "Three spread over lines <https://a.example/three> - [Unclosed heading]",
            "A bold title <https://a.example/bold> - [Unclosed heading]",
            "Four <https://a.example/four> - []",
            "In a nameless folder <https://a.example/nameless> - []",
            "Five <https://a.example/five> - []",
            "Six at the end <https://a.example/six> - []",
        ]
    );
}

#[test]
fn a_bookmark_in_folders_deeper_than_the_tag_limit_keeps_the_outermost() {
    let mut body = String::new();
    for depth in 0..1000 {
        body.push_str(&format!("<DT><H3>F{depth}</H3>\n<DL><p>\n"));
    }
    body.push_str(r#"<DT><A HREF="https://deep.example/">Deep</A>"#);
    let items = read(&export(&body));
    let [Item::Entry(deep)] = &items[..] else {
        panic!("{items:?}");
    };
    assert_eq!(deep.tags.len(), MAX_TAGS);
    assert_eq!(deep.tags[0], "F0");
    assert_eq!(deep.tags[MAX_TAGS - 1], format!("F{}", MAX_TAGS - 1));
}

#[test]
fn script_and_style_content_is_not_read_as_bookmarks() {
    let items = read(&export(
        r#"<script>document.write('<DT><A HREF="https://script.example/">x</A>')</script>
<style>a[href="<A HREF='https://style.example/'>"] {}</style>
<TITLE><A HREF="https://title.example/">t</A></TITLE>
<DT><A HREF="https://real.example/">Real</A>"#,
    ));
    assert_eq!(brief(&items), ["Real <https://real.example/> - []"]);
}

/// A reader that offers `step` bytes at a time.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.data.len().min(self.step).min(out.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

impl BufRead for Trickle<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        Ok(&self.data[..self.data.len().min(self.step)])
    }
    fn consume(&mut self, n: usize) {
        self.data = &self.data[n..];
    }
}

#[test]
fn an_export_reads_the_same_however_its_input_is_cut() {
    for name in FIXTURES {
        let bytes = fixture(name);
        let whole = read(&bytes);
        assert!(whole.len() >= 7, "{name}");
        let crlf = String::from_utf8(bytes.clone())
            .expect("fixtures are UTF-8")
            .replace('\n', "\r\n");
        assert_eq!(read(crlf.as_bytes()), whole, "{name} with CRLF");
        for step in [1, 2, 3, 7, 64, 4096] {
            let cut = read_bookmarks(Trickle { data: &bytes, step }).expect("reading from memory");
            // Characters, entities and tags split between pieces are read whole.
            assert_eq!(cut, whole, "{name} read {step} bytes at a time");
        }
    }
}

#[test]
fn a_byte_order_mark_is_dropped_and_utf16_is_read() {
    let bytes = export(r#"<DT><A HREF="https://bom.example/">Café</A>"#);
    let want = ["Café <https://bom.example/> - []"];
    let utf8: Vec<u8> = b"\xef\xbb\xbf".iter().chain(&bytes).copied().collect();
    assert_eq!(brief(&read(&utf8)), want);
    let text = String::from_utf8(bytes).expect("UTF-8");
    let utf16: Vec<u8> = [0xff, 0xfe]
        .into_iter()
        .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    assert_eq!(brief(&read(&utf16)), want);
    let latin1 = export("<DT><A HREF=\"https://latin1.example/\">Caf\u{e9}</A>")
        .into_iter()
        .flat_map(|b| {
            if b == 0xc3 {
                None
            } else if b == 0xa9 {
                Some(0xe9)
            } else {
                Some(b)
            }
        })
        .collect::<Vec<u8>>();
    assert_eq!(
        brief(&read(&latin1)),
        ["Caf\u{fffd} <https://latin1.example/> - []"]
    );
}

/// Gives `good`, then fails: interrupted once (which is tried again), then for good.
struct Failing {
    good: Cursor<Vec<u8>>,
    interrupted: bool,
}

impl Read for Failing {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.good.read(out)?;
        if n > 0 {
            return Ok(n);
        }
        if !self.interrupted {
            self.interrupted = true;
            return Err(std::io::ErrorKind::Interrupted.into());
        }
        Err(std::io::Error::other("the disk went away"))
    }
}

#[test]
fn an_io_error_ends_the_reading_as_an_error() {
    let good = export(r#"<DT><A HREF="https://before.example/">Before</A>"#);
    let good = good[..good.len() - 10].to_vec();
    let failing = || {
        std::io::BufReader::new(Failing {
            good: Cursor::new(good.clone()),
            interrupted: false,
        })
    };
    let mut marks = Bookmarks::new(failing());
    let first = marks
        .next_item()
        .expect("the first bookmark comes before the error");
    assert_eq!(
        brief(&first.into_iter().collect::<Vec<_>>()),
        ["Before <https://before.example/> - []"]
    );
    let Err(BookmarksError::Read(e)) = marks.next_item() else {
        panic!("the error is not returned");
    };
    assert_eq!(e.to_string(), "the disk went away");
    assert!(read_bookmarks(failing()).is_err());
    let mut iter = Bookmarks::new(failing());
    assert!(matches!(iter.next(), Some(Ok(_))));
    assert!(matches!(iter.next(), Some(Err(_))));
    assert!(iter.next().is_none(), "the iterator ends after an error");
}

#[test]
fn truncated_exports_never_panic_and_keep_what_came_before() {
    for name in FIXTURES {
        let bytes = fixture(name);
        let whole = read(&bytes);
        for cut in 0..bytes.len() {
            let part = read(&bytes[..cut]);
            assert!(part.len() <= whole.len(), "{name} cut at {cut}");
            // All but the last item, which the cut may have shortened, are as in the
            // whole file.
            let settled = part.len().saturating_sub(1);
            assert_eq!(part[..settled], whole[..settled], "{name} cut at {cut}");
        }
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    const PIECES: &[&str] = &[
        "<DT>",
        "<A HREF=\"",
        "https://x.example/",
        "\">",
        "</A>",
        "<H3>",
        "</H3>",
        "<DL><p>",
        "</DL>",
        "&amp",
        "&#",
        "x;",
        "<!--",
        "-->",
        "'",
        "\"",
        "<",
        ">",
        "=",
        "<script>",
        "</script",
        "<DD>",
        "place:",
        "javascript:",
        " ",
        "\n",
        "é",
        "\u{feff}",
        "<TITLE>",
        "ADD_DATE=99999999999999999999",
        " TAGS=\",,\"",
        "<!DOCTYPE ",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..300 {
        let mut input = Vec::new();
        for _ in 0..(next() % 400) {
            let r = next();
            if r.is_multiple_of(4) {
                input.push((r >> 8) as u8);
            } else {
                input.extend_from_slice(PIECES[(r >> 8) as usize % PIECES.len()].as_bytes());
            }
        }
        let step = 1 + (next() % 50) as usize;
        assert!(read_bookmarks(Trickle { data: &input, step }).is_ok());
        let _ = is_bookmark_export(&String::from_utf8_lossy(&input));
    }
}

const ICON_CHARS: usize = 2048;

/// A 20,000-bookmark export made as it is read, in folders of 1,000, every bookmark with a
/// 2 KB icon, offered a megabyte at a time. It notes where each bookmark's `</A>` ends,
/// how much the reader has consumed, and the most it consumed at once.
struct Synthetic {
    count: usize,
    next: usize,
    icon: String,
    buf: Vec<u8>,
    at: usize,
    /// Bytes made before `buf[0]`.
    before: u64,
    ends: Vec<u64>,
    consumed: Rc<Cell<u64>>,
    most_at_once: Rc<Cell<usize>>,
    finished: bool,
}

const OFFER: usize = 1024 * 1024;

impl Synthetic {
    fn make_more(&mut self) {
        let i = self.next;
        if i == 0 {
            self.buf.extend_from_slice(
                b"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<META HTTP-EQUIV=\"Content-Type\" CONTENT=\"text/html; charset=UTF-8\">\n<TITLE>Bookmarks</TITLE>\n<H1>Bookmarks</H1>\n<DL><p>\n",
            );
        }
        if i.is_multiple_of(1000) {
            if i > 0 {
                self.buf.extend_from_slice(b"    </DL><p>\n");
            }
            self.buf.extend_from_slice(
                format!(
                    "    <DT><H3 ADD_DATE=\"1600000000\">Folder {}</H3>\n    <DL><p>\n",
                    i / 1000
                )
                .as_bytes(),
            );
        }
        let line = format!(
            "        <DT><A HREF=\"https://example.org/paper/{i}?v=1&amp;lang=en\" ADD_DATE=\"{}\" ICON=\"{}\">Paper {i}</A>\n",
            1_600_000_000 + i,
            self.icon
        );
        self.buf.extend_from_slice(line.as_bytes());
        self.ends.push(self.before + (self.buf.len() - 1) as u64);
        self.next += 1;
        if self.next == self.count {
            self.buf.extend_from_slice(b"    </DL><p>\n</DL><p>\n");
            self.finished = true;
        }
    }
}

impl Read for Synthetic {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Synthetic {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.buf.len() - self.at < OFFER && !self.finished {
            self.before += self.at as u64;
            self.buf.drain(..self.at);
            self.at = 0;
            while self.buf.len() < OFFER && !self.finished {
                self.make_more();
            }
        }
        Ok(&self.buf[self.at..])
    }
    fn consume(&mut self, n: usize) {
        self.at += n;
        self.consumed.set(self.consumed.get() + n as u64);
        self.most_at_once.set(self.most_at_once.get().max(n));
    }
}

#[test]
fn twenty_thousand_bookmarks_with_big_icons_are_read_in_bounded_pieces() {
    let count = 20_000;
    let icon: String = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9h"
        .chars()
        .cycle()
        .take(ICON_CHARS)
        .collect();
    let consumed = Rc::new(Cell::new(0));
    let most_at_once = Rc::new(Cell::new(0));
    let mut marks = Bookmarks::new(Synthetic {
        count,
        next: 0,
        icon,
        buf: Vec::new(),
        at: 0,
        before: 0,
        ends: Vec::with_capacity(count),
        consumed: consumed.clone(),
        most_at_once: most_at_once.clone(),
        finished: false,
    });
    let mut read = 0;
    let mut most_ahead = 0;
    while let Some(item) = marks.next_item().expect("reading a made-up export") {
        let Item::Entry(entry) = &item else {
            panic!("bookmark {read}: {item:?}");
        };
        assert_eq!(
            entry.title.as_deref(),
            Some(format!("Paper {read}").as_str())
        );
        assert_eq!(
            entry.url.as_deref(),
            Some(format!("https://example.org/paper/{read}?v=1&lang=en").as_str())
        );
        assert_eq!(entry.tags, [format!("Folder {}", read / 1000)]);
        // Each bookmark is given once its `</A>` is read, and before much more is.
        let end = marks.input.ends[read];
        let now = consumed.get();
        assert!(now > end, "bookmark {read} given before its end was read");
        most_ahead = most_ahead.max(now - end);
        read += 1;
    }
    assert_eq!(read, count);
    assert!(
        most_ahead <= CHUNK_BYTES as u64,
        "read {most_ahead} bytes ahead"
    );
    assert!(
        most_at_once.get() <= CHUNK_BYTES,
        "{} bytes at once",
        most_at_once.get()
    );
    // The whole file is far bigger than what was ever held.
    assert!(
        consumed.get() > 40 * 1024 * 1024,
        "{} bytes",
        consumed.get()
    );
}

#[test]
fn bookmark_exports_are_detected_by_their_doctype() {
    for name in FIXTURES {
        let bytes = fixture(name);
        assert!(
            is_bookmark_export(&String::from_utf8_lossy(&bytes[..200])),
            "{name}"
        );
    }
    for head in [
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>",
        "<!doctype netscape-bookmark-file-1>\n<DL>",
        "\u{feff}<!DOCTYPE NETSCAPE-Bookmark-file-1>",
        " \r\n\t<!-- exported by a tool -->\n<!---->  <!DOCTYPE\tNETSCAPE-Bookmark-file-1 >",
        "<!DocType  Netscape-Bookmark-File-1>",
    ] {
        assert!(is_bookmark_export(head), "{head:?}");
    }
}

#[test]
fn text_and_ordinary_pages_are_not_bookmark_exports() {
    for head in [
        "",
        "https://example.com/a\nhttps://example.com/b\n",
        "My bookmarks: <!DOCTYPE NETSCAPE-Bookmark-file-1>",
        "<!DOCTYPE html>\n<html><head><title>Bookmarks</title></head><body><a href=\"https://x.example/\">x</a></body></html>",
        "<html><body><pre><!DOCTYPE NETSCAPE-Bookmark-file-1></pre></body></html>",
        "<!-- an unended comment <!DOCTYPE NETSCAPE-Bookmark-file-1>",
        "<!DOCTYPE NETSCAPE-Bookmark-file-10>",
        "<!DOCTYPENETSCAPE-Bookmark-file-1>",
        "<!DOCTYPE NETSCAPE-Bookmark-file",
        "<?xml version=\"1.0\"?><!DOCTYPE NETSCAPE-Bookmark-file-1>",
        "\u{e9}\u{e9}\u{e9}",
    ] {
        assert!(!is_bookmark_export(head), "{head:?}");
    }
}
