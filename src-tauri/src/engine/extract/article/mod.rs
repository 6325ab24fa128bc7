//! The article of an HTML page. Readability (dom_smoothie) chooses the container; then the
//! comments at its end, lists of other articles' headlines and the site's chrome lines come
//! out, and the rest becomes Markdown. A short post whose comments Readability took for the
//! article is read from the heading that repeats the page's title (BENCHMARKS.md §12).

use dom_query::{Document, NodeData, NodeRef};
use dom_smoothie::{Config, ParsePolicy, Readability, ReadabilityError, TextMode};

mod blocks;
mod boilerplate;
mod comments;
mod layout;
mod links;
mod math;
mod short_post;
mod text;
pub(super) mod walk;

/// When at least this share of Readability's text is the page's comments, it missed the
/// article.
const COMMENTS_SHARE: f64 = 0.5;

/// What Readability found, with the article's text as Markdown.
pub(crate) struct Article {
    pub title: String,
    pub byline: Option<String>,
    pub published_time: Option<String>,
    pub lang: Option<String>,
    pub site_name: Option<String>,
    pub markdown: String,
}

/// How Readability may look for the article.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempts {
    /// Its strictest attempt, then looser ones until one finds enough text; each attempt
    /// works on a copy of the whole tree.
    All,
    /// The strictest attempt only, on the tree itself: a big page's way to hold one tree, not
    /// two. If it finds too little, the caller reads the page again with `All`, which then
    /// gives what it would have given at once.
    Strictest,
}

/// Reads the article of `dom`; relative links resolve against `base`. `None` when a
/// [`Attempts::Strictest`] read found too little.
pub(crate) fn read(
    dom: Document,
    base: Option<&str>,
    attempts: Attempts,
) -> Result<Option<Article>, ReadabilityError> {
    // Found before Readability runs, because it rewrites the tree.
    let links_base = links::base_of(&dom, base);
    let survey = walk::survey(&dom);
    math::keep_mathjax(&survey.tex_scripts);
    breaks_in_code(&survey.pres);
    boilerplate::mark_author_boxes(&survey.author_boxes);
    // Before Readability, which drops MediaWiki's MathML (hidden for screen readers).
    let formulas = match walk::part(&dom, "body") {
        Some(body) => {
            let maths = survey.maths.iter().chain(&survey.tex_scripts).copied();
            math::take_formulas(&body, maths.collect())
        }
        None => math::Formulas::default(),
    };
    // A page laid out in a table may be read beyond Readability's cell (`layout.rs`).
    let layout = if survey.cells {
        layout::collect(&dom)
    } else {
        None
    };
    let short = short_post::find(&dom, &survey.headings, base)
        .map(|post| (post, comments::comment_shingles(&dom)));
    drop(survey);
    let cfg = Config {
        // The Markdown is made here, after the clean-up; Readability's own text is not used.
        text_mode: TextMode::Raw,
        ..Config::default()
    };
    let threshold = cfg.char_threshold;
    let mut readability = Readability::with_document(dom, base, Some(cfg))?;
    let article = match attempts {
        Attempts::All => readability.parse()?,
        Attempts::Strictest => match readability.parse_with_policy(ParsePolicy::Strict) {
            Ok(article) => article,
            Err(ReadabilityError::GrabFailed) => return Ok(None),
            Err(e) => return Err(e),
        },
    };
    // Only the metadata is kept: the serialised article and its text are as big as the page.
    let dom_smoothie::Article {
        title,
        byline,
        published_time,
        lang,
        site_name,
        ..
    } = article;
    let container = readability.doc.select_single("#readability-page-1");
    if attempts == Attempts::Strictest
        && container
            .nodes()
            .first()
            .is_none_or(|root| root.normalized_char_count() < threshold)
    {
        return Ok(None);
    }
    let markdown = match (container.nodes().first(), short) {
        (Some(root), Some((post, comments))) if missed(root, &post, &comments, threshold) => {
            read_short_post(&post, links_base.as_ref(), &formulas)
        }
        (Some(root), _) => {
            let outside = layout.as_ref().and_then(|b| b.outside(&root.text()));
            let markdown = clean_markdown(root, links_base.as_ref(), &formulas);
            match outside {
                Some((before, after)) => [
                    layout::markdown(&before),
                    markdown,
                    layout::markdown(&after),
                ]
                .join("\n\n"),
                None => markdown,
            }
        }
        (None, _) => String::new(),
    };
    Ok(Some(Article {
        title,
        byline,
        published_time,
        lang,
        site_name,
        markdown,
    }))
}

/// At most this share of a container holding the post's title may be the post's, for the
/// container to be a column of lists elsewhere ([`lists_only`]).
const POST_SHARE: f64 = 0.2;

/// Whether Readability's container missed the short post: it holds the page's comments, it
/// is a weak choice elsewhere, or it is a column of lists and links (a sidebar's blurbs and
/// categories) that is not the post.
fn missed(
    root: &NodeRef,
    post: &short_post::ShortPost,
    comments: &text::Shingles,
    threshold: usize,
) -> bool {
    let found = root.text();
    text::share_in(&found, comments) >= COMMENTS_SHARE
        || post.missed_by(&found, threshold)
        || (lists_only(root, threshold) && post.share_of(&found) < POST_SHARE)
}

/// Whether the text of `root` outside list items and links is short of Readability's
/// `threshold` and under a fifth of it: no paragraph of its own.
fn lists_only(root: &NodeRef, threshold: usize) -> bool {
    let (mut prose, mut all) = (0, 0);
    for t in root.descendants_it().filter(|n| n.is_text()) {
        let n = t.text().chars().filter(|c| !c.is_whitespace()).count();
        all += n;
        if n > 0
            && !t
                .ancestors_it(None)
                .take_while(|a| a.id != root.id)
                .any(|a| walk::named(&a, &["li", "a", "script", "style"]))
        {
            prose += n;
        }
    }
    prose < threshold && prose * 5 < all
}

