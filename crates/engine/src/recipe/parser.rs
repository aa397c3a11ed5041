//! tokq's statements, recognised in one place: a recipe's text is tokenized once by DataFusion's
//! own SQL tokenizer, cut at the semicolons it finds outside quotes and comments, and each piece
//! is read as `PARAMETERS`, `INCLUDE`, `CREATE COMPONENTS`, or handed to DataFusion's `DFParser`
//! (as `datafusion-examples/examples/sql_ops/dialect.rs` extends it). A string or a comment that
//! spells one of tokq's statements is a token of another statement, never a statement.
//!
//! Recognising a statement reads only its leading words, so a recipe's raw text, `${...}`
//! parameters and all, can be cut and its `PARAMETERS` read before anything is substituted.

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::{CopyToStatement, DFParserBuilder, Statement as DfStatement};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Whitespace};

use super::declare::{self, Declared};
use super::include::Include;
use crate::components::Components;

/// A statement as tokq reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum TokqStatement {
    /// `PARAMETERS (name type [DEFAULT value], ...)`: a recipe's typed parameters.
    Parameters(Vec<Declared>),
    /// `INCLUDE 'part.sql' [WITH (...)]`: another recipe's statements in place.
    Include(Include),
    /// `CREATE COMPONENTS name FROM relation (a, b) LOCATION 'dir/'`.
    Components(Components),
    /// DataFusion's `COPY ... TO ...`, which tokq's writer runs when it writes Parquet.
    Copy(CopyToStatement),
    /// Any other statement, for DataFusion.
    Df(DfStatement),
}

/// Which statement a piece of text is, read from its leading words alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leading {
    /// Starts with the word `PARAMETERS`.
    Parameters,
    /// Starts with the word `INCLUDE`.
    Include,
    /// Starts with `CREATE COMPONENTS`.
    Components,
    /// Anything else: DataFusion's.
    Sql,
}

/// Text that SQL's tokenizer refuses (an unterminated quote or comment), with its line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct SyntaxError {
    /// 1-based, in the text given to [`TokqParser::new`].
    pub line: usize,
    /// The tokenizer's words.
    pub message: String,
}

/// A text's tokens, cut into statements.
pub struct TokqParser<'a> {
    text: &'a str,
    tokens: Vec<TokenWithSpan>,
}

/// One statement of a text: where it stands, its source, its tokens.
pub struct Source<'a> {
    /// 1-based line of its first character that is not blank (a comment counts).
    pub line: usize,
    /// Its text, comments included, trimmed; without the semicolon.
    pub sql: &'a str,
    tokens: &'a [TokenWithSpan],
}

impl<'a> TokqParser<'a> {
    /// Tokenizes `text` as DataFusion does (the generic dialect).
    pub fn new(text: &'a str) -> Result<Self, SyntaxError> {
        let tokens = Tokenizer::new(&GenericDialect {}, text)
            .tokenize_with_location()
            .map_err(|e| SyntaxError { line: e.location.line.max(1) as usize, message: e.message })?;
        Ok(Self { text, tokens })
    }

    /// The statements, in order; pieces that are only blanks and comments are none.
    pub fn sources(&self) -> Vec<Source<'_>> {
        let offsets = LineOffsets::new(self.text);
        let mut out = Vec::new();
        let mut from_token = 0;
        let ends = self.tokens.iter().enumerate().filter(|(_, t)| t.token == Token::SemiColon).map(|(i, t)| (i, offsets.byte(self.text, t)));
        for (end_token, end_byte) in ends.chain([(self.tokens.len(), self.text.len())]) {
            let tokens = &self.tokens[from_token..end_token];
            // A piece of only blanks and comments is no statement; a statement starts at its first
            // token that is not blank (a comment counts).
            let has_code = tokens.iter().any(|t| is_code(&t.token));
            if let Some(first) = tokens.iter().find(|t| !is_blank(&t.token)).filter(|_| has_code) {
                let sql = self.text[offsets.byte(self.text, first)..end_byte].trim_end();
                out.push(Source { line: first.span.start.line as usize, sql, tokens });
            }
            from_token = end_token + 1;
        }
        out
    }
}

