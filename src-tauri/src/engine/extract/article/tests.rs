//! What a reader needs stays, and what a reader skips goes: one small article holding every
//! element a paper's page has (`reader-elements.html`), and a short post under its comments.

use crate::engine::extract::{DocKind, extract};

macro_rules! fixture {
    ($name:literal) => {
        include_bytes!(concat!("../../../../tests-fixtures/extract/", $name)).as_slice()
    };
}

const ARTICLE_URL: &str = "https://notes.example/rivers/2025/sediment-pulses.html";

fn markdown(body: &[u8], url: &str) -> String {
    match extract(body, Some("text/html; charset=utf-8"), url) {
        Ok(doc) => {
            assert_eq!(doc.kind, DocKind::Html);
            doc.text
        }
        Err(e) => panic!("expected a document, got {e:?}"),
    }
}

fn article() -> String {
    markdown(fixture!("reader-elements.html"), ARTICLE_URL)
}

fn assert_has(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} is missing from:\n{text}");
}

fn assert_lacks(text: &str, needle: &str) {
    assert!(!text.contains(needle), "{needle:?} leaked into:\n{text}");
}

#[test]
fn headings_stay_headings() {
    let text = article();
    assert_has(&text, "\n## Where the gravel goes\n");
    assert_has(&text, "\n### What we measured\n");
}

#[test]
fn lists_stay_lists_in_their_order() {
    let text = article();
    assert_has(
        &text,
        "- Stone positions after each flood, by radio tag\n\
         - Water depth at five gauges, every ten minutes\n",
    );
    assert_has(
        &text,
        "1. Tag the stones at low water\n2. Survey the bars\n3. Wait for a flood",
    );
}

#[test]
fn a_table_of_content_stays_a_table_under_its_caption() {
    let text = article();
    assert_has(
        &text,
        "Travel distance per flood\n\n| Flood | Peak discharge (m³/s) | Median travel (m) |",
    );
    assert_has(&text, "| May 2023 | 2,400 | 310 |");
}

#[test]
fn a_code_block_keeps_its_text_as_written() {
    let text = article();
    assert_has(
        &text,
        "```\ndef transport(tau, tau_c, k=0.002):\n    if tau <= tau_c:\n        return 0.0\n",
    );
}

#[test]
fn a_block_quote_stays_quoted() {
    let text = article();
    assert_has(
        &text,
        "> The river does not carry gravel; it lends it, one bar at a time.",
    );
}

#[test]
fn footnotes_keep_their_marks_and_their_text() {
    let text = article();
    assert_has(&text, "carry most of the volume.[2](#fn2)");
    assert_has(&text, "Three seasons, 2022 to 2024, on the middle reach.");
    assert_has(&text, "The same long tail is reported for the Waimakariri.");
}

#[test]
fn a_figure_keeps_its_picture_and_caption() {
    let text = article();
    assert_has(
        &text,
        "![A gravel bar after the November flood](https://notes.example/img/bar-2023.jpg)",
    );
    assert_has(
        &text,
        "The central bar after the November 2023 flood, seen from the drone.",
    );
}

#[test]
fn links_stay_links_with_absolute_targets() {
    let text = article();
    assert_has(
        &text,
        "[methods note](https://notes.example/methods/threshold.html)",
    );
}

#[test]
fn math_keeps_its_tex() {
    let text = article();
    // MathML with a TeX annotation, inline and as a block.
    assert_has(
        &text,
        "written $q_s = k(\\tau - \\tau_c)^{1.5}$ in the usual",
    );
    assert_has(&text, "\n$$V = \\int q_s \\, dt$$\n");
    // A formula's picture beside it (MediaWiki's fallback) is not kept twice.
    assert_has(
        &text,
        "Shields number ${\\displaystyle \\theta _{c}}$, where",
    );
    assert_lacks(&text, "theta-c.svg");
    // MathJax's TeX script, which Readability would drop with every script.
    assert_has(&text, "$$\\theta = \\frac{\\tau}{(\\rho_s - \\rho) g D}$$");
    // Not the symbols' text run together.
    assert_lacks(&text, "qs=k");
}

#[test]
fn comments_tags_sharing_related_stories_and_copyright_go() {
    let text = article();
    for boilerplate in [
        "Marco says",
        "3 Comments",
        "Tags:",
        "Share this",
        "Related stories",
        "How dams starve the deltas",
        "All rights reserved",
    ] {
        assert_lacks(&text, boilerplate);
    }
    // The article's own last paragraph is still there.
    assert_has(&text, "had not yet settled into the bed.");
}

