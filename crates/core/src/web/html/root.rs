//! Which parts of a page are dropped, and which element holds its main text. Text sizes are
//! counted once per node, bottom-up, so choosing among candidates costs no more walks.

use super::declared::Declared;
use super::dom::{Dom, Id, Kind, Step};

/// A boilerplate-classed element is dropped only while it holds less than this share of the
/// page's text: a page whose whole article sits in `<div class="comments-enabled">` is still the
/// article (trafilatura guards its pruning the same way).
const GUARD: f64 = 0.4;
/// A declared product's customers' reviews are dropped while they hold less than this share of
/// the page's text: a popular product's reviews often outweigh its description (REI's, Amazon's),
/// and are still not the product; above it, the page is more likely a review site's. So is a
/// comment section after a marked story: a popular post's comments outweigh it too.
const REVIEWS_GUARD: f64 = 0.8;
/// A paragraph this long is text, whatever the classes around it say (of the weaker kind: see
/// `rules::BESIDE`).
const LONG_PARAGRAPH: usize = 400;
/// A marked container (`<article>`, `entry-content`) is a candidate only with this much text.
const MIN_MARKED: usize = 250;
/// How much more prose an ancestor of the main element may hold and still be read around it.
const WIDEN: f64 = 3.0;
/// A paragraph counts towards its parent's score only with this much text.
const MIN_PARAGRAPH: usize = 25;
/// Repeated items (cards, posts, rows) make a list only when this many of them hold text...
const MIN_ITEMS: usize = 4;
/// ...of at least this many bytes each (a menu's entries are shorter).
const MIN_ITEM: usize = 20;
/// And only when they hold this many text bytes per link: a menu's links are a word or two...
const MIN_TEXT_PER_LINK: usize = 30;
/// ...unless they are inside the main element, where items that are only their titles' links (a
/// category's members, a shop's product names) are the content.
const MIN_TEXT_PER_LINK_INSIDE: usize = 12;

/// A slider is text, not teasers, when this share of its text is outside links.
const SLIDE_TEXT: f64 = 0.9;
/// A `<noscript>` holding less text than this, naming JavaScript, is a notice that it is off.
const NOSCRIPT_COPY: usize = 400;
/// A page is built of sections when the main element sits in one of this many sibling sections...
const MIN_SECTIONS: usize = 3;
/// ...that each hold this much prose.
const SECTION_TEXT: usize = 100;
/// How far above a post its thread's replies are looked for.
const THREAD_LEVELS: usize = 6;

/// Trimmed text bytes under each node (`order` parents first), counting nothing under a node
/// `skip` names.
fn text_below(dom: &Dom, order: &[Id], skip: impl Fn(Id) -> bool) -> Vec<usize> {
    let mut below = vec![0usize; dom.nodes.len()];
    for &id in order.iter().rev() {
        let own = match dom.kind(id) {
            Kind::Text(_) => dom.trimmed_len(id),
            _ if skip(id) => 0,
            Kind::Element { .. } | Kind::Document => below[id as usize],
            Kind::Other => 0,
        };
        below[id as usize] = own;
        if let Some(p) = dom.parent(id) {
            below[p as usize] += own;
        }
    }
    below
}

/// Whether the text under `id` names JavaScript (a notice that it is off or needed).
fn says_javascript(dom: &Dom, id: Id) -> bool {
    let mut says = false;
    dom.walk(id, |_| true, |step| {
        if let Step::Open(t) = step {
            if let Kind::Text(text) = dom.kind(t) {
                says |= text.as_bytes().windows(10).any(|w| w.eq_ignore_ascii_case(b"javascript"));
            }
        }
    });
    says
}

/// Whether each node, or a node above it, is one `this` names (`order` parents first).
fn any_above(dom: &Dom, order: &[Id], this: impl Fn(Id) -> bool) -> Vec<bool> {
    let mut above = vec![false; dom.nodes.len()];
    for &id in order {
        above[id as usize] = this(id) || dom.parent(id).is_some_and(|p| above[p as usize]);
    }
    above
}

