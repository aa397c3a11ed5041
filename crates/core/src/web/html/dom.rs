//! A page as html5ever parses it (the WHATWG algorithm browsers use, so malformed pages get the
//! tree a browser would build), held in one arena: nodes are indices, links are parent, first and
//! last child and next and previous sibling. Only what extraction reads is kept: an element's
//! local name and its [`Marks`], text, and nothing for comments, doctypes or processing
//! instructions. Walking is iterative, so a page nested a million deep cannot overflow the stack.
//! Parsing is not linear in depth (the tree builder scans its stack of open elements for each
//! tag), so a page is read only until its tree is [`MAX_DEPTH`] deep, as browsers cap it too.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElemName, ElementFlags, NodeOrText, QuirksMode, TreeBuilderOpts, TreeSink};
use html5ever::{parse_document, Attribute, LocalName, Namespace, ParseOpts, QualName};

use super::{raw, streamed};
use super::rules::{Marks, WordsSeen};

/// Nesting beyond which the rest of a page is not read: real pages stay under a few hundred
/// levels; 20,000 unclosed `<div>`s took seconds to parse, a 2 MB page of them would take minutes.
pub const MAX_DEPTH: u32 = 2048;
/// The page is parsed in pieces of this many bytes, the depth checked after each: past
/// [`MAX_DEPTH`] a piece adds at most a few thousand levels.
const PIECE: usize = 16 * 1024;

/// An index into [`Dom::nodes`].
pub type Id = u32;
const NONE: Id = Id::MAX;

/// What a node is.
pub enum Kind {
    Document,
    Element { name: LocalName, ns: Namespace, marks: Marks },
    Text(StrTendril),
    /// A comment, doctype or processing instruction: kept in the tree, never read.
    Other,
}

pub struct Node {
    pub kind: Kind,
    parent: Id,
    first: Id,
    last: Id,
    prev: Id,
    next: Id,
    /// Levels below the document when the node was put in its place (not updated when the
    /// parser moves a subtree: it only guards parsing time).
    depth: u32,
}

/// A parsed page: node 0 is the document.
pub struct Dom {
    pub nodes: Vec<Node>,
    /// Each text node's length without leading and trailing whitespace (0 for other nodes):
    /// extraction sums it several times per page.
    trimmed: Vec<u32>,
}

/// Where a walk is: entering a node, or leaving one it entered.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Step {
    Open(Id),
    Close(Id),
}

impl Dom {
    /// The page's tree as a reader running its script sees it where React streamed it
    /// ([`streamed`]), without what extraction never reads where leaving it out cannot change
    /// the tree (script and style bodies, most attribute values).
    pub fn parse(html: &str) -> Self {
        Self::parse_as_is(&raw::leave_out_unread(&streamed::placed(html)))
    }

    fn parse_as_is(html: &str) -> Self {
        let deepest = Rc::new(Cell::new(0));
        let sink = Sink { nodes: RefCell::new(vec![node(Kind::Document)]), deepest: Rc::clone(&deepest), seen: RefCell::default() };
        // Scripting off, as a reader without JavaScript sees the page: `<noscript>` holds markup.
        let opts = ParseOpts { tree_builder: TreeBuilderOpts { scripting_enabled: false, ..Default::default() }, ..Default::default() };
        let mut parser = parse_document(sink, opts);
        let mut at = 0;
        while at < html.len() && deepest.get() <= MAX_DEPTH {
            let end = html.ceil_char_boundary(at + PIECE);
            parser.process(StrTendril::from_slice(&html[at..end]));
            at = end;
        }
        parser.finish()
    }

    pub fn root(&self) -> Id {
        0
    }

    pub fn parent(&self, id: Id) -> Option<Id> {
        Some(self.nodes[id as usize].parent).filter(|&p| p != NONE)
    }

    /// Whether `id` is `top` or under it.
    pub fn within(&self, mut id: Id, top: Id) -> bool {
        loop {
            if id == top {
                return true;
            }
            match self.parent(id) {
                Some(p) => id = p,
                None => return false,
            }
        }
    }

