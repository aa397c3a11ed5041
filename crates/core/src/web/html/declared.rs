//! What a page declares itself to be, for search engines and link previews: a schema.org type
//! (in JSON-LD or microdata) or an Open Graph `og:type`. Such declarations only tip decisions a
//! kind of page makes differently: a product's customers' reviews are beside it, a thread's
//! replies are its posts, an article's comment section is not the article.

use memchr::memmem;

/// The kinds of page a page declares itself to be.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Declared {
    /// schema.org's `Product` or `og:type` `product`: shops declare it on a product's own page;
    /// some list pages and review articles declare it too.
    pub product: bool,
    /// schema.org's `DiscussionForumPosting`: a forum thread (not `QAPage`: on Stack Exchange's
    /// questions and answers, the comments under each are asides).
    pub thread: bool,
    /// schema.org's `Article`, `NewsArticle` or `BlogPosting`, or `og:type` `article`: news
    /// sites, blogs, and some forums and shops too.
    pub article: bool,
}

impl Declared {
    /// Byte searches for the names, each hit checked by what surrounds it: far cheaper than
    /// parsing the JSON-LD or a regex over the page.
    pub fn of(html: &str) -> Self {
        let b = html.as_bytes();
        let typed = |needle: &str, back: usize, names: &[&str]| {
            memmem::find_iter(b, needle.as_bytes()).any(|at| at >= back && schema_type(b, at - back, names))
        };
        // `product`, `product.item`, `og:product`, any case.
        let og = open_graph_type(b).map(|v| v.to_ascii_lowercase());
        let og = og.as_deref().map(|v| v.strip_prefix(b"og:").unwrap_or(v));
        Self {
            product: og.is_some_and(|v| v.starts_with(b"product")) || typed("roduct", 1, &["Product", "ProductGroup", "ProductModel"]),
            thread: typed("DiscussionForumPosting", 0, &["DiscussionForumPosting"]),
            article: og == Some(b"article")
                || typed("Article", 0, &["Article"])
                || typed("NewsArticle", 0, &["NewsArticle"])
                || typed("BlogPosting", 0, &["BlogPosting"]),
        }
    }
}

/// One of `names` at `at`, quoted, as a schema.org type: after `schema.org/` (a microdata
/// `itemtype` or a JSON-LD type written as a URL) or as a JSON-LD `"@type"` value (`"@type":
/// "Product"`, `"@type": ["Product", ...]`).
fn schema_type(b: &[u8], at: usize, names: &[&str]) -> bool {
    let rest = &b[at..];
    let named = names.iter().any(|n| rest.starts_with(n.as_bytes()) && matches!(rest.get(n.len()), Some(b'"' | b'\'')));
    if !named {
        return false;
    }
    let before = &b[..at];
    if before.ends_with(b"schema.org/") {
        return true;
    }
    // A JSON-LD value: back over the opening quote, spaces, an array's `[` and the colon.
    let Some(before) = before.strip_suffix(b"\"") else { return false };
    let before = before.trim_ascii_end();
    let before = before.strip_suffix(b"[").map_or(before, <[u8]>::trim_ascii_end);
    before.strip_suffix(b":").is_some_and(|b| b.trim_ascii_end().ends_with(b"\"@type\""))
}

/// The value of the first `<meta property="og:type" content="...">`, in either order of its
/// attributes.
fn open_graph_type(b: &[u8]) -> Option<&[u8]> {
    memmem::find_iter(b, b"og:type").find_map(|at| {
        // The tag around it: from its `<` to its `>`, neither more than a few hundred bytes away.
        let start = at.saturating_sub(300) + memchr::memrchr(b'<', &b[at.saturating_sub(300)..at])?;
        let end = at + memchr::memchr(b'>', &b[at..b.len().min(at + 300)])?;
        let tag = &b[start..end];
        if !tag.get(..5).is_some_and(|t| t.eq_ignore_ascii_case(b"<meta")) {
            return None;
        }
        let content = tag.windows(8).position(|w| w.eq_ignore_ascii_case(b"content="))? + 8;
        let quote = *tag.get(content).filter(|q| matches!(q, b'"' | b'\''))?;
        let len = memchr::memchr(quote, &tag[content + 1..])?;
        Some(&tag[content + 1..content + 1 + len])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn product_pages_are_told_by_schema_org_or_open_graph() {
        let product = |html: &str| Declared::of(html).product;
        assert!(product(r#"<script type="application/ld+json">{"@context":"https://schema.org","@type": "Product","name":"Mug"}</script>"#));
        assert!(product(r#"{"@type" : [ "Product", "Thing" ]}"#));
        assert!(product(r#"{"@type":"ProductGroup"}"#));
        assert!(product(r#"<div itemscope itemtype="http://schema.org/Product">"#));
        assert!(product(r#"<meta property="og:type" content="product">"#));
        assert!(product(r#"<meta content='og:product' property='og:type'>"#));
        assert!(product(r#"<meta property="og:type" content="product.item" />"#));
        // A product named in text or classes, an article, another type: no declaration.
        assert!(!product(r#"<div class="product-card">Product of the week</div><meta property="og:type" content="article">"#));
        assert!(!product(r#"{"@type":"ProductCollection"} {"name":"Product"} <meta name="description" content="product tour">"#));
        assert!(!product("roduct"));
        assert_eq!(Declared::of(""), Declared::default());
    }

    #[test]
    fn articles_are_told_by_schema_org_or_open_graph() {
        let article = |html: &str| Declared::of(html).article;
        assert!(article(r#"<meta property="og:type" content="article" />"#));
        assert!(article(r#"{"@context": "https://schema.org", "@type": "NewsArticle"}"#));
        assert!(article(r#"<article itemscope itemtype="http://schema.org/BlogPosting">"#));
        assert!(!article(r#"<meta property="og:type" content="website"><article class="Article">"#));
        assert!(!article(r#"<meta name="description" content="article about og:type">"#));
    }

    #[test]
    fn threads_are_told_by_schema_org() {
        let thread = |html: &str| Declared::of(html).thread;
        assert!(thread(r#"<div itemscope itemtype="https://schema.org/DiscussionForumPosting">"#));
        assert!(thread(r#"{"@context": "https://schema.org", "@type": "DiscussionForumPosting", "headline": "Fish"}"#));
        assert!(!thread(r#"{"@type": "QAPage"} <p>DiscussionForumPosting is a schema.org type</p>"#));
        assert!(!thread(r#"{"@type": "DiscussionForumPostingX"}"#));
    }
}
