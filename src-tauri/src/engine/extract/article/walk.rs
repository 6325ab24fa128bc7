//! Walks of the page's tree. CSS selectors with a descendant combinator (`body *`) match every
//! element against its ancestors, which cost a sixth of extraction's time on the dev set; these
//! walks visit each node once.

use dom_query::{Document, NodeRef};

/// The elements under `node`, in document order.
pub(super) fn elements<'a, 'b>(node: &'b NodeRef<'a>) -> impl Iterator<Item = NodeRef<'a>> + 'b {
    node.descendants_it().filter(|n| n.is_element())
}

/// The page's `<head>` or `<body>` (the parser always makes both).
pub(super) fn part<'a>(dom: &'a Document, name: &str) -> Option<NodeRef<'a>> {
    let html = dom.root().children_it(false).find(|n| n.has_name("html"))?;
    html.children_it(false).find(|n| n.has_name(name))
}
