//! The main text of a web page, as FineWeb takes it with trafilatura: the article or post body
//! without navigation, boilerplate, ads or comments; tables kept as rows; one block per line.
//!
//! The page is parsed as a browser parses it ([`dom`]), elements marked by tag and class
//! ([`rules`]), boilerplate pruned and the element holding the main text chosen ([`root`]), and
//! its blocks rendered, link lists and edge lines left out ([`render`]). When the chosen element
//! gives little text, or much less than the whole pruned page, the whole pruned page is taken
//! instead: a page without a clear article is better kept whole than cut to a fragment. When even
//! that is short, the page is read again with only the tags deciding ([`extract`]).

mod charset;
mod declared;
mod dom;
mod raw;
mod render;
mod root;
mod rules;
mod streamed;

use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

use crate::error::TokqError;
use crate::quality::params::{Keys, Params};

/// The main text must have this many bytes to win over the whole page.
const MIN_MAIN: usize = 250;
/// A main text shorter than this is read again by the lenient pass (a page's posts or paragraphs
/// each classed as furniture leave only a fragment)...
const LENIENT_BELOW: usize = 3000;
/// ...and replaced by the lenient pass's only when that gives this many times more...
const LENIENT_GAIN: usize = 4;
/// ...and, when the strict text has this many bytes (a short story, not a fragment), holds it.
const STORY: usize = 1000;
/// The main element is a thread's first post when the strict reading dropped this many elements
/// drawn as it is (its replies); the lenient reading, which keeps them, is then taken when longer.
const THREAD_TWINS: usize = 3;
/// Repeated items replace the chosen text when they hold this many times as much...
const LIST_GAIN: f64 = 1.5;
/// ...and the main element has less than this: a longer one is an article, and repeated items
/// beside it are teasers...
const LIST_MAX_MAIN: usize = 2000;
/// ...unless it holds less than this in paragraphs (lines of [`PARAGRAPH_LINE`] bytes or more):
/// then it is one promotion's paragraph and the short lines around it (a shop's banner inside its
/// product grid, read with the tiles after it), not an article.
const LIST_MAX_PROSE: usize = 1000;
const PARAGRAPH_LINE: usize = 150;
/// Items of at most this many bytes each, on average, are cards (a product's name and price), not
/// posts.
const CARD: usize = 200;
/// Cards read inside the whole page need this share of its text.
const PAGE_CARDS: f64 = 0.5;
/// A list holds at least this much text: a few cards beside a near-empty page (a box of fund
/// prices, a row of teasers) are not a listing.
const MIN_LIST: usize = 500;
/// And at least this share of the whole page's text.
const MIN_MAIN_SHARE: f64 = 0.35;

const KEYS: &Keys<Options> = &[
    ("tables", |o, p, k, v| p.flag(k, v).map(|x| o.tables = x)),
    ("precision", |o, p, k, v| p.flag(k, v).map(|x| o.precision = x)),
    (
        "mode",
        |o, p, _, v| {
            o.main_only = match v {
                "main" => true,
                "page" => false,
                _ => return Err(p.error(format!("mode must be main or page, got '{v}'"))),
            };
            Ok(())
        },
    ),
];

/// What to extract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Keep tables, a row per line with ` | ` between cells (trafilatura's `include_tables`).
    pub tables: bool,
    /// Keep only the main content (`true`), or the whole page with boilerplate pruned.
    pub main_only: bool,
    /// Favour precision over recall, as FineWeb runs trafilatura (`favor_precision=True`): no
    /// lists of repeated items, and the lenient second reading only for a nearly empty result.
    pub precision: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self { tables: true, main_only: true, precision: false }
    }
}

impl Options {
    /// `tables=true|false, mode=main|page, precision=false|true`.
    pub fn parse(spec: &str) -> Result<Self, TokqError> {
        Params::parse("html_to_text", spec)?.apply(KEYS, Options::default())
    }
}

/// The main text of an HTTP payload, decoded by its `Content-Type` charset, its `<meta>`
/// declaration or detection; empty when the page has none.
pub fn html_to_text(bytes: &[u8], content_type: Option<&str>, options: &Options) -> String {
    extract(&charset::decode(bytes, content_type), options)
}

/// The main text of a page already decoded, in Unicode NFC as trafilatura returns it (a page
/// may spell `য়` as one code point or two; the reader sees one letter).
pub fn extract(html: &str, options: &Options) -> String {
    let text = pick(html, options);
    match is_nfc_quick(text.chars()) {
        IsNormalized::Yes => text,
        _ => text.nfc().collect(),
    }
}

/// The main text, or the lenient pass's when the strict one finds little.
fn pick(html: &str, options: &Options) -> String {
    let dom = dom::Dom::parse(html);
    let declared = declared::Declared::of(html);
    let strict = main_text(&dom, declared, options, true);
    if strict.len >= if options.precision { MIN_MAIN } else { LENIENT_BELOW } {
        return strict.text;
    }
    // Many small elements can each pass the pruning guard and together hold the whole text (a
    // forum's posts all classed `comment`, an article in page-builder `widget`s), or the text is
    // only in `<noscript>`: a short result is tried again with only the tags deciding, as
    // trafilatura falls back to another extractor when its own result is short. The lenient
    // text must hold the strict one's element: a short story's comments, beside it, hold more
    // text but are not the story.
    // An article's comment section stays out too once the strict reading found its story.
    let story = declared::Declared { article: declared.article && strict.len >= MIN_MAIN, ..declared };
    let lenient = main_text(&dom, story, options, false);
    let holds = match (strict.from, lenient.from) {
        (Some(s), Some(l)) => strict.len < STORY || dom.within(s, l),
        _ => true,
    };
    let gain = if strict.thread { 1 } else { LENIENT_GAIN };
    if lenient.len > gain * strict.len && holds { lenient.text } else { strict.text }
}

/// A main text, the length that chooses ([`render::render`]), and the element it was read from
/// (`None`: the whole page).
struct Main {
    text: String,
    len: usize,
    from: Option<dom::Id>,
    thread: bool,
}

impl Main {
    fn new((text, len): (String, usize), from: Option<dom::Id>) -> Self {
        Self { text, len, from, thread: false }
    }
}

