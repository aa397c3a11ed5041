//! What an element's tag and attributes say about it, decided once when the parser creates it:
//! hidden or never text (scripts, navigation, forms' controls), boilerplate by its class or id
//! (menus, share bars, cookie banners), or marked as the main content (`<article>`,
//! `itemprop=articleBody`, `class="entry-content"`). The lists follow trafilatura's and
//! readability's; a rule here is a word a web page uses, not a fit to any test page.

use std::hash::{Hash, Hasher};
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use html5ever::{local_name, Attribute, LocalName};

/// Tags whose content is never main text (`rt`, `rp`: the reading aids over Japanese and
/// Chinese characters, which would otherwise be read twice). Not `form`: ASP.NET pages and
/// forums wrap the whole page in one (its controls are dropped by their own tags). Not `header`:
/// article headers hold the title. Not `time`: a list's items keep their dates (rendering leaves
/// it out elsewhere).
fn never_text(tag: &str) -> bool {
    matches!(
        tag,
        "script" | "style" | "iframe" | "svg" | "nav" | "footer" | "button" | "input" | "select"
            | "textarea" | "template" | "object" | "embed" | "canvas" | "video" | "audio" | "map" | "picture"
            | "menu" | "dialog" | "head" | "label" | "option" | "math"
            | "rt" | "rp"
    )
}

/// Tags whose content is main text only on a page that has too little without it: a script-free
/// copy of the page (Blogger puts whole posts in `<noscript>`), asides (a lede in `<aside>`),
/// fieldsets (a form's groups of controls, but old pages frame their whole article in one) and
/// figures (a picture and its caption, but also a quote: testimonials in `<figure><blockquote>`).
fn last_resort(tag: &str) -> bool {
    matches!(tag, "noscript" | "aside" | "fieldset" | "figure")
}

/// ARIA roles of page furniture.
const FURNITURE_ROLES: &[&str] = &["navigation", "banner", "contentinfo", "complementary", "dialog"];

/// ARIA roles of a menu and its entries: never text, as a `<menu>` is not. A menu is a widget of
/// choices (a mega-menu's columns, a utility bar's "Support" and "Cart"), never a wrapper left
/// open around an article as a broken page's `role=banner` header can be.
const MENU_ROLES: &[&str] = &["menu", "menubar", "menuitem", "menuitemcheckbox", "menuitemradio"];

// The word lists below are matched against the lowercased values of class, id, role and
// itemprop, and against the same values split into words (`-` before each word; separators and
// camelCase humps start a word, so `tagStyle` is `-tag-style-` and `Report__Section--Ads` is
// `-report-section-ads-`). A word written without a `-` is found anywhere, even inside a longer
// word (`navig` in `mainnavigation`); one written with a leading `-` only where a word starts, and
// with a trailing one only as the whole word: short words are parts of unrelated ones (`tags` in
// `tagStyle`, `rating` in `operating`, `login` in `bloginner`).

/// Words that mark what is never content, on any page: cookie and consent banners, sign-up and
/// log-in boxes, breadcrumbs, copyright lines. Even the lenient reading drops these.
const NEVER_CONTENT: &[&str] = &[
    "cookie", "consent", "newsletter", "breadcrumb", "subscribe", "signup", "-login", "skip-link", "copyright",
    "donat",
];

/// The ids and classes consent-management platforms give their banners and preference centers
/// (OneTrust, Cookiebot, Didomi, Quantcast Choice, Usercentrics): dropped even where they hold
/// most of a page's text, as a preference center listing a hundred vendors does on a short
/// listing page. Only the platforms' own prefixes: a site's `cookie-notice` wrapper may hold more.
const CONSENT_MANAGERS: &[&str] = &["onetrust", "-ot-sdk", "cybotcookiebot", "didomi", "qc-cmp", "usercentrics"];

/// Words that mark page furniture on an article, though a paywalled article is `isPaywall`: the
/// lenient reading ignores them.
const FURNITURE: &[&str] = &[
    "footer", "sidebar", "navig", "navbar", "-nav-", "menu", "related", "recommend", "trending",
    "most-popular", "mostpopular", "-author", "byline", "pagination", "-pager", "masthead", "site-header", "-bio-",
    "user-info", "postmeta", "entry-utility", "attachment", "-infos", "-contact", "-disclaimer", "-notice",
    "recirculation", "-embed", "-legend", "paywall", "postprofile", "-signature", "upsell", "cross-sell", "crosssell",
    "recently-viewed", "recentlyviewed",
];