impl Source<'_> {
    /// Which statement this is, from its leading words.
    pub fn leading(&self) -> Leading {
        let mut words = code(self.tokens).map(|t| match &t.token {
            Token::Word(w) if w.quote_style.is_none() => w.value.to_ascii_uppercase(),
            _ => String::new(),
        });
        match (words.next().as_deref(), words.next().as_deref()) {
            (Some("PARAMETERS"), _) => Leading::Parameters,
            (Some("INCLUDE"), _) => Leading::Include,
            (Some("CREATE"), Some("COMPONENTS")) => Leading::Components,
            _ => Leading::Sql,
        }
    }

    /// The statement tokq's own parsers read (`PARAMETERS`, `INCLUDE`, `CREATE COMPONENTS`), or
    /// `None` for DataFusion's; an error says what is wrong with one of tokq's, with its line.
    pub fn tokq(&self) -> Option<Result<TokqStatement, (usize, String)>> {
        let at = |cause: String| (self.line, cause);
        Some(match self.leading() {
            Leading::Parameters => self.parameters().map(TokqStatement::Parameters),
            Leading::Include => self.include().map(TokqStatement::Include).map_err(at),
            Leading::Components => Components::parse(self.code()).map(TokqStatement::Components).map_err(at),
            Leading::Sql => return None,
        })
    }

    /// Its declarations, read as `PARAMETERS` (see [`Source::leading`]), or what is wrong with
    /// its line.
    pub fn parameters(&self) -> Result<Vec<Declared>, (usize, String)> {
        declare::parse(self.tokens)
    }

    /// The file and values it includes, read as `INCLUDE` (see [`Source::leading`]).
    pub fn include(&self) -> Result<Include, String> {
        Include::parse(self.code())
    }

    /// Its tokens that are neither blanks nor comments.
    fn code(&self) -> impl Iterator<Item = &Token> {
        code(self.tokens).map(|t| &t.token)
    }

    /// The whole statement: tokq's, or DataFusion's parsed by `DFParser`.
    pub fn parse(&self) -> Result<TokqStatement> {
        if let Some(tokq) = self.tokq() {
            return tokq.map_err(|(_, cause)| DataFusionError::Plan(cause));
        }
        let mut parser = DFParserBuilder::new(self.tokens.to_vec()).build()?;
        let mut parsed = parser.parse_statements()?;
        match (parsed.pop_front(), parsed.len()) {
            (Some(DfStatement::CopyTo(c)), 0) => Ok(TokqStatement::Copy(c)),
            (Some(s), 0) => Ok(TokqStatement::Df(s)),
            (_, n) => Err(DataFusionError::Plan(format!("expected one statement, found {}", n + 1))),
        }
    }
}

/// Parses one statement's text (no semicolon but a trailing one).
pub fn parse_one(sql: &str) -> Result<TokqStatement> {
    let parser = TokqParser::new(sql).map_err(|e| DataFusionError::Plan(e.message))?;
    let sources = parser.sources();
    match sources.as_slice() {
        [one] => one.parse(),
        more => Err(DataFusionError::Plan(format!("expected one statement, found {}", more.len()))),
    }
}

/// The names of the functions `sql` calls (a word before `(`), in order, outside strings and
/// comments; empty when it does not tokenize.
pub fn called_functions(sql: &str) -> Vec<String> {
    let Ok(parser) = TokqParser::new(sql) else { return Vec::new() };
    let code: Vec<&Token> = code(&parser.tokens).map(|t| &t.token).collect();
    code.windows(2)
        .filter_map(|w| match w {
            [Token::Word(name), Token::LParen] => Some(name.value.clone()),
            _ => None,
        })
        .collect()
}

/// The tokens that are neither blanks nor comments.
fn code(tokens: &[TokenWithSpan]) -> impl Iterator<Item = &TokenWithSpan> {
    tokens.iter().filter(|t| is_code(&t.token))
}

fn is_code(t: &Token) -> bool {
    !matches!(t, Token::Whitespace(_) | Token::EOF)
}

/// Spaces, tabs and line breaks; comments are not blank.
fn is_blank(t: &Token) -> bool {
    matches!(t, Token::Whitespace(Whitespace::Space | Whitespace::Tab | Whitespace::Newline))
}

/// Byte offsets of line starts, for the tokenizer's 1-based (line, column in characters).
struct LineOffsets(Vec<usize>);