fn clean_markdown(root: &NodeRef, base: Option<&url::Url>, formulas: &math::Formulas) -> String {
    comments::cut_comments(root);
    boilerplate::remove(root);
    boilerplate::remove_teasers(root);
    links::settle(root, base);
    captions_before_tables(root);
    keep_cells_apart(root);
    let text_tex = math::take_text_tex(root);
    let ampersand = hide_entity_ampersands(root);
    let markdown = formulas.put_back(root.md(None).to_string());
    let markdown = match text_tex {
        Some(tex) => tex.put_back(markdown),
        None => markdown,
    };
    match ampersand {
        Some(placeholder) => markdown.replace(placeholder.as_str(), "\\&"),
        None => markdown,
    }
}

/// A page's text that reads as an entity ("Type &amp;nbsp;" shows `&nbsp;`): Markdown's writer
/// leaves its `&`, and a Markdown reader would decode it (a real no-break space, a real
/// U+202E from `&#x202E;`). Each such `&` outside code becomes a placeholder word, written
/// back as `\&`; `None` when there is none.
fn hide_entity_ampersands(root: &NodeRef) -> Option<String> {
    let has_entity = |n: &NodeRef| {
        n.query(|t| matches!(&t.data, NodeData::Text { contents } if entity_at(contents).is_some()))
            .unwrap_or(false)
    };
    let texts: Vec<NodeRef> = root
        .descendants_it()
        .filter(|n| n.is_text() && has_entity(n))
        .filter(|n| {
            !n.ancestors_it(None)
                .any(|a| walk::named(&a, &["pre", "code"]))
        })
        .collect();
    if texts.is_empty() {
        return None;
    }
    let mut placeholder = walk::unused_word(&root.text(), "gleaneramp");
    placeholder.push('q');
    for text in texts {
        text.update(|t| {
            if let NodeData::Text { contents } = &mut t.data {
                let mut out = String::with_capacity(contents.len() + 16);
                let mut rest: &str = contents;
                while let Some(at) = entity_at(rest) {
                    out.push_str(&rest[..at]);
                    out.push_str(&placeholder);
                    rest = &rest[at + 1..];
                }
                out.push_str(rest);
                *contents = out.into();
            }
        });
    }
    Some(placeholder)
}

/// Where the first `&` that starts an entity's spelling is (`&name;`, `&#123;`, `&#x1F;`).
fn entity_at(text: &str) -> Option<usize> {
    text.match_indices('&').map(|(i, _)| i).find(|&i| {
        let rest = &text.as_bytes()[i + 1..];
        let (body, digits): (&[u8], fn(&u8) -> bool) = match rest {
            [b'#', b'x' | b'X', body @ ..] => (body, u8::is_ascii_hexdigit),
            [b'#', body @ ..] => (body, u8::is_ascii_digit),
            [first, ..] if first.is_ascii_alphabetic() => (rest, u8::is_ascii_alphanumeric),
            _ => return false,
        };
        let n = body.iter().take_while(|b| digits(b)).count();
        n > 0 && body.get(n) == Some(&b';')
    })
}

/// A `<br>` in a code block is a line of its code: Markdown's writer takes only its text,
/// and Readability turns two of them into a paragraph, even there. Done before Readability.
fn breaks_in_code(pres: &[NodeRef]) {
    for pre in pres {
        let breaks: Vec<NodeRef> = walk::elements(pre)
            .filter(|n| walk::named(n, &["br"]))
            .collect();
        for br in breaks {
            br.replace_with(&br.tree.new_text("\n"));
        }
    }
}

/// Words in neighbouring cells, terms and their definitions stay apart when Markdown's writer
/// runs them together: a table it cannot write as one (a cell spanning rows, a table inside
/// a table) is written as its cells' text, and a definition list as its items' text.
fn keep_cells_apart(root: &NodeRef) {
    let cells: Vec<NodeRef> = walk::elements(root)
        .filter(|n| walk::named(n, &["td", "th", "dt", "dd"]))
        .collect();
    for cell in cells {
        if walk::named(&cell, &["dt", "dd"]) {
            cell.rename("div");
        } else {
            // The writer trims a cell it writes as a table's; a flattened one keeps the space.
            cell.append_child(&cell.tree.new_text(" "));
        }
    }
}

/// A table's caption becomes the paragraph before it: Markdown tables have no caption.
fn captions_before_tables(root: &NodeRef) {
    let captions: Vec<NodeRef> = root
        .descendants_it()
        .filter(|n| walk::named(n, &["caption"]))
        .collect();
    for caption in captions {
        if let Some(table) = caption.parent() {
            table.insert_before(&caption);
            caption.rename("p");
        }
    }
}

/// A short post's container, read on its own: what cannot be text goes, links and pictures
/// are made absolute as Readability makes them, then the clean-up.
fn read_short_post(
    post: &short_post::ShortPost,
    base: Option<&url::Url>,
    formulas: &math::Formulas,
) -> String {
    let fragment = Document::fragment(post.html.as_str());
    fragment
        .select(
            "script, style, noscript, template, form, iframe, button, input, select, textarea, \
             svg, object, embed",
        )
        .remove();
    if let Some(base) = base {
        for node in fragment.select("img[src]").nodes() {
            if let Some(absolute) = node.attr("src").and_then(|v| base.join(v.trim()).ok()) {
                node.set_attr("src", absolute.as_str());
            }
        }
    }
    clean_markdown(&fragment.root(), base, formulas)
}

#[cfg(test)]
mod tests;