/// The main text, or the whole page when the main element is too short or too small a share, or
/// a list of repeated items when they hold more, or either with a grid of cards inside it read as
/// a list; with the length that chooses ([`render::render`]) and the element it was read from.
/// `declared`: what the page declares itself to be ([`declared`]).
fn main_text(dom: &dom::Dom, declared: declared::Declared, options: &Options, strict: bool) -> Main {
    let pruned = root::Pruned::new(dom, options.tables, strict, declared);
    let whole = || Main::new(render::render(&render::blocks(&pruned, dom.root(), dom.root(), None, false), false), None);
    if !options.main_only {
        return whole();
    }
    let top = pruned.content_root();
    // Read around the main element: its widened ancestor, or on a page built of sections (a
    // service page's hero, features, testimonials and prices, each a `<section>`) all of them.
    let (mut around, mut core) = (pruned.widen(top), top);
    let mut main = Main::new(render::render(&render::blocks(&pruned, around, core, None, false), false), Some(top));
    if let Some(sections) = pruned.sections_around(top).filter(|_| !options.precision) {
        let read = Main::new(render::render(&render::blocks(&pruned, sections, sections, None, false), false), Some(top));
        if read.len > main.len {
            (main, around, core) = (read, sections, sections);
        }
    }
    let main_len = main.len;
    main.thread = strict && main_len < LENIENT_BELOW && pruned.dropped_twins(top) >= THREAD_TWINS;
    // Decided before `main` may be chosen, and its paragraphs counted only when the length
    // alone does not decide.
    let list_may_replace = !options.precision
        && (main_len < LIST_MAX_MAIN || main.text.lines().filter(|l| l.len() >= PARAGRAPH_LINE).map(str::len).sum::<usize>() < LIST_MAX_PROSE);
    let chosen = if top == dom.root() || main_len < MIN_MAIN {
        whole()
    } else {
        let page = whole();
        if (main_len as f64) < MIN_MAIN_SHARE * page.len as f64 { page } else { main }
    };
    // A listing, a collection or a thread: repeated items that hold more text than what was
    // chosen from a short main element are the content (its paragraphs were one card's, or its
    // cards were dropped as link lists).
    let items = if options.precision { None } else { pruned.items(top) };
    if list_may_replace {
        if let Some(&root::Items { list, text, .. }) = items.as_ref() {
            let enough = |n: usize| n as f64 > LIST_GAIN * chosen.len as f64;
            if enough(text) && text >= MIN_LIST {
                // Items inside the main element: the element read with its items' links kept.
                let list = if dom.within(list, top) { top } else { list };
                let listed = Main::new(render::render(&render::blocks(&pruned, list, list, None, true), true), Some(list));
                if enough(listed.len) {
                    return listed;
                }
            }
        }
    }
    // A grid of cards that holds as much text as the main element's reading (half as much as a
    // whole page's), inside it (a shop's category text over its product grid, whose names are
    // links): the cards are read as a list is, with their links, and the rest as before.
    if let Some(root::Items { list, text, count }) = items {
        let (around, core, share) = match chosen.from {
            None => (dom.root(), dom.root(), PAGE_CARDS),
            Some(t) if t == top => (around, core, 1.0),
            Some(_) => return chosen,
        };
        let cards = text <= CARD * count;
        if cards && text >= MIN_LIST && text as f64 >= share * chosen.len as f64 && list != core && dom.within(list, core) {
            let read = Main::new(render::render(&render::blocks(&pruned, around, core, Some(list), false), false), chosen.from);
            if read.len > chosen.len {
                return read;
            }
        }
    }
    chosen
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
    // Further paragraphs, distinct: a repeated block is read once.
    const STORY2: &str = "Engineers said the bridge would reopen once the water fell, and the ferry ran every hour \
                          in the meantime, carrying cars and bicycles between the two banks of the swollen river.";
    const STORY3: &str = "By the weekend the shops of the lower town had opened again; their owners swept the mud \
                          from the floors and counted what the water had taken from the cellars and the stores.";
    const STORY4: &str = "The council promised a higher embankment before next spring, paid for by the region, and \
                          asked residents to say at the town hall where the water had come in first this year.";

    #[test]
    fn the_article_stays_and_the_furniture_goes() {
        let html = format!(
            "<html><head><title>t</title><style>p {{}}</style></head><body>\
             <nav><a href=/>Home</a> <a href=/news>News</a></nav>\
             <div class=\"cookie-banner\">We use cookies to improve your experience on this site.</div>\
             <article><h1>Flood in the valley</h1><p>{STORY}</p><p>{STORY2}</p>\
             <div class=share-buttons><a href=#>Share on Facebook</a></div></article>\
             <aside><h3>Related</h3><ul><li><a href=/a>Another story about rivers</a></li></ul></aside>\
             <footer>© 2024 Valley Times. All rights reserved.</footer><script>var x = 1;</script></body></html>"
        );
        assert_eq!(text(&html), format!("Flood in the valley\n{STORY}\n{STORY2}"));
    }

    #[test]
    fn a_shell_page_waiting_for_its_script_has_no_text_but_its_menus_labels() {
        // A shop's category page before its script runs: a mega-menu and a utility bar whose
        // entries are spans (not links), ARIA-marked as a menu. Without the roles the bar is the
        // page's only text, which the share rule would keep.
        let html = "<body><header><nav><a href=/a>Fitness</a> <a href=/b>Outdoor</a></nav>\
                    <div role=menubar class=utility-bar><div role=menuitem aria-label=Support><span>Support</span>\
                    <div><a href=/help>Support Center</a></div></div><div role=menuitem><span>Cart</span></div></div></header>\
                    <main><div id=app></div></main></body>";
        assert_eq!(text(html), "");
    }

    #[test]
    fn a_sign_up_form_goes_but_a_page_wrapped_in_a_form_stays() {
        let signup = "<form class=esub><h3>Stay in the loop</h3><p>Get every new post delivered straight to your inbox, free, once a week.</p>\
                      <input type=\"Email\" name=e><div class=note>Great! Check your inbox and click the link to confirm.</div></form>";
        let html = format!("<body><article><p>{STORY}</p><p>{STORY2}</p>{signup}</article></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"));
        // A form that takes a message is a comment or contact form, judged as any element; an
        // ASP.NET page's one form holds the whole page, sign-up field and all.
        let html = format!("<body><form id=aspnetForm><div><p>{STORY}</p><p>{STORY2}</p><input type=email></div></form></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"));
        let contact = format!("<form><p>{STORY3}</p><input type=email><textarea></textarea></form>");
        assert_eq!(text(&format!("<body><article><p>{STORY}</p><p>{STORY2}</p>{contact}</article></body>")), format!("{STORY}\n{STORY2}\n{STORY3}"));
    }

    #[test]
    fn a_pictures_caption_ending_in_its_credit_goes() {
        let html = format!(
            "<body><article><p>{STORY}</p><div class=img-box><img src=a.jpg><span>The old bridge at dawn. Foto: Jane Doe</span></div>\
             <p>{STORY2}</p><div>Volunteers at the school on the hill. © Getty Images</div><p>Photo credit: Max Muster</p>\
             <p>{STORY3}</p><p>The ferry on Tuesday (REUTERS/Jane Doe)</p>\
             <table><tr><td>Photo: 12 MP</td><td>Video: 4K</td></tr></table><p>{STORY4}</p></article></body>"
        );
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}\n{STORY3}\nPhoto: 12 MP | Video: 4K\n{STORY4}"));
        // A sentence that goes on after a colon, or a long block, is text.
        for kept in ["Bild: the council says the embankment will be higher next spring.", &format!("{STORY} {STORY4} © Valley Times")] {
            let html = format!("<body><article><p>{STORY2}</p><p>{kept}</p><p>{STORY3}</p></article></body>");
            assert!(text(&html).contains(kept), "{kept}");
        }
    }

    #[test]
    fn whitespace_collapses_across_inline_elements_and_blocks_break_lines() {
        // Short lines between paragraphs stay; before the first and after the last they are edges.
        let html = format!("<body><div><p>{STORY}</p><p>One  <b>bold</b>\n<i>word</i></p>line<br>break<ul><li>a</li><li>b</li></ul><p>{STORY2}</p>by me</div></body>");
        assert_eq!(text(&html), format!("{STORY}\nOne bold word\nline\nbreak\na\nb\n{STORY2}"));
        assert_eq!(text("<pre>  keep\n   this</pre>"), "keep\n   this");
        // A paragraph of nothing but a joiner (a page builder's spacer) is no line; inside a word
        // a joiner stays.
        let html = format!("<body><main><p>{STORY}</p><p>\u{200d}</p><p>\u{200c} </p><p>{STORY2} \u{0915}\u{094d}\u{200d}\u{0937}</p></main></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2} \u{0915}\u{094d}\u{200d}\u{0937}"));
    }

    #[test]
    fn an_article_may_end_in_a_list_of_short_items_but_not_in_a_byline() {
        let html = format!("<body><article><p>{STORY}</p><p>{STORY2}</p><h2>What to pack</h2><ul><li>Boots</li><li>A torch</li></ul><p>By Ann Lee</p></article></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}\nWhat to pack\nBoots\nA torch"));
    }

    #[test]
    fn linked_headings_inside_the_text_stay_but_a_teaser_after_it_goes() {
        let html = format!(
            "<body><article><h2><a href=#one>Day one</a></h2><p>{STORY}</p><h2><a href=#two>Day two</a></h2><p>{STORY2}</p>\
             <h3><a href=/other>Another story you may like</a></h3></article></body>"
        );
        assert_eq!(text(&html), format!("Day one\n{STORY}\nDay two\n{STORY2}"));
    }

    #[test]
    fn tables_are_rows_of_cells_unless_left_out() {
        let html = format!("<body><p>{STORY}</p><table><tr><th>Town</th><th>Level</th></tr><tr><td>Lower</td><td>3 m</td></tr></table></body>");
        assert_eq!(text(&html), format!("{STORY}\nTown | Level\nLower | 3 m"));
        let o = Options::parse("tables=false").unwrap();
        assert_eq!(extract(&html, &o), STORY);
        // WordPress frames each table in a figure; a picture's figure stays out.
        let html = format!(
            "<body><article><p>{STORY}</p><figure class=wp-block-table><table><tr><td>Lower</td><td>3 m</td></tr></table></figure>\
             <figure><img src=a.jpg><figcaption>The bridge under water</figcaption></figure><p>{STORY2}</p></article></body>"
        );
        assert_eq!(text(&html), format!("{STORY}\nLower | 3 m\n{STORY2}"));
        assert_eq!(extract(&html, &o), format!("{STORY}\n{STORY2}"));
    }

    #[test]
    fn a_boilerplate_class_around_most_of_the_page_is_kept() {
        let html = format!("<body><div class=\"comments-enabled\"><p>{STORY}</p><p>{STORY2}</p></div><p>short</p></body>");
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
    fn a_page_whose_every_post_is_classed_as_furniture_is_read_without_class_words() {
        // A forum: each post is small beside the page, so each passes the pruning guard alone.
        let posts: String = (0..8).map(|i| format!("<div class=\"ForumComment\"><p>Post {i}: {STORY}</p></div>")).collect();
        // The cookie banner goes in the lenient reading too: its words mark what is never content.
        let html = format!(
            "<body><nav><a href=/>Forum</a></nav><main>{posts}<div class=cookie-consent><p>We and our \
             partners use cookies to store and access information on your device for ads.</p></div></main><footer>Imprint</footer></body>"
        );
        let text = text(&html);
        assert!(text.starts_with(&format!("Post 0: {STORY}")) && text.contains("Post 7:"), "{text}");
        assert!(!text.contains("Imprint") && !text.contains("Forum\n") && !text.contains("cookies"), "{text}");
    }

    #[test]
    fn a_short_storys_comments_beside_it_are_not_the_story() {
        // The story (over 1,000 bytes) is under the lenient pass's bound; its comments, each
        // small enough to be dropped by its class, hold far more together.
        let story: String = (0..6).map(|i| format!("<p>Part {i}: {STORY}</p>")).collect();
        let comments: String = (0..40).map(|i| format!("<div class=comment><p>Comment {i}: {STORY2}</p></div>")).collect();
        let html = format!("<body><article>{story}</article><section id=comments class=comments>{comments}</section></body>");
        let text = text(&html);
        assert!(text.starts_with(&format!("Part 0: {STORY}")) && text.ends_with(&format!("Part 5: {STORY}")), "{text}");
        assert!(!text.contains("Comment 0"), "{text}");
    }

    #[test]
    fn a_threads_replies_classed_as_comments_are_read_with_its_first_post() {
        // XenForo: every post's body is an `article.message-body`; the replies' wrappers say
        // `comment`, so the strict reading keeps the first post alone.
        let post = |class: &str, body: &str| format!("<div class=\"{class}\"><article class=message-body><p>{body}</p></article></div>");
        let replies: String = (0..3).map(|i| post("message comment", &format!("Reply {i}: {STORY3} {STORY4}"))).collect();
        let first = post("message", &format!("{STORY} {STORY2} {STORY3} {STORY4}"));
        let html = format!("<body><div class=page><div class=thread>{first}{replies}</div></div></body>");
        let thread = text(&html);
        assert!(thread.starts_with(STORY) && thread.contains("Reply 0:") && thread.contains("Reply 2:"), "{thread}");
        // Comments under an article are drawn unlike it, and stay out.
        let html = format!("<body><div class=page><div class=thread>{first}<div class=comments>{}</div></div></div></body>", replies.replace("message-body", "comment-body"));
        assert!(!text(&html).contains("Reply 0:"));
    }

    #[test]
    fn a_page_built_of_sections_is_read_whole_but_an_article_beside_teasers_is_not() {
        let feature = |i: usize| {
            format!("<section class=feature><h3>Feature {i}</h3><p>Plan {i} starts at ten dollars a month, and every plan comes with support by phone and by mail.</p></section>")
        };
        let features: String = (0..3).map(feature).collect();
        let html = format!("<body><div class=page><section class=hero><div class=body><p>{STORY}</p><p>{STORY2}</p></div></section>{features}</div></body>");
        let page = text(&html);
        assert!(page.starts_with(STORY) && page.contains("Feature 2\nPlan 2 starts at ten dollars"), "{page}");
        // Teasers that are no sections stay beside the story.
        let html = html.replace("<section class=feature>", "<div class=feature>").replace("</p></section>", "</p></div>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"));
    }

    #[test]
    fn a_long_heading_is_read_as_a_paragraph_but_a_short_one_over_nothing_goes() {
        // A marketing page sets its testimonial in a heading's type, with no text under it.
        let quote = "\u{201c}They moved our whole office over a weekend, and on Monday morning every desk, screen and \
                     printer worked as if nothing had happened.\u{201d}";
        let html = format!("<body><main><p>{STORY}</p><p>{STORY2}</p><h3>{quote}</h3><h3>Related services</h3></main></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}\n{quote}"));
    }

    #[test]
    fn the_lines_of_a_paragraph_are_judged_for_links_together() {
        // An index entry: a linked title and its date on one line, the author on the next. The
        // first line alone is mostly link; the paragraph is not.
        let html = format!("<body><main><p>{STORY}</p><p><a href=/x>Allocating on the Stack</a>, 27 February 2026<br>Keith Randall</p><p>{STORY2}</p></main></body>");
        assert_eq!(text(&html), format!("{STORY}\nAllocating on the Stack, 27 February 2026\nKeith Randall\n{STORY2}"));
    }

    #[test]
    fn a_list_items_heading_is_its_text_and_a_heading_over_such_items_heads_them() {
        // A writer's list of brands, each item set as a heading, under a heading of its own.
        let html = format!(
            "<body><main><p>{STORY}</p><h2>Cambridge Baby</h2><ul><li><h3>linen sun hats</h3></li>\
             <li><h3>organic cotton</h3></li></ul><p>{STORY2}</p></main></body>"
        );
        assert_eq!(text(&html), format!("{STORY}\nCambridge Baby\nlinen sun hats\norganic cotton\n{STORY2}"));
        // A heading over teasers that all go goes with them.
        let html = format!(
            "<body><main><p>{STORY}</p><p>{STORY2}</p><h2>Read more</h2><ul><li><h3><a href=/a>Teaser one</a></h3></li>\
             <li><h3><a href=/b>Teaser two</a></h3></li></ul></main></body>"
        );
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"));
    }

    #[test]
    fn a_hidden_tab_or_accordion_panel_is_read_but_a_hidden_drawer_is_not() {
        let html = format!(
            "<body><main><p>{STORY}</p><div role=tabpanel hidden><p>{STORY2}</p></div>\
             <div class=\"faq-accordion__panel\" style=\"display: none\"><p>{STORY3}</p></div>\
             <div hidden><p>A hidden drawer of links and offers for the reader</p></div></main></body>"
        );
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}\n{STORY3}"));
    }

    #[test]
    fn a_wrapper_named_for_its_sidebar_that_holds_the_main_element_is_read() {
        // Genesis wraps the content and the sidebar in `content-sidebar-wrap`.
        let related: String = (0..4).map(|i| format!("<div class=related-box><p>Related {i}: {STORY3}</p></div>")).collect();
        let html = format!(
            "<body>{related}<div class=content-sidebar-wrap><main><p>{STORY}</p><p>{STORY2}</p></main>\
             <aside class=sidebar><p>Subscribe to our letter</p></aside></div></body>"
        );
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"));
    }

    #[test]
    fn a_slider_of_testimonials_is_text_but_a_slider_of_teasers_is_not() {
        let quote = "We moved the whole office over one weekend with their crew, and every screen worked on Monday.";
        let teasers = "<div class=\"related-slider\"><div class=slide><a href=/a>Ten bridges that survived the flood</a> \
                       Read how the old stone held.</div><div class=slide><a href=/b>The ferry timetable for the winter</a></div></div>";
        let html = format!(
            "<body><main><p>{STORY}</p><p>{STORY2}</p><div class=\"testimonial-slider\"><div class=slide><p>{quote}</p></div></div>\
             {teasers}</main></body>"
        );
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}\n{quote}"));
    }

    #[test]
    fn noscript_text_is_read_only_when_the_page_has_none_besides() {
        let html = format!("<body><div id=app></div><noscript><div class=post-body><p>{STORY}</p></div></noscript></body>");
        assert_eq!(text(&html), STORY);
        let html = format!("<body><article><p>{STORY}</p><p>{STORY2}</p></article><noscript>Please enable JavaScript to view the comments.</noscript></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"));
        // An app's shell: its notice is no text.
        assert_eq!(text("<body><div id=root></div><noscript><p>You need to enable JavaScript to run this app.</p></noscript></body>"), "");
    }

    #[test]
    fn customers_reviews_are_beside_a_declared_product_but_text_elsewhere() {
        let page = |head: &str| {
            format!(
                "<html><head>{head}</head><body><main><h1>Stoneware mug</h1><p>{STORY}</p><p>{STORY2}</p>\
                 <div class=\"product-reviews\"><h2>What buyers say</h2><div class=review><p>{STORY3}</p></div></div></main></body></html>"
            )
        };
        let declared = r#"<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Product", "name": "Mug"}</script>"#;
        assert_eq!(text(&page(declared)), format!("Stoneware mug\n{STORY}\n{STORY2}"));
        // Reviews that outweigh the description are still beside it.
        let many = format!("<div class=review><p>{STORY3}</p></div><div class=review><p>{STORY4}</p></div>");
        let html = format!(
            "<html><head>{declared}</head><body><main><h1>Stoneware mug</h1><p>{STORY}</p>\
             <section id=\"individual-reviews\"><h2>What buyers say</h2>{many}</section></main></body></html>"
        );
        assert_eq!(text(&html), format!("Stoneware mug\n{STORY}"));
        // A review site's list or a service's testimonials: the reviews are the text.
        assert_eq!(text(&page("")), format!("Stoneware mug\n{STORY}\n{STORY2}\nWhat buyers say\n{STORY3}"));
    }

    #[test]
    fn a_page_builders_widgets_are_its_text_but_a_blogs_widgets_are_not() {
        // Elementor renders every block of the page's own content as an `elementor-widget` in
        // the document `elementor elementor-{id}`; SiteOrigin each as a `so-panel widget` in
        // its `panel-layout`.
        let widget = |text: &str| format!("<div class=\"elementor-element elementor-widget elementor-widget-text-editor\"><div class=elementor-widget-container><p>{text}</p></div></div>");
        let sidebar = format!("<div class=sidebar><p>{STORY4}</p></div>");
        let blocks: String = [STORY, STORY2, STORY3].iter().map(|t| widget(t)).collect();
        let html = format!("<body><div class=site><div class=\"elementor elementor-4412\"><div class=e-con>{blocks}</div></div>{sidebar}</div></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}\n{STORY3}"));
        let blocks: String = [STORY, STORY2, STORY3].iter().map(|t| format!("<div class=\"so-panel widget widget_text\"><div class=textwidget><p>{t}</p></div></div>")).collect();
        let html = format!("<body><div class=site><div class=entry-content><div id=pl-560 class=panel-layout>{blocks}</div></div>{sidebar}</div></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}\n{STORY3}"));
        // A recent-posts widget beside an article.
        let html = format!("<body><article><p>{STORY}</p><p>{STORY2}</p></article><div class=\"widget widget_recent_entries\"><p>{STORY3}</p></div></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"));
    }

    #[test]
    fn a_declared_threads_replies_classed_as_comments_are_its_posts() {
        // Tapatalk: the first post is a `DiscussionForumPosting`, each reply a `comment` with
        // enough text of its own to pass the thread rule's bar.
        let reply = |i: usize, text: &str| format!("<div class=\"post comment-post\" id=p{i}><p>Reply {i}: {text}</p></div>");
        let thread = |head: &str| {
            format!(
                "<html><head>{head}</head><body><div class=topic><div class=post itemscope><h1>Fish for a new tank</h1><p>{STORY}</p><p>{STORY2}</p></div>\
                 {}{}</div></body></html>",
                reply(1, STORY3),
                reply(2, STORY4)
            )
        };
        let declared = r#"<script type="application/ld+json">{"@type": "DiscussionForumPosting", "headline": "Fish"}</script>"#;
        let read = text(&thread(declared));
        assert!(read.contains("Reply 1:") && read.contains("Reply 2:"), "{read}");
        // Undeclared, the same page reads as a post with comments under it.
        let read = text(&thread(""));
        assert!(read.starts_with("Fish for a new tank") && !read.contains("Reply 1:"), "{read}");
    }

    #[test]
    fn a_declared_articles_comment_section_stays_out_of_the_lenient_reading() {
        // A short story (the strict reading finds it, under the lenient reading's bar) and forty
        // comments, each small enough for its class to drop it.
        let comments: String = (0..40).map(|i| format!("<li class=comments__item><p>Comment {i}: {STORY3}</p></li>")).collect();
        let page = |head: &str| {
            format!("<html><head>{head}</head><body><div class=content><article><p>{STORY}</p><p>{STORY2}</p></article><ol class=comments__list>{comments}</ol></div></body></html>")
        };
        assert_eq!(text(&page(r#"<meta property="og:type" content="article">"#)), format!("{STORY}\n{STORY2}"));
        // Undeclared, the lenient reading takes the comments as it takes a forum's posts.
        assert!(text(&page("")).contains("Comment 39:"));
    }

    #[test]
    fn comments_after_a_marked_story_stay_out_however_much_they_hold() {
        // A declared article; three comments hold about three quarters of the text: more than
        // the guard leaves to a class.
        let comment = |i: usize| {
            format!("<li class=comment><p class=comment-author>Reader {i} says</p><div class=comment-content><p>{STORY3} {STORY4} Reader {i} agrees with every word.</p></div></li>")
        };
        let comments: String = (0..3).map(comment).collect();
        let page = |story: &str| {
            format!("<html><head><meta property=\"og:type\" content=\"article\"></head><body><div class=post>{story}<div id=comments class=entry-comments><ol class=comment-list>{comments}</ol></div></div></body></html>")
        };
        let story = format!("<p>{STORY}</p><p>{STORY2}</p>");
        assert_eq!(text(&page(&format!("<div class=entry-content>{story}</div>"))), format!("{STORY}\n{STORY2}"));
        // Unmarked, the story is not one the page points to: the comments may be its text.
        let read = text(&page(&story));
        assert!(read.contains("Reader 2 agrees"), "{read}");
    }

    #[test]
    fn a_list_set_in_one_paragraph_with_line_breaks_is_text_but_a_byline_is_not() {
        let ranking: Vec<String> = (1..=8).map(|i| format!("0{i}. Singer number {i}")).collect();
        let html = format!(
            "<body><article><p>{STORY}</p><p>{STORY2}</p><p>{}</p><p>By Jane Doe<br>March 3, 2024</p></article></body>",
            ranking.join("<br>")
        );
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}\n{}", ranking.join("\n")));
    }

    #[test]
    fn a_listings_posts_keep_their_dates_but_an_article_loses_its_dateline() {
        let card = |i: usize| {
            format!(
                "<li class=post><h2><a href=/{i}>Story number {i} about the river and the bridge</a></h2>\
                 <time datetime=2024-03-0{i}>March {i}, 2024</time><p>The water rose overnight and the town moved to the hill, story {i}.</p></li>"
            )
        };
        let html = format!("<body><main><h1>Archive</h1><ul class=posts>{}</ul></main></body>", (1..9).map(card).collect::<String>());
        let listing = text(&html);
        assert!(listing.contains("Story number 8 about the river") && listing.contains("March 8, 2024"), "{listing}");
        let html = format!(
            "<body><article><h1>Flood in the valley</h1><p>By Ann Lee, our reporter in the lower town, <time>March 8, 2024</time></p>\
             <p>{STORY}</p><p>{STORY2}</p></article></body>"
        );
        assert_eq!(text(&html), format!("Flood in the valley\nBy Ann Lee, our reporter in the lower town,\n{STORY}\n{STORY2}"));
    }

    #[test]
    fn page_mode_keeps_more_than_the_main_text() {
        let html = format!("<body><div><p>A note above the article that is not part of it at all, but still text.</p></div><article><p>{STORY}</p><p>{STORY2}</p><p>{STORY3}</p></article></body>");
        assert!(!text(&html).contains("A note above"));
        assert!(extract(&html, &Options::parse("mode=page").unwrap()).starts_with("A note above"));
    }

    #[test]
    fn a_lede_beside_the_body_is_read_but_a_teaser_there_is_not() {
        // The lede sits beside the body element the paragraphs chose, inside the story's wrapper.
        let lede = "Thousands of residents spent the night in the school on the hill after the river broke its banks.";
        let html = format!(
            "<body><div class=page><div class=story><p class=lede>{lede} Volunteers served soup.</p>\
             <div class=body><p>{STORY}</p><p>{STORY2}</p></div><p>Read more on our site</p></div></div></body>"
        );
        let text = text(&html);
        assert!(text.starts_with(lede), "{text}");
        assert!(!text.contains("Read more"), "{text}");
    }

    #[test]
    fn invisible_characters_go_and_the_text_is_nfc() {
        // `&shy;` hyphenation points, a zero-width space, ruby readings, and a decomposed `é`.
        let html = format!("<body><p>{STORY}</p><p>Ita&shy;li&shy;ens zero\u{200b}width <ruby>漢<rp>(</rp><rt>kan</rt><rp>)</rp></ruby>字 cafe\u{301}</p><p>{STORY2}</p></body>");
        assert_eq!(text(&html), format!("{STORY}\nItaliens zerowidth 漢字 café\n{STORY2}"));
    }

    #[test]
    fn a_furniture_role_left_open_around_the_article_does_not_hide_it() {
        let html = format!("<body><header role=banner><a href=/>Home</a><div class=content><p>{STORY}</p><p>{STORY2}</p></div></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"));
    }

    #[test]
    fn a_hidden_container_holding_the_whole_page_is_read_but_a_hidden_menu_is_not() {
        // React's streamed rendering keeps the body in `<div hidden id="S:0">` until its script runs.
        let html = format!("<body><div hidden></div><div hidden id=\"S:0\"><main><p>{STORY}</p><p>{STORY2}</p></main></div></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"));
        let html = format!("<body><div hidden><p>A hidden drawer of links and offers for the reader</p></div><p>{STORY}</p><p>{STORY2}</p></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"));
        // A class that hides is the site's own style for a state its script toggles (a shop's
        // table of product fields), read whatever share of the page it holds.
        let fields: String = (0..20).map(|i| format!("<dt>cat_thumb_{i}:</dt><dd>https://cdn.example.com/images/thumb_{i}.jpg</dd>")).collect();
        let html = format!("<body><main><h1>Staple Tee</h1><p>{STORY}</p><dl class=\"productView-info hide\">{fields}</dl></main></body>");
        assert_eq!(text(&html), format!("Staple Tee\n{STORY}"));
    }

    #[test]
    fn a_page_react_streamed_is_read_with_its_segments_in_place() {
        let html = format!(
            "<body><nav><a href=/>Home</a></nav><main><h1>Index funds</h1><!--$?--><template id=\"B:0\"></template>\
             <div>Loading paragraph...</div><!--/$--></main><footer>Footer</footer>\
             <div hidden id=\"S:0\"><p>{STORY}</p><p>{STORY2}</p></div><script>$RC(\"B:0\",\"S:0\")</script></body>"
        );
        assert_eq!(text(&html), format!("Index funds\n{STORY}\n{STORY2}"));
    }

    #[test]
    fn a_consent_managers_preference_center_is_never_the_text_however_long() {
        // OneTrust's preference center lists a hundred vendors: on a short listing page it holds
        // more text than the listing itself, which a site's own cookie wrapper would not be
        // dropped for.
        let vendors: String = (0..30).map(|i| format!("<p>Partner {i} may store and access information on your device to measure ads.</p>")).collect();
        let items = "<li><a href=/a>Easy slow-cooker pork ragu with tomatoes</a></li><li><a href=/b>Spaghetti and meatballs for a crowd</a></li>";
        let html = format!("<body><h1>Tomato sauce recipes</h1><p>{STORY}</p><ul>{items}</ul><div id=onetrust-consent-sdk><div id=onetrust-pc-sdk class=\"otPcCenter ot-sdk-container\"><h3>Your Privacy</h3>{vendors}</div></div></body>");
        let got = text(&html);
        assert!(got.contains(STORY) && !got.contains("Partner"), "{got}");
        let html = format!("<body><div class=cookie-notice-wrapper><main><p>{STORY}</p><p>{STORY2}</p></main></div></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"), "a site's own cookie word keeps its guard");
    }

    #[test]
    fn quotes_in_figures_are_read_when_the_page_has_little_else() {
        // Testimonials: `<figure><blockquote>` is HTML's own pattern for a quote with its source.
        let quote = |i: usize| format!("<figure><blockquote><p>{STORY} ({i})</p></blockquote><figcaption>Reader {i}</figcaption></figure>");
        let html = format!("<body><h1>Reviews</h1><div class=content>{}</div><div class=sidebar><p>Contact us any time by phone</p></div></body>", (0..3).map(quote).collect::<String>());
        let quotes = text(&html);
        assert!(quotes.contains(&format!("{STORY} (0)")) && quotes.contains(&format!("{STORY} (2)")), "{quotes}");
        // Beside an article, a figure is its picture and caption.
        let html = format!("<body><article><p>{STORY}</p><figure><img src=x><figcaption>The bridge at dawn</figcaption></figure><p>{STORY2}</p><p>{STORY3}</p></article></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}\n{STORY3}"));
    }

    #[test]
    fn an_article_framed_in_a_fieldset_is_read() {
        let html = format!("<body><h1><a href=/>Blog</a></h1><fieldset><legend>Week 2</legend><div class=body><p>{STORY}</p><p>{STORY2}</p></div></fieldset></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"));
    }

    #[test]
    fn a_listing_is_its_cards_titles_and_summaries() {
        // Each card: a linked title, a summary behind an aria-hidden link (visible to every
        // reader), a linked author. The intro paragraph alone would be taken for the article.
        let card = |i: usize| {
            format!(
                "<article class=card><h2><a href=/{i}>Story number {i} about the river and the bridge</a></h2>\
                 <p><a href=/{i} aria-hidden=true>The water rose overnight and the town moved to the hill, story {i}.</a></p>\
                 <a href=/a>Reporter</a></article>"
            )
        };
        let cards: String = (0..8).map(card).collect();
        let html = format!(
            "<body><nav><a href=/>Home</a><a href=/t>Topics</a></nav><main><p>Everything we have written about rivers, \
             floods and bridges in the valley, newest first.</p><section>{cards}</section></main><footer>Imprint</footer></body>"
        );
        let text = text(&html);
        assert!(text.contains("Story number 0 about the river") && text.contains("the town moved to the hill, story 7."), "{text}");
        assert!(!text.contains("Imprint") && !text.contains("Topics"), "{text}");
    }

    #[test]
    fn a_promotion_inside_a_product_grid_is_not_the_main_text() {
        // A shop's grid of tiles (a linked title, a price, specifications) with a banner tile
        // in it: the banner's paragraph is the page's only one, and read with the tiles after it
        // (their titles dropped as links) it is long; the tiles are the content.
        let tile = |i: usize| {
            format!(
                "<li class=tile><a href=/p/{i}><span>Insulated stainless steel water bottle with a straw lid, model {i}</span></a>\
                 <div>${i}.95</div><div>Capacity: 32 fl. oz.</div><div>Cap: screw</div></li>"
            )
        };
        let (before, after): (String, String) = ((0..6).map(tile).collect(), (6..56).map(tile).collect());
        let banner = "<li><div class=banner><h2>Get $130 in value</h2><p>$30 in card rewards are yours when approved for \
                      the shop's card by March 9. Plus, you can earn a $100 gift card after your first purchase.</p></div></li>";
        let html = format!("<body><div id=page role=main><h1>Water bottles</h1><ul>{before}{banner}{after}</ul></div></body>");
        let text = text(&html);
        assert!(text.contains("straw lid, model 0") && text.contains("straw lid, model 55"), "{text}");
    }

    #[test]
    fn a_hidden_block_that_holds_the_article_is_read() {
        // A shop renders its product block hidden and reveals it by script; the menus around it
        // hold more of the page's text than the 40% a hidden element needs to be read.
        let menu: String = (0..40).map(|i| format!("<li><a href=/c/{i}>Category number {i}</a></li>")).collect();
        let page = |hidden: &str| format!("<body><div class=menu><ul>{menu}</ul></div><div class=account>Hi</div><div class=defer-block style=\"display: none\">{hidden}</div></body>");
        let article = format!("<article><h1>Almond thins</h1><p>{STORY}</p><p>{STORY2}</p></article>");
        assert_eq!(text(&page(&article)), format!("Almond thins\n{STORY}\n{STORY2}"));
        // A hidden box of short cards, each an `<article>`, stays hidden.
        let cards: String = (0..4).map(|i| format!("<article><a href=/p/{i}>Almond thins, flavour number {i}</a></article>")).collect();
        assert!(!text(&page(&cards)).contains("flavour number"));
    }

    #[test]
    fn a_grid_of_cards_is_read_with_its_links_inside_a_long_main_element_or_the_page() {
        let intro: String = (0..8).map(|i| format!("<p>Part {i}: {STORY}</p>")).collect();
        let cards: String = (0..40).map(|i| format!("<div class=card><a href=/p{i}>Trail runner model {i} in blue, grey and orange</a><span>$120.00</span></div>")).collect();
        let menu = "<ul><li><a href=/m>Men</a></li><li><a href=/w>Women</a></li><li><a href=/k>Kids</a></li></ul>";
        let html = format!("<body><main><h1>Running shoes</h1>{menu}{intro}<div class=grid>{cards}</div></main></body>");
        let shop = text(&html);
        assert!(shop.contains(&format!("Part 7: {STORY}")) && shop.contains("Trail runner model 39 in blue, grey and orange$120.00"), "{shop}");
        assert!(!shop.contains("Women"), "{shop}");
        // A page without a main element: the cards are read with the whole page.
        let block = |i: usize| format!("<div class=x{i}><div class=b><p>Note {i}: {STORY2}</p></div></div>");
        let blocks: String = (0..4).map(block).collect();
        let cards: String = (0..20).map(|i| format!("<div class=card><a href=/p{i}>Trail runner model {i} in blue, grey and orange</a><span>$120.00</span></div>")).collect();
        let html = format!("<body><div class=x><div class=a><p>{STORY}</p><p>{STORY3}</p></div></div>{blocks}<div class=grid>{cards}</div></body>");
        let page = text(&html);
        assert!(page.contains("Note 3:") && page.contains("Trail runner model 19 in blue, grey and orange$120.00"), "{page}");
    }

    #[test]
    fn a_menu_of_short_links_is_no_listing() {
        let entries: String = (0..12).map(|i| format!("<li><a href=/{i}>Section number {i}</a> <a href=/{i}/a>Archive of section {i}</a></li>")).collect();
        let html = format!("<body><div class=top><ul>{entries}</ul></div><div><p>{STORY}</p></div></body>");
        assert_eq!(text(&html), STORY);
    }

    /// `n` sibling items `<TAG><a href>title</a></TAG>`, each only its link, titles of ~30 bytes.
    fn titles(tag: &str, n: usize) -> String {
        (0..n).map(|i| format!("<{tag}><a href=/{i}>Programming language number {i}</a></{tag}>")).collect()
    }

    #[test]
    fn items_that_are_only_their_titles_links_are_a_listing_inside_the_main_element() {
        // A category page: a line of intro, then its members, each a link and nothing else.
        let members = titles("li", 20);
        let html = format!(
            "<body><div id=content><h1>Category: Programming languages</h1><p>This category lists individual              programming languages.</p><ul>{members}</ul></div><footer>About us</footer></body>"
        );
        let text = text(&html);
        assert!(text.contains("Programming language number 0") && text.contains("Programming language number 19"), "{text}");
        // The same list as the whole page's stays a menu: outside the main element, a listing's
        // items must hold more than their links.
        let html = format!("<body><ul>{members}</ul><div><p>{STORY}</p></div></body>");
        assert_eq!(self::text(&html), STORY);
    }

    #[test]
    fn a_grid_of_cards_that_are_each_one_link_is_a_listing() {
        // Each card is an `<a>` around a picture and a title: its link has text, the picture's none.
        let card = |i: usize| format!("<a class=card href=/{i}><div><img src=/{i}.jpg></div><div><span>Slow-cooked tomato sauce, recipe number {i}</span><span>By Ann Lee</span></div></a>");
        let cards: String = (0..10).map(card).collect();
        let html = format!("<body><h1>Tomato sauce recipes</h1><p>Our collection of tomato sauce recipes has something for every dish.</p><div class=grid>{cards}</div></body>");
        let text = text(&html);
        assert!(text.contains("recipe number 0") && text.contains("recipe number 9"), "{text}");
        // Cards of a picture's link and a title's: only links with text count against the items,
        // so the titles are not a menu's two short links a card.
        let card = |i: usize| format!("<div class=card><a href=/{i}><img src=/{i}.jpg></a><a href=/{i}>Slow-cooked tomato sauce, recipe number {i}</a></div>");
        let cards: String = (0..14).map(card).collect();
        let html = format!("<body><h1>Tomato sauce recipes</h1><p>Our collection of tomato sauce recipes has something for every dish.</p><div class=grid>{cards}</div></body>");
        let text = self::text(&html);
        assert!(text.contains("recipe number 0") && text.contains("recipe number 13"), "{text}");
    }

    #[test]
    fn menus_the_strict_reading_dropped_are_no_listing_in_the_lenient_one() {
        // Three menus inside `<main>`, each under the guard's share: the strict reading drops them
        // by their class and gives a short text, so the lenient reading runs, where they are
        // lists of link-only entries inside the main element; those count as a listing only in
        // the strict reading.
        let menu = |m: usize| format!("<ul class=menu>{}</ul>", (0..24).map(|i| format!("<li><a href=/{m}/{i}>Ideas for room {m}-{i} here</a></li>")).collect::<String>());
        let html = format!("<body><main>{}{}{}<p>{STORY}</p></main></body>", menu(0), menu(1), menu(2));
        assert_eq!(text(&html), STORY);
    }

    #[test]
    fn a_few_small_cards_beside_a_page_are_no_listing() {
        // Three paragraphs each in a box classed `related` (each under the guard's share, so the
        // strict reading drops them all) and a box of six fund cards: the cards hold under
        // `MIN_LIST` bytes, so they are furniture and the lenient reading gives the paragraphs.
        let fund = |i: usize| format!("<a class=fund href=/f{i}><span>Equity fund {i} Growth Direct Plan</span><span>5Y return {i}.5%</span></a>");
        let funds: String = (0..6).map(fund).collect();
        let html = format!("<body><div class=prices>{funds}</div><div class=related><p>{STORY}</p></div><div class=related><p>{STORY2}</p></div><div class=related><p>{STORY3}</p></div></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}\n{STORY3}"));
    }

    #[test]
    fn a_call_to_action_is_dropped_unless_it_holds_a_long_paragraph() {
        // Component sites (Adobe Experience Manager's `cmp-cta__banner`) put whole sections of a
        // page in call-to-action boxes; a short one is an ad for the site itself.
        let html = format!(
            "<body><div class=body><p>{STORY}</p><p>{STORY2}</p></div><div class=cmp-cta><p>Talk to our team today.</p></div>\
             <div class=cmp-cta__banner><p>{STORY2} {STORY3} {STORY4}</p></div><div class=body><p>{STORY}</p></div></body>"
        );
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}\n{STORY2} {STORY3} {STORY4}"), "the repeated paragraph is read once");
    }

    #[test]
    fn a_repeated_block_is_read_once_but_code_may_repeat_its_lines() {
        // A reply quoting the post it answers: a reader reads the post once.
        let html = format!("<body><div class=thread><div class=post><p>{STORY}</p></div><div class=post><blockquote><p>{STORY}</p></blockquote><p>{STORY2}</p></div></div></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"));
        // The same line of code twice is two lines of the program.
        let code = "total = total + price * quantity";
        let html = format!("<body><article><p>{STORY}</p><pre>{code}</pre><p>{STORY2}</p><pre>{code}</pre><p>{STORY3}</p></article></body>");
        assert_eq!(text(&html), format!("{STORY}\n{code}\n{STORY2}\n{code}\n{STORY3}"));
    }

    #[test]
    fn a_forum_posts_profile_and_signature_are_not_the_post() {
        // phpBB's `postprofile` beside each post, and the signature under it.
        let post = |body: &str| format!("<div class=post><div class=postbody><p>{body}</p><div class=signature>Signatures are bumper stickers of the internet, said a poster once.</div></div><dl class=postprofile><dt>Mme A. d'Oiseau</dt><dd>Posts: 6217</dd><dd>Founded: Oct 05, 2011</dd></dl></div>");
        let html = format!("<body><div id=page-body>{}{}</div></body>", post(STORY), post(STORY2));
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"));
    }

    #[test]
    fn a_run_of_identifiers_is_no_text_but_a_path_holding_one_is() {
        // eBay spells a hidden "Sponsored" as a paragraph of letters and UUIDs run together.
        let ids = "9303097ac-d3e5-41e1-baf5-303640756ebfX2bf8403c-6590-4d73-8b16-95f6c3ecdef8 84f535a2-9d93-4358-b5a8-c77d761c12e0";
        let html = format!("<body><p>{STORY}</p><p>{ids}</p><p>{STORY2}</p></body>");
        assert_eq!(text(&html), format!("{STORY}\n{STORY2}"));
        let path = "sudo vi /media/fred/ba5b7f3a-54d2-4325-80e5-e7a159900d3f/etc/fstab";
        let html = format!("<body><p>{STORY}</p><pre>{path}</pre><p>{STORY2}</p></body>");
        assert_eq!(text(&html), format!("{STORY}\n{path}\n{STORY2}"));
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
        assert_eq!(Options::parse("tables=false, mode=page").unwrap(), Options { tables: false, main_only: false, precision: false });
        assert!(Options::parse("precision=true").unwrap().precision);
        let e = Options::parse("mode=fast").unwrap_err().to_string();
        assert!(e.contains("mode must be main or page, got 'fast'"), "{e}");
        assert!(Options::parse("links=true").unwrap_err().to_string().contains("unknown parameter 'links'"));
    }
}
