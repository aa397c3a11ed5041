//! `INCLUDE 'part.sql' WITH (name = value, ...)`: another recipe's statements in place.

use std::collections::BTreeMap;

/// `INCLUDE 'path.sql' [WITH (name = 'value', n = 14)]`: another recipe's statements, here, with
/// its parameters given. The path is relative to the including recipe's folder.
pub struct Include {
    pub path: String,
    pub params: BTreeMap<String, String>,
}

impl Include {
    /// `None` when the statement is no INCLUDE; an error says what is wrong with one.
    pub fn parse(sql: &str) -> Option<Result<Self, String>> {
        use datafusion::sql::sqlparser::dialect::GenericDialect;
        use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
        let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize().ok()?;
        let mut t = tokens.into_iter().filter(|t| !matches!(t, Token::Whitespace(_)));
        match t.next() {
            Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("include") => {}
            _ => return None,
        }
        let usage = "expected INCLUDE 'file.sql' [WITH (name = 'value', ...)]";
        let Some(Token::SingleQuotedString(path)) = t.next() else { return Some(Err(usage.to_string())) };
        let mut params = BTreeMap::new();
        match t.next() {
            None => return Some(Ok(Self { path, params })),
            Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("with") => {}
            Some(other) => return Some(Err(format!("{usage}; found '{other}' after the path"))),
        }
        if t.next() != Some(Token::LParen) {
            return Some(Err(format!("{usage}: WITH takes a parenthesized list")));
        }
        loop {
            let name = match t.next() {
                Some(Token::Word(w)) => w.value,
                Some(Token::RParen) if params.is_empty() => break,
                other => return Some(Err(format!("{usage}: expected a parameter name, found {}", other.map_or("the end".into(), |o| format!("'{o}'"))))),
            };
            if t.next() != Some(Token::Eq) {
                return Some(Err(format!("{usage}: expected '=' after '{name}'")));
            }
            let value = match t.next() {
                Some(Token::SingleQuotedString(v)) => v,
                Some(Token::Number(n, _)) => n,
                Some(Token::Word(w)) => w.value,
                other => return Some(Err(format!("{usage}: expected a value for '{name}', found {}", other.map_or("the end".into(), |o| format!("'{o}'"))))),
            };
            if params.insert(name.clone(), value).is_some() {
                return Some(Err(format!("'{name}' is given twice")));
            }
            match t.next() {
                Some(Token::Comma) => {}
                Some(Token::RParen) => break,
                other => return Some(Err(format!("{usage}: expected ',' or ')', found {}", other.map_or("the end".into(), |o| format!("'{o}'"))))),
            }
        }
        match t.next() {
            None => Some(Ok(Self { path, params })),
            Some(other) => Some(Err(format!("{usage}; found '{other}' after the list"))),
        }
    }

    /// The included file's path: relative to the including recipe's folder.
    pub fn resolve(&self, from: &str) -> String {
        let p = std::path::Path::new(&self.path);
        if p.is_absolute() || from.starts_with('<') {
            return self.path.clone();
        }
        let dir = std::path::Path::new(from).parent().unwrap_or(std::path::Path::new(""));
        dir.join(p).display().to_string()
    }
}