/// Words that mark a widget: a blog's sidebar boxes and a theme's recent-posts lists, but also a
/// page builder's building blocks (Elementor's `elementor-widget`), which are the page's text
/// inside the builder's document of it ([`Marks::builder_document`]). Furniture otherwise, which
/// the lenient reading ignores.
const WIDGETS: &[&str] = &["-widget"];

/// Words that mark what usually sits beside the text (share bars, ad slots, captions) but also
/// label sections that hold it (`TestReport__Section--Ads`): these are boilerplate only while
/// they hold no long paragraph.
const BESIDE: &[&str] = &[
    "-share", "sharing", "social", "banner", "advert", "-ad-slot", "-ads-", "popup", "popover", "-modal", "-promo", "-tags-",
    "tagcloud", "toolbar", "-print", "-rating", "caption", "-credit", "-cta",
];

/// Words that mark the main content (they win over boilerplate words:
/// `class="post-content share-wrapper"` is content).
const CONTENT: &[&str] = &[
    "articlebody", "article-body", "article__body", "article-content", "article_content", "articlecontent",
    "post-content", "post_content", "postcontent", "entry-content", "entry_content", "entrycontent", "story-body",
    "storybody", "post-body", "postbody", "blog-post", "main-content", "maincontent", "content-body", "text-content",
    "rich-text", "richtext",
];

/// Words that hold a furniture word but name something else: an opinion piece
/// (`commentary`) is an article, not its comments (trafilatura's comment rule excepts it too).
/// A furniture or beside word found inside one of these does not count.
const NOT_FURNITURE: &[&str] = &["commentary"];

/// Words that mark a panel a reader opens (an accordion's): hidden until then, but text.
const PANELS: &[&str] = &["accordion"];

/// Words that mark a slider or carousel: of teasers beside an article (furniture), or of a
/// service page's testimonials and features (text); told apart by their links.
const SLIDERS: &[&str] = &["-slide"];

/// Words that mark comments: furniture under an article, but a forum thread's replies are
/// `comment`s too, read on a page that declares a thread ([`super::declared`]) and by the lenient
/// reading, which ignores them.
const COMMENTS: &[&str] = &["comment"];

/// Words that mark a comment section (its list and its form), not one comment: left out of the
/// lenient reading too on an article whose story the strict reading found.
const COMMENT_SECTIONS: &[&str] = &["-comments", "commentlist", "comment-list"];

/// Words that mark customers' reviews (and the widgets shops embed for them): beside the product
/// on a product page, as trafilatura drops `ProductReviews`, but the content of a review site's
/// listing or a service page's testimonials, so furniture only on a page that declares a product.
const REVIEWS: &[&str] = &["-reviews", "yotpo", "jdgm", "bazaarvoice"];

/// The word lists in one automaton (consent managers, never-content, furniture, widgets, comments,
/// beside, content words, the exceptions, panels, sliders, reviews, then comment sections), and for
/// each word whether it must start a word.
struct Lists {
    automaton: AhoCorasick,
    anchored: Vec<bool>,
}

fn list_words() -> impl Iterator<Item = &'static &'static str> {
    CONSENT_MANAGERS.iter().chain(NEVER_CONTENT).chain(FURNITURE).chain(WIDGETS).chain(COMMENTS).chain(BESIDE).chain(CONTENT).chain(NOT_FURNITURE).chain(PANELS).chain(SLIDERS).chain(REVIEWS).chain(COMMENT_SECTIONS)
}

static LISTS: LazyLock<Lists> = LazyLock::new(|| Lists {
    // A DFA: about 200 words fit in a small one, and it searches faster than the default.
    automaton: AhoCorasick::builder().kind(Some(AhoCorasickKind::DFA)).build(list_words()).expect("the word lists are valid patterns"),
    anchored: list_words().map(|w| w.starts_with('-')).collect(),
});

