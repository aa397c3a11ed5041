//! spaCy's prefix, suffix and infix patterns, matched with Python `re` semantics on the `regex`
//! crate's automata instead of a backtracking engine.
//!
//! A pattern is a top-level alternation. Alternatives without look-around are merged into one
//! automaton per run (leftmost-first keeps Python's preference order within it). The few with a
//! look-behind `(?<=X)` or look-ahead `(?=Y)` / `(?![..])` become `(?:X)(BODY)(?:Y)`: X and Y
//! are consumed, and the match is capture group 1. The search starts as many characters early as
//! X is wide, so X may lie before the search position, as a look-behind may.

use std::ops::Range;

use regex::Regex;

struct Group {
    re: Regex,
    /// Width in characters of the look-behind, consumed before capture group 1.
    behind: usize,
    /// The group has no look-around: capture group 1 is the whole match.
    whole: bool,
}

/// One of spaCy's affix patterns (a top-level alternation) as groups of automata, tried in the
/// pattern's order with Python `re` semantics.
pub struct Alternation {
    groups: Vec<Group>,
}

/// The characters of a pattern that give it structure: each one outside escapes and `[..]`
/// classes, with its byte index and the group depth after it.
fn structure(pattern: &str) -> impl Iterator<Item = (usize, char, i32)> + '_ {
    let (mut depth, mut class) = (0i32, false);
    let mut it = pattern.char_indices();
    std::iter::from_fn(move || loop {
        let (i, c) = it.next()?;
        match c {
            '\\' => {
                it.next();
            }
            ']' if class => class = false,
            '[' if !class => class = true,
            _ if class => {}
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if !class && c != '\\' && c != ']' {
            return Some((i, c, depth));
        }
    })
}

/// Splits `pattern` at its top-level `|`.
fn alternatives(pattern: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, _, _) in structure(pattern).filter(|&(_, c, d)| c == '|' && d == 0) {
        out.push(&pattern[start..i]);
        start = i + 1;
    }
    out.push(&pattern[start..]);
    out
}

/// The byte index just past the group that opens at `open` (a `(`).
fn group_end(s: &str, open: usize) -> usize {
    structure(&s[open..]).find(|&(_, c, d)| c == ')' && d == 0).map_or(s.len(), |(i, _, _)| open + i + 1)
}

/// Characters matched by a look-behind body made of literals, escapes and classes.
fn width(x: &str) -> usize {
    let (mut n, mut class) = (0, false);
    let mut it = x.chars();
    while let Some(c) = it.next() {
        match c {
            '\\' => {
                it.next();
                n += usize::from(!class);
            }
            '[' if !class => {
                class = true;
                n += 1;
            }
            ']' if class => class = false,
            _ => n += usize::from(!class),
        }
    }
    n
}

/// `(?:X)(BODY)(?:Y)` and the width of X for one alternative with look-around.
fn convert(alt: &str) -> (String, usize) {
    let (mut behind, mut rest) = (String::new(), alt);
    if alt.starts_with("(?<=") {
        let end = group_end(alt, 0);
        behind = alt[4..end - 1].to_string();
        rest = &alt[end..];
    }
    // A look-ahead at the end, possibly before a final `$`.
    let mut ahead = String::new();
    let mut body = rest.to_string();
    if let Some(open) = rest.rfind("(?=").or_else(|| rest.rfind("(?!")) {
        let end = group_end(rest, open);
        if end == rest.len() || &rest[end..] == "$" {
            let inner = &rest[open + 3..end - 1];
            ahead = if rest[open..].starts_with("(?!") {
                // Only a single class is negated in spaCy's patterns: "not followed by [..]".
                let class = inner.strip_prefix('[').and_then(|c| c.strip_suffix(']')).unwrap_or_else(|| panic!("unsupported look-ahead in {alt}"));
                format!("(?:[^{class}]|$)")
            } else {
                format!("(?:{inner})")
            };
            body = format!("{}{}", &rest[..open], &rest[end..]);
        }
    }
    let w = width(&behind);
    (format!("(?:{behind})({body}){ahead}"), w)
}