#[test]
fn a_short_post_is_kept_instead_of_its_comments() {
    let text = markdown(
        fixture!("short-post.html"),
        "https://crafts.example/2024/11/paper-lanterns.html",
    );
    assert_has(&text, "Folded from one sheet each. Pattern by Lena.");
    assert_has(
        &text,
        "![Three paper lanterns](https://crafts.example/img/lanterns.jpg)",
    );
    assert_lacks(&text, "printer paper");
    assert_lacks(&text, "The Craft Table");
}

#[test]
fn an_open_threads_post_is_kept_when_its_container_holds_the_comments_too() {
    // The post, its heading and its comments share one container: counted whole it is far
    // over a short post's words, so only the words outside the comments may count.
    let comment = |i: usize| {
        format!(
            "<li id=\"comment-{i}\"><cite>Reader {i}</cite> says:<div class=\"commentext\"><p>\
             Congratulations, reader {i} writes, on the news: the best project you have announced \
             here, and one that will keep you busier, and happier, than any book or paper so far.\
             </p></div></li>"
        )
    };
    let comments: String = (1..=12).map(comment).collect();
    let page = format!(
        r#"<html><head><title>My New Project | Study Notes</title></head><body>
        <div id="header"><a href="https://notes.example/">Study Notes</a></div>
        <div id="content"><div class="post">
        <h2>My New Project</h2>
        <div class="entry"><p class="meta">November 7th, 2012</p>
        <p><img src="/img/max.jpg" alt="A newborn"></p>
        <p>Max Jacob. Born 11/6/12. Future study hacker.</p></div>
        <h3 id="comments">12 Responses</h3><ul class="commentlist">{comments}</ul>
        </div></div></body></html>"#
    );
    let text = markdown(
        page.as_bytes(),
        "https://notes.example/2012/11/07/my-new-project/",
    );
    assert_has(&text, "Max Jacob. Born 11/6/12. Future study hacker.");
    assert_has(&text, "![A newborn](https://notes.example/img/max.jpg)");
    assert_lacks(&text, "Congratulations");
}

#[test]
fn a_page_of_comments_keeps_them() {
    // Comments with no article before them are the page's text (a guestbook, a forum).
    let page = br#"<html><head><title>Guestbook</title></head><body>
        <div id="comments"><h2>Your comments</h2>
        <p>Maisy, Cardiff: the night shift at the old infirmary was never quiet, and the buzzers rang after it closed.</p>
        <p>Stefan, Pontypool: we saw the figure of a small boy in the corridors of the school during the exams.</p>
        <p>Michelle, Penarth: a lady in Victorian dress walks the pier in the late afternoon and looks out to sea.</p>
        </div></body></html>"#;
    let text = markdown(page, "https://stories.example/guestbook");
    assert_has(&text, "the buzzers rang after it closed");
    assert_has(&text, "looks out to sea");
}

/// A paragraph long enough for Readability to take the article that holds it.
const FILLER: &str = "Gravel moves through a braided river in pulses: a flood lifts the \
    stones of one bar, carries them a few hundred metres and drops them on the next, where \
    they wait for the flood after. We tagged four hundred stones on the middle reach and \
    followed them for three seasons, measuring how far each one went in every flood and \
    how deep it was buried when we found it again.";

/// The Markdown of a page whose article is `body`, after a paragraph of [`FILLER`].
fn article_with(body: &str) -> String {
    let page = format!(
        "<html><head><title>Sediment pulses</title></head><body><article>\
         <h1>Sediment pulses</h1><p>{FILLER}</p>{body}</article></body></html>"
    );
    markdown(page.as_bytes(), ARTICLE_URL)
}

#[test]
fn a_papers_discussion_and_what_follows_it_stay() {
    for heading in [
        "Discussion",
        "4 Discussion",
        "4. Discussion",
        "Discussion 2",
        "Commentary",
        "Responses to treatment",
        "Reply to reviewers",
        "Replies to objections",
        "Thoughts on the method",
        "Comments and replies in peer review",
    ] {
        let text = article_with(&format!(
            "<h2>{heading}</h2><p>The pulses we saw are larger than the flume predicted.</p>\
             <h2>Conclusions</h2><p>Bars store gravel for longer than one season.</p>\
             <h2>References</h2><ol><li>Ashmore, P. (1991). How do gravel-bed rivers braid?</li></ol>"
        ));
        assert_has(&text, &format!("## {heading}"));
        assert_has(&text, "larger than the flume predicted");
        assert_has(&text, "Bars store gravel for longer than one season.");
        assert_has(&text, "How do gravel-bed rivers braid?");
    }
}