/// `value` split into words, each started by `-`, lowercased, with a `-` at the end.
fn push_split(out: &mut String, value: &str) {
    let mut lower_before = false;
    out.push('-');
    for c in value.chars() {
        // Class names are ASCII but for a few: the ASCII tests first, as Unicode's case tables
        // cost more than the rest of the element's marking.
        let (alphanumeric, upper, lower_or_digit) = if c.is_ascii() {
            (c.is_ascii_alphanumeric(), c.is_ascii_uppercase(), c.is_ascii_lowercase() || c.is_ascii_digit())
        } else {
            (c.is_alphanumeric(), c.is_uppercase(), c.is_lowercase() || c.is_numeric())
        };
        if alphanumeric {
            if upper && lower_before {
                out.push('-');
            }
            lower_before = lower_or_digit;
            if c.is_ascii() {
                out.push(c.to_ascii_lowercase());
            } else {
                out.extend(c.to_lowercase());
            }
        } else {
            lower_before = false;
            if !out.ends_with('-') {
                out.push('-');
            }
        }
    }
    if !out.ends_with('-') {
        out.push('-');
    }
}

/// Whether an attribute value holds a furniture, beside or content word. The value is
/// lowercased, then split into words, and searched once for all lists; overlapping, so that one
/// word found does not hide another that overlaps it. No list word holds a space or `--`, so none
/// spans two values: an element's words are those of its values together.
/// `words` and `found` are the search's buffers, reused.
fn words_of(value: &str, words: &mut String, found: &mut Vec<aho_corasick::Match>) -> Words {
    words.clear();
    words.push_str(value);
    words.make_ascii_lowercase();
    let glued = words.len();
    words.push('\n');
    push_split(words, value);
    let mut out = Words::default();
    let consent_end = CONSENT_MANAGERS.len();
    let never_end = consent_end + NEVER_CONTENT.len();
    let furniture_end = never_end + FURNITURE.len();
    let widgets_end = furniture_end + WIDGETS.len();
    let comments_end = widgets_end + COMMENTS.len();
    let beside_end = comments_end + BESIDE.len();
    let content_end = beside_end + CONTENT.len();
    let panels_start = content_end + NOT_FURNITURE.len();
    let sliders_start = panels_start + PANELS.len();
    let reviews_start = sliders_start + SLIDERS.len();
    let comment_sections_start = reviews_start + REVIEWS.len();
    found.clear();
    found.extend(LISTS.automaton.find_overlapping_iter(words.as_str()));
    let excepted = |start: usize, end: usize| {
        found.iter().any(|n| (content_end..panels_start).contains(&n.pattern().as_usize()) && n.start() <= start && end <= n.end())
    };
    for m in found.iter() {
        let i = m.pattern().as_usize();
        // A word that must start a word counts only in the split values.
        if LISTS.anchored[i] && m.start() < glued {
            continue;
        }
        match i {
            i if i < consent_end => out.consent_manager = true,
            i if i < beside_end && excepted(m.start(), m.end()) => {}
            i if i < never_end => out.never_content = true,
            i if i < furniture_end => out.furniture = true,
            i if i < widgets_end => out.widget = true,
            i if i < comments_end => out.comment = true,
            i if i < beside_end => out.beside = true,
            i if i < content_end => out.content = true,
            i if i >= comment_sections_start => out.comment_section = true,
            i if i >= reviews_start => out.reviews = true,
            i if i >= sliders_start => out.slider = true,
            i if i >= panels_start => out.panel = true,
            _ => {}
        }
    }
    out
}

/// Whether a class attribute is a page builder's for the document it renders a page's own
/// content into, and nothing else: Elementor's `elementor elementor-{post id}` (its header,
/// footer, popup and loop-item templates add a class of their own, `elementor-location-header`,
/// `e-loop-item`: their widgets are furniture) or SiteOrigin Page Builder's `panel-layout`.
fn builder_document(class: &str) -> bool {
    let mut names = class.split_ascii_whitespace();
    let numbered = |n: &str| n.strip_prefix("elementor-").is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()));
    match names.next() {
        Some("elementor") => names.next().is_some_and(numbered) && names.next().is_none(),
        Some("panel-layout") => names.next().is_none(),
        _ => false,
    }
}

