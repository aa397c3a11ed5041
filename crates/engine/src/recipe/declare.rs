//! `PARAMETERS (name type [DEFAULT value] [-- what it is], ...)`: a recipe's parameters declared
//! once, with their types and defaults, as its first statement.
//!
//! ```sql
//! PARAMETERS (
//!   input   path    DEFAULT 'queries/data/*.jsonl*',  -- JSONL files: a file, folder or glob
//!   work    folder  DEFAULT 'out/work/',              -- stage outputs go in folders under it
//!   seq_len integer DEFAULT 2048,
//!   lid_model path                                    -- no default: --set it
//! );
//! ```

use std::fmt;

use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

/// What a parameter's value must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// Any text.
    Text,
    /// A file, folder, glob or URL: not empty.
    Path,
    /// A folder that more path is joined to: a value without a trailing `/` gets one.
    Folder,
    /// A whole number.
    Integer,
    /// A finite number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A table or view name: letters, digits and `_`, not starting with a digit.
    Name,
}

impl ParamType {
    const ALL: [(&'static str, ParamType); 7] = [
        ("text", ParamType::Text),
        ("path", ParamType::Path),
        ("folder", ParamType::Folder),
        ("integer", ParamType::Integer),
        ("number", ParamType::Number),
        ("boolean", ParamType::Boolean),
        ("name", ParamType::Name),
    ];

    fn parse(word: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| n.eq_ignore_ascii_case(word)).map(|(_, t)| *t)
    }

    /// The value as it is written into the recipe, or why it is not one of this type.
    pub fn check(self, value: &str) -> Result<String, String> {
        let ok = match self {
            ParamType::Text => true,
            ParamType::Path | ParamType::Folder => !value.is_empty(),
            ParamType::Integer => value.parse::<i64>().is_ok(),
            ParamType::Number => value.parse::<f64>().is_ok_and(f64::is_finite),
            ParamType::Boolean => matches!(value, "true" | "false"),
            ParamType::Name => {
                let mut c = value.chars();
                c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_') && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
            }
        };
        if !ok {
            return Err(format!("it must be {}", self.meaning()));
        }
        Ok(if self == ParamType::Folder && !value.ends_with('/') { format!("{value}/") } else { value.to_string() })
    }

    fn meaning(self) -> &'static str {
        match self {
            ParamType::Text => "text",
            ParamType::Path => "a path that is not empty",
            ParamType::Folder => "a folder that is not empty",
            ParamType::Integer => "a whole number such as 2048",
            ParamType::Number => "a number such as 0.65",
            ParamType::Boolean => "true or false",
            ParamType::Name => "a table or view name (letters, digits, _)",
        }
    }
}

impl fmt::Display for ParamType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Self::ALL.iter().find(|(_, t)| t == self).map_or("?", |(n, _)| n))
    }
}

/// One declared parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Declared {
    /// As `${name}` uses it.
    pub name: String,
    /// What its value must be.
    pub kind: ParamType,
    /// Without one, the parameter must be given.
    pub default: Option<String>,
    /// Its line in the recipe.
    pub line: usize,
    /// The comment after it, if any.
    pub doc: String,
}

/// Reads a PARAMETERS statement from its tokens (comments included, for the docs): the
/// declarations, or what is wrong with its line.
pub fn parse(tokens: &[TokenWithSpan]) -> Result<Vec<Declared>, (usize, String)> {
    Parser { tokens: tokens.iter(), line: tokens.first().map_or(1, |t| t.span.start.line as usize), declared: Vec::new() }.declarations()
}

const USAGE: &str = "expected PARAMETERS (name type [DEFAULT value], ...) with a type of text, path, folder, integer, number, boolean or name";

struct Parser<'t, I: Iterator<Item = &'t TokenWithSpan>> {
    tokens: I,
    /// The line of the token read last.
    line: usize,
    declared: Vec<Declared>,
}

