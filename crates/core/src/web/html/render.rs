//! From the chosen element to text: blocks (paragraphs, headings, list items, table rows) with
//! whitespace collapsed as a browser renders it, then the blocks that are not main text left out:
//! link lists, copyright lines, short lines before the first paragraph and after the last, and
//! headings over nothing that stays.

use super::dom::{Id, Kind, Step};
use super::root::Pruned;

/// Elements that start and end a block of text. A `<br>` ends one too; [`blocks`] reads it
/// apart, for the lines it sets off.
fn is_block(tag: &str) -> bool {
    matches!(
        tag,
        "p" | "div" | "section" | "article" | "main" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "li" | "ul" | "ol"
            | "dl" | "dt" | "dd" | "blockquote" | "pre" | "table" | "tr" | "hr" | "body" | "center" | "address"
            | "details" | "summary" | "caption"
    )
}
/// A block whose text is more than this share links is navigation.
const MAX_LINK_SHARE: f64 = 0.5;
/// A paragraph: a non-heading block of at least this many characters.
const PARAGRAPH_CHARS: usize = 80;
/// A heading of at least this many characters reads as a paragraph.
const LONG_HEADING: usize = 120;
/// Blocks shorter than this before the first paragraph or after the last are dates, bylines and
/// credits; not list items: an article that ends in a list (what to pack, where to buy) ends in
/// short lines.
const EDGE_CHARS: usize = 40;
/// Lines set apart by `<br>` in a run this long are a list's items.
const MIN_LINES: usize = 6;
/// A block this long that the text already holds is a repeat.
const REPEAT_CHARS: usize = 20;
/// Beside the main element, only a block this long without links is text (a lede); shorter ones
/// there are teasers, labels and calls to action.
const OUTSIDE_CHARS: usize = 120;

#[derive(Default)]
pub struct Block {
    pub text: String,
    /// Bytes of the text inside links.
    link: usize,
    heading: bool,
    cell: bool,
    /// A list item.
    item: bool,
    /// A line that a `<br>` ends or starts: its paragraph's number (0: none).
    line: u32,
    /// Outside the main element: kept only as a paragraph of its own.
    outside: bool,
    /// Preformatted (code): its lines may repeat.
    pre: bool,
    /// In a list of repeated items: read as a list is (see [`render`]).
    listed: bool,
}

impl Block {
    fn chars(&self) -> usize {
        self.text.chars().count()
    }

    /// The share of the text's bytes inside links.
    fn link_share(&self) -> f64 {
        share(self.link, self.text.len())
    }
}

/// The share of `len` bytes that `link` bytes are.
fn share(link: usize, len: usize) -> f64 {
    link as f64 / len.max(1) as f64
}

#[derive(Default)]
struct Blocks {
    done: Vec<Block>,
    cur: Block,
    /// Whitespace was seen since the last character written.
    space: bool,
    in_link: usize,
    in_pre: usize,
    /// Open list items: a block inside one is an item (its `<li>`'s own block is empty when a
    /// heading or paragraph inside starts another).
    in_item: usize,
    /// Inside the main element.
    inside: bool,
    /// Inside the list of items.
    listed: bool,
    /// Paragraphs begun, for the lines' [`Block::line`].
    paragraphs: u32,
}

impl Blocks {
    fn flush(&mut self) {
        self.space = false;
        let mut b = std::mem::take(&mut self.cur);
        let trimmed = b.text.trim();
        // Joiners stay inside words (see [`invisible`]); a block of nothing else draws nothing.
        if !trimmed.chars().all(|c| matches!(c, '\u{200c}' | '\u{200d}')) {
            if trimmed.len() != b.text.len() {
                b.text = trimmed.to_string();
            }
            // A heading this long is a paragraph set in a heading's type (a marketing page's
            // pitch, a testimonial): it needs no text under it to stay.
            if b.heading && b.chars() >= LONG_HEADING {
                b.heading = false;
            }
            self.done.push(b);
        }
    }