/// Whether a class name is one an item of a list has of its own, not one of its kind: WordPress's
/// and WooCommerce's terms and states on each post and product (`category-news`, `tag-*`,
/// `product_cat-*`, `status-*`, `format-*`, `product-type-*`, stock and sale), and a position in
/// a row (`first`, `last`, `odd`, `even`, `alt`).
fn item_own(class: &str) -> bool {
    const PREFIXES: &[&str] = &["category-", "tag-", "product_cat-", "product_tag-", "format-", "product-type-", "status-"];
    const NAMES: &[&str] = &[
        "first", "last", "odd", "even", "alt", "instock", "outofstock", "onbackorder", "sale", "featured", "sticky",
        "has-post-thumbnail", "purchasable", "taxable", "shipping-taxable", "downloadable", "virtual",
    ];
    PREFIXES.iter().any(|p| class.starts_with(p)) || NAMES.contains(&class)
}

/// Which lists an element's attribute values hold a word of.
#[derive(Clone, Copy, Default)]
struct Words {
    consent_manager: bool,
    never_content: bool,
    furniture: bool,
    beside: bool,
    content: bool,
    panel: bool,
    slider: bool,
    reviews: bool,
    widget: bool,
    comment: bool,
    comment_section: bool,
}

impl std::ops::BitOrAssign for Words {
    fn bitor_assign(&mut self, other: Words) {
        self.consent_manager |= other.consent_manager;
        self.never_content |= other.never_content;
        self.furniture |= other.furniture;
        self.beside |= other.beside;
        self.content |= other.content;
        self.panel |= other.panel;
        self.slider |= other.slider;
        self.reviews |= other.reviews;
        self.widget |= other.widget;
        self.comment |= other.comment;
        self.comment_section |= other.comment_section;
    }
}

/// What a class attribute says whatever its element's tag.
#[derive(Clone, Copy)]
struct Class {
    words: Words,
    /// A hash of the class names without a digit or [`item_own`]: `None` when no name is left.
    /// Class names that hold a digit are mostly an item's own (WordPress's `post-30149`, a
    /// builder's `element-6cd458d`), and so are those names: items drawn alike differ in them.
    kind: Option<u64>,
    builder_document: bool,
    classed: bool,
    hidden: bool,
}

/// Whether a class list hides its element as CSS frameworks' utility classes do (Bootstrap's
/// `hide`, `hidden` and `d-none`, Tailwind's `hidden`, Bulma's `is-hidden`) or shows it to screen
/// readers alone (`sr-only`, `visually-hidden`, WordPress's `screen-reader-text`), unless another
/// class shows it at some screen width (`md:block`, `d-lg-flex`, `visible-md`, `show@medium`).
fn hidden_by_class(value: &str) -> bool {
    const HIDING: &[&str] = &["hide", "hidden", "d-none", "is-hidden", "u-hidden", "invisible", "sr-only", "visually-hidden", "screen-reader-text"];
    let names = || value.split_ascii_whitespace();
    names().any(|n| HIDING.contains(&n))
        && !names().any(|n| n.contains(':') || n.contains('@') || n.starts_with("visible-") || n.starts_with("show") || (n.starts_with("d-") && n != "d-none"))
}

impl Class {
    fn of(value: &str, words: Words) -> Class {
        let mut names = value.split_ascii_whitespace().filter(|c| !c.bytes().any(|b| b.is_ascii_digit()) && !item_own(c)).peekable();
        let kind = names.peek().is_some().then(|| {
            let mut h = rustc_hash::FxHasher::default();
            names.for_each(|name| name.hash(&mut h));
            h.finish()
        });
        Class { words, kind, builder_document: builder_document(value), classed: !value.trim().is_empty(), hidden: hidden_by_class(value) }
    }
}

/// What each class, role and itemprop value one page has says, found once (a page draws most of
/// its elements from a few classes, and the word search is most of the cost of marking an
/// element), and the search's buffers.
#[derive(Default)]
pub struct WordsSeen {
    classes: rustc_hash::FxHashMap<Box<str>, Class>,
    values: rustc_hash::FxHashMap<Box<str>, Words>,
    words: String,
    found: Vec<aho_corasick::Match>,
}

impl WordsSeen {
    fn class(&mut self, value: &str) -> Class {
        let (words, found) = (&mut self.words, &mut self.found);
        remembered(&mut self.classes, value, || Class::of(value, words_of(value, words, found)))
    }

