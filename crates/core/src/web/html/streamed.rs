//! React's streamed server rendering, put together as its script puts it together. A page
//! rendered with Suspense arrives with a fallback where each slow part goes
//! (`<!--$?--><template id="B:0"></template>Loading…<!--/$-->`) and, further down, the part itself
//! in a hidden segment (`<div hidden id="S:0">…</div>`) with the call that moves it into place
//! (`$RC("B:0","S:0")`: the segment's children replace the fallback; `$RS("S:1","P:1")`: they
//! replace the template `P:1`). Read as it arrives, the page's text sits hidden at its end and
//! its layout holds only fallbacks: every reader running the script sees the segments where the
//! calls put them, so extraction reads them there.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ops::Range;

use memchr::memmem;

const SEGMENT: &str = "<div hidden id=\"S:";
/// Nested segments deeper than this are left where they are (a page cannot need more).
const MAX_NESTING: usize = 32;

/// `html` with each streamed segment that a `$RC` or `$RS` call places moved into its place.
pub fn placed(html: &str) -> Cow<'_, str> {
    if memmem::find(html.as_bytes(), SEGMENT.as_bytes()).is_none() {
        return Cow::Borrowed(html);
    }
    let segments = segments(html);
    // What each boundary or placeholder gets: a segment, and whether a fallback goes with it.
    let mut calls: HashMap<&str, (&str, bool)> = HashMap::new();
    for (call, boundary) in [("$RC(\"", true), ("$RS(\"", false)] {
        for at in memmem::find_iter(html.as_bytes(), call.as_bytes()) {
            let Some((first, second)) = two_strings(&html[at + call.len() - 1..]) else { continue };
            let (target, segment) = if boundary { (first, second) } else { (second, first) };
            if segments.contains_key(segment) {
                calls.entry(target).or_insert((segment, boundary));
            }
        }
    }
    // Where each call's template starts, what it replaces up to, and its segment: only those
    // found whole, so that a segment whose place is missing stays where it came.
    let mut targets = HashMap::new();
    for at in memmem::find_iter(html.as_bytes(), b"<template id=\"") {
        let id = html[at + "<template id=\"".len()..].split('"').next().unwrap_or("");
        let Some(&(segment, boundary)) = calls.get(id) else { continue };
        let Some(after) = html[at..].find("</template>").map(|i| at + i + "</template>".len()) else { continue };
        let end = if boundary { boundary_end(html, after) } else { Some(after) };
        if let Some(end) = end {
            targets.entry(at).or_insert((end, segment));
        }
    }
    if targets.is_empty() {
        return Cow::Borrowed(html);
    }
    let moved = targets.values().map(|&(_, segment)| segment).collect();
    let mut out = String::with_capacity(html.len());
    let mut used = HashSet::new();
    Placer { html, segments: &segments, targets: &targets, moved: &moved }.copy(0..html.len(), &mut out, &mut used, 0);
    Cow::Owned(out)
}

/// Each segment by its id: the whole `<div>` and its children.
struct Segment {
    whole: Range<usize>,
    inner: Range<usize>,
}

fn segments(html: &str) -> HashMap<&str, Segment> {
    let mut found = HashMap::new();
    for start in memmem::find_iter(html.as_bytes(), SEGMENT.as_bytes()) {
        let id_start = start + SEGMENT.len() - 2;
        let Some(quote) = html[id_start..].find('"') else { continue };
        let id = &html[id_start..id_start + quote];
        let Some(open_end) = html[id_start + quote..].find('>').map(|i| id_start + quote + i + 1) else { continue };
        if let Some(close) = matching_div_end(html, open_end) {
            found.entry(id).or_insert(Segment { whole: start..close + "</div>".len(), inner: open_end..close });
        }
    }
    found
}

/// Where the `</div>` that closes a `<div>` whose content starts at `from` begins: React writes
/// well-formed markup, so counting `<div` and `</div>` outside scripts, styles and comments finds it.
fn matching_div_end(html: &str, from: usize) -> Option<usize> {
    let b = html.as_bytes();
    let mut depth = 1;
    let mut at = from;
    while let Some(lt) = memchr::memchr(b'<', &b[at..]).map(|i| at + i) {
        let rest = &b[lt..];
        let skip_to = |end: &[u8]| memmem::find(&b[lt..], end).map(|i| lt + i + end.len());
        at = if rest.starts_with(b"<!--") {
            skip_to(b"-->")?
        } else if rest.starts_with(b"<script") {
            skip_to(b"</script>")?
        } else if rest.starts_with(b"<style") {
            skip_to(b"</style>")?
        } else if rest.starts_with(b"</div>") {
            depth -= 1;
            if depth == 0 {
                return Some(lt);
            }
            lt + 6
        } else {
            if rest.starts_with(b"<div") && rest.get(4).is_some_and(|&c| c == b'>' || c.is_ascii_whitespace()) {
                depth += 1;
            }
            lt + 1
        };
    }
    None
}

/// The two string arguments at the start of `("a","b")`.
fn two_strings(call: &str) -> Option<(&str, &str)> {
    let rest = call.strip_prefix('"')?;
    let (first, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(",\"")?;
    let (second, _) = rest.split_once('"')?;
    Some((first, second))
}

struct Placer<'a> {
    html: &'a str,
    segments: &'a HashMap<&'a str, Segment>,
    /// By the template's start: where what it replaces ends, and the segment.
    targets: &'a HashMap<usize, (usize, &'a str)>,
    moved: &'a HashSet<&'a str>,
}