#[test]
fn a_counted_or_named_comment_heading_still_ends_the_article() {
    for heading in [
        "12 Comments",
        "Comments (3)",
        "Discussion (12)",
        "One Response",
        "3 thoughts on \u{201c}Sediment pulses\u{201d}",
        "2 Responses to \u{201c}Sediment pulses\u{201d}",
        "Leave a Reply Cancel reply",
        "Join the discussion",
    ] {
        let text = article_with(&format!(
            "<p>The last paragraph of the post.</p><h3>{heading}</h3>\
             <p>Marco: nice work on the tags, it must have taken a season to find them all.</p>"
        ));
        assert_has(&text, "The last paragraph of the post.");
        assert_lacks(&text, "Marco");
    }
}

/// Readability drops most comment threads itself; where one is left, a heading naming it
/// right above it ("Discussion" over a Disqus thread) goes with it.
#[test]
fn a_discussion_heading_over_a_comment_thread_goes_with_it() {
    let fragment = dom_query::Document::fragment(format!(
        "<div><p>{FILLER}</p><h3>Discussion</h3><div id=\"disqus_thread\"><p>Marco: nice \
         work.</p></div></div>"
    ));
    let root = fragment.root();
    super::comments::cut_comments(&root);
    let text = root.text();
    assert_has(&text, "how deep it was buried");
    assert_lacks(&text, "Discussion");
    assert_lacks(&text, "Marco");
}

#[test]
fn headings_lines_and_cells_that_start_like_chrome_stay() {
    let text = article_with(
        "<h2>Copyright law after the Warhol ruling</h2><p>The court read fair use narrowly.</p>\
         <h2>Most popular languages in 2024</h2><p>Python led again.</p>\
         <p>Filed in March, the suit names three agencies.</p>\
         <ul><li>Subscribe to a topic with MQTT</li><li>Publish a reading every minute</li></ul>\
         <table><tr><th>Item</th><th>Value</th></tr>\
         <tr><td>Share: 12%</td><td>2023</td></tr>\
         <tr><td>Advertisement</td><td>$5,000</td></tr></table>",
    );
    assert_has(&text, "## Copyright law after the Warhol ruling");
    assert_has(&text, "## Most popular languages in 2024");
    assert_has(&text, "Filed in March, the suit names three agencies.");
    assert_has(&text, "- Subscribe to a topic with MQTT");
    assert_has(&text, "| Share: 12% | 2023 |");
    assert_has(&text, "| Advertisement | $5,000 |");
}

#[test]
fn chrome_labels_still_go() {
    let text = article_with(
        "<p>The last paragraph of the post.</p>\
         <p>Filed under <a href=\"/c/rivers\">Rivers</a>, <a href=\"/c/field\">Fieldwork</a></p>\
         <p>Posted in: Notes</p><h3>Related posts</h3><p>Advertisement</p>\
         <p>Copyright 2024 River Notes</p><p>Subscribe to our newsletter for more.</p>\
         <p>Comments feed for this post</p><p>trackback-url: https://notes.example/tb/12</p>",
    );
    assert_has(&text, "The last paragraph of the post.");
    for chrome in [
        "Filed under",
        "Posted in",
        "Related posts",
        "Advertisement",
        "Copyright",
        "Subscribe",
        "Comments feed",
        "trackback-url",
    ] {
        assert_lacks(&text, chrome);
    }
}

#[test]
fn line_breaks_and_code_keep_their_lines() {
    let text = article_with(
        "<p>River Notes<br>12 Quay Street<br>Christchurch</p>\
         <pre><code>def f():\n    x = 1   \n\n\n    return x</code></pre>",
    );
    assert_has(&text, "River Notes  \n12 Quay Street  \nChristchurch");
    assert_has(&text, "def f():\n    x = 1   \n\n\n    return x\n```");
}