    fn of(&mut self, value: &str) -> Words {
        let (words, found) = (&mut self.words, &mut self.found);
        remembered(&mut self.values, value, || words_of(value, words, found))
    }

    /// Not remembered: for an id, which a page has once.
    fn search(&mut self, value: &str) -> Words {
        words_of(value, &mut self.words, &mut self.found)
    }
}

/// What `seen` holds for `value`, or what `find` finds, remembered.
fn remembered<T: Copy>(seen: &mut rustc_hash::FxHashMap<Box<str>, T>, value: &str, find: impl FnOnce() -> T) -> T {
    if let Some(found) = seen.get(value) {
        return *found;
    }
    let found = find();
    seen.insert(value.into(), found);
    found
}

/// The attributes [`Marks::of`] reads: the parser is given no other attribute's value.
pub const READ_ATTRIBUTES: &[&str] = &["class", "id", "role", "itemprop", "style", "hidden", "type"];

/// What the tag and attributes of one element say.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Marks {
    /// Never text: a tag [`never_text`] names.
    pub never_text: bool,
    /// Hidden: `hidden`, `display:none` or a hiding class ([`hidden_by_class`]); not text unless
    /// it holds most of the page (decided later). Not `aria-hidden`: it hides from screen readers
    /// what every reader sees (a card's second link around its summary).
    pub hidden: bool,
    /// Hidden by a class ([`hidden_by_class`]): the site's own style for a state its script
    /// toggles, never a whole body waiting for a script, so not read however much of the page
    /// it holds.
    pub hidden_by_class: bool,
    /// A [`last_resort`] tag.
    pub last_resort: bool,
    /// Boilerplate by its class, id or a furniture role, unless it holds most of the page
    /// (decided later).
    pub boilerplate: bool,
    /// Boilerplate only by [`BESIDE`] words: kept when it holds a long paragraph.
    pub beside_only: bool,
    /// Boilerplate only by [`SLIDERS`] words: kept when its text is not links.
    pub slider_only: bool,
    /// Boilerplate only by a [`WIDGETS`] word: kept inside a page builder's document.
    pub widget_only: bool,
    /// Boilerplate only by a [`COMMENTS`] word: kept on a page that declares a thread.
    pub comment_only: bool,
    /// Boilerplate only by a [`COMMENTS`] word, and a [`COMMENT_SECTIONS`] word.
    pub comment_section: bool,
    /// A page builder's document of the page's own content ([`builder_document`]).
    pub builder_document: bool,
    /// Named for customers' reviews ([`REVIEWS`]): boilerplate on a product page.
    pub reviews: bool,
    /// Boilerplate by a [`NEVER_CONTENT`] word: dropped by the lenient reading too.
    pub never_content: bool,
    /// A consent manager's own element ([`CONSENT_MANAGERS`]): never text, however much it holds.
    pub consent_manager: bool,
    /// Marked as the main content.
    pub content: bool,
    /// A field for an email address (`<input type=email>`): a form that has one and no
    /// `<textarea>` is a sign-up box (decided later).
    pub email_field: bool,
    /// A hash of the tag and the class names without a digit: elements that share it are drawn
    /// alike (a listing's cards, a forum's posts).
    pub shape: u32,
    /// It has a class: its shape is more than its tag.
    pub classed: bool,
}

