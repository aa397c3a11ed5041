//! What the parser need not read, left out before the page is parsed: the bodies of scripts,
//! styles and comments (40% of a crawled page's bytes) and the values of attributes extraction never reads
//! (`href`, `src`, `data-*`, SVG paths: half the rest). The tokenizer reads them a character at
//! a time; a scan that only follows tags, comments and raw-text elements finds them for the cost
//! of a byte search.
//!
//! Something goes only where the parser's tree is provably the same apart from it: the scan
//! follows the WHATWG tokenizer's data, tag, attribute, comment, raw-text and script data states
//! (it is never in markup where the tokenizer is in text, only the other way round, which just
//! leaves out less). A script or style body goes up to where the tokenizer ends it (for a script
//! after `<!--`, its escaped states decide). A quoted attribute goes, name and value, unless
//! [`Marks`](super::rules::Marks) or the tree builder reads it (only its value when no space
//! precedes it: `<a/b="x">` must not become `<a/>`).
//!
//! An `<svg>` of drawing elements alone, or a `<select>` of options alone ([`plain`]), is followed
//! like the rest (half of crawled pages have an icon or a language menu near the top). After the
//! first other tag that opens a context in which a script or raw-text start tag may leave the
//! tokenizer reading markup ([`UNSURE_AFTER`]), the scan leaves no attribute out, follows a
//! script or raw-text element only if it holds no `<` (which ends the same either way), and
//! stops at the first one that does or at `<![CDATA[`. Before it every such tag switches the
//! tokenizer as the scan does. The scan stops at `<plaintext>`, and leaves a page with a
//! `<frameset>` as it is.

use std::borrow::Cow;
use std::ops::Range;

use memchr::memchr;

use super::rules::READ_ATTRIBUTES;

/// Elements whose content the tokenizer reads as text up to their end tag.
const RAW_TEXT: &[&str] = &["style", "textarea", "title", "xmp", "iframe", "noembed", "noframes"];

/// Tags after which the scan stops leaving out attribute values: inside SVG and MathML a
/// `<script>` or `<style>` is markup, in a `<select>` a `<style>` is ignored; and the tree builder
/// can leave those contexts where the scan cannot tell.
const UNSURE_AFTER: &[&str] = &["svg", "math", "select"];

/// Attributes the tree builder reads: `<input type=hidden>` in a table, `<annotation-xml
/// encoding>`, `<font color|face|size>` in foreign content, declarative shadow roots, and a
/// `<meta>`'s encoding (which html5ever reports and goes on).
const TREE_ATTRIBUTES: &[&str] = &[
    "type", "encoding", "color", "face", "size", "shadowrootmode", "shadowrootdelegatesfocus", "shadowrootclonable",
    "shadowrootserializable", "charset", "http-equiv", "content",
];

/// SVG elements that hold nothing the tokenizer or the tree builder reads apart from markup:
/// shapes, groups, gradients, filters (`fe*`), animations. Not `foreignObject`, `script` or
/// `style`; `title` and `desc`, where HTML's rules apply inside, only around text alone.
fn drawing(name: &[u8]) -> bool {
    const NAMES: &[&str] = &[
        "svg", "g", "path", "circle", "rect", "line", "polyline", "polygon", "ellipse", "defs", "use", "symbol",
        "lineargradient", "radialgradient", "stop", "clippath", "mask", "pattern", "filter", "text", "tspan", "textpath",
        "image", "marker", "animate", "animatemotion", "animatetransform", "set", "mpath", "metadata", "view", "title", "desc",
    ];
    let fe = name.len() > 2 && name[..2].eq_ignore_ascii_case(b"fe") && name.iter().all(u8::is_ascii_alphabetic);
    fe || NAMES.iter().any(|n| name.eq_ignore_ascii_case(n.as_bytes()))
}

/// Elements a `<select>` holds: in it the tree builder ignores most others.
fn option(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"option") || name.eq_ignore_ascii_case(b"optgroup")
}