fn compile(pattern: &str) -> Regex {
    // spaCy's patterns are fixed at build time; a failure is a bug that the tests catch.
    Regex::new(pattern).unwrap_or_else(|e| panic!("spaCy pattern does not compile: {e}"))
}

impl Alternation {
    /// Compiles spaCy's pattern (`(?u)` and `^`/`$` anchors allowed).
    pub fn new(pattern: &str) -> Self {
        let (flags, pattern) = match pattern.strip_prefix("(?u)") {
            Some(p) => ("(?u)", p),
            None => ("", pattern),
        };
        let mut groups = Vec::new();
        let mut easy: Vec<&str> = Vec::new();
        let flush = |easy: &mut Vec<&str>, groups: &mut Vec<Group>| {
            if !easy.is_empty() {
                groups.push(Group { re: compile(&format!("{flags}((?:{}))", easy.join("|"))), behind: 0, whole: true });
                easy.clear();
            }
        };
        for alt in alternatives(pattern) {
            if alt.contains("(?<") || alt.contains("(?=") || alt.contains("(?!") {
                flush(&mut easy, &mut groups);
                let (p, behind) = convert(alt);
                groups.push(Group { re: compile(&format!("{flags}{p}")), behind, whole: false });
            } else {
                easy.push(alt);
            }
        }
        flush(&mut easy, &mut groups);
        Self { groups }
    }

    /// The first match of group `g` whose capture starts at or after `pos`.
    fn find_from(&self, g: usize, s: &str, pos: usize) -> Option<Range<usize>> {
        let group = &self.groups[g];
        let from = match group.behind {
            0 => pos,
            n => s[..pos].char_indices().rev().nth(n - 1).map_or(0, |(i, _)| i),
        };
        // Most searches fail: a plain find rejects them without building captures.
        let m = group.re.find_at(s, from)?;
        if group.whole {
            return Some(m.range()).filter(|r| r.start >= pos);
        }
        let caps = group.re.captures_at(s, from)?;
        caps.get(1).map(|m| m.range()).filter(|r| r.start >= pos)
    }

    /// Python `re.search` semantics: the leftmost start, then the earliest alternative.
    pub fn search(&self, s: &str) -> Option<Range<usize>> {
        self.search_from(s, 0)
    }

    fn search_from(&self, s: &str, pos: usize) -> Option<Range<usize>> {
        let mut best: Option<Range<usize>> = None;
        for g in 0..self.groups.len() {
            if let Some(r) = self.find_from(g, s, pos) {
                if best.as_ref().is_none_or(|b| r.start < b.start) {
                    best = Some(r);
                }
            }
        }
        best
    }

    /// Python `re.finditer` semantics for patterns whose matches are never empty.
    pub fn find_iter(&self, s: &str) -> Vec<Range<usize>> {
        let (mut out, mut pos) = (Vec::new(), 0);
        while pos < s.len() {
            let Some(r) = self.search_from(s, pos) else { break };
            pos = if r.end > r.start { r.end } else { r.end + s[r.end..].chars().next().map_or(1, char::len_utf8) };
            out.push(r);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_look_around() {
        assert_eq!(convert(r"(?<=[0-9])[+\-\*^](?=[0-9-])"), (r"(?:[0-9])([+\-\*^])(?:[0-9-])".to_string(), 1));
        assert_eq!(convert(r"(?<=°[FfCcKk])\.$"), (r"(?:°[FfCcKk])(\.$)".to_string(), 2));
        assert_eq!(convert(r"^\+(?![0-9])"), (r"(?:)(^\+)(?:[^0-9]|$)".to_string(), 0));
    }

    #[test]
    fn matches_like_python_re() {
        let a = Alternation::new(r"(?<=[0-9])x|ab|(?<=[a-z])\.(?=[A-Z])");
        assert_eq!(a.search("1x"), Some(1..2));
        assert_eq!(a.search("zx"), None);
        assert_eq!(a.find_iter("ab1xa.B"), vec![0..2, 3..4, 5..6]);
        // A look-behind may see into the previous match.
        assert_eq!(Alternation::new(r"(?<=[a-z])[a-z]").find_iter("abc"), vec![1..2, 2..3]);
    }
}