impl Marks {
    pub fn of(tag: &LocalName, attrs: &[Attribute], seen: &mut WordsSeen) -> Self {
        let tag: &str = tag;
        // One pass, names compared as atoms: this runs for every element of every page. The
        // names are [`READ_ATTRIBUTES`]; the first of a name counts.
        let (mut class, mut id, mut role, mut itemprop, mut style, mut hidden, mut kind) = (None, None, None, None, None, false, None);
        for a in attrs {
            let value = Some(&*a.value);
            match a.name.local {
                local_name!("class") => class = class.or(value),
                local_name!("id") => id = id.or(value),
                local_name!("role") => role = role.or(value),
                local_name!("itemprop") => itemprop = itemprop.or(value),
                local_name!("style") => style = style.or(value),
                local_name!("hidden") => hidden = true,
                local_name!("type") => kind = kind.or(value),
                _ => {}
            }
        }
        let class = class.map(|c| seen.class(c));
        let mut words = class.map_or_else(Words::default, |c| c.words);
        for value in [role, itemprop].into_iter().flatten() {
            words |= seen.of(value);
        }
        if let Some(id) = id {
            words |= seen.search(id);
        }
        let role = role.map(str::to_ascii_lowercase);
        // A tab's or an accordion's panel is hidden until its tab or title is chosen: every
        // reader can open it.
        let panel = words.panel || role.as_deref() == Some("tabpanel");
        let hidden_by_class = !panel && class.is_some_and(|c| c.hidden);
        let hidden = hidden_by_class
            || (!panel
                && (hidden
                    || style.is_some_and(|s| {
                        // Most styles say neither; only those that might are read closely.
                        let lower = s.to_ascii_lowercase();
                        (lower.contains("none") || lower.contains("hidden")) && {
                            let s: String = lower.chars().filter(|c| !c.is_whitespace()).collect();
                            s.contains("display:none") || s.contains("visibility:hidden")
                        }
                    })));
        let shape = {
            let mut h = rustc_hash::FxHasher::default();
            tag.hash(&mut h);
            if let Some(kind) = class.and_then(|c| c.kind) {
                kind.hash(&mut h);
            }
            h.finish() as u32
        };
        let (furniture_word, beside_word, content_word) = (words.furniture || words.widget || words.comment || words.never_content, words.beside, words.content);
        let page = matches!(tag, "html" | "body" | "article" | "main");
        // A role is furniture as a class word is, not as a tag: a broken page can leave its
        // `role=banner` header open around the whole article, and the guard then keeps it.
        let furniture_role = role.as_deref().is_some_and(|r| FURNITURE_ROLES.contains(&r));
        // What makes an element boilerplate besides a widget or comment word: either of those
        // alone is kept on some pages (a builder's document, a declared thread).
        let other_boilerplate = words.furniture || words.never_content || beside_word || words.slider || furniture_role;
        let comment_only = words.comment && !words.widget && !other_boilerplate;
        Marks {
            never_text: never_text(tag) || role.as_deref().is_some_and(|r| MENU_ROLES.contains(&r)),
            hidden,
            hidden_by_class,
            last_resort: last_resort(tag),
            boilerplate: !page && !content_word && (furniture_word || beside_word || words.slider || furniture_role),
            beside_only: beside_word && !furniture_word && !furniture_role,
            slider_only: words.slider && !beside_word && !furniture_word && !furniture_role,
            widget_only: words.widget && !words.comment && !other_boilerplate,
            comment_only,
            comment_section: comment_only && words.comment_section,
            builder_document: class.is_some_and(|c| c.builder_document),
            reviews: !page && !content_word && words.reviews,
            never_content: !page && !content_word && words.never_content,
            consent_manager: !page && words.consent_manager,
            content: matches!(tag, "article" | "main")
                || role.as_deref() == Some("main")
                || itemprop.is_some_and(|v| v.eq_ignore_ascii_case("articlebody"))
                || content_word,
            email_field: tag == "input" && kind.is_some_and(|k| k.trim().eq_ignore_ascii_case("email")),
            shape,
            classed: class.is_some_and(|c| c.classed),
        }
    }

    /// Attributes added later (the parser adds a second `<html>` or `<body>` tag's): either
    /// set counts. Those two tags are never boilerplate.
    pub fn add(&mut self, other: &Marks) {
        self.never_text |= other.never_text;
        self.hidden |= other.hidden;
        self.content |= other.content;
    }
}

#[cfg(test)]
mod tests {
    use html5ever::{ns, QualName};

    use super::*;

    fn attributes(pairs: &[(&str, &str)]) -> Vec<Attribute> {
        pairs.iter().map(|(k, v)| Attribute { name: QualName::new(None, ns!(), LocalName::from(*k)), value: (*v).into() }).collect()
    }

    fn marks(tag: &str, attrs: &[(&str, &str)]) -> Marks {
        Marks::of(&LocalName::from(tag), &attributes(attrs), &mut WordsSeen::default())
    }