#[test]
fn cells_terms_and_broken_link_text_keep_their_words_apart() {
    let text = article_with(
        "<table><tr><td rowspan=\"2\">2023</td><td>May</td><td>310</td></tr>\
         <tr><td>June</td><td>120</td></tr></table>\
         <dl><dt>Boiling point</dt><dd>100 \u{b0}C</dd></dl>\
         <p>Get it: <a href=\"/report.pdf\">Download<br>PDF</a></p>",
    );
    assert_lacks(&text, "2023May");
    assert_has(&text, "2023 May 310");
    assert_lacks(&text, "point100");
    assert_has(&text, "Boiling point");
    assert_lacks(&text, "DownloadPDF");
    assert_has(&text, "[Download PDF](https://notes.example/report.pdf)");
}

#[test]
fn links_keep_web_targets_only_and_resolve_against_the_base() {
    let page = format!(
        "<html><head><title>Sediment pulses</title><base href=\"https://notes.example/docs/\">\
         </head><body><article><h1>Sediment pulses</h1><p>{FILLER}</p>\
         <p>The pages that go with this post: see <a href=\"httpd.html\">the server notes</a> for \
         the set-up we used on the laptop in the field, then <a href=\"JavaScript:alert(1)\">run \
         it</a> on the morning of a flood, check <a href=\"data:text/html,hi\">the data</a> that \
         came back against the gauges, and read the note on the units.</p>\
         </article></body></html>"
    );
    let text = markdown(page.as_bytes(), ARTICLE_URL);
    assert_has(
        &text,
        "[the server notes](https://notes.example/docs/httpd.html)",
    );
    assert_lacks(&text, "JavaScript:");
    assert_lacks(&text, "data:text");
    assert_has(&text, "run it");
    assert_has(&text, "the data");
}

#[test]
fn a_reference_list_of_links_stays() {
    let text = article_with(
        "<h2>References</h2><ol>\
         <li><a href=\"https://doi.org/10.1/a\">How do gravel-bed rivers braid</a></li>\
         <li><a href=\"https://doi.org/10.1/b\">Bedload transport in braided channels</a></li>\
         <li><a href=\"https://doi.org/10.1/c\">Tracer stones and the virtual velocity</a></li>\
         </ol>",
    );
    assert_has(&text, "Bedload transport in braided channels");
    assert_has(&text, "Tracer stones and the virtual velocity");
}

#[test]
fn a_formula_in_a_table_cell_keeps_its_bars_inside_the_cell() {
    let text = article_with(
        "<table><tr><th>Quantity</th><th>Value</th></tr><tr><td><math alttext=\"|x|\">\
         <mi>x</mi></math></td><td>1</td></tr></table>",
    );
    assert_has(&text, "| $\\|x\\|$ | 1 |");
}

#[test]
fn zero_width_spaces_and_a_titles_soft_hyphens_are_not_kept() {
    let page = format!(
        "<html><head><title>Die Bundes\u{ad}regierung\u{200b} tagt</title></head><body><article>\
         <h1>Die Bundesregierung</h1><p>{FILLER} Die Bundes\u{200b}regierung tagt\u{2060}.</p>\
         </article></body></html>"
    );
    let doc = extract(page.as_bytes(), Some("text/html"), ARTICLE_URL).expect("a document");
    assert_has(&doc.text, "Die Bundesregierung tagt.");
    assert_eq!(doc.title.as_deref(), Some("Die Bundesregierung tagt"));
}

#[test]
fn text_that_spells_an_entity_stays_spelled() {
    let text = article_with(
        "<p>Type &amp;nbsp; for a space that does not break, and &amp;#x202E; is the \
         override; R&amp;D &amp; more stay as they are.</p><pre><code>a &amp;&amp; b &amp;amp;</code></pre>",
    );
    assert_has(&text, "Type \\&nbsp; for a space");
    assert_has(&text, "and \\&#x202E; is the override; R&D & more stay");
    assert_has(&text, "a && b &amp;");
}

#[test]
fn soft_hyphens_in_the_text_are_dropped() {
    let text = article_with("<p>Die Bundes\u{ad}regierung tagt in Ber\u{ad}lin.</p>");
    assert_has(&text, "Die Bundesregierung tagt in Berlin.");
}

#[test]
fn a_line_break_in_a_code_block_is_a_line_of_code() {
    let text = article_with("<pre><code>def g():<br>    return 2<br><br>g()</code></pre>");
    assert_has(&text, "def g():\n    return 2\n\ng()\n```");
}