/// Whether each node, or a node under it, is one `this` names (`order` parents first).
fn any_below(dom: &Dom, order: &[Id], this: impl Fn(Id) -> bool) -> Vec<bool> {
    let mut below = vec![false; dom.nodes.len()];
    for &id in order.iter().rev() {
        below[id as usize] |= this(id);
        if let Some(p) = dom.parent(id) {
            below[p as usize] |= below[id as usize];
        }
    }
    below
}

/// What a page has that some passes are about, found in one walk over its nodes, so that those
/// passes run only on pages that have it.
#[derive(Default)]
struct Present {
    figure: bool,
    main: bool,
    hidden: bool,
    slider: bool,
    builder: bool,
    comment_section: bool,
    email_field: bool,
}

impl Present {
    fn of(dom: &Dom) -> Self {
        let mut present = Self::default();
        for node in &dom.nodes {
            if let Kind::Element { name, marks, .. } = &node.kind {
                present.figure |= &**name == "figure";
                present.main |= &**name == "main";
                present.hidden |= marks.hidden;
                present.slider |= marks.slider_only;
                present.builder |= marks.builder_document;
                present.comment_section |= marks.comment_section;
                present.email_field |= marks.email_field;
            }
        }
        present
    }
}

/// A list of repeated items: the element whose children they are, the text they hold, and how
/// many of them hold text.
pub struct Items {
    pub list: Id,
    pub text: usize,
    pub count: usize,
}

/// What is dropped and how much text each node holds.
pub struct Pruned<'d> {
    pub dom: &'d Dom,
    /// The node is dropped (itself, not counting its ancestors).
    dropped: Vec<bool>,
    /// The node or one of its ancestors is dropped.
    gone: Vec<bool>,
    /// Trimmed text bytes outside links under the node, dropped parts excluded.
    prose: Vec<usize>,
    order: Vec<Id>,
    /// Furniture was dropped by its class words too (the first, strict reading).
    strict: bool,
}