    #[test]
    fn a_word_is_found_in_one_value_or_not_at_all() {
        // What lets `WordsSeen` search each value alone: no word spans a value's end.
        for word in list_words() {
            assert!(!word.contains(' ') && !word.contains("--"), "{word:?} could span two values");
        }
        // One value's words still weigh with another's: a content word in the class keeps an
        // element whose id names a share bar, searched anew or remembered.
        assert!(marks("div", &[("id", "share-buttons")]).boilerplate);
        let both = marks("div", &[("class", "post-body"), ("id", "share-buttons")]);
        assert!(both.content && !both.boilerplate);
        let mut seen = WordsSeen::default();
        let div = LocalName::from("div");
        assert!(Marks::of(&div, &attributes(&[("id", "share-buttons")]), &mut seen).boilerplate);
        assert_eq!(Marks::of(&div, &attributes(&[("class", "post-body"), ("id", "share-buttons")]), &mut seen), both);
    }

    #[test]
    fn tags_attributes_and_class_words_mark_elements() {
        assert!(marks("script", &[]).never_text);
        assert!(marks("div", &[("style", "color: red; display : none")]).hidden);
        assert!(marks("div", &[("hidden", "")]).hidden);
        // CSS frameworks' hiding classes hide, unless another class shows the element on some screen.
        for class in ["row hide", "d-none", "hidden", "sr-only", "price screen-reader-text"] {
            assert!(marks("div", &[("class", class)]).hidden, "{class}");
        }
        for class in ["hidden md:block", "d-none d-lg-flex", "hide show@medium", "hidden-xs", "is-hideable"] {
            assert!(!marks("div", &[("class", class)]).hidden, "{class}");
        }
        // A panel a reader opens is not hidden; a popover sits beside the text.
        assert!(!marks("div", &[("role", "tabpanel"), ("hidden", "")]).hidden);
        assert!(!marks("dd", &[("class", "cmp-accordion__panel--hidden"), ("hidden", "")]).hidden);
        assert!(marks("div", &[("class", "iPwaInstallPopover")]).boilerplate);
        let nav = marks("div", &[("role", "Navigation")]);
        assert!(nav.boilerplate && !nav.beside_only && !nav.never_text);
        // A menu's roles are a menu's tag: never text, however little else the page holds.
        for role in ["menu", "MenuBar", "menuitem"] {
            assert!(marks("div", &[("role", role)]).never_text, "{role}");
        }
        assert!(!marks("div", &[("role", "main")]).never_text);
        assert!(marks("div", &[("class", "Site-Footer")]).boilerplate);
        assert!(marks("div", &[("id", "cookie-consent")]).boilerplate && marks("div", &[("id", "cookie-consent")]).never_content);
        assert!(!marks("div", &[("class", "comment-list")]).never_content && !marks("div", &[("class", "isPaywall")]).never_content);
        assert!(marks("div", &[("id", "onetrust-pc-sdk")]).consent_manager && marks("div", &[("id", "CybotCookiebotDialog")]).consent_manager);
        assert!(marks("div", &[("class", "ot-sdk-row")]).consent_manager && !marks("div", &[("class", "spot-sdk")]).consent_manager);
        assert!(!marks("div", &[("id", "cookie-consent")]).consent_manager);
        let slider = marks("div", &[("class", "testimonial-slider")]);
        assert!(slider.boilerplate && slider.slider_only && !marks("div", &[("class", "slider sidebar")]).slider_only);
        // A widget is furniture but for a page builder's own: its document is told apart from
        // its header, footer and popup templates.
        let widget = marks("div", &[("class", "elementor-element elementor-widget elementor-widget-text-editor")]);
        assert!(widget.boilerplate && widget.widget_only && !marks("div", &[("class", "widget sidebar-box")]).widget_only);
        assert!(marks("div", &[("class", "elementor elementor-4412")]).builder_document);
        assert!(marks("div", &[("class", "panel-layout"), ("id", "pl-560")]).builder_document);
        assert!(!marks("div", &[("class", "panel-layout sidebar")]).builder_document);
        assert!(!marks("div", &[("class", "elementor elementor-12 elementor-location-header")]).builder_document);
        assert!(!marks("div", &[("class", "elementor elementor-")]).builder_document && !marks("div", &[("class", "elementor")]).builder_document);
        let comment = marks("li", &[("class", "Item ItemComment")]);
        assert!(comment.boilerplate && comment.comment_only && !marks("div", &[("class", "comment-nav")]).comment_only);
        assert!(!comment.comment_section && marks("ol", &[("class", "commentlist")]).comment_section);
        assert!(marks("div", &[("id", "comments")]).comment_section && !marks("div", &[("class", "commentsNav")]).comment_section);
        // Reviews are marked apart: furniture only on a product page.
        let reviews = marks("div", &[("id", "customerReviews")]);
        assert!(reviews.reviews && !reviews.boilerplate && marks("div", &[("class", "yotpo-main-widget")]).reviews);
        assert!(!marks("div", &[("class", "review-body")]).reviews && !marks("div", &[("class", "reviews-content entry-content")]).reviews);
        let ads = marks("section", &[("class", "Report__Section--Ads")]);
        assert!(ads.boilerplate && ads.beside_only);
        assert!(!marks("div", &[("class", "share related-posts")]).beside_only);
        // A content word wins; page-level tags are never boilerplate.
        let m = marks("div", &[("class", "entry-content share-wrapper")]);
        assert!(m.content && !m.boilerplate);
        assert!(!marks("body", &[("class", "has-sidebar")]).boilerplate);
        assert!(marks("article", &[]).content);
        assert!(marks("div", &[("itemprop", "articleBody")]).content);
        assert_eq!(marks("p", &[("class", "lead")]), Marks { shape: marks("p", &[("class", "lead")]).shape, classed: true, ..Marks::default() });
        assert!(!marks("p", &[("class", " ")]).classed && !marks("p", &[]).classed);
        assert_eq!(marks("li", &[("class", "card")]).shape, marks("li", &[("class", "card"), ("id", "x")]).shape);
        assert_ne!(marks("li", &[("class", "card")]).shape, marks("div", &[("class", "card")]).shape);
        // WordPress numbers each post's classes; they are drawn alike.
        assert_eq!(marks("article", &[("class", "post-30149 post")]).shape, marks("article", &[("class", "post-331 post")]).shape);
        assert_ne!(marks("article", &[("class", "post-30149 post")]).shape, marks("article", &[("class", "post card")]).shape);
        // WooCommerce's products differ in their terms, stock and place in a row.
        let product = |class: &str| marks("li", &[("class", class)]).shape;
        assert_eq!(
            product("product type-product post-15859 status-publish first instock product_cat-cups has-post-thumbnail purchasable"),
            product("product type-product post-24185 status-publish last outofstock product_cat-artist-series sale")
        );
    }