/// Where the `</svg` or `</select` (`name`) that ends an element whose content starts at `from`
/// starts, when the content is plain: elements `inside` names alone (`nested` in an `<svg>`,
/// where an end tag must name an open one), comments and text, and `title` or `desc` around
/// text alone. The unread attributes of its tags go to `unread`, the same as outside. `None`
/// otherwise: the scan is unsure from there.
fn plain(b: &[u8], from: usize, name: &str, inside: fn(&[u8]) -> bool, nested: bool, unread: &mut Vec<Range<usize>>) -> Option<usize> {
    let mut open: Vec<Range<usize>> = Vec::new();
    let mut at = from;
    loop {
        let lt = at + memchr(b'<', &b[at..])?;
        let rest = &b[lt..];
        if rest.starts_with(b"<!--") {
            at = comment_end(b, lt + 4);
            if b[..at].ends_with(b"-->") && at - 3 > lt + 4 {
                unread.push(lt + 4..at - 3);
            }
            continue;
        }
        let end_tag = rest.starts_with(b"</");
        let name_start = lt + if end_tag { 2 } else { 1 };
        if !b.get(name_start).is_some_and(u8::is_ascii_alphabetic) {
            return None;
        }
        let tag = name_start..name_end(b, name_start);
        let tag_name = &b[tag.clone()];
        if end_tag {
            // In an `<svg>` an end tag closes the innermost open element of its name, and the
            // elements inside it; one it does not name goes by HTML's rules. In a `<select>` an
            // option's end tag closes nothing else.
            let named = |r: &Range<usize>| b[r.clone()].eq_ignore_ascii_case(tag_name);
            match nested.then(|| open.iter().rposition(named)).flatten() {
                Some(i) => open.truncate(i),
                None if tag_name.eq_ignore_ascii_case(name.as_bytes()) => return Some(lt),
                None if !nested && inside(tag_name) => {}
                None => return None,
            }
            at = tag_end(b, tag.end, &mut |_, _, _| {}).0;
        } else {
            if !inside(tag_name) {
                return None;
            }
            let (end, self_closing) = tag_end(b, tag.end, &mut |attribute, whole, value| unread.extend(left_out(b, attribute, whole, value)));
            // Where HTML's rules apply (a `<title>` there reads as text up to its end tag), only
            // text alone, up to the element's own end tag.
            let integration = ["title", "desc"].into_iter().find(|n| tag_name.eq_ignore_ascii_case(n.as_bytes()));
            let text_alone = |n| memchr(b'<', &b[end..]).is_some_and(|i| b[end + i..].starts_with(b"</") && tag_named(b, end + i + 2, n));
            if !b[..end].ends_with(b">") || integration.is_some_and(|n| !self_closing && !text_alone(n)) {
                return None;
            }
            if nested && !self_closing {
                open.push(tag);
            }
            at = end;
        }
    }
}

/// What of an attribute goes, unless [`Marks`](super::rules::Marks) or the tree builder reads it:
/// the whole attribute after a space, else its value (`<a/b="x">` must not become `<a/>`).
fn left_out(b: &[u8], attribute: Range<usize>, whole: Range<usize>, value: Range<usize>) -> Option<Range<usize>> {
    let attribute = &b[attribute];
    let read = |names: &[&str]| names.iter().any(|n| attribute.eq_ignore_ascii_case(n.as_bytes()));
    if read(READ_ATTRIBUTES) || read(TREE_ATTRIBUTES) {
        None
    } else if b[whole.start - 1].is_ascii_whitespace() {
        Some(whole)
    } else {
        (!value.is_empty()).then_some(value)
    }
}