#[test]
fn a_formula_mediawiki_hides_for_screen_readers_keeps_its_tex_not_its_picture() {
    let text = article_with(
        "<p>The threshold is <span class=\"mwe-math-element\"><span \
         class=\"mwe-math-mathml-inline mwe-math-mathml-a11y\" style=\"display: none;\"><math \
         alttext=\"{\\displaystyle \\theta _{c}}\"><semantics><msub><mi>\u{3b8}</mi><mi>c</mi>\
         </msub><annotation encoding=\"application/x-tex\">{\\displaystyle \\theta _{c}}\
         </annotation></semantics></math></span><img src=\"https://wikimedia.org/api/theta.svg\" \
         class=\"mwe-math-fallback-image-inline\" alt=\"{\\displaystyle \\theta _{c}}\"></span> \
         for this bed.</p>",
    );
    assert_has(
        &text,
        "The threshold is ${\\displaystyle \\theta _{c}}$ for this bed.",
    );
    assert_lacks(&text, "theta.svg");
}

#[test]
fn tex_written_in_the_text_stays_as_written_and_prices_stay_text() {
    let page = br#"<!doctype html><html><head><title>Ratios</title></head><body><article>
<h1>Ratios of small numbers</h1>
<p>Let $\frac{a}{b}$ be a ratio with $x_1^*$ its first term, where the sample holds
enough observations to make the estimate stable across every run of the experiment.</p>
<p>In display form: $$\sum_{i=1}^{n} x_i = 1$$ and inline \(y_2\) as well, which a reader
of the page sees typeset by MathJax once the script has run over the paragraph.</p>
<p>The kit costs $5 and the manual $10, so the whole set is $15_000 for a class of thirty
students, which the department pays from the budget it was given this year.</p>
<pre><code>price = $a_b$</code></pre>
</article></body></html>"#;
    let text = markdown(page, "https://math.example/ratios.html");
    assert_has(
        &text,
        r"Let $\frac{a}{b}$ be a ratio with $x_1^*$ its first term",
    );
    assert_has(&text, r"$$\sum_{i=1}^{n} x_i = 1$$");
    assert_has(&text, "and inline $y_2$ as well");
    // Prices are words, escaped as any text is.
    assert_has(&text, "The kit costs $5 and the manual $10");
    assert_lacks(&text, r"\frac{a}{b}\$");
    assert_lacks(&text, r"x\_1");
    // Code is the writer's, as before.
    assert_has(&text, "price = $a_b$");
    assert_lacks(&text, "gleanertex");
}

/// A page laid out in a table: a column of links, the cell Readability chooses, and a row of
/// other cells with running text of their own; `main_in_cell` false puts the chosen text in a
/// `<div>` instead, the other cells staying.
fn table_layout_page(main_in_cell: bool) -> String {
    let para = |topic: &str| {
        format!(
            "<p>The {topic} of the county archive has been catalogued again this year, and \
             every box, map and ledger now carries a number that matches the new register, \
             so that a reader who asks for one finds it on the shelf within the hour.</p>"
        )
    };
    let main = [
        para("parish collection"),
        para("estate papers"),
        para("school board minutes"),
    ]
    .concat();
    let main = if main_in_cell {
        format!(
            "<table><tr><td><a href=\"/\">Home</a><br><a href=\"/visit\">Visit</a><br>\
                 <a href=\"/search\">Search</a></td><td>{main}</td></tr></table>"
        )
    } else {
        format!("<div id=\"main\"><div>{main}</div></div>")
    };
    format!(
        "<html><head><title>The county archive</title></head><body>{main}\
         <table><tr>\
         <td><b>Opening hours.</b> The reading room opens at nine on weekdays and at ten on \
         Saturdays; it is closed on Sundays and on public holidays.</td>\
         <td><b>Group visits.</b> Schools and local history societies may book a guided tour \
         of the strong rooms for up to twelve people at a time.</td>\
         <td class=\"sidebar\">Advertise with us: our rates for banners and sponsored \
         newsletters are sent on request to any business in the county.</td>\
         </tr></table><table><tr><td>© 2005 The County Archive Trust, a registered charity \
         in England and Wales; all rights reserved.</td></tr></table></body></html>"
    )
}

