//! The main text of a web page, as FineWeb takes it with trafilatura: the article or post body
//! without navigation, boilerplate, ads or comments; tables kept as rows; one block per line.
//!
//! The page is parsed as a browser parses it ([`dom`]), elements marked by tag and class
//! ([`rules`]), boilerplate pruned and the element holding the main text chosen ([`root`]), and
//! its blocks rendered, link lists and edge lines left out ([`render`]). When the chosen element
//! gives little text, or much less than the whole pruned page, the whole pruned page is taken
//! instead: a page without a clear article is better kept whole than cut to a fragment.

mod charset;
mod dom;
mod render;
mod root;
mod rules;

use crate::error::TokqError;
use crate::quality::params::Params;

/// The main text must have this many bytes to win over the whole page.
const MIN_MAIN: usize = 250;
/// And at least this share of the whole page's text.
const MIN_MAIN_SHARE: f64 = 0.35;

const KEYS: &[&str] = &["tables", "mode"];

/// What to extract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Keep tables, a row per line with ` | ` between cells (trafilatura's `include_tables`).
    pub tables: bool,
    /// Keep only the main content (`true`), or the whole page with boilerplate pruned.
    pub main_only: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self { tables: true, main_only: true }
    }
}

impl Options {
    /// `tables=true|false, mode=main|page`.
    pub fn parse(spec: &str) -> Result<Self, TokqError> {
        let params = Params::parse("html_to_text", spec)?;
        let mut o = Options::default();
        for (k, v) in params.items() {
            match k {
                "tables" => o.tables = params.flag(k, v)?,
                "mode" => {
                    o.main_only = match v {
                        "main" => true,
                        "page" => false,
                        _ => return Err(params.error(format!("mode must be main or page, got '{v}'"))),
                    }
                }
                other => return Err(params.unknown(other, KEYS)),
            }
        }
        Ok(o)
    }
}

/// The main text of an HTTP payload, decoded by its `Content-Type` charset, its `<meta>`
/// declaration or detection; empty when the page has none.
pub fn html_to_text(bytes: &[u8], content_type: Option<&str>, options: &Options) -> String {
    extract(&charset::decode(bytes, content_type), options)
}

/// The main text of a page already decoded.
pub fn extract(html: &str, options: &Options) -> String {
    let dom = dom::Dom::parse(html);
    let pruned = root::Pruned::new(&dom, options.tables);
    let whole = || render::render(&render::blocks(&pruned, dom.root()));
    if !options.main_only {
        return whole();
    }
    let top = pruned.content_root();
    let main = render::render(&render::blocks(&pruned, top));
    if top == dom.root() || main.len() < MIN_MAIN {
        return whole();
    }
    let page = whole();
    if (main.len() as f64) < MIN_MAIN_SHARE * page.len() as f64 {
        return page;
    }
    main
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(html: &str) -> String {
        extract(html, &Options::default())
    }

    const STORY: &str = "The river rose three metres overnight, and by morning the old bridge was under water. \
                         Residents of the lower town were moved to the school on the hill, where volunteers served \
                         soup until late in the evening.";

    #[test]
    fn the_article_stays_and_the_furniture_goes() {
        let html = format!(
            "<html><head><title>t</title><style>p {{}}</style></head><body>\
             <nav><a href=/>Home</a> <a href=/news>News</a></nav>\
             <div class=\"cookie-banner\">We use cookies to improve your experience on this site.</div>\
             <article><h1>Flood in the valley</h1><p>{STORY}</p><p>{STORY}</p>\
             <div class=share-buttons><a href=#>Share on Facebook</a></div></article>\
             <aside><h3>Related</h3><ul><li><a href=/a>Another story about rivers</a></li></ul></aside>\
             <footer>© 2024 Valley Times. All rights reserved.</footer><script>var x = 1;</script></body></html>"
        );
        assert_eq!(text(&html), format!("Flood in the valley\n{STORY}\n{STORY}"));
    }

    #[test]
    fn whitespace_collapses_across_inline_elements_and_blocks_break_lines() {
        // Short lines between paragraphs stay; before the first and after the last they are edges.
        let html = format!("<body><div><p>{STORY}</p><p>One  <b>bold</b>\n<i>word</i></p>line<br>break<ul><li>a</li><li>b</li></ul><p>{STORY}</p>by me</div></body>");
        assert_eq!(text(&html), format!("{STORY}\nOne bold word\nline\nbreak\na\nb\n{STORY}"));
        assert_eq!(text("<pre>  keep\n   this</pre>"), "keep\n   this");
    }

    #[test]
    fn tables_are_rows_of_cells_unless_left_out() {
        let html = format!("<body><p>{STORY}</p><table><tr><th>Town</th><th>Level</th></tr><tr><td>Lower</td><td>3 m</td></tr></table></body>");
        assert_eq!(text(&html), format!("{STORY}\nTown | Level\nLower | 3 m"));
        let o = Options::parse("tables=false").unwrap();
        assert_eq!(extract(&html, &o), STORY);
    }

    #[test]
    fn a_boilerplate_class_around_most_of_the_page_is_kept() {
        let html = format!("<body><div class=\"comments-enabled\"><p>{STORY}</p><p>{STORY}</p></div><p>short</p></body>");
        assert!(text(&html).contains(STORY));
    }

    #[test]
    fn a_section_labelled_for_ads_keeps_its_long_paragraphs_but_a_share_bar_goes() {
        let long = STORY.repeat(2);
        let html = format!(
            "<body><article><p>{STORY}</p><section class=\"Report__Section--Ads\"><p>{long}</p></section>\
             <div class=share-bar><p>Share this story with your friends and family today</p></div></article></body>"
        );
        assert_eq!(text(&html), format!("{STORY}\n{long}"));
    }

    #[test]
    fn page_mode_keeps_more_than_the_main_text() {
        let html = format!("<body><div><p>A note above the article that is not part of it at all, but still text.</p></div><article><p>{STORY}</p><p>{STORY}</p><p>{STORY}</p></article></body>");
        assert!(!text(&html).contains("A note above"));
        assert!(extract(&html, &Options::parse("mode=page").unwrap()).starts_with("A note above"));
    }

    #[test]
    fn bytes_are_decoded_before_extraction() {
        let page = b"<html><head><meta charset=windows-1252></head><body><p>Cr\xe8me br\xfbl\xe9e</p></body></html>";
        assert_eq!(html_to_text(page, None, &Options::default()), "Crème brûlée");
        assert_eq!(html_to_text(b"", None, &Options::default()), "");
    }

    #[test]
    fn options_are_checked() {
        assert_eq!(Options::parse("").unwrap(), Options::default());
        assert_eq!(Options::parse("tables=false, mode=page").unwrap(), Options { tables: false, main_only: false });
        let e = Options::parse("mode=fast").unwrap_err().to_string();
        assert!(e.contains("mode must be main or page, got 'fast'"), "{e}");
        assert!(Options::parse("links=true").unwrap_err().to_string().contains("unknown parameter 'links'"));
    }
}