impl<'t, I: Iterator<Item = &'t TokenWithSpan>> Parser<'t, I> {
    /// The next token that is not blank or a comment; a comment on the line of the last
    /// declaration is its doc.
    fn next(&mut self) -> Option<Token> {
        for t in self.tokens.by_ref() {
            let line = t.span.start.line as usize;
            match &t.token {
                Token::Whitespace(Whitespace::SingleLineComment { comment, .. }) => {
                    if let Some(d) = self.declared.last_mut().filter(|d| d.doc.is_empty() && d.line == line) {
                        d.doc = comment.trim().to_string();
                    }
                }
                Token::Whitespace(_) | Token::EOF => {}
                token => {
                    self.line = line;
                    return Some(token.clone());
                }
            }
        }
        None
    }

    fn fail<T>(&self, what: String) -> Result<T, (usize, String)> {
        Err((self.line, what))
    }

    fn found(t: Option<Token>) -> String {
        t.map_or("the end".into(), |t| format!("'{t}'"))
    }

    fn declarations(mut self) -> Result<Vec<Declared>, (usize, String)> {
        self.next(); // PARAMETERS
        if self.next() != Some(Token::LParen) {
            return self.fail(format!("{USAGE}: a parenthesized list follows PARAMETERS"));
        }
        loop {
            let name = match self.next() {
                Some(Token::Word(w)) if w.quote_style.is_none() => w.value,
                Some(Token::RParen) if self.declared.is_empty() => break,
                other => return self.fail(format!("{USAGE}: expected a parameter name, found {}", Self::found(other))),
            };
            if self.declared.iter().any(|d| d.name == name) {
                return self.fail(format!("'{name}' is declared twice"));
            }
            let line = self.line;
            let kind = match self.next() {
                Some(Token::Word(w)) => match ParamType::parse(&w.value) {
                    Some(k) => k,
                    None => return self.fail(format!("{USAGE}: '{}' is no type", w.value)),
                },
                other => return self.fail(format!("{USAGE}: expected the type of '{name}', found {}", Self::found(other))),
            };
            // Declared before what follows is read, so that a comment after the type is its doc.
            self.declared.push(Declared { name: name.clone(), kind, default: None, line, doc: String::new() });
            let mut after = self.next();
            if matches!(&after, Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("default")) {
                let value = match self.next() {
                    Some(Token::SingleQuotedString(v)) => v,
                    Some(Token::Number(n, _)) => n,
                    Some(Token::Minus) => match self.next() {
                        Some(Token::Number(n, _)) => format!("-{n}"),
                        other => return self.fail(format!("expected a number after '-', found {}", Self::found(other))),
                    },
                    Some(Token::Word(w)) if w.quote_style.is_none() && matches!(w.value.to_ascii_lowercase().as_str(), "true" | "false") => w.value.to_ascii_lowercase(),
                    Some(Token::Word(w)) if w.quote_style.is_none() && kind == ParamType::Name => w.value,
                    other => return self.fail(format!("expected the default of '{name}' (a 'quoted' text, a number, true or false, or a name), found {}", Self::found(other))),
                };
                let checked = kind.check(&value).map_err(|why| (line, format!("the default of '{name}' ({value:?}) is no {kind}: {why}")))?;
                if let Some(d) = self.declared.last_mut() {
                    d.default = Some(checked);
                }
                after = None;
            }
            match after.or_else(|| self.next()) {
                Some(Token::Comma) => {}
                Some(Token::RParen) => break,
                other => return self.fail(format!("{USAGE}: expected ',' or ')', found {}", Self::found(other))),
            }
        }
        match self.next() {
            None => Ok(self.declared),
            Some(other) => self.fail(format!("{USAGE}: found {} after the list", Self::found(Some(other)))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(sql: &str) -> Vec<TokenWithSpan> {
        use datafusion::sql::sqlparser::{dialect::GenericDialect, tokenizer::Tokenizer};
        Tokenizer::new(&GenericDialect {}, sql).tokenize_with_location().unwrap()
    }

    #[test]
    fn declarations_with_types_defaults_docs_and_lines() {
        let sql = "PARAMETERS (\n  input path DEFAULT 'a/*.jsonl', -- what to read\n  work folder DEFAULT 'out/w',\n  n integer DEFAULT 14,\n  t number DEFAULT -0.5, -- threshold\n  on boolean DEFAULT TRUE,\n  model path -- no default\n)";
        let d = parse(&tokens(&format!("\n\n{sql}"))).unwrap();
        let got: Vec<_> = d.iter().map(|d| (d.name.as_str(), d.kind, d.default.as_deref(), d.line, d.doc.as_str())).collect();
        assert_eq!(
            got,
            vec![
                ("input", ParamType::Path, Some("a/*.jsonl"), 4, "what to read"),
                ("work", ParamType::Folder, Some("out/w/"), 5, ""),
                ("n", ParamType::Integer, Some("14"), 6, ""),
                ("t", ParamType::Number, Some("-0.5"), 7, "threshold"),
                ("on", ParamType::Boolean, Some("true"), 8, ""),
                ("model", ParamType::Path, None, 9, "no default"),
            ]
        );
    }

    #[test]
    fn mistakes_name_their_line() {
        let err = |sql: &str| parse(&tokens(sql)).unwrap_err();
        assert_eq!(err("PARAMETERS (\n a integer DEFAULT 'x'\n)"), (2, "the default of 'a' (\"x\") is no integer: it must be a whole number such as 2048".into()));
        assert!(err("PARAMETERS (a strange)").1.contains("'strange' is no type"));
        assert!(err("PARAMETERS (a text,\n a text)").1.contains("'a' is declared twice"));
        assert!(err("PARAMETERS (a text b text)").1.contains("expected ',' or ')'"));
        assert!(err("PARAMETERS a text").1.contains("parenthesized list"));
    }

    #[test]
    fn values_are_checked_and_folders_end_in_a_slash() {
        assert_eq!(ParamType::Folder.check("out/x"), Ok("out/x/".into()));
        assert_eq!(ParamType::Folder.check("s3://b/x/"), Ok("s3://b/x/".into()));
        assert!(ParamType::Folder.check("").is_err());
        assert!(ParamType::Integer.check("2048").is_ok() && ParamType::Integer.check("2k").is_err());
        assert!(ParamType::Number.check("0.65").is_ok() && ParamType::Number.check("NaN").is_err());
        assert!(ParamType::Boolean.check("true").is_ok() && ParamType::Boolean.check("yes").is_err());
        assert!(ParamType::Name.check("docs_2").is_ok() && ParamType::Name.check("x; DROP").is_err() && ParamType::Name.check("2x").is_err());
        assert_eq!(ParamType::Text.check("it's"), Ok("it's".into()));
    }
}