impl Placer<'_> {
    /// `range` of the page into `out`, without the moved segments where they arrived, and with
    /// each one's children (their own segments placed) where its template is. A segment is
    /// placed once, as the script moves it once: `used` holds those placed, so that templates
    /// naming one segment twice, or a segment inside itself, cost no more than the page's length.
    fn copy<'s>(&self, range: Range<usize>, out: &mut String, used: &mut HashSet<&'s str>, nesting: usize)
    where
        Self: 's,
    {
        let html = self.html;
        let mut at = range.start;
        while let Some(lt) = html[at..range.end].find('<').map(|i| at + i) {
            let rest = &html[lt..range.end];
            let segment = rest.starts_with(SEGMENT).then(|| rest[SEGMENT.len() - 2..].split('"').next().unwrap_or(""));
            let skip = segment
                .filter(|id| self.moved.contains(id))
                .and_then(|id| self.segments.get(id))
                .filter(|s| s.whole.start == lt && s.whole.end <= range.end)
                .map(|s| s.whole.end);
            let place = self.targets.get(&lt).filter(|(end, segment)| *end <= range.end && nesting < MAX_NESTING && !used.contains(segment));
            if let Some(end) = skip {
                out.push_str(&html[at..lt]);
                at = end;
            } else if let Some(&(end, segment)) = place {
                out.push_str(&html[at..lt]);
                used.insert(segment);
                self.copy(self.segments[segment].inner.clone(), out, used, nesting + 1);
                at = end;
            } else {
                out.push_str(&html[at..lt + 1]);
                at = lt + 1;
            }
        }
        out.push_str(&html[at..range.end]);
    }
}

/// Where a Suspense boundary's fallback, starting at `from`, ends: at its `<!--/$-->`, past
/// those of the boundaries inside it.
fn boundary_end(html: &str, from: usize) -> Option<usize> {
    let mut depth = 1;
    let mut at = from;
    while let Some(i) = html[at..].find("<!--") {
        let c = at + i;
        let rest = &html[c..];
        if rest.starts_with("<!--/$-->") {
            depth -= 1;
            if depth == 0 {
                return Some(c + "<!--/$-->".len());
            }
        } else if rest.starts_with("<!--$") {
            depth += 1;
        }
        at = c + 4;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_replaces_its_boundarys_fallback_and_leaves_the_end_of_the_page() {
        let html = "<main><!--$?--><template id=\"B:0\"></template><p>Loading…</p><!--/$--></main>\
                    <div hidden id=\"S:0\"><div><p>The article</p></div></div><script>$RC(\"B:0\",\"S:0\")</script>";
        assert_eq!(placed(html), "<main><!--$?--><div><p>The article</p></div></main><script>$RC(\"B:0\",\"S:0\")</script>");
    }

    #[test]
    fn a_placeholder_takes_its_segment_and_segments_nest() {
        let html = "<main><template id=\"P:1\"></template></main>\
                    <div hidden id=\"S:1\"><p>one</p><!--$?--><template id=\"B:2\"></template><!--$-->x<!--/$--><!--/$--></div>\
                    <div hidden id=\"S:2\"><p>two</p></div><script>$RS(\"S:1\",\"P:1\");$RC(\"B:2\",\"S:2\")</script>";
        assert_eq!(placed(html), "<main><p>one</p><!--$?--><p>two</p></main><script>$RS(\"S:1\",\"P:1\");$RC(\"B:2\",\"S:2\")</script>");
    }

    #[test]
    fn a_segment_is_placed_once_however_many_templates_name_it() {
        // Two placeholders for one segment that holds both: placed once, in the first.
        let html = "<main><template id=\"P:1\"></template><template id=\"P:2\"></template></main>\
                    <div hidden id=\"S:0\"><p>x</p><template id=\"P:1\"></template><template id=\"P:2\"></template></div>\
                    <script>$RS(\"S:0\",\"P:1\");$RS(\"S:0\",\"P:2\")</script>";
        assert_eq!(
            placed(html),
            "<main><p>x</p><template id=\"P:1\"></template><template id=\"P:2\"></template><template id=\"P:2\"></template></main>\
             <script>$RS(\"S:0\",\"P:1\");$RS(\"S:0\",\"P:2\")</script>"
        );
    }

    #[test]
    fn a_segment_no_call_places_stays_hidden_and_broken_markup_is_left_as_it_is() {
        for html in [
            "<p>a</p><div hidden id=\"S:0\"><p>b</p></div>",
            "<p>a</p><div hidden id=\"S:0\"><p>b</p><script>$RC(\"B:0\",\"S:0\")</script>",
            "<template id=\"B:0\"></template><p>a</p><div hidden id=\"S:0\"><p>b</p></div><script>$RC(\"B:0\",\"S:0</script>",
        ] {
            assert_eq!(placed(html), html, "{html}");
        }
        // A boundary never closed: the template stays, the segment too.
        let html = "<!--$?--><template id=\"B:0\"></template><div hidden id=\"S:0\"><p>b</p></div><script>$RC(\"B:0\",\"S:0\")</script>";
        assert!(matches!(placed(html), Cow::Borrowed(_)));
    }
}
