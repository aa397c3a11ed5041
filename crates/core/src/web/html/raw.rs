//! Script and style bodies emptied before the page is parsed. They are 40% of a crawled page's
//! bytes and never text, yet the tokenizer reads them a character at a time; a scan that only
//! follows tags, comments and raw-text elements finds them for the cost of a byte search.
//!
//! A body is emptied only where the parser's tree is provably the same apart from that text:
//! the scan follows the WHATWG tokenizer's data, tag, attribute, comment and raw-text states (it
//! is never in markup where the tokenizer is in text, only the other way round, which just
//! empties less), and a body goes only when it holds no `<` at all, or, before any `<svg` or
//! `<math>` (inside which a `<` in a script starts markup) and without `<!--` (which changes how
//! a script ends), when it ends at its first `</script` or `</style`.

use std::borrow::Cow;

use memchr::memchr;

/// Elements whose content the tokenizer reads as text up to their end tag.
const RAW_TEXT: &[&str] = &["style", "textarea", "title", "xmp", "iframe", "noembed", "noframes"];

/// `html` with the bodies of its scripts and styles left out where that cannot change the tree.
pub fn empty_scripts(html: &str) -> Cow<'_, str> {
    let b = html.as_bytes();
    let mut out = String::new();
    // Bytes of `html` before `copied` are in `out` already (or left out).
    let mut copied = 0;
    let mut foreign = false;
    let mut at = 0;
    while let Some(lt) = memchr(b'<', &b[at..]).map(|i| at + i) {
        let rest = &b[lt..];
        if rest.starts_with(b"<!--") {
            at = comment_end(b, lt + 4);
        } else if foreign && rest.starts_with(b"<![CDATA[") {
            at = memchr::memmem::find(&b[lt..], b"]]>").map_or(b.len(), |i| lt + i + 3);
        } else if rest.starts_with(b"<!") || rest.starts_with(b"<?") || (rest.starts_with(b"</") && !rest.get(2).is_some_and(u8::is_ascii_alphabetic)) {
            // A bogus comment (a doctype reads the same way here): it ends at the first `>`.
            at = memchr(b'>', &b[lt..]).map_or(b.len(), |i| lt + i + 1);
        } else if rest.starts_with(b"</") {
            at = tag_end(b, lt + 2).0;
        } else if rest.get(1).is_some_and(u8::is_ascii_alphabetic) {
            let name_end = lt + 1 + b[lt + 1..].iter().position(|&c| c.is_ascii_whitespace() || c == b'/' || c == b'>').unwrap_or(b.len() - lt - 1);
            let name = &html[lt + 1..name_end];
            let (end, self_closing) = tag_end(b, name_end);
            at = end;
            if name.eq_ignore_ascii_case("svg") || name.eq_ignore_ascii_case("math") {
                foreign = true;
            } else if name.eq_ignore_ascii_case("plaintext") {
                break;
            }
            let script = name.eq_ignore_ascii_case("script");
            if !script && !RAW_TEXT.iter().any(|r| name.eq_ignore_ascii_case(r)) {
                continue;
            }
            // A raw-text element runs to its end tag; a script's body too, unless `<!--` in it
            // makes its end depend on what follows.
            let Some(close) = end_tag(b, at, name) else { break };
            let body = &b[at..close];
            let emptied = (script || name.eq_ignore_ascii_case("style"))
                && !self_closing
                && (memchr(b'<', body).is_none() || (!foreign && !contains(body, b"<!--")));
            if emptied && !body.is_empty() {
                out.push_str(&html[copied..at]);
                copied = close;
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

/// The end of a tag whose name ends at `from` (after its `>`), and whether it ended with `/>`:
/// attributes are read as the tokenizer reads them, so a quoted `>` does not end the tag.
fn tag_end(b: &[u8], from: usize) -> (usize, bool) {
    let mut at = from;
    while at < b.len() {
        match b[at] {
            b'>' => return (at + 1, at > from && b[at - 1] == b'/'),
            c if c.is_ascii_whitespace() || c == b'/' => at += 1,
            _ => {
                // An attribute name: its first character may be `=`; quotes in it are just characters.
                at += 1;
                while at < b.len() && !(b[at].is_ascii_whitespace() || matches!(b[at], b'/' | b'>' | b'=')) {
                    at += 1;
                }
                while at < b.len() && b[at].is_ascii_whitespace() {
                    at += 1;
                }
                if at < b.len() && b[at] == b'=' {
                    at += 1;
                    while at < b.len() && b[at].is_ascii_whitespace() {
                        at += 1;
                    }
                    match b.get(at) {
                        Some(&q @ (b'"' | b'\'')) => at = memchr(q, &b[at + 1..]).map_or(b.len(), |i| at + 1 + i + 1),
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

/// Where the first `</name` followed by whitespace, `/` or `>` starts, from `from` on.
fn end_tag(b: &[u8], from: usize, name: &str) -> Option<usize> {
    let mut at = from;
    while let Some(i) = memchr(b'<', &b[at..]) {
        let lt = at + i;
        let after = lt + 2 + name.len();
        if b.get(lt + 1) == Some(&b'/')
            && b.get(lt + 2..after).is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()))
            && b.get(after).is_some_and(|&c| c.is_ascii_whitespace() || c == b'/' || c == b'>')
        {
            return Some(lt);
        }
        at = lt + 1;
    }
    None
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_and_style_bodies_go_where_the_tree_cannot_change() {
        let s = |h: &str| empty_scripts(h).into_owned();
        assert_eq!(s("<p>a</p><script type=x>var a = 1;</script><style>p {}</style><p>b"), "<p>a</p><script type=x></script><style></style><p>b");
        // A `<` in a script is fine before any foreign content, but not after one, nor with `<!--`.
        assert_eq!(s("<script>if (a<b) {}</script>"), "<script></script>");
        assert_eq!(s("<svg></svg><script>if (a<b) {}</script>"), "<svg></svg><script>if (a<b) {}</script>");
        assert_eq!(s("<script><!-- x </script>"), "<script><!-- x </script>");
        // Where the tokenizer is not reading tags, nothing is a script.
        for kept in [
            "<!-- <script>x</script> -->",
            "<textarea><script>x</script></textarea>",
            "<title><script>x</script></title>",
            "<a title='<script>x</script>'>",
            "<plaintext><script>x</script>",
            "<script>never closed",
            "<script/>x</script>",
        ] {
            assert_eq!(s(kept), kept, "{kept}");
        }
        // Comments end as the tokenizer ends them.
        assert_eq!(s("<!--><script>x</script>"), "<!--><script></script>");
        assert_eq!(s("<!-- a --!><script>x</script>"), "<!-- a --!><script></script>");
        // An end tag needs a delimiter after its name; quoted `>` does not end a tag.
        assert_eq!(s("<script>a</scripts>b</script >"), "<script></script >");
        assert_eq!(s("<div a=\">\" b><script>x</script>"), "<div a=\">\" b><script></script>");
        assert!(matches!(empty_scripts("<p>no scripts</p>"), Cow::Borrowed(_)));
    }
}