/// `html` without what the parser need not read (see the module's comment).
pub fn leave_out_unread(html: &str) -> Cow<'_, str> {
    let b = html.as_bytes();
    // A `<frameset>` replaces the body only if no text came before it, and text in foreign
    // content counts: a page with one is left as it is (it has no text to extract anyway).
    if memchr::memchr_iter(b'<', b).any(|lt| b.get(lt + 1..lt + 9).is_some_and(|n| n.eq_ignore_ascii_case(b"frameset"))) {
        return Cow::Borrowed(html);
    }
    let mut out = String::new();
    // Bytes of `html` before `copied` are in `out` already (or left out).
    let mut copied = 0;
    let mut leave_out = |r: Range<usize>| {
        out.push_str(&html[copied..r.start]);
        copied = r.end;
    };
    // No `<svg>`, `<math>` or `<select>` yet: every script and raw-text start tag switches the
    // tokenizer as the scan does, and `<![CDATA[` is a bogus comment.
    let mut sure = true;
    // The attributes a plain `<svg>` or `<select>` leaves out, once it is known to be plain.
    let mut unread = Vec::new();
    let mut at = 0;
    while let Some(lt) = memchr(b'<', &b[at..]).map(|i| at + i) {
        let rest = &b[lt..];
        if rest.starts_with(b"<!--") {
            at = comment_end(b, lt + 4);
            // The tree keeps the comment, never what it says: `<!--...-->` becomes `<!---->`.
            if b[..at].ends_with(b"-->") && at - 3 > lt + 4 {
                leave_out(lt + 4..at - 3);
            }
        } else if !sure && rest.starts_with(b"<![CDATA[") {
            // A CDATA section in foreign content, else a bogus comment: they end apart.
            break;
        } else if rest.starts_with(b"<!") || rest.starts_with(b"<?") || (rest.starts_with(b"</") && !rest.get(2).is_some_and(u8::is_ascii_alphabetic)) {
            // A bogus comment (a doctype reads the same way here): it ends at the first `>`.
            at = memchr(b'>', &b[lt..]).map_or(b.len(), |i| lt + i + 1);
        } else if rest.starts_with(b"</") {
            at = tag_end(b, name_end(b, lt + 2), &mut |_, _, _| {}).0;
        } else if rest.get(1).is_some_and(u8::is_ascii_alphabetic) {
            let after_name = name_end(b, lt + 1);
            let name = &html[lt + 1..after_name];
            let (end, self_closing) = tag_end(b, after_name, &mut |attribute, whole, value| {
                if let Some(r) = left_out(b, attribute, whole, value).filter(|_| sure) {
                    leave_out(r);
                }
            });
            at = end;
            let svg = name.eq_ignore_ascii_case("svg");
            if sure && !self_closing && (svg || name.eq_ignore_ascii_case("select")) {
                unread.clear();
                if let Some(close) = plain(b, end, name, if svg { drawing } else { option }, svg, &mut unread) {
                    unread.drain(..).for_each(&mut leave_out);
                    at = close;
                    continue;
                }
            }
            sure &= !UNSURE_AFTER.iter().any(|u| name.eq_ignore_ascii_case(u));
            if name.eq_ignore_ascii_case("plaintext") {
                break;
            }
            let script = name.eq_ignore_ascii_case("script");
            if !script && !RAW_TEXT.iter().any(|r| name.eq_ignore_ascii_case(r)) {
                continue;
            }
            // A raw-text element runs to its end tag, a script to the end the tokenizer finds;
            // where the scan is unsure the tokenizer switched, only up to an end tag before any `<`.
            let close = if !sure {
                end_tag(b, at, name).filter(|&close| memchr(b'<', &b[at..close]).is_none())
            } else if script {
                script_end(b, at)
            } else {
                end_tag(b, at, name)
            };
            let Some(close) = close else { break };
            if (script || name.eq_ignore_ascii_case("style")) && !self_closing && close > at {
                leave_out(at..close);
            }
            at = close;
        } else {
            at = lt + 1;
        }
    }
    if copied == 0 {
        return Cow::Borrowed(html);
    }
    out.push_str(&html[copied..]);
    Cow::Owned(out)
}

/// Where a comment whose `<!--` ends before `from` ends: after `-->` or `--!>`, or at once for
/// `<!-->` and `<!--->`.
fn comment_end(b: &[u8], from: usize) -> usize {
    if b[from..].starts_with(b">") {
        return from + 1;
    }
    if b[from..].starts_with(b"->") {
        return from + 2;
    }
    let mut at = from;
    while let Some(i) = memchr(b'>', &b[at..]) {
        let gt = at + i;
        if b[from..gt].ends_with(b"--") || b[from..gt].ends_with(b"--!") {
            return gt + 1;
        }
        at = gt + 1;
    }
    b.len()
}

/// Whether `c` ends a tag's name.
fn ends_name(c: u8) -> bool {
    c.is_ascii_whitespace() || c == b'/' || c == b'>'
}

/// The end of a tag name that starts at `from`.
fn name_end(b: &[u8], from: usize) -> usize {
    b[from..].iter().position(|&c| ends_name(c)).map_or(b.len(), |i| from + i)
}

/// Whether the tag name at `at` is `name` (in any case), ended as the tokenizer ends it.
fn tag_named(b: &[u8], at: usize, name: &str) -> bool {
    b.get(at..at + name.len()).is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes())) && b.get(at + name.len()).is_some_and(|&c| ends_name(c))
}