    /// The text node's length without leading and trailing whitespace; 0 for other nodes.
    pub fn trimmed_len(&self, id: Id) -> usize {
        self.trimmed[id as usize] as usize
    }

    pub fn first_child(&self, id: Id) -> Option<Id> {
        Some(self.nodes[id as usize].first).filter(|&c| c != NONE)
    }

    pub fn next_sibling(&self, id: Id) -> Option<Id> {
        Some(self.nodes[id as usize].next).filter(|&c| c != NONE)
    }

    pub fn kind(&self, id: Id) -> &Kind {
        &self.nodes[id as usize].kind
    }

    /// The element's local name, if it is one.
    pub fn name(&self, id: Id) -> Option<&str> {
        match self.kind(id) {
            Kind::Element { name, .. } => Some(name),
            _ => None,
        }
    }

    /// The subtree of `top` in document order, entering and leaving each node; `enter` says
    /// whether to go into a node's children (leaving is reported either way).
    pub fn walk(&self, top: Id, mut enter: impl FnMut(Id) -> bool, mut step: impl FnMut(Step)) {
        let mut at = top;
        loop {
            step(Step::Open(at));
            let first = self.nodes[at as usize].first;
            if first != NONE && enter(at) {
                at = first;
                continue;
            }
            // Leave nodes until one has a next sibling inside the subtree.
            loop {
                step(Step::Close(at));
                if at == top {
                    return;
                }
                let n = &self.nodes[at as usize];
                if n.next != NONE {
                    at = n.next;
                    break;
                }
                at = n.parent;
            }
        }
    }

    /// Every node of the document, parents before their children.
    pub fn preorder(&self) -> Vec<Id> {
        let mut order = Vec::with_capacity(self.nodes.len());
        self.walk(self.root(), |_| true, |s| {
            if let Step::Open(id) = s {
                order.push(id)
            }
        });
        order
    }
}

fn node(kind: Kind) -> Node {
    Node { kind, parent: NONE, first: NONE, last: NONE, prev: NONE, next: NONE, depth: 0 }
}

/// html5ever's tree builder writes into this.
struct Sink {
    nodes: RefCell<Vec<Node>>,
    /// The deepest level a node was put at.
    deepest: Rc<Cell<u32>>,
    seen: RefCell<WordsSeen>,
}

/// An element's name as the tree builder asks for it.
#[derive(Debug)]
pub struct Name(Namespace, LocalName);

impl ElemName for Name {
    fn ns(&self) -> &Namespace {
        &self.0
    }
    fn local_name(&self) -> &LocalName {
        &self.1
    }
}

impl Sink {
    fn add(&self, kind: Kind) -> Id {
        let mut nodes = self.nodes.borrow_mut();
        nodes.push(node(kind));
        (nodes.len() - 1) as Id
    }

    /// Makes `a` and `b` neighbours under `parent`; `NONE` stands for an end of its children.
    fn link(nodes: &mut [Node], parent: Id, a: Id, b: Id) {
        if a != NONE {
            nodes[a as usize].next = b;
        } else {
            nodes[parent as usize].first = b;
        }
        if b != NONE {
            nodes[b as usize].prev = a;
        } else {
            nodes[parent as usize].last = a;
        }
    }

    /// The child of `parent` just before `before` (or its last child).
    fn before(nodes: &[Node], parent: Id, before: Id) -> Id {
        if before == NONE { nodes[parent as usize].last } else { nodes[before as usize].prev }
    }

    fn detach(nodes: &mut [Node], id: Id) {
        let n = &mut nodes[id as usize];
        let (parent, prev, next) = (n.parent, n.prev, n.next);
        if parent != NONE {
            (n.parent, n.prev, n.next) = (NONE, NONE, NONE);
            Self::link(nodes, parent, prev, next);
        }
    }

    /// Puts `id` under `parent`, before `before` (or last).
    fn insert(nodes: &mut [Node], parent: Id, id: Id, before: Id) {
        Self::detach(nodes, id);
        let prev = Self::before(nodes, parent, before);
        nodes[id as usize].parent = parent;
        nodes[id as usize].depth = nodes[parent as usize].depth + 1;
        Self::link(nodes, parent, prev, id);
        Self::link(nodes, parent, id, before);
    }