    fn text(&mut self, t: &str) {
        let before = self.cur.text.len();
        self.cur.outside |= !self.inside;
        self.cur.listed |= self.listed;
        self.cur.item |= self.cur.heading && self.in_item > 0;
        if self.in_pre > 0 {
            self.cur.pre = true;
            self.cur.text.push_str(t);
        } else {
            let bytes = t.as_bytes();
            let mut at = 0;
            while at < bytes.len() {
                // A run of ASCII letters, digits and punctuation is copied at once.
                let run = bytes[at..].iter().take_while(|b| b.is_ascii_graphic()).count();
                if run > 0 {
                    self.drawn(&t[at..at + run]);
                    at += run;
                    continue;
                }
                let Some(c) = t[at..].chars().next() else { break };
                at += c.len_utf8();
                if c.is_whitespace() {
                    self.space = true;
                } else if !invisible(c) {
                    self.drawn(c.encode_utf8(&mut [0; 4]));
                }
            }
        }
        if self.in_link > 0 {
            self.cur.link += self.cur.text.len() - before;
        }
    }

    /// Characters drawn, after a space if whitespace came before them in the block.
    fn drawn(&mut self, s: &str) {
        if std::mem::take(&mut self.space) && !self.cur.text.is_empty() {
            self.cur.text.push(' ');
        }
        self.cur.text.push_str(s);
    }
}

/// Characters a browser does not draw: controls, and the format characters that only mark
/// where a line may break or a word may split (`&shy;` hyphenation points, zero-width spaces, word
/// joiners, byte-order marks). Left in, they split words a reader sees whole (`Ita\u{ad}li\u{ad}ens`);
/// trafilatura drops them too. Joiners that shape a script (ZWJ, ZWNJ) stay.
fn invisible(c: char) -> bool {
    c.is_control() || matches!(c, '\u{ad}' | '\u{200b}' | '\u{2060}' | '\u{feff}')
}

/// The blocks of text under `top`, dropped parts left out; those outside `core` (an element
/// under `top`, or `top` itself) are marked, and so are those inside `items` (a list of
/// repeated items read as a list: see [`render`]). Dates (`<time>`) are read only in a `list`
/// or in the `items`: a listing's posts are dated, while an article's dateline is no part of its
/// text.
pub fn blocks(pruned: &Pruned, top: Id, core: Id, items: Option<Id>, list: bool) -> Vec<Block> {
    let dom = pruned.dom;
    let mut b = Blocks { inside: top == core, paragraphs: 1, ..Blocks::default() };
    let read = |id: Id| !pruned.dropped(id) && (list || dom.name(id) != Some("time") || items.is_some_and(|l| dom.within(id, l)));
    dom.walk(top, read, |step| {
        let (id, open) = match step {
            Step::Open(id) => (id, true),
            Step::Close(id) => (id, false),
        };
        if id == core {
            b.flush();
            b.inside = open;
        }
        if Some(id) == items {
            b.flush();
            b.listed = open;
        }
        let name: &str = match dom.kind(id) {
            Kind::Text(t) if open => return b.text(t),
            Kind::Element { name, .. } if read(id) => name,
            _ => return,
        };
        // A `<br>` ends a block too, and marks the lines on both sides of it as its paragraph's.
        if name == "br" {
            if open {
                b.cur.line = b.paragraphs;
                b.flush();
                b.cur.line = b.paragraphs;
            }
        } else if is_block(name) {
            b.flush();
            b.paragraphs += 1;
        }
        let delta = |n: &mut usize| if open { *n += 1 } else { *n -= 1 };
        match name {
            "a" => delta(&mut b.in_link),
            "pre" => delta(&mut b.in_pre),
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" if open => b.cur.heading = true,
            "li" => {
                delta(&mut b.in_item);
                b.cur.item |= open;
            }
            "td" | "th" if open => {
                if !b.cur.text.is_empty() {
                    b.cur.text.push_str(" | ");
                }
                b.cur.cell = true;
            }
            _ => {}
        }
    });
    b.flush();
    b.done
}

