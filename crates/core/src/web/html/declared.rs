//! What a page declares itself to be, for search engines and link previews: a schema.org type
//! (in JSON-LD or microdata) or an Open Graph `og:type`. Such declarations only tip decisions a
//! kind of page makes differently: a product's customers' reviews are beside it, a thread's
//! replies are its posts.

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
}

impl Declared {
    /// Byte searches for the names, each hit checked by what surrounds it: far cheaper than
    /// parsing the JSON-LD or a regex over the page.
    pub fn of(html: &str) -> Self {
        let b = html.as_bytes();
        let product = memmem::find_iter(b, b"roduct")
            .any(|at| at > 0 && (schema_type(b, at - 1, &["Product", "ProductGroup", "ProductModel"]) || open_graph_type(b, at - 1)));
        let thread = memmem::find_iter(b, b"DiscussionForumPosting").any(|at| schema_type(b, at, &["DiscussionForumPosting"]));
        Self { product, thread }
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

/// `product` at `at` as the value of a `<meta property="og:type">`: `content="product"` (or
/// `product.item`, `og:product`) in a tag that names `og:type`.
fn open_graph_type(b: &[u8], at: usize) -> bool {
    if !b[at..].starts_with(b"product") {
        return false;
    }
    let before = &b[..at];
    let before = before.strip_suffix(b"og:").unwrap_or(before);
    let quoted = before.strip_suffix(b"\"").or_else(|| before.strip_suffix(b"'"));
    if !quoted.is_some_and(|q| q.len() >= 8 && q[q.len() - 8..].eq_ignore_ascii_case(b"content=")) {
        return false;
    }
    // The tag around it: from its `<` to its `>`, neither more than a few hundred bytes away.
    let start = memchr::memrchr(b'<', &b[at.saturating_sub(300)..at]).map(|i| at.saturating_sub(300) + i);
    let end = memchr::memchr(b'>', &b[at..b.len().min(at + 300)]).map(|i| at + i);
    match (start, end) {
        (Some(s), Some(e)) => memmem::find(&b[s..e], b"og:type").is_some(),
        _ => false,
    }
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
    fn threads_are_told_by_schema_org() {
        let thread = |html: &str| Declared::of(html).thread;
        assert!(thread(r#"<div itemscope itemtype="https://schema.org/DiscussionForumPosting">"#));
        assert!(thread(r#"{"@context": "https://schema.org", "@type": "DiscussionForumPosting", "headline": "Fish"}"#));
        assert!(!thread(r#"{"@type": "QAPage"} <p>DiscussionForumPosting is a schema.org type</p>"#));
        assert!(!thread(r#"{"@type": "DiscussionForumPostingX"}"#));
    }
}
