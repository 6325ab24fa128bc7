//! Walks of the page's tree. CSS selectors with a descendant combinator (`body *`) match every
//! element against its ancestors, which cost a sixth of extraction's time on the dev set; these
//! walks visit each node once.

use dom_query::{Document, NodeRef};

/// The elements under `node`, in document order.
pub(super) fn elements<'a, 'b>(node: &'b NodeRef<'a>) -> impl Iterator<Item = NodeRef<'a>> + 'b {
    node.descendants_it().filter(|n| n.is_element())
}

/// The page's `<head>` or `<body>` (the parser always makes both).
pub(in crate::engine::extract) fn part<'a>(dom: &'a Document, name: &str) -> Option<NodeRef<'a>> {
    let html = dom.root().children_it(false).find(|n| n.has_name("html"))?;
    html.children_it(false).find(|n| n.has_name(name))
}

/// What the rules need to know of the page before Readability rewrites it, found in one walk
/// of its body.
pub(super) struct Survey<'a> {
    /// `h1`–`h3` elements with their rank (0 for `h1`), in document order.
    pub headings: Vec<(usize, NodeRef<'a>)>,
    /// MathJax's TeX: `<script type="math/tex…">`.
    pub tex_scripts: Vec<NodeRef<'a>>,
    /// `<pre>` elements.
    pub pres: Vec<NodeRef<'a>>,
    /// MathML's `<math>` elements.
    pub maths: Vec<NodeRef<'a>>,
    /// Elements whose class or id names a box about the author
    /// ([`super::boilerplate::names_author_box`]).
    pub author_boxes: Vec<NodeRef<'a>>,
    /// Whether the body has a table cell.
    pub cells: bool,
}

pub(super) fn survey<'a>(dom: &'a Document) -> Survey<'a> {
    let mut survey = Survey {
        headings: Vec::new(),
        tex_scripts: Vec::new(),
        pres: Vec::new(),
        maths: Vec::new(),
        author_boxes: Vec::new(),
        cells: false,
    };
    for node in part(dom, "body").iter().flat_map(elements) {
        let Some(name) = node.qual_name_ref() else {
            continue;
        };
        match &*name.local {
            "h1" => survey.headings.push((0, node)),
            "h2" => survey.headings.push((1, node)),
            "h3" => survey.headings.push((2, node)),
            "pre" => survey.pres.push(node),
            "math" => survey.maths.push(node),
            "td" => survey.cells = true,
            "script"
                if node
                    .attr("type")
                    .is_some_and(|t| t.trim_start().starts_with("math/tex")) =>
            {
                survey.tex_scripts.push(node);
            }
            "div" | "section" | "aside" | "p" | "footer" | "figure"
                if super::boilerplate::names_author_box(&node) =>
            {
                survey.author_boxes.push(node);
            }
            _ => {}
        }
    }
    survey
}

/// Whether `node` is an element named one of `names`, compared in place (`node_name` copies
/// the name, and the rules ask it of every element).
pub(super) fn named(node: &NodeRef, names: &[&str]) -> bool {
    node.qual_name_ref()
        .is_some_and(|q| names.contains(&&*q.local))
}

/// The words under `node`, counted up to just past `limit` (a page's body may be megabytes).
pub(super) fn words_up_to(node: &NodeRef, limit: usize) -> usize {
    let mut n = 0;
    for text in node.descendants_it().filter(|d| d.is_text()) {
        n += text.text().split_whitespace().count();
        if n > limit {
            break;
        }
    }
    n
}

/// A word that stands for something through Markdown's writer and is swapped back after it
/// (a formula, an `&`): `stem`, lengthened until it is nowhere in `text` (the page's own
/// text). Letters only, which the writer escapes nowhere.
pub(super) fn unused_word(text: &str, stem: &str) -> String {
    let mut word = stem.to_string();
    while text.contains(word.as_str()) {
        word.push('x');
    }
    word
}