#[test]
fn a_page_laid_out_in_a_table_keeps_the_text_of_its_other_cells() {
    let text = markdown(
        table_layout_page(true).as_bytes(),
        "https://archive.example/about.html",
    );
    assert_has(&text, "catalogued again this year");
    assert_has(&text, "The reading room opens at nine on weekdays");
    assert_has(&text, "Schools and local history societies may book");
    assert_lacks(&text, "Advertise with us");
    assert_lacks(&text, "Home");
    assert_lacks(&text, "registered charity");
    // In the page's order: the chosen cell comes first.
    let main = text.find("school board minutes").expect("the chosen cell");
    let other = text.find("The reading room").expect("the other cell");
    assert!(main < other, "{text}");
}

#[test]
fn a_table_laid_page_is_not_read_past_its_copyright_line() {
    let page = table_layout_page(true).replace(
        "<td>© 2005 The County Archive Trust, a registered charity \
         in England and Wales; all rights reserved.</td>",
        "<td><p>© 2005 The County Archive Trust. All rights reserved.</p>\
         <p>The information on this site is given in good faith and is no substitute for the \
         advice of a qualified archivist or of a lawyer.</p></td>",
    );
    assert!(page.contains("given in good faith"), "{page}");
    let text = markdown(page.as_bytes(), "https://archive.example/about.html");
    assert_has(&text, "The reading room opens at nine on weekdays");
    assert_lacks(&text, "given in good faith");
}

#[test]
fn an_article_outside_a_table_is_not_read_beyond_its_container() {
    let text = markdown(
        table_layout_page(false).as_bytes(),
        "https://archive.example/about.html",
    );
    assert_has(&text, "catalogued again this year");
    assert_lacks(&text, "The reading room opens at nine on weekdays");
}

/// A blog's short post (a title, a line and a picture) between two columns whose lists of
/// blurbs Readability prefers; the banner, which also repeats a part of the title, links to
/// the blog's folder.
fn short_post_beside_lists() -> String {
    let blurb = |name: &str| {
        format!(
            "<li><p><a href=\"https://style.example/{name}\"><img src=\"/{name}.jpg\"></a> \
             {name}: the shop we visit every month, with new designers, fair prices, quick \
             delivery and a kind word, whatever the weather and however long the queue.</p></li>"
        )
    };
    let blurbs: String = ["Boots", "Scarves", "Hats", "Bags", "Rings"]
        .iter()
        .map(|n| blurb(n))
        .collect();
    format!(
        "<html><head><title>Kingdom Of Style: Stud Love</title></head><body>\
         <h1><a href=\"https://style.example/weblog/\">Kingdom Of Style</a></h1>\
         <div id=\"alpha\"><ul>{blurbs}</ul></div>\
         <div id=\"beta\"><div class=\"entry\"><h3>Stud Love</h3>\
         <p>I heart you, shiny boots.</p><p><img src=\"https://style.example/studs.jpg\" \
         alt=\"Studded boots\"></p><p>Queen Michelle</p></div></div></body></html>"
    )
}

#[test]
fn a_short_post_is_kept_instead_of_a_column_of_lists() {
    let text = markdown(short_post_beside_lists().as_bytes(), "");
    assert_has(&text, "I heart you, shiny boots.");
    assert_has(&text, "Queen Michelle");
    assert_lacks(&text, "the shop we visit every month");
}

#[test]
fn a_short_post_whose_heading_is_not_the_title_is_found_by_its_h2() {
    let page = short_post_beside_lists()
        .replace(
            "<title>Kingdom Of Style: Stud Love</title>",
            "<title>Boots | Kingdom</title>",
        )
        .replace("<h3>Stud Love</h3>", "<h2>Studs for winter</h2>")
        .replace(
            "<p>Queen Michelle</p>",
            "<p>Queen Michelle, out in the snow</p>",
        );
    assert!(page.contains("<h2>Studs for winter</h2>"), "{page}");
    let text = markdown(page.as_bytes(), "");
    assert_has(&text, "I heart you, shiny boots.");
    assert_has(&text, "Queen Michelle");
    assert_lacks(&text, "the shop we visit every month");
}