/// A word of letters, digits and dashes this long, with this share of digits, is an identifier
/// (not a path or a URL: those have other characters).
const MACHINE_WORD: usize = 32;
const MACHINE_DIGITS: f64 = 0.25;

/// A block of identifiers run together (ids of hidden tracking letters: eBay spells "Sponsored"
/// as a paragraph of UUIDs): no reader sees it as text.
fn machine(text: &str) -> bool {
    let (mut machine_bytes, mut other) = (0, 0);
    for w in text.split_whitespace() {
        if w.len() >= MACHINE_WORD
            && w.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
            && w.bytes().filter(u8::is_ascii_digit).count() as f64 >= MACHINE_DIGITS * w.len() as f64
        {
            machine_bytes += w.len();
        } else {
            other += w.len();
            // A fifth of the text is other words already: prose (most blocks end here at once).
            if other * 5 > text.len() {
                return false;
            }
        }
    }
    machine_bytes * 5 >= text.len() * 4
}

/// A caption under this many characters may end in its picture's credit...
const CAPTION_CHARS: usize = 300;
/// ...of this many characters at most.
const CREDIT_CHARS: usize = 60;

/// Whether a block is a picture's caption or credit: short, and ending in a photographer's or an
/// agency's credit (`Foto: dpa`, `© Getty Images`, `Photo credit: Jane Doe`, `(REUTERS/Denis
/// Balibouse)`). Pages set them under pictures in boxes of every class name; no reader takes
/// them for the text, and trafilatura leaves figures and their captions out.
fn credited(text: &str) -> bool {
    const LABELS: &[&str] = &["foto", "fotos", "photo", "photos", "bild", "bildrechte", "credit", "crédito"];
    const AGENCIES: &[&str] = &["(reuters/", "(ap/", "(afp/", "(dpa/", "(efe/"];
    // Most blocks have none of `©`, `:` or a closing `)`: byte searches decide those (this runs
    // for every block of every candidate).
    let text = text.trim_end();
    let bytes = text.as_bytes();
    let (copy, colon) = (memchr::memmem::rfind(bytes, "©".as_bytes()), memchr::memrchr(b':', bytes));
    if text.len() > 4 * CAPTION_CHARS || (copy.is_none() && colon.is_none() && !text.ends_with(')')) || text.chars().count() >= CAPTION_CHARS {
        return false;
    }
    let credit = |rest: &str| (2..=CREDIT_CHARS).contains(&rest.trim().chars().count());
    // `© Name` after a space (a block that starts with `©` is a copyright line).
    if let Some(at) = copy {
        if text[..at].ends_with(char::is_whitespace) && credit(&text[at + '©'.len_utf8()..]) {
            return true;
        }
    }
    // `Label: Name` at the end, no sentence after it.
    if let Some(colon) = colon {
        let rest = &text[colon + 1..];
        let word = text[..colon].trim_end().rsplit(|c: char| !c.is_alphanumeric()).next().unwrap_or("");
        if credit(rest) && !rest.contains(['.', '!', '?']) && LABELS.contains(&word.to_lowercase().as_str()) {
            return true;
        }
    }
    // `(AGENCY/Photographer)` at the end.
    text.ends_with(')')
        && text.rfind('(').is_some_and(|open| AGENCIES.iter().any(|a| text[open..].get(..a.len()).is_some_and(|p| p.eq_ignore_ascii_case(a))))
}