    #[test]
    fn short_words_count_only_as_words_of_their_own() {
        let boilerplate = |class: &str| marks("div", &[("class", class)]).boilerplate;
        // `tags` starts `tagStyle` (a CSS-in-JS class on every paragraph of a page) but is no word of it.
        assert!(!boilerplate("tagStyle_z4kqwb-o_O-style_1tcxgp3"));
        assert!(boilerplate("post-tags") && boilerplate("entryTags") && boilerplate("tags"));
        assert!(!boilerplate("opening-hours operating-times") && boilerplate("star-rating"));
        assert!(!boilerplate("bloginner") && boilerplate("user-login"));
        assert!(!boilerplate("main-navy-theme") && boilerplate("navigation"));
        assert!(boilerplate("main-nav") && boilerplate("navWrapper") && !boilerplate("canvas-wrap"));
        assert!(boilerplate("Report__Section--Ads") && !boilerplate("loads-more-text"));
        // Longer words are found inside glued ones.
        assert!(boilerplate("leftsidebar") && boilerplate("mainnavigation"));
        // A shop's offers of other products.
        assert!(boilerplate("product-upsell") && boilerplate("crossSellProducts") && boilerplate("recentlyViewed"));
        // An opinion piece is not its comments.
        assert!(!boilerplate("news subjective commentary") && boilerplate("sect_commentlinks"));
        assert_eq!(push_split_of("Report__Section--Ads tagStyle x2Y"), "-report-section-ads-tag-style-x2-y-");
    }

    fn push_split_of(value: &str) -> String {
        let mut out = String::new();
        push_split(&mut out, value);
        out
    }
}