/// The end of a tag whose name ends at `from` (after its `>`), and whether it ended with `/>`:
/// attributes are read as the tokenizer reads them, so a quoted `>` does not end the tag. Each
/// attribute whose value is quoted and closed goes to `quoted`: its name, the whole attribute
/// (from its name to its closing quote), and its value inside the quotes.
fn tag_end(b: &[u8], from: usize, quoted: &mut impl FnMut(Range<usize>, Range<usize>, Range<usize>)) -> (usize, bool) {
    let mut at = from;
    while at < b.len() {
        match b[at] {
            b'>' => return (at + 1, at > from && b[at - 1] == b'/'),
            c if c.is_ascii_whitespace() || c == b'/' => at += 1,
            _ => {
                // An attribute name: its first character may be `=`; quotes in it are just characters.
                let name_start = at;
                at += 1;
                while at < b.len() && !(b[at].is_ascii_whitespace() || matches!(b[at], b'/' | b'>' | b'=')) {
                    at += 1;
                }
                let name = name_start..at;
                while at < b.len() && b[at].is_ascii_whitespace() {
                    at += 1;
                }
                if at < b.len() && b[at] == b'=' {
                    at += 1;
                    while at < b.len() && b[at].is_ascii_whitespace() {
                        at += 1;
                    }
                    match b.get(at) {
                        Some(&q @ (b'"' | b'\'')) => match memchr(q, &b[at + 1..]) {
                            Some(i) => {
                                quoted(name.clone(), name_start..at + i + 2, at + 1..at + 1 + i);
                                at += i + 2;
                            }
                            None => at = b.len(),
                        },
                        _ => {
                            while at < b.len() && !(b[at].is_ascii_whitespace() || b[at] == b'>') {
                                at += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    (b.len(), false)
}

/// Where a script whose body starts at `from` ends (its `</script`), as the tokenizer's script
/// data states find it: after `<!--`, a `<script` in the body must be closed by a `</script`
/// before the one that ends the script, until `-->`. The character after a name that switches
/// the state is consumed with it.
fn script_end(b: &[u8], from: usize) -> Option<usize> {
    let close = end_tag(b, from, "script")?;
    let Some(open) = memchr::memmem::find(&b[from..close], b"<!--") else { return Some(close) };
    // 0 in script data, 1 escaped (after `<!--`), 2 double-escaped (after `<!--` and `<script`).
    let mut escaped = 1;
    let mut dashes = 2;
    let mut at = from + open + 4;
    while at < b.len() {
        match b[at] {
            b'-' => dashes += 1,
            b'>' if dashes >= 2 => escaped = 0,
            b'<' if b[at..].starts_with(b"</") && tag_named(b, at + 2, "script") => {
                if escaped < 2 {
                    return Some(at);
                }
                escaped = 1;
                at += "</script".len() + 1;
                dashes = 0;
                continue;
            }
            b'<' if escaped == 0 && b[at..].starts_with(b"<!--") => {
                escaped = 1;
                dashes = 2;
                at += "<!--".len();
                continue;
            }
            b'<' if escaped == 1 && tag_named(b, at + 1, "script") => {
                escaped = 2;
                at += "<script".len() + 1;
                dashes = 0;
                continue;
            }
            _ => {}
        }
        if b[at] != b'-' {
            dashes = 0;
        }
        at += 1;
    }
    None
}

/// Where the first `</name` followed by whitespace, `/` or `>` starts, from `from` on.
fn end_tag(b: &[u8], from: usize, name: &str) -> Option<usize> {
    let mut at = from;
    while let Some(i) = memchr(b'<', &b[at..]) {
        let lt = at + i;
        if b.get(lt + 1) == Some(&b'/') && tag_named(b, lt + 2, name) {
            return Some(lt);
        }
        at = lt + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_and_style_bodies_go_where_the_tree_cannot_change() {
        let s = |h: &str| leave_out_unread(h).into_owned();
        assert_eq!(s("<p>a</p><script type=x>var a = 1;</script><style>p {}</style><p>b"), "<p>a</p><script type=x></script><style></style><p>b");
        // A `<` in a script is fine before any foreign content; after one the scan stops there.
        assert_eq!(s("<script>if (a<b) {}</script>"), "<script></script>");
        let foreign = "<svg><foreignObject></foreignObject></svg>";
        assert_eq!(s(&format!("{foreign}<script>if (a<b) {{}}</script><style>x</style>")), format!("{foreign}<script>if (a<b) {{}}</script><style>x</style>"));
        assert_eq!(s(&format!("{foreign}<script>x</script>")), format!("{foreign}<script></script>"));
        // After `<!--` a script ends where the tokenizer's escaped states end it.
        assert_eq!(s("<script><!-- x </script>"), "<script></script>");
        assert_eq!(s("<script><!-- w('<script>x</script>') --></script><p title=y>"), "<script></script><p title=y>");
        assert_eq!(s("<script><!--<SCRIPT>a</script>b</script><p title=\"y\">"), "<script></script><p >");
        assert_eq!(s("<script><!--<script>--></script><p title=\"y\">"), "<script></script><p >");
        // Where the tokenizer is not reading tags, nothing is a script.
        assert_eq!(s("<!-- <script>x</script> -->"), "<!---->");
        for kept in [
            "<textarea><script>x</script></textarea>",
            "<title><script>x</script></title>",
            "<plaintext><script>x</script>",
            "<script>never closed",
            "<script/>x</script>",
            "<script><!--<script></script>never closed",
            "<svg><script>--></script><p><FrameSet>",
        ] {
            assert_eq!(s(kept), kept, "{kept}");
        }
        // Comments end as the tokenizer ends them.
        assert_eq!(s("<!--><script>x</script>"), "<!--><script></script>");
        assert_eq!(s("<!-- a --!><script>x</script>"), "<!-- a --!><script></script>");
        assert_eq!(s("<!-- a ---><!---><!----><!-- c -->"), "<!----><!---><!----><!---->");
        assert_eq!(s("<p>a<!-- never closed"), "<p>a<!-- never closed");
        // An end tag needs a delimiter after its name; quoted `>` does not end a tag; after a
        // tag's name `=` starts an attribute's name.
        assert_eq!(s("</p ='a><script>x</script>"), "</p ='a><script></script>");
        assert_eq!(s("<script>a</scripts>b</script >"), "<script></script >");
        assert_eq!(s("<div class=\">\" b><script>x</script>"), "<div class=\">\" b><script></script>");
        assert!(matches!(leave_out_unread("<p>no scripts</p>"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_menu_is_followed_in_one_pass_however_its_tags_repeat() {
        // A crafted menu of 100,000 options and as many end tags that close nothing: options are
        // not kept open to be searched (that was quadratic), so this is one pass.
        let html = format!("<select>{}{}</select><p title='y'>", "<option a='b'>".repeat(100_000), "</optgroup>".repeat(100_000));
        let out = leave_out_unread(&html);
        assert!(out.ends_with("</select><p >") && out.len() < html.len(), "{}", &out[out.len() - 40..]);
        // An icon's end tags search its open elements; one that matches closes what it holds.
        let html = format!("<svg>{}{}</svg><p title='y'>", "<g a='b'>".repeat(50_000), "</g>".repeat(50_000));
        assert!(leave_out_unread(&html).ends_with("</svg><p >"));
    }

    #[test]
    fn unread_attributes_go_unless_unsure() {
        let s = |h: &str| leave_out_unread(h).into_owned();
        assert_eq!(s("<a title='<script>x</script>'>"), "<a >");
        assert_eq!(
            s("<div class=\"nav\" data-x = \"1\" STYLE='display:none' href=\"/a?b=1&amp;c=2\" src=x><input type=\"hidden\" value=\"v\">"),
            "<div class=\"nav\"  STYLE='display:none'  src=x><input type=\"hidden\" >"
        );
        // Without a space before it, only the value goes: `<a/b="x">` must not become `<a/>`.
        assert_eq!(s("<a/b=\"x\"><p c='y'd='z'>"), "<a/b=\"\"><p d=''>");
        // Unquoted values stay (`a= b` would read `b` as the value), as do values never closed.
        assert_eq!(s("<a href=/x title=\"never closed>"), "<a href=/x title=\"never closed>");
        // A plain icon or menu is followed: its drawing's and options' attributes go, and the
        // scan goes on after it.
        assert_eq!(
            s("<svg viewBox=\"0 0 1\"><title>Share</title><g fill='x'><path d=\"M0\"/></g><feBlend in='a'></feBlend></svg><a title=\"x\">"),
            "<svg ><title>Share</title><g ><path /></g><feBlend ></feBlend></svg><a >"
        );
        assert_eq!(s("<select name=\"l\"><option value='en'>EN<!-- x --><optgroup><option value=\"de\">DE</select><p title='y'>"), "<select ><option >EN<!----><optgroup><option >DE</select><p >");
        // After a context the scan cannot follow, nothing goes: an element an icon cannot hold,
        // end tags out of order, markup where HTML's rules apply, a menu with more than options.
        for kept in [
            "<svg><path d=\"M0\"><p></svg><a title=\"x\">",
            "<svg><g><path d='x'></g></path></svg><a title=\"x\">",
            "<svg><g></div></g></svg><a title=\"x\">",
            "<svg><title><b>x</b></title></svg><a title=\"x\">",
            "<svg><title><title>x<g x='1'></title></svg><a title=\"x\">",
            "<svg><foreignObject><script>a<b</script></foreignObject></svg><a title=\"x\">",
            "<svg><style>a<b</style></svg><a title=\"x\">",
            "<svg><path d='x'>",
            "<select><option><script>a<b</script></select><a title=\"x\">",
            "<math><a title=\"x\">",
        ] {
            assert_eq!(s(kept), kept, "{kept}");
        }
    }
}