/// The blocks that are main text, one per line, and the length the text would have with its
/// repeats, by which extraction chooses (so that reading a repeat once changes no choice). A
/// block the text already holds is read once: a forum reply quoting a post, a pull quote, a
/// second copy of the text for small screens. In a `list` (a listing's cards, a collection's
/// grid), links are the items' titles: link-heavy blocks and short edge lines stay, and items may
/// repeat a line, as code does.
pub fn render(blocks: &[Block], list: bool) -> (String, usize) {
    // A paragraph's lines (split by `<br>`) are judged together, as trafilatura judges a `<p>`:
    // an index's "Title, date<br>author" is one entry, not a linked title and a byline.
    let mut paragraph_links = std::collections::HashMap::new();
    for b in blocks.iter().filter(|b| b.line > 0) {
        let e = paragraph_links.entry(b.line).or_insert((0, 0));
        e.0 += b.link;
        e.1 += b.text.len();
    }
    let keep: Vec<bool> = blocks
        .iter()
        .map(|b| {
            let links = paragraph_links.get(&b.line).map_or_else(|| b.link_share(), |&(link, len)| share(link, len));
            // A linked heading is a section's or an item's title; whether it is a teaser's is
            // decided by where it stands (below).
            let navigation = !list && !b.listed && !b.cell && !b.heading && (links > MAX_LINK_SHARE || (links > 0.0 && b.chars() < 10));
            let copyright = b.text.starts_with('©') || b.text.contains("All Rights Reserved") || b.text.contains("All rights reserved");
            let caption = !b.cell && credited(&b.text);
            let beside = b.outside && (b.link > 0 || b.chars() < OUTSIDE_CHARS);
            !navigation && !copyright && !caption && !beside && !machine(&b.text)
        })
        .collect();
    let paragraph = |(b, k): (&Block, &bool)| *k && !b.heading && b.chars() >= PARAGRAPH_CHARS;
    let (first, last) = match list {
        true => (0, blocks.len()),
        false => (
            blocks.iter().zip(&keep).position(paragraph).unwrap_or(0),
            blocks.iter().zip(&keep).rposition(paragraph).unwrap_or(blocks.len()),
        ),
    };
    // Lines a writer set apart with `<br>` in one paragraph, [`MIN_LINES`] or more: a list (a
    // ranking's names, a poem's verses), not a byline and a date, nor a press contact's lines.
    let mut listed_lines = vec![false; blocks.len()];
    let mut i = 0;
    while i < blocks.len() {
        let line = blocks[i].line;
        let run = blocks[i..].iter().take_while(|b| line > 0 && b.line == line).count();
        if run >= MIN_LINES {
            listed_lines[i..i + run].fill(true);
        }
        i += run.max(1);
    }
    // What stays apart from headings: kept, and neither a short block beside the paragraphs nor
    // a teaser's linked heading.
    let stays: Vec<bool> = blocks
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let edge = i < first || i > last;
            // A linked heading after the last paragraph, or before the first but not heading it, is
            // a teaser's.
            let linked_heading = b.heading && !list && !b.listed && b.link_share() > MAX_LINK_SHARE;
            keep[i]
                && !(edge && !b.listed && !b.heading && !b.cell && !b.item && !listed_lines[i] && b.chars() < EDGE_CHARS)
                && !(linked_heading && (i > last || (i < first && (i + 1..first).any(|j| keep[j] && !blocks[j].heading))))
        })
        .collect();
    // A heading stays only when text it heads stays: one over a dropped link list is navigation.
    // A list item's heading is the item's text: it heads nothing, and a heading over such items
    // heads them.
    let section_heading = |n: &Block| n.heading && !n.item;
    let mut out = String::new();
    let (mut seen, mut len) = (std::collections::HashSet::new(), 0);
    for (i, b) in blocks.iter().enumerate() {
        if !stays[i] || (section_heading(b) && !blocks[i + 1..].iter().zip(&stays[i + 1..]).take_while(|(n, _)| !section_heading(n)).any(|(_, s)| *s)) {
            continue;
        }
        len += b.text.len() + 1;
        if !list && !b.pre && b.chars() >= REPEAT_CHARS && !seen.insert(b.text.as_str()) {
            continue;
        }
        out.push_str(&b.text);
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    (out, len.saturating_sub(1))
}
