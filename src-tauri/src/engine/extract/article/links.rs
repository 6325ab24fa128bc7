//! The article's links after Readability: a web address, a mail address or an anchor of the
//! page keeps its target, made absolute; any other (`javascript:`, `data:`, `JavaScript:`,
//! which Readability's case-sensitive selector misses) leaves its words as plain text.

use super::walk;
use dom_query::NodeRef;

/// The address the page's relative links are relative to: its `<base href>`, resolved against
/// the page's own address, or that address.
pub(super) fn base_of(dom: &dom_query::Document, page: Option<&str>) -> Option<url::Url> {
    let page = page.and_then(|p| url::Url::parse(p).ok());
    match (dom.root().base_uri(), page) {
        (Some(base), Some(page)) => page.join(base.trim()).ok().or(Some(page)),
        (Some(base), None) => url::Url::parse(base.trim()).ok(),
        (None, page) => page,
    }
    .filter(|b| matches!(b.scheme(), "http" | "https"))
}

pub(super) fn settle(root: &NodeRef, base: Option<&url::Url>) {
    let links: Vec<NodeRef> = walk::elements(root)
        .filter(|n| walk::named(n, &["a"]))
        .collect();
    for a in links {
        // Markdown's writer takes a link's text without its line breaks: "DownloadPDF".
        let breaks: Vec<NodeRef> = walk::elements(&a)
            .filter(|n| walk::named(n, &["br"]))
            .collect();
        for br in breaks {
            br.replace_with(&br.tree.new_text(" "));
        }
        let Some(href) = a.attr("href") else {
            continue;
        };
        let href = href.trim();
        if href.starts_with('#') {
            continue;
        }
        let web = |url: &url::Url| matches!(url.scheme(), "http" | "https" | "mailto");
        match url::Url::parse(href) {
            // Kept as written: the parser's form of it ("…org/") is the same address.
            Ok(url) if web(&url) => {}
            Err(url::ParseError::RelativeUrlWithoutBase) => match base.map(|b| b.join(href)) {
                Some(Ok(url)) if web(&url) => a.set_attr("href", url.as_str()),
                // Without the page's address a relative link cannot be made absolute; it is
                // left as it was written.
                None => {}
                Some(_) => a.remove_attr("href"),
            },
            _ => a.remove_attr("href"),
        }
    }
}
