//! `INCLUDE 'part.sql' WITH (name = value, ...)`: another recipe's statements in place.

use std::collections::BTreeMap;

use datafusion::sql::sqlparser::tokenizer::Token;

/// `INCLUDE 'path.sql' [WITH (name = 'value', n = 14)]`: another recipe's statements, here, with
/// its parameters given. The path is relative to the including recipe's folder.
#[derive(Debug, Clone, PartialEq)]
pub struct Include {
    /// As written.
    pub path: String,
    /// The values given in `WITH`, by name.
    pub params: BTreeMap<String, String>,
}

impl Include {
    /// Reads the statement from its tokens (blanks and comments left out), `INCLUDE` first; an
    /// error says what is wrong.
    pub fn parse<'t>(tokens: impl Iterator<Item = &'t Token>) -> Result<Self, String> {
        let mut t = tokens.skip(1).cloned();
        let usage = "expected INCLUDE 'file.sql' [WITH (name = 'value', ...)]";
        let Some(Token::SingleQuotedString(path)) = t.next() else { return Err(usage.to_string()) };
        let mut params = BTreeMap::new();
        match t.next() {
            None => return Ok(Self { path, params }),
            Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("with") => {}
            Some(other) => return Err(format!("{usage}; found '{other}' after the path")),
        }
        if t.next() != Some(Token::LParen) {
            return Err(format!("{usage}: WITH takes a parenthesized list"));
        }
        loop {
            let name = match t.next() {
                Some(Token::Word(w)) => w.value,
                Some(Token::RParen) if params.is_empty() => break,
                other => return Err(format!("{usage}: expected a parameter name, found {}", other.map_or("the end".into(), |o| format!("'{o}'")))),
            };
            if t.next() != Some(Token::Eq) {
                return Err(format!("{usage}: expected '=' after '{name}'"));
            }
            let value = match t.next() {
                Some(Token::SingleQuotedString(v)) => v,
                Some(Token::Number(n, _)) => n,
                Some(Token::Word(w)) => w.value,
                other => return Err(format!("{usage}: expected a value for '{name}', found {}", other.map_or("the end".into(), |o| format!("'{o}'")))),
            };
            if params.insert(name.clone(), value).is_some() {
                return Err(format!("'{name}' is given twice"));
            }
            match t.next() {
                Some(Token::Comma) => {}
                Some(Token::RParen) => break,
                other => return Err(format!("{usage}: expected ',' or ')', found {}", other.map_or("the end".into(), |o| format!("'{o}'")))),
            }
        }
        match t.next() {
            None => Ok(Self { path, params }),
            Some(other) => Err(format!("{usage}; found '{other}' after the list")),
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
