//! Math keeps its TeX. MathML carries it in an `annotation` (or `alttext`), MathJax in a
//! `<script type="math/tex">`; the Markdown gets `$…$`, or `$$…$$` for display math, instead
//! of the symbols' text run together.

use super::walk;
use dom_query::NodeRef;

/// Before Readability, which drops every script: MathJax's TeX scripts become `<math>`
/// elements holding their TeX.
pub(super) fn keep_mathjax(scripts: &[NodeRef]) {
    for script in scripts {
        let display = script
            .attr("type")
            .is_some_and(|t| t.contains("mode=display"));
        let tex = script.text().trim().to_string();
        script.rename("math");
        script.remove_all_attrs();
        script.set_attr("alttext", &tex);
        if display {
            script.set_attr("display", "block");
        }
    }
}

/// The formulas taken out of an article, each behind a placeholder word in its text.
#[derive(Default)]
pub(super) struct Formulas {
    /// (placeholder, Markdown)
    taken: Vec<(String, String)>,
}

fn tex_of(math: &NodeRef) -> Option<String> {
    let annotated = math
        .descendants_it()
        .find(|n| {
            walk::named(n, &["annotation"])
                && n.attr("encoding")
                    .is_some_and(|e| e.eq_ignore_ascii_case("application/x-tex"))
        })
        .map(|n| n.text().to_string());
    let tex = annotated.or_else(|| math.attr("alttext").map(|a| a.to_string()))?;
    let tex = tex.split_whitespace().collect::<Vec<_>>().join(" ");
    (!tex.is_empty()).then_some(tex)
}

fn same_tex(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace()) || squeeze(a) == squeeze(b)
}

fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Replaces each formula with TeX (`maths`, under `root`) by a placeholder word (Markdown
/// escaping leaves letters and digits alone), and drops the picture of it that some sites put
/// beside it. Done before Readability, which drops a formula hidden for screen readers.
pub(super) fn take_formulas(root: &NodeRef, maths: Vec<NodeRef>) -> Formulas {
    if maths.is_empty() {
        return Formulas { taken: Vec::new() };
    }
    let text = root.text();
    let mut prefix = String::from("gleanermath");
    while text.contains(prefix.as_str()) {
        prefix.push('x');
    }
    let mut taken = Vec::new();
    for math in maths {
        if !math.ancestors_it(None).any(|a| a.id == root.id) {
            continue; // inside a formula already taken
        }
        let Some(tex) = tex_of(&math) else {
            continue;
        };
        let display = math.attr("display").is_some_and(|d| &*d == "block");
        lift_out_of_hiding(&math);
        if let Some(parent) = math.parent() {
            for img in parent.element_children() {
                let fallback = img
                    .attr("class")
                    .is_some_and(|c| c.contains("mwe-math-fallback-image"));
                if walk::named(&img, &["img"])
                    && (fallback || img.attr("alt").is_some_and(|alt| same_tex(&alt, &tex)))
                {
                    img.remove_from_parent();
                }
            }
        }
        let placeholder = format!("{prefix}{}q", taken.len());
        math.remove_children();
        math.rename("span");
        math.remove_all_attrs();
        math.set_text(placeholder.as_str());
        let mut markdown = if display {
            format!("$${tex}$$")
        } else {
            format!("${tex}$")
        };
        // Put back after the table is written: its `|` would end the cell (`$|x|$`).
        if math
            .ancestors_it(None)
            .any(|a| walk::named(&a, &["td", "th"]))
        {
            markdown = markdown.replace('|', "\\|");
        }
        taken.push((placeholder, markdown));
    }
    Formulas { taken }
}

/// MediaWiki hides the MathML (`style="display: none"`, for screen readers) and shows a
/// picture of it; Readability drops what is hidden. A formula alone in a hidden element takes
/// that element's place.
fn lift_out_of_hiding(math: &NodeRef) {
    let Some(parent) = math.parent() else {
        return;
    };
    let hidden = parent.attr("style").is_some_and(|style| {
        let style: String = style
            .chars()
            .filter(|c| !c.is_whitespace())
            .flat_map(char::to_lowercase)
            .collect();
        style.contains("display:none")
    });
    if hidden && parent.text().trim() == math.text().trim() {
        parent.insert_before(math);
        parent.remove_from_parent();
    }
}

impl Formulas {
    /// The Markdown with each placeholder replaced by its formula.
    pub fn put_back(&self, mut markdown: String) -> String {
        for (placeholder, formula) in &self.taken {
            markdown = markdown.replace(placeholder.as_str(), formula);
        }
        markdown
    }
}