impl<'d> Pruned<'d> {
    /// `strict`: drop elements whose class or id words mark them as furniture, and the
    /// [`last_resort`](super::rules) tags; else only the other tags decide. On a page that
    /// declares a product its customers' reviews are furniture too; on one that declares a
    /// thread, comments are not (they are its replies); on an article (not a thread) whose story
    /// the strict reading found, the lenient reading leaves out its comment section.
    pub fn new(dom: &'d Dom, tables: bool, strict: bool, declared: Declared) -> Self {
        let n = dom.nodes.len();
        let order = dom.preorder();
        let present = Present::of(dom);
        // A figure that holds a table is the table's frame (WordPress frames each one so), not a
        // picture's caption.
        let framed_table =
            if tables && present.figure { any_below(dom, &order, |id| dom.name(id) == Some("table")) } else { vec![false; n] };
        let by_tag = |id: Id| match dom.kind(id) {
            Kind::Element { marks, name, .. } => {
                marks.never_text
                    || (strict && marks.last_resort && !(&**name == "figure" && framed_table[id as usize]))
                    || (!tables && &**name == "table")
            }
            _ => false,
        };
        // A hidden element is not text unless it holds most of the page: a page rendered by
        // script keeps its whole body in a hidden container that the script reveals (React's
        // streamed `<div hidden id="S:0">` on a page saved without the calls that place it, see
        // `streamed`). One hidden by a class is not text either way.
        let tagged = if present.hidden { text_below(dom, &order, by_tag) } else { Vec::new() };
        let all = tagged.get(dom.root() as usize).copied().unwrap_or(0) as f64;
        // A hidden element that holds a marked content container with as much text as the main
        // element needs (a shop's product `<article>` in a `display:none` block that its script
        // reveals; not a grid of short product cards that are each an `<article>`) is text too.
        let holds_content = if present.hidden {
            any_below(dom, &order, |id| {
                matches!(dom.kind(id), Kind::Element { marks, .. } if marks.content) && tagged[id as usize] >= MIN_MARKED
            })
        } else {
            Vec::new()
        };
        let never = |id: Id| {
            by_tag(id)
                || matches!(dom.kind(id), Kind::Element { marks, .. } if marks.consent_manager
                    || (marks.hidden && ((tagged[id as usize] as f64) < GUARD * all || marks.hidden_by_class) && !holds_content[id as usize]))
        };
        // Text under each node without never-text parts: the guard's measure; and whether a
        // long paragraph is under it.
        let visible = text_below(dom, &order, never);
        let long_paragraph = any_below(dom, &order, |id| dom.name(id) == Some("p") && visible[id as usize] >= LONG_PARAGRAPH);
        let total = visible[dom.root() as usize] as f64;
        // A wrapper whose class names a sidebar but that holds the page's `<main>` (Genesis's
        // `content-sidebar-wrap`) is no furniture.
        let holds_main = if present.main { any_below(dom, &order, |id| dom.name(id) == Some("main")) } else { vec![false; n] };
        // A slider of testimonials or features is text; one of teasers is links.
        let unlinked = if present.slider { text_below(dom, &order, |id| never(id) || dom.name(id) == Some("a")) } else { vec![0; n] };
        // A page builder's widgets are its text inside its document of the page.
        let in_builder = if present.builder {
            any_above(dom, &order, |id| matches!(dom.kind(id), Kind::Element { marks, .. } if marks.builder_document))
        } else {
            vec![false; n]
        };
        // A comment section after a marked story, outside it: the page says where its story is,
        // so the comments are not it, however many there are (up to the reviews' share). Node ids
        // follow the document's order.
        let stories: Vec<Id> = if present.comment_section && !declared.thread {
            (0..n as Id)
                .filter(|&id| matches!(dom.kind(id), Kind::Element { marks, .. } if marks.content) && visible[id as usize] >= MIN_MARKED)
                .collect()
        } else {
            Vec::new()
        };
        let after_story = |id: Id| stories.iter().any(|&s| s < id && !dom.within(id, s));
        let by_class = |id: Id| match dom.kind(id) {
            Kind::Element { marks, .. } => {
                let i = id as usize;
                let furniture = marks.boilerplate
                    && !(marks.widget_only && in_builder[i])
                    && !(marks.comment_only && declared.thread)
                    && !(marks.beside_only && long_paragraph[i])
                    && !(marks.slider_only && unlinked[i] as f64 >= SLIDE_TEXT * visible[i] as f64);
                let aside = (declared.product && marks.reviews || marks.comment_section && after_story(id))
                    && (visible[i] as f64) < REVIEWS_GUARD * total;
                (aside || furniture && (visible[i] as f64) < GUARD * total) && !holds_main[i]
            }
            _ => false,
        };
        // A form that asks for an email address and takes no message (`<textarea>`) is a sign-up
        // box: a newsletter's, an account's (trafilatura drops every form; ASP.NET pages wrap
        // the whole page in one, hence the guard).
        // Forms are few: each is walked, not the whole tree (in order, so searched by halves).
        let signups: Vec<Id> = if present.email_field {
            (0..n as Id)
                .filter(|&id| dom.name(id) == Some("form") && (visible[id as usize] as f64) < GUARD * total)
                .filter(|&form| {
                    let (mut email, mut message) = (false, false);
                    dom.walk(form, |_| true, |step| {
                        if let Step::Open(id) = step {
                            email |= matches!(dom.kind(id), Kind::Element { marks, .. } if marks.email_field);
                            message |= dom.name(id) == Some("textarea");
                        }
                    });
                    email && !message
                })
                .collect()
        } else {
            Vec::new()
        };
        let signup = |id: Id| signups.binary_search(&id).is_ok();
        let story = declared.article && !declared.thread;
        let never_content =
            |id: Id| matches!(dom.kind(id), Kind::Element { marks, .. } if marks.never_content || (story && marks.comment_section)) && by_class(id);
        // The lenient reading reads `<noscript>` for a page's copy, not for its notice that
        // JavaScript is off.
        let notice = |id: Id| dom.name(id) == Some("noscript") && visible[id as usize] < NOSCRIPT_COPY && says_javascript(dom, id);
        let dropped: Vec<bool> =
            (0..n as Id).map(|id| never(id) || signup(id) || if strict { by_class(id) } else { never_content(id) || notice(id) }).collect();
        let prose = text_below(dom, &order, |id| dropped[id as usize] || dom.name(id) == Some("a"));
        let gone = any_above(dom, &order, |id| dropped[id as usize]);
        Self { dom, dropped, gone, prose, order, strict }
    }

