//! What a page declares itself to be, for search engines and link previews: schema.org's
//! `Product` type (in JSON-LD or microdata) or Open Graph's `og:type` of `product`. Shops declare
//! it on a product's own page; some list pages and review articles declare it too, so it only
//! tips decisions a product page makes differently (its customers' reviews are beside it).

use memchr::memmem;

/// Whether the page declares a product. A byte search for `roduct`, each hit checked by what
/// surrounds it: far cheaper than parsing the JSON-LD or a regex over the page.
pub fn product(html: &str) -> bool {
    let b = html.as_bytes();
    memmem::find_iter(b, b"roduct").any(|at| at > 0 && (schema_type(b, at - 1) || open_graph_type(b, at - 1)))
}

/// `Product` (or `ProductGroup`, `ProductModel`) at `at` as a schema.org type: after
/// `schema.org/` (a microdata `itemtype` or a JSON-LD type written as a URL) or as a JSON-LD
/// `"@type"` value (`"@type": "Product"`, `"@type": ["Product", ...]`).
fn schema_type(b: &[u8], at: usize) -> bool {
    let rest = &b[at..];
    let named = ["Product\"", "Product'", "ProductGroup\"", "ProductModel\""].iter().any(|n| rest.starts_with(n.as_bytes()));
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
        assert!(!product(""));
    }
}