#[test]
fn a_short_post_with_no_h2_is_found_by_its_h1() {
    let page = short_post_beside_lists()
        .replace(
            "<title>Kingdom Of Style: Stud Love</title>",
            "<title>Boots | Kingdom</title>",
        )
        .replace("<h3>Stud Love</h3>", "<h1>Studs for winter days</h1>")
        .replace(
            "<p>Queen Michelle</p>",
            "<p>Queen Michelle, out in the snow</p>",
        );
    assert!(page.contains("<h1>Studs for winter days</h1>"), "{page}");
    // Readability takes the `h1` into its column: a longer column, so that the post is
    // still a small part of it.
    let lists = &page[page.find("<ul>").unwrap_or(0)..page.find("</ul>").unwrap_or(0) + 5];
    let page = page.replacen(lists, &lists.repeat(2), 1);
    let text = markdown(page.as_bytes(), "");
    assert_has(&text, "I heart you, shiny boots.");
    assert_lacks(&text, "the shop we visit every month");
}

/// A heading found without the title's help over a form (a hidden "Email this post" box,
/// which Readability does not read) names the form, and the page's article is Readability's.
#[test]
fn a_heading_over_a_form_is_not_taken_for_a_short_post() {
    let page = "<html><head><title>Notes | River Notes</title></head><body>\
         <div id=\"main\"><p>The gauge at the old mill rose forty centimetres overnight, and \
         the gravel bar below it moved again, as it did in the spring flood of last year.</p>\
         </div><div id=\"mail\" style=\"display: none\"><h2>Email this post to a friend</h2><form>\
         <label>Your name and your email address</label><input name=\"from\">\
         <label>Your friend's name and email address</label><input name=\"to\">\
         <label>A message of your own to go with the post</label><textarea></textarea>\
         </form></div></body></html>";
    let text = markdown(page.as_bytes(), "");
    assert_has(&text, "The gauge at the old mill rose forty centimetres");
    assert_lacks(&text, "Email this post");
}

#[test]
fn a_box_about_the_author_goes() {
    for attrs in [
        "class=\"author-bio\"",
        "id=\"about-the-author\"",
        "class=\"post-authorbox\"",
    ] {
        let text = article_with(&format!(
            "<p>The last paragraph of the post.</p><div {attrs}><p>Jane Doe writes about \
             rivers and the people who live beside them, from a boat on the Severn, and has \
             done so for twenty years.</p></div>"
        ));
        assert_has(&text, "The last paragraph of the post.");
        assert_lacks(&text, "Jane Doe writes");
    }
    // A wrapper whose name mentions an author's box holds the article: it stays.
    let paragraphs = format!("<p>{FILLER}</p>").repeat(3);
    let text = article_with(&format!(
        "<div class=\"entry has-author-box\">{paragraphs}<p>The last paragraph of the \
         post.</p></div>"
    ));
    assert_has(&text, "The last paragraph of the post.");
    assert_has(&text, "how deep it was buried");
    // A box holding half the article is never taken for boilerplate, paragraph by paragraph
    // neither.
    let page = "<html><head><title>Notes</title></head><body><article><h1>Notes</h1>\
         <p>The gauge rose again overnight.</p><div class=\"author-bio\"><p>Jane Doe \
         writes about rivers.</p><p>She has measured the Severn's gravel bars every spring \
         for twenty years, from a boat.</p></div></article></body></html>";
    let text = markdown(page.as_bytes(), ARTICLE_URL);
    assert_has(&text, "The gauge rose again overnight.");
    assert_has(&text, "Jane Doe writes about rivers.");
    // An element whose name says nothing of a box about the author stays.
    let text = article_with(
        "<p>The last paragraph of the post.</p><div class=\"author-notes\"><p>Jane Doe \
         measured the bars again in May, and the stones had not moved since the winter floods \
         (Readability takes a short one for a byline).</p></div>",
    );
    assert_has(&text, "Jane Doe measured the bars");
}

#[test]
fn a_line_of_categories_between_commas_goes() {
    let categories: Vec<String> = [
        "12+ years old",
        "3 - 5 years old",
        "6 - 12 years old",
        "Crafts",
        "Fall Crafts",
        "Free & Fun Crafts",
        "Paper Crafts",
    ]
    .iter()
    .enumerate()
    .map(|(i, c)| format!("<a href=\"/c/{i}\">{c}</a>"))
    .collect();
    let text = article_with(&format!(
        "<p>The last paragraph of the post.</p><p>11/09/2012 in {} | \
         <a href=\"/p\">Permalink</a></p>",
        categories.join(" , ")
    ));
    assert_has(&text, "The last paragraph of the post.");
    assert_lacks(&text, "Fall Crafts");
    assert_lacks(&text, "Permalink");
}