    /// `core`'s ancestors below `<body>`, climbed while each holds at most [`WIDEN`] times the
    /// prose of the one below: the element that also holds what sits beside the main text (a
    /// lede above the body, a last paragraph below a gallery), not yet the page around it.
    pub fn widen(&self, core: Id) -> Id {
        let dom = self.dom;
        let mut top = core;
        while let Some(p) = dom.parent(top) {
            let page = p == dom.root() || matches!(dom.name(p), Some("body" | "html"));
            if page || self.prose[p as usize] as f64 > WIDEN * self.prose[top as usize] as f64 {
                break;
            }
            top = p;
        }
        top
    }

    /// The parent of the sections when `core` sits in one of [`MIN_SECTIONS`] or more sibling
    /// `<section>`s that each hold [`SECTION_TEXT`] bytes of prose: a page built of sections, whose
    /// main text is all of them.
    pub fn sections_around(&self, core: Id) -> Option<Id> {
        let dom = self.dom;
        let mut section = core;
        while dom.name(section) != Some("section") {
            if matches!(dom.name(section), None | Some("body" | "html")) {
                return None;
            }
            section = dom.parent(section)?;
        }
        let parent = dom.parent(section).filter(|&p| dom.name(p).is_some_and(|n| n != "html"))?;
        let mut sections = 0;
        let mut child = dom.first_child(parent);
        while let Some(c) = child {
            sections += usize::from(dom.name(c) == Some("section") && !self.dropped[c as usize] && self.prose[c as usize] >= SECTION_TEXT);
            child = dom.next_sibling(c);
        }
        (sections >= MIN_SECTIONS).then_some(parent)
    }

    /// The element whose children repeat one tag and class most, weighed by the text they hold
    /// (a listing's cards, a collection's grid, a forum's posts, a table's rows); `None` when no
    /// element has [`MIN_ITEMS`] such children holding text.
    pub fn items(&self, main: Id) -> Option<Items> {
        let dom = self.dom;
        let text = text_below(dom, &self.order, |id| self.dropped[id as usize]);
        // Links under each node: a menu's entries are all link, a few words each.
        let mut links = vec![0usize; dom.nodes.len()];
        for &id in self.order.iter().rev() {
            // A link without text (an image's) is no menu entry.
            if dom.name(id) == Some("a") && !self.gone[id as usize] && text[id as usize] > 0 {
                links[id as usize] += 1;
            }
            if let Some(p) = dom.parent(id) {
                links[p as usize] += links[id as usize];
            }
        }
        // Under the main element `main`, unless that is the whole page, and in the strict reading
        // only: the lenient one keeps the menus that class words mark.
        let inside = if self.strict && !matches!(dom.name(main), None | Some("body" | "html")) {
            any_above(dom, &self.order, |id| id == main)
        } else {
            vec![false; dom.nodes.len()]
        };
        let mut best: Option<Items> = None;
        let mut shapes: Vec<(u32, usize, usize, usize)> = Vec::new();
        for &id in &self.order {
            if !matches!(dom.kind(id), Kind::Element { .. }) || text[id as usize] == 0 || self.gone[id as usize] {
                continue;
            }
            shapes.clear();
            let mut child = dom.first_child(id);
            while let Some(c) = child {
                child = dom.next_sibling(c);
                let Kind::Element { marks, name, .. } = dom.kind(c) else { continue };
                // Items are blocks that hold several things; sibling paragraphs are an article's.
                // A card may be one link around its picture and title.
                if !matches!(&**name, "li" | "div" | "article" | "section" | "tr" | "dd" | "a") || self.gone[c as usize] {
                    continue;
                }
                let (held, n) = (text[c as usize], links[c as usize]);
                match shapes.iter_mut().find(|s| s.0 == marks.shape) {
                    Some(s) => {
                        s.1 += usize::from(held >= MIN_ITEM);
                        s.2 += held;
                        s.3 += n;
                    }
                    None => shapes.push((marks.shape, usize::from(held >= MIN_ITEM), held, n)),
                }
            }
            let per_link = if inside[id as usize] { MIN_TEXT_PER_LINK_INSIDE } else { MIN_TEXT_PER_LINK };
            for &(_, items, held, links) in &shapes {
                let menu = held < per_link * links;
                if items >= MIN_ITEMS && !menu && best.as_ref().is_none_or(|b| held > b.text) {
                    best = Some(Items { list: id, text: held, count: items });
                }
            }
        }
        best
    }