impl LineOffsets {
    fn new(text: &str) -> Self {
        Self(std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect())
    }

    fn byte(&self, text: &str, t: &TokenWithSpan) -> usize {
        let (line, column) = (t.span.start.line as usize, t.span.start.column as usize);
        let start = self.0.get(line.saturating_sub(1)).copied().unwrap_or(text.len());
        text[start..].char_indices().nth(column.saturating_sub(1)).map_or(text.len(), |(i, _)| start + i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leading(text: &str) -> Vec<(usize, Leading, String)> {
        TokqParser::new(text).unwrap().sources().iter().map(|s| (s.line, s.leading(), s.sql.to_string())).collect()
    }

    #[test]
    fn statements_are_cut_outside_quotes_and_comments() {
        let text = "-- head; comment\nSELECT ';' AS a;\n\n/* x; */ SELECT \"b;c\", $$d;e$$ FROM t;\n-- trailing only\n";
        let got = leading(text);
        assert_eq!(got, [(1, Leading::Sql, "-- head; comment\nSELECT ';' AS a".into()), (4, Leading::Sql, "/* x; */ SELECT \"b;c\", $$d;e$$ FROM t".into())]);
        assert_eq!(leading("SELECT 'é';SELECT 2"), [(1, Leading::Sql, "SELECT 'é'".into()), (1, Leading::Sql, "SELECT 2".into())]);
        assert!(leading(";; -- nothing\n;").is_empty());
    }

    #[test]
    fn tokqs_statements_spelled_in_strings_or_comments_are_not_statements() {
        let text = "SELECT 'INCLUDE ''x.sql''' AS a;\n-- PARAMETERS (a text);\n/* CREATE COMPONENTS c FROM e (a, b) LOCATION 'x' */ SELECT 1;\n\
                    SELECT \"include\" FROM \"parameters\";\n-- INCLUDE 'x.sql'\nSELECT 'CREATE COMPONENTS c' AS create_components";
        let kinds: Vec<Leading> = leading(text).into_iter().map(|(_, k, _)| k).collect();
        assert_eq!(kinds, [Leading::Sql; 4]);
        let text = "-- first\nPARAMETERS (a text);\n/* x */ INCLUDE 'p.sql';\ncreate  components c from e (a, b) location 'w/'";
        let kinds: Vec<(usize, Leading)> = leading(text).into_iter().map(|(l, k, _)| (l, k)).collect();
        assert_eq!(kinds, [(1, Leading::Parameters), (3, Leading::Include), (4, Leading::Components)]);
    }

    #[test]
    fn each_statement_parses_to_its_kind() {
        let parser = TokqParser::new("PARAMETERS (n integer DEFAULT 3);\nINCLUDE 'p.sql' WITH (n = 2);\nCREATE COMPONENTS c FROM e (a, b) LOCATION 'w';\nCOPY (SELECT 1) TO 'o.parquet';\nSELECT 1").unwrap();
        let parsed: Vec<TokqStatement> = parser.sources().iter().map(|s| s.parse().unwrap()).collect();
        assert!(matches!(&parsed[0], TokqStatement::Parameters(d) if d[0].name == "n" && d[0].line == 1));
        assert!(matches!(&parsed[1], TokqStatement::Include(i) if i.path == "p.sql" && i.params["n"] == "2"));
        assert!(matches!(&parsed[2], TokqStatement::Components(c) if c.location == "w/"));
        assert!(matches!(&parsed[3], TokqStatement::Copy(c) if c.target == "o.parquet"));
        assert!(matches!(&parsed[4], TokqStatement::Df(DfStatement::Statement(_))));
        assert!(parse_one("SELECT 1; SELECT 2").unwrap_err().to_string().contains("expected one statement, found 2"));
        assert!(parse_one("SELEC 1").is_err());
    }

    #[test]
    fn an_unterminated_quote_names_its_line() {
        let e = TokqParser::new("SELECT 1;\nSELECT 'open").err().unwrap();
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn function_calls_outside_strings_and_comments() {
        assert_eq!(called_functions("SELECT f(x), 'g(y)' -- h(z)\n FROM t WHERE k (1)"), ["f", "k"]);
    }
}