    /// Inserts a node, or text merged into the text node just before the place (adjacent text is
    /// one node, as the tree builder expects).
    fn place(&self, parent: Id, child: NodeOrText<Id>, before: Id) {
        let id = match child {
            NodeOrText::AppendNode(id) => id,
            NodeOrText::AppendText(text) => {
                let mut nodes = self.nodes.borrow_mut();
                let prev = Self::before(&nodes, parent, before);
                if prev != NONE {
                    if let Kind::Text(t) = &mut nodes[prev as usize].kind {
                        t.push_tendril(&text);
                        return;
                    }
                }
                drop(nodes);
                self.add(Kind::Text(text))
            }
        };
        let mut nodes = self.nodes.borrow_mut();
        Self::insert(&mut nodes, parent, id, before);
        self.deepest.set(self.deepest.get().max(nodes[id as usize].depth));
    }
}

impl TreeSink for Sink {
    type Handle = Id;
    type Output = Dom;
    type ElemName<'a> = Name;

    fn finish(self) -> Dom {
        let nodes = self.nodes.into_inner();
        let trimmed = nodes.iter().map(|n| if let Kind::Text(t) = &n.kind { t.trim().len() as u32 } else { 0 }).collect();
        Dom { nodes, trimmed }
    }

    // Malformed markup is the norm on the web; the tree builder already recovers as browsers do.
    fn parse_error(&self, _: Cow<'static, str>) {}

    fn get_document(&self) -> Id {
        0
    }

    fn elem_name<'a>(&'a self, target: &'a Id) -> Name {
        match &self.nodes.borrow()[*target as usize].kind {
            Kind::Element { name, ns, .. } => Name(ns.clone(), name.clone()),
            // The tree builder asks only for elements' names.
            _ => Name(Namespace::from(""), LocalName::from("")),
        }
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, _: ElementFlags) -> Id {
        let marks = Marks::of(&name.local, &attrs, &mut self.seen.borrow_mut());
        self.add(Kind::Element { name: name.local, ns: name.ns, marks })
    }

    fn create_comment(&self, _: StrTendril) -> Id {
        self.add(Kind::Other)
    }

    fn create_pi(&self, _: StrTendril, _: StrTendril) -> Id {
        self.add(Kind::Other)
    }

    fn append(&self, parent: &Id, child: NodeOrText<Id>) {
        self.place(*parent, child, NONE);
    }

    fn append_based_on_parent_node(&self, element: &Id, prev_element: &Id, child: NodeOrText<Id>) {
        if self.nodes.borrow()[*element as usize].parent != NONE {
            self.append_before_sibling(element, child);
        } else {
            self.append(prev_element, child);
        }
    }

    fn append_doctype_to_document(&self, _: StrTendril, _: StrTendril, _: StrTendril) {}

    // Template contents are the template's children here: extraction drops templates anyway.
    fn get_template_contents(&self, target: &Id) -> Id {
        *target
    }

    fn same_node(&self, x: &Id, y: &Id) -> bool {
        x == y
    }

    fn set_quirks_mode(&self, _: QuirksMode) {}

    fn append_before_sibling(&self, sibling: &Id, new_node: NodeOrText<Id>) {
        let parent = self.nodes.borrow()[*sibling as usize].parent;
        if parent != NONE {
            self.place(parent, new_node, *sibling);
        }
    }

    fn add_attrs_if_missing(&self, target: &Id, attrs: Vec<Attribute>) {
        if let Kind::Element { name, marks, .. } = &mut self.nodes.borrow_mut()[*target as usize].kind {
            marks.add(&Marks::of(name, &attrs, &mut self.seen.borrow_mut()));
        }
    }

    fn remove_from_parent(&self, target: &Id) {
        Self::detach(&mut self.nodes.borrow_mut(), *target);
    }

