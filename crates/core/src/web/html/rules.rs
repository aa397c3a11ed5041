//! What an element's tag and attributes say about it, decided once when the parser creates it:
//! hidden or never text (scripts, navigation, forms' controls), boilerplate by its class or id
//! (menus, share bars, cookie banners), or marked as the main content (`<article>`,
//! `itemprop=articleBody`, `class="entry-content"`). The lists follow trafilatura's and
//! readability's; a rule here is a word a web page uses, not a fit to any test page.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use html5ever::{Attribute, LocalName};

/// Tags whose content is never main text. Not `form`: ASP.NET pages and forums wrap the whole
/// page in one (its controls are dropped by their own tags). Not `header`: article headers hold
/// the title.
fn never_text(tag: &str) -> bool {
    matches!(
        tag,
        "script" | "style" | "noscript" | "iframe" | "svg" | "nav" | "footer" | "aside" | "button" | "input" | "select"
            | "textarea" | "template" | "object" | "embed" | "canvas" | "video" | "audio" | "map" | "picture"
            | "figure" | "menu" | "dialog" | "head" | "label" | "time" | "option" | "math" | "fieldset"
    )
}

/// ARIA roles of page furniture.
const FURNITURE_ROLES: &[&str] = &["navigation", "banner", "contentinfo", "complementary", "menu", "dialog"];

/// Words in a class, id, role or itemprop that mark page furniture; they are substrings, so
/// `navig` finds `navigation` and `main-navigation`.
const FURNITURE: &[&str] = &[
    "footer", "sidebar", "widget", "navig", "navbar", "nav-", "-nav", "menu", "comment", "related", "cookie", "consent",
    "newsletter", "breadcrumb", "subscribe", "signup", "login", "recommend", "trending", "most-popular", "mostpopular",
    "author-box", "byline", "skip-link", "pagination", "pager", "masthead", "site-header", "copyright",
];

/// Words that mark what usually sits beside the text (share bars, ad slots, captions) but also
/// label sections that hold it (`TestReport__Section--Ads`): these are boilerplate only while
/// they hold no long paragraph.
const BESIDE: &[&str] = &[
    "share", "sharing", "social", "banner", "advert", "ad-slot", "ads-", "-ads", "popup", "modal", "promo", "tags",
    "tagcloud", "toolbar", "print", "rating", "caption", "credit",
];

/// Words in a class, id, role or itemprop that mark the main content (they win over boilerplate
/// words: `class="post-content share-wrapper"` is content).
const CONTENT: &[&str] = &[
    "articlebody", "article-body", "article__body", "article-content", "article_content", "articlecontent",
    "post-content", "post_content", "postcontent", "entry-content", "entry_content", "entrycontent", "story-body",
    "storybody", "post-body", "postbody", "blog-post", "main-content", "maincontent", "content-body", "text-content",
    "rich-text", "richtext",
];

/// The word lists in one automaton: furniture, then beside, then content words.
static WORDS: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::new(FURNITURE.iter().chain(BESIDE).chain(CONTENT)).expect("the word lists are valid patterns")
});

/// What the tag and attributes of one element say.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Marks {
    /// Never text: a tag [`never_text`] names, `hidden`, `aria-hidden=true`, `display:none`, or a
    /// furniture role.
    pub never_text: bool,
    /// Boilerplate by its class or id, unless it holds most of the page (decided later).
    pub boilerplate: bool,
    /// Boilerplate only by [`BESIDE`] words: kept when it holds a long paragraph.
    pub beside_only: bool,
    /// Marked as the main content.
    pub content: bool,
}

impl Marks {
    pub fn of(tag: &LocalName, attrs: &[Attribute]) -> Self {
        let tag: &str = tag;
        let attr = |name: &str| attrs.iter().find(|a| &*a.name.local == name).map(|a| &*a.value);
        let role = attr("role").map(str::to_ascii_lowercase);
        let hidden = attr("hidden").is_some()
            || attr("aria-hidden").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || attr("style").is_some_and(|s| {
                let s: String = s.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
                s.contains("display:none") || s.contains("visibility:hidden")
            });
        // One lowercased string of the words, searched once for both lists; overlapping, so that
        // one word found does not hide another that overlaps it.
        let mut words = String::new();
        for v in ["class", "id", "role", "itemprop"].into_iter().filter_map(attr) {
            words.push_str(v);
            words.push(' ');
        }
        words.make_ascii_lowercase();
        let (mut furniture_word, mut beside_word, mut content_word) = (false, false, false);
        for m in WORDS.find_overlapping_iter(&words) {
            match m.pattern().as_usize() {
                i if i < FURNITURE.len() => furniture_word = true,
                i if i < FURNITURE.len() + BESIDE.len() => beside_word = true,
                _ => content_word = true,
            }
        }
        let page = matches!(tag, "html" | "body" | "article" | "main");
        Marks {
            never_text: never_text(tag) || hidden || role.as_deref().is_some_and(|r| FURNITURE_ROLES.contains(&r)),
            boilerplate: !page && !content_word && (furniture_word || beside_word),
            beside_only: beside_word && !furniture_word,
            content: matches!(tag, "article" | "main")
                || role.as_deref() == Some("main")
                || attr("itemprop").is_some_and(|v| v.eq_ignore_ascii_case("articlebody"))
                || content_word,
        }
    }

    /// Attributes added later (the parser adds a second `<html>` or `<body>` tag's): either
    /// set counts. Those two tags are never boilerplate.
    pub fn add(&mut self, other: &Marks) {
        self.never_text |= other.never_text;
        self.content |= other.content;
    }
}

#[cfg(test)]
mod tests {
    use html5ever::{ns, QualName};

    use super::*;

    fn marks(tag: &str, attrs: &[(&str, &str)]) -> Marks {
        let attrs: Vec<Attribute> = attrs
            .iter()
            .map(|(k, v)| Attribute { name: QualName::new(None, ns!(), LocalName::from(*k)), value: (*v).into() })
            .collect();
        Marks::of(&LocalName::from(tag), &attrs)
    }

    #[test]
    fn tags_attributes_and_class_words_mark_elements() {
        assert!(marks("script", &[]).never_text);
        assert!(marks("div", &[("style", "color: red; display : none")]).never_text);
        assert!(marks("div", &[("aria-hidden", "TRUE")]).never_text);
        assert!(marks("div", &[("role", "Navigation")]).never_text);
        assert!(!marks("div", &[("role", "main")]).never_text);
        assert!(marks("div", &[("class", "Site-Footer")]).boilerplate);
        assert!(marks("div", &[("id", "cookie-consent")]).boilerplate);
        let ads = marks("section", &[("class", "Report__Section--Ads")]);
        assert!(ads.boilerplate && ads.beside_only);
        assert!(!marks("div", &[("class", "share related-posts")]).beside_only);
        // A content word wins; page-level tags are never boilerplate.
        let m = marks("div", &[("class", "entry-content share-wrapper")]);
        assert!(m.content && !m.boilerplate);
        assert!(!marks("body", &[("class", "has-sidebar")]).boilerplate);
        assert!(marks("article", &[]).content);
        assert!(marks("div", &[("itemprop", "articleBody")]).content);
        assert_eq!(marks("p", &[("class", "lead")]), Marks::default());
    }
}
