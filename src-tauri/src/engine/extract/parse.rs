//! A page parsed into dom_query's tree, given up once it nests too deep. html5ever's tree
//! builder scans its stack of open elements for most tags, so deep nesting costs the square of
//! its depth: 40,000 nested `<div>`s (200 KB) took 5.9 s to parse, and a 50 MB body of them
//! would hold a worker's thread for days. The page is fed in pieces, and the tree's depth is
//! looked at between them.

use std::cell::{Cell, Ref, RefCell};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use dom_query::{Document, NodeId};
use html5ever::interface::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::{Attribute, ParseOpts, QualName, parse_document, tree_builder};

/// How much of the page goes to the parser between two looks at its depth: a page that nests
/// too deep is found within this many bytes of where it does.
const PIECE: usize = 16 * 1024;

/// The page's tree, or `None` once some element sits more than `limit` deep.
pub(super) fn parse_unless_deeper_than(html: &str, limit: usize) -> Option<Document> {
    let opts = ParseOpts {
        tree_builder: tree_builder::TreeBuilderOpts {
            // As `Document::from` parses: `<noscript>` read as markup.
            scripting_enabled: false,
            ..Default::default()
        },
        ..Default::default()
    };
    let sink = DepthSink {
        doc: Document::default(),
        depths: RefCell::default(),
        deepest: Cell::new(0),
    };
    let mut parser = parse_document(sink, opts);
    let mut rest = html;
    while !rest.is_empty() {
        let mut cut = rest.len().min(PIECE);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, after) = rest.split_at(cut);
        parser.process(StrTendril::from_slice(piece));
        if parser.tokenizer.sink.sink.deepest.get() > limit {
            return None;
        }
        rest = after;
    }
    let sink = parser.finish();
    (sink.deepest.get() <= limit).then_some(sink.doc)
}

/// dom_query's own sink, with the depth of each element it has placed.
struct DepthSink {
    doc: Document,
    depths: RefCell<HashMap<NodeId, u32, BuildHasherDefault<Spread>>>,
    deepest: Cell<usize>,
}

impl DepthSink {
    fn depth(&self, node: &NodeId) -> u32 {
        self.depths.borrow().get(node).copied().unwrap_or(0)
    }

    /// Records where `child` went: one below `parent`.
    fn placed(&self, parent_depth: u32, child: &NodeOrText<NodeId>) {
        if let NodeOrText::AppendNode(id) = child {
            let depth = parent_depth + 1;
            self.depths.borrow_mut().insert(*id, depth);
            self.deepest.set(self.deepest.get().max(depth as usize));
        }
    }
}

impl TreeSink for DepthSink {
    type Handle = NodeId;
    type Output = Self;
    type ElemName<'a> = Ref<'a, QualName>;

    fn finish(self) -> Self {
        self
    }

    fn parse_error(&self, msg: std::borrow::Cow<'static, str>) {
        self.doc.parse_error(msg);
    }

    fn get_document(&self) -> NodeId {
        self.doc.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a NodeId) -> Ref<'a, QualName> {
        self.doc.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        self.doc.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> NodeId {
        self.doc.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> NodeId {
        self.doc.create_pi(target, data)
    }

    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        self.placed(self.depth(parent), &child);
        self.doc.append(parent, child);
    }

    fn append_based_on_parent_node(
        &self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        // Beside `element` if it has a parent, else under `prev_element`: either way no deeper
        // than one below the deeper of the two.
        let depth = self.depth(element).max(self.depth(prev_element));
        self.placed(depth, &child);
        self.doc
            .append_based_on_parent_node(element, prev_element, child);
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.doc
            .append_doctype_to_document(name, public_id, system_id);
    }

    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        let contents = self.doc.get_template_contents(target);
        let depth = self.depth(target);
        self.depths.borrow_mut().insert(contents, depth);
        contents
    }

    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.doc.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.doc.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &NodeId, child: NodeOrText<NodeId>) {
        self.placed(self.depth(sibling).saturating_sub(1), &child);
        self.doc.append_before_sibling(sibling, child);
    }

    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        self.doc.add_attrs_if_missing(target, attrs);
    }

    fn remove_from_parent(&self, target: &NodeId) {
        self.doc.remove_from_parent(target);
    }

    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        self.doc.reparent_children(node, new_parent);
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &NodeId) -> bool {
        self.doc.is_mathml_annotation_xml_integration_point(handle)
    }
}

/// Node ids are handed out in order: multiplied by the golden ratio they spread over the table
/// (the default hasher costs more than the parse's own work on a node).
#[derive(Default)]
struct Spread(u64);

impl Hasher for Spread {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[cfg(test)]
mod tests {
    use super::parse_unless_deeper_than;

    #[test]
    fn the_tree_is_the_one_dom_query_builds() {
        let html = format!(
            "<!DOCTYPE html><html><head><title>T</title></head><body><table><tr><td><b>bold<p>para</b> \
             tail</p><template><div>in a template</div></template><noscript><p>no script</p></noscript>{}</td></tr></table>",
            "é<span>x</span>".repeat(5_000)
        );
        let ours = parse_unless_deeper_than(&html, 512).expect("shallow");
        let theirs = dom_query::Document::from(html.as_str());
        assert_eq!(ours.html(), theirs.html());
    }

    #[test]
    fn deep_nesting_is_given_up_early_and_nesting_at_the_limit_is_read() {
        let start = std::time::Instant::now();
        // Quadratic in html5ever: parsed whole, these 200,000 `<div>`s took minutes.
        let deep = format!("<body>{}text", "<div>".repeat(200_000));
        assert!(parse_unless_deeper_than(&deep, 512).is_none());
        assert!(
            start.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        let at_limit = format!("<body>{}text", "<div>".repeat(510));
        let doc = parse_unless_deeper_than(&at_limit, 512).expect("html, body and 510 divs");
        assert_eq!(doc.select("div").length(), 510);
        let over = format!("<body>{}text", "<div>".repeat(511));
        assert!(parse_unless_deeper_than(&over, 512).is_none());
    }
}