    fn reparent_children(&self, node: &Id, new_parent: &Id) {
        let mut nodes = self.nodes.borrow_mut();
        let mut child = nodes[*node as usize].first;
        while child != NONE {
            let next = nodes[child as usize].next;
            Self::insert(&mut nodes, *new_parent, child, NONE);
            child = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(dom: &Dom) -> String {
        let mut out = String::new();
        dom.walk(dom.root(), |_| true, |s| match s {
            Step::Open(id) => match dom.kind(id) {
                Kind::Element { name, .. } => out.push_str(&format!("<{name}>")),
                Kind::Text(t) => out.push_str(t),
                _ => {}
            },
            Step::Close(id) => {
                if let Some(name) = dom.name(id) {
                    out.push_str(&format!("</{name}>"))
                }
            }
        });
        out
    }

    #[test]
    fn builds_the_tree_a_browser_builds() {
        let dom = Dom::parse("<!DOCTYPE html><p>one<b>two<p>three</b> four<!-- c --><table><tr><td>x</table>");
        assert_eq!(
            shape(&dom),
            "<html><head></head><body><p>one<b>two</b></p><p><b>three</b> four</p>\
             <table><tbody><tr><td>x</td></tr></tbody></table></body></html>"
        );
        // Without a doctype (quirks mode) a table does not close a paragraph.
        let dom = Dom::parse("<p>a<table><tr><td>x</table>");
        assert_eq!(shape(&dom), "<html><head></head><body><p>a<table><tbody><tr><td>x</td></tr></tbody></table></p></body></html>");
        // Misnested formatting elements: the adoption agency moves nodes between parents.
        let dom = Dom::parse("<b>1<i>2</b>3</i>4");
        assert_eq!(shape(&dom), "<html><head></head><body><b>1<i>2</i></b><i>3</i>4</body></html>");
        // Text before a table is fostered out of it, merged with its neighbour.
        let dom = Dom::parse("<table>a<tr><td>b</td></tr></table>");
        assert_eq!(shape(&dom), "<html><head></head><body>a<table><tbody><tr><td>b</td></tr></tbody></table></body></html>");
    }

    /// The tree without the text of never-text elements (scripts, styles, `<select>`): what
    /// extraction reads of it.
    fn shape_without_scripts(dom: &Dom) -> String {
        let mut out = String::new();
        dom.walk(dom.root(), |_| true, |s| match s {
            Step::Open(id) => match dom.kind(id) {
                Kind::Element { name, ns, marks } => out.push_str(&format!("<{}:{name} {marks:?}>", &**ns)),
                Kind::Text(t) if !dom.parent(id).is_some_and(|p| matches!(dom.kind(p), Kind::Element { marks, .. } if marks.never_text)) => out.push_str(t),
                Kind::Other => out.push('#'),
                _ => {}
            },
            Step::Close(id) => {
                if let Some(name) = dom.name(id) {
                    out.push_str(&format!("</{name}>"))
                }
            }
        });
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// Leaving out script and style bodies and unread attribute values never changes anything
        /// else in the tree, whatever comments, raw-text elements, foreign content and broken tags
        /// surround them.
        #[test]
        fn leaving_out_the_unread_leaves_the_rest_of_the_tree(parts in proptest::collection::vec(proptest::sample::select(vec![
            "<script>", "</script>", "<SCRIPT type=x>", "<script/>", "</script ", "</scripts>", "<style>", "</style>", "</STYLE>",
            "<svg>", "</svg>", "<math>", "<!--", "-->", "--!>", "<!-->", "<textarea>", "</textarea>", "<title>", "</title>",
            "<p>", "</p>", "<b>", "<div a='>'>", "<div a=\">\" b>", "<a =x>", "<a b=c/>", "a<b", "x", " ", "\n", "<![CDATA[",
            "]]>", "<plaintext>", "<noscript>", "</noscript>", "<iframe>", "</iframe>", "<", ">", "/", "=", "'", "\"", "<!",
            "<?", "</", "<!DOCTYPE html>", "<table>", "<td>", "<template>", "</template>",
            "<div class=\"nav menu\" title=\"</script>\">", "<input type=hidden value='<p>'>", "<input type=\"text\">",
            "<a href=\"&amp;<b>\" style='display:none'>", "<p hidden title=\"a>b\">", "<font color=\"red\" face='x'>",
            "<td data-x=\"<!--\">", "<span id='main' role=\"main\" data-y=''>", "<a title=\"", "<b itemprop='articleBody'>",
            " title='", " class=\"share\"", "<annotation-xml encoding=\"text/html\">", "<mi>", "<select>", "<option x='y'>",
            "<foreignObject>", "</foreignObject>", "<frameset>", "<path d=\"M0 <b>\">", "</svg>", "</math>", "</select>",
            "<!--<script>", "--", "-", "//-->", "<SCRIPT>", "</script>\"", "<mi><style>", "<desc>", "</desc>", "<g fill='x'>",
            "</g>", "<path d='M0'/>", "<linearGradient id=\"a\" x='1'>", "</lineargradient>", "<feBlend in='a'>", "<svg x='1'>",
            "</option>", "<optgroup label='x'>", "</optgroup>", "<p title='y'>", "</b>", "<br>", "</br>",
        ]), 0..40)) {
            let html: String = parts.concat();
            let placed = streamed::placed(&html);
            proptest::prop_assert_eq!(shape_without_scripts(&Dom::parse(&html)), shape_without_scripts(&Dom::parse_as_is(&placed)), "{}", html);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// The same inside icons and menus, which the scan follows when they are plain: drawing
        /// elements, options, and what makes an `<svg>` or `<select>` not plain.
        #[test]
        fn leaving_out_the_unread_in_icons_and_menus_leaves_the_rest_of_the_tree(parts in proptest::collection::vec(proptest::sample::select(vec![
            "<svg>", "<svg x='1'>", "</svg>", "<svg/>", "<g fill='x'>", "</g>", "<G>", "<path d='M0'/>", "<path d=\"<b>\">", "</path>",
            "<title>", "</title>", "<desc x='1'>", "</desc>", "<feBlend in='a'>", "</feblend>", "<foreignObject>", "</foreignObject>",
            "<select name='l'>", "</select>", "<option value='x'>", "</option>", "<optgroup>", "</optgroup>", "<script>", "</script>",
            "<style>", "</style>", "<p title='y'>", "</p>", "<b>", "</b>", "<br>", "</br>", "<font color='r'>", "<table>", "<td>",
            "<textarea>", "</textarea>", "<input type=hidden x='y'>", "<!-- c -->", "<!--", "-->", "<![CDATA[x]]>", "a<b", "x", " ",
            "<", ">", "'", "\"", "<math>", "<mi>", "</div>", "<div class='c' data-x='<p>'>", "<template>", "</template>",
            "<svg><title>", "<title><title>", "<svg><desc>x", "<g x='1'>", "<option><textarea>", "<select><option a='b'>",
        ]), 0..30)) {
            let html: String = parts.concat();
            let placed = streamed::placed(&html);
            proptest::prop_assert_eq!(shape_without_scripts(&Dom::parse(&html)), shape_without_scripts(&Dom::parse_as_is(&placed)), "{}", html);
        }
    }

    #[test]
    fn deep_nesting_walks_without_recursion() {
        let html = "<div>".repeat(MAX_DEPTH as usize - 10) + "deep";
        let dom = Dom::parse(&html);
        assert!(dom.preorder().len() > MAX_DEPTH as usize - 10);
        assert!(shape(&dom).contains("deep"));
    }

    #[test]
    fn a_page_is_read_only_until_it_nests_too_deep() {
        // 400,000 unclosed elements: read to the piece where the tree passes the cap, the rest left.
        let html = "<p>before</p>".to_string() + &"<div>".repeat(400_000) + "after";
        let dom = Dom::parse(&html);
        let text = shape(&dom);
        assert!(text.contains("before") && !text.contains("after"));
        let depth = dom.nodes.iter().map(|n| n.depth).max().unwrap();
        assert!(depth > MAX_DEPTH && (depth as usize) < MAX_DEPTH as usize + PIECE / 5 + 10, "{depth}");
    }
}
