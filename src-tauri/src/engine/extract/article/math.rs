//! Math keeps its TeX. MathML carries it in an `annotation` (or `alttext`), MathJax in a
//! `<script type="math/tex">`; the Markdown gets `$…$`, or `$$…$$` for display math, instead
//! of the symbols' text run together.

use super::walk;
use dom_query::{NodeData, NodeRef};

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
    let prefix = walk::unused_word(&root.text(), "gleanermath");
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

/// A text node, its text, and the TeX runs in it.
type TextWithTex<'a> = (NodeRef<'a>, String, Vec<(usize, usize)>);

/// TeX a page writes in its text for MathJax or KaTeX to typeset (`$q_s$`, `$$…$$`, `\(…\)`,
/// `\[…\]`), taken out of text nodes outside code behind placeholder words, so the
/// Markdown writer does not escape its `\`, `_` and `*`: the Markdown keeps it as written, and
/// the reader shows it as TeX. `None` when there is none.
pub(super) fn take_text_tex(root: &NodeRef) -> Option<Formulas> {
    // Read without a copy: most text holds neither a dollar nor a backslash.
    let may_hold_tex = |n: &NodeRef| {
        n.query(
            |t| matches!(&t.data, NodeData::Text { contents } if contents.contains(['$', '\\'])),
        )
        .unwrap_or(false)
    };
    let found: Vec<TextWithTex> = root
        .descendants_it()
        .filter(|n| n.is_text() && may_hold_tex(n))
        .filter(|n| {
            !n.ancestors_it(None)
                .any(|a| walk::named(&a, &["pre", "code", "script", "style"]))
        })
        .filter_map(|n| {
            let text = n.text().to_string();
            let runs = tex_runs(&text);
            (!runs.is_empty()).then_some((n, text, runs))
        })
        .collect();
    if found.is_empty() {
        return None;
    }
    let prefix = walk::unused_word(&root.text(), "gleanertex");
    let mut taken = Vec::new();
    for (node, text, runs) in found {
        // A `|` would end a table's cell.
        let in_cell = node
            .ancestors_it(None)
            .any(|a| walk::named(&a, &["td", "th"]));
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in runs {
            out.push_str(&text[at..start]);
            let placeholder = format!("{prefix}{}q", taken.len());
            out.push_str(&placeholder);
            // `\(…\)` and `\[…\]` in Markdown are escaped brackets: the same math, in dollars.
            let run = &text[start..end];
            let run = if let Some(inner) = run.strip_prefix("\\(") {
                format!("${}$", inner.trim_end_matches("\\)").trim())
            } else if let Some(inner) = run.strip_prefix("\\[") {
                format!("$${}$$", inner.trim_end_matches("\\]").trim())
            } else {
                run.to_string()
            };
            taken.push((
                placeholder,
                if in_cell {
                    run.replace('|', "\\|")
                } else {
                    run
                },
            ));
            at = end;
        }
        out.push_str(&text[at..]);
        node.set_text(out.as_str());
    }
    Some(Formulas { taken })
}

/// The byte ranges of TeX runs in `text`: `$$…$$`, `\(…\)` and `\[…\]` whole, and `$…$` only
/// when it reads as TeX and not as two prices ("$5 and $10"): no space just inside either
/// dollar, no digit or letter right after the closing one, and a TeX mark inside (`\`, `_`,
/// `^`, `{`).
fn tex_runs(text: &str) -> Vec<(usize, usize)> {
    const MAX: usize = 2_000;
    let bytes = text.as_bytes();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let closing = |open: &str, close: &str, from: usize| -> Option<usize> {
            let inner = &text[from + open.len()..];
            let end = inner.find(close)?;
            let body = &inner[..end];
            (end > 0 && end <= MAX && !body.trim().is_empty() && !body.contains("$$"))
                .then_some(from + open.len() + end + close.len())
        };
        let found = if text[i..].starts_with("$$") {
            closing("$$", "$$", i)
        } else if text[i..].starts_with("\\(") {
            closing("\\(", "\\)", i)
        } else if text[i..].starts_with("\\[") {
            closing("\\[", "\\]", i)
        } else if bytes[i] == b'$' && (i == 0 || !matches!(bytes[i - 1], b'\\' | b'$')) {
            inline_dollar(text, i, MAX)
        } else {
            None
        };
        match found {
            Some(end) => {
                runs.push((i, end));
                i = end;
            }
            None => i += text[i..].chars().next().map_or(1, char::len_utf8),
        }
    }
    runs
}

fn inline_dollar(text: &str, at: usize, max: usize) -> Option<usize> {
    let inner = &text[at + 1..];
    let end = inner.find('$')?;
    let body = &inner[..end];
    let after = inner[end + 1..].chars().next();
    let tex = body.len() <= max
        && !body.is_empty()
        && !body.starts_with(char::is_whitespace)
        && !body.ends_with(char::is_whitespace)
        && !body.contains('\n')
        && body.contains(['\\', '_', '^', '{'])
        && after.is_none_or(|c| !c.is_alphanumeric() && c != '$');
    tex.then_some(at + 1 + end + 1)
}