    /// How many other elements drawn as `id` is (same tag and class), near it, the reading
    /// dropped: a thread's replies beside its first post, when their class words mark them as
    /// comments. Near: under its ancestor [`THREAD_LEVELS`] up (a page's other wrappers of the
    /// same class, in its header and footer, are no replies).
    pub fn dropped_twins(&self, id: Id) -> usize {
        let dom = self.dom;
        let Kind::Element { marks, .. } = dom.kind(id) else { return 0 };
        if !marks.classed {
            return 0;
        }
        let shape = marks.shape;
        let mut thread = id;
        for _ in 0..THREAD_LEVELS {
            thread = dom.parent(thread).unwrap_or(thread);
        }
        let mut twins = 0;
        dom.walk(thread, |_| true, |step| {
            if let Step::Open(o) = step {
                let twin = matches!(dom.kind(o), Kind::Element { marks, .. } if marks.shape == shape);
                twins += usize::from(o != id && twin && self.gone[o as usize]);
            }
        });
        twins
    }

    pub fn dropped(&self, id: Id) -> bool {
        self.dropped[id as usize]
    }

    /// The element that holds the main text: the marked container with the most prose, unless a
    /// parent of paragraphs holds more than twice as much; the document when there is neither.
    pub fn content_root(&self) -> Id {
        let dom = self.dom;
        let mut marked: Option<Id> = None;
        let mut score = vec![0usize; dom.nodes.len()];
        for &id in &self.order {
            let i = id as usize;
            let Kind::Element { marks, name, .. } = dom.kind(id) else { continue };
            // Inside a dropped element, nothing is a candidate.
            if self.gone[i] {
                continue;
            }
            let prose = self.prose[i];
            if marks.content && prose >= MIN_MARKED && marked.is_none_or(|m| prose > self.prose[m as usize]) {
                marked = Some(id);
            }
            if matches!(&**name, "p" | "pre" | "blockquote" | "td" | "li") && prose >= MIN_PARAGRAPH {
                if let Some(p) = dom.parent(id) {
                    score[p as usize] += prose;
                    if let Some(g) = dom.parent(p) {
                        score[g as usize] += prose / 2;
                    }
                }
            }
        }
        // The highest score, the first in creation order among equals.
        let para = (0..score.len()).filter(|&i| score[i] > 0).max_by_key(|&i| (score[i], std::cmp::Reverse(i))).map(|i| i as Id);
        match (marked, para) {
            (Some(m), Some(p)) if self.prose[p as usize] > 2 * self.prose[m as usize] => p,
            (Some(m), _) => m,
            (None, Some(p)) => p,
            (None, None) => dom.root(),
        }
    }
}
