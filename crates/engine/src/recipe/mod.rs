//! A recipe file: `${name}` and `${name:-default}` parameters, then statements split at top-level semicolons.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

mod declare;
mod include;
mod parser;

pub use declare::{Declared, ParamType};
pub use include::Include;
pub use parser::{called_functions, parse_one, Leading, Source, SyntaxError, TokqParser, TokqStatement};

/// Why a recipe cannot be read; each names the file and line.
#[derive(Debug, thiserror::Error, PartialEq)]
#[allow(missing_docs)] // the messages say it
pub enum RecipeError {
    #[error("{file}:{line}: unknown parameter '${{{name}}}': {how}")]
    UnknownParam { file: String, line: usize, name: String, how: String },
    #[error("{file}:{line}: unterminated '${{' parameter")]
    Unterminated { file: String, line: usize },
    #[error("{file}:{line}: '${{{name}}}' has the default '{default}' here and '{earlier}' earlier: give it once")]
    ConflictingDefault { file: String, line: usize, name: String, default: String, earlier: String },
    #[error("{given} {name}=...: {file} has no parameter '${{{name}}}' (its parameters: {known})")]
    UnusedSet { given: String, file: String, name: String, known: String },
    #[error("{file}:{line}: {cause}")]
    Include { file: String, line: usize, cause: String },
    #[error("{file}:{line}: {cause}")]
    Syntax { file: String, line: usize, cause: String },
    #[error(
        "{file}:{line}: '${{{name}}}' is followed by '{after}', so its value must end with '/' as its default '{default}' does, \
         or the paths run together; pass --set {name}={value}/"
    )]
    GluedPath { file: String, line: usize, name: String, after: String, default: String, value: String },
    #[error("{file}:{line}: {cause}")]
    Declaration { file: String, line: usize, cause: String },
    #[error("{file}:{line}: PARAMETERS must be the recipe's first statement")]
    MisplacedDeclaration { file: String, line: usize },
    #[error("{file}:{line}: '${{{name}}}' is not declared: add it to the PARAMETERS at line {declared_at}")]
    Undeclared { file: String, line: usize, name: String, declared_at: usize },
    #[error("{file}:{line}: '${{{name}}}' gives a default, but the recipe declares its parameters: give the default in PARAMETERS, once")]
    InlineDefault { file: String, line: usize, name: String },
    #[error("{given} {name}={value}: {file}:{line} declares '{name}' {kind}, so {why}")]
    BadValue { given: String, file: String, line: usize, name: String, value: String, kind: ParamType, why: String },
    #[error("{file}:{line}: '{name}' ({kind}) has no default: give it with {how}")]
    Missing { file: String, line: usize, name: String, kind: ParamType, how: String },
    #[error("{file}: no SQL statements in the recipe")]
    Empty { file: String },
    #[error(
        "{file}:{line}: the value of '${{{name}}}' ({value:?}) would change the recipe's statements or lines: \
         a line break is refused anywhere, a quote, semicolon or comment outside quotes; quote it in the recipe ('${{{name}}}')"
    )]
    UnsafeValue { file: String, line: usize, name: String, value: String },
}

/// Included recipes may include others, this deep.
const MAX_INCLUDE_DEPTH: usize = 8;

/// Who gives a recipe its parameter values.
enum Given {
    /// The command line.
    Set,
    /// An `INCLUDE 'path' WITH (...)` statement.
    Include(String),
}

impl Given {
    fn how(&self) -> String {
        match self {
            Given::Set => "--set".to_string(),
            Given::Include(path) => format!("INCLUDE '{path}' WITH"),
        }
    }
}

/// Where a `${...}` stands in the SQL, which decides how its value is written in.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Context {
    /// Bare SQL: the value is pasted as it is, and must not change the statements.
    Code,
    /// Inside `'...'`: a `'` in the value is doubled.
    Text,
    /// Inside `"..."`: a `"` in the value is doubled.
    Identifier,
    /// Inside a comment: pasted as it is, line breaks made spaces.
    Comment,
}

/// The SQL context at byte `to` of `raw`, given the context at byte `from` (quotes and comments
/// as the statement splitter sees them).
fn context_after(raw: &[u8], from: usize, to: usize, mut c: Context) -> Context {
    let mut i = from;
    while i < to {
        c = match (c, raw[i]) {
            (Context::Code, b'\'') | (Context::Text, b'\'') => if c == Context::Code { Context::Text } else { Context::Code },
            (Context::Code, b'"') | (Context::Identifier, b'"') => if c == Context::Code { Context::Identifier } else { Context::Code },
            (Context::Code, b'-') if raw.get(i + 1) == Some(&b'-') => {
                i = raw[i..to].iter().position(|&b| b == b'\n').map_or(to, |n| i + n);
                if i == to { Context::Comment } else { Context::Code }
            }
            (Context::Code, b'/') if raw.get(i + 1) == Some(&b'*') => {
                i = raw[i + 2..to].windows(2).position(|w| w == b"*/").map_or(to, |n| i + 2 + n + 1);
                if i == to { Context::Comment } else { Context::Code }
            }
            (c, _) => c,
        };
        i += 1;
    }
    c
}

/// One `${...}` in a recipe: its name, its default if it gives one, and its line.
struct Param<'a> {
    name: &'a str,
    default: Option<&'a str>,
    line: usize,
    /// Byte range of the whole `${...}` in the recipe.
    span: std::ops::Range<usize>,
    context: Context,
}

fn params_of<'a>(path: &str, raw: &'a str) -> Result<Vec<Param<'a>>, RecipeError> {
    let mut found = Vec::new();
    let (mut from, mut context) = (0, Context::Code);
    while let Some(at) = raw[from..].find("${").map(|i| from + i) {
        context = context_after(raw.as_bytes(), from, at, context);
        let line = raw[..at].matches('\n').count() + 1;
        let Some(end) = raw[at..].find('}').map(|i| at + i) else {
            return Err(RecipeError::Unterminated { file: path.to_string(), line });
        };
        let inner = &raw[at + 2..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        found.push(Param { name, default, line, span: at..end + 1, context });
        from = end + 1;
    }
    Ok(found)
}

#[derive(Debug, Clone, PartialEq)]
/// One statement of a recipe.
pub struct Statement {
    /// The recipe file it is written in: the recipe, or a file it includes.
    pub file: String,
    /// 1-based position in the recipe.
    pub number: usize,
    /// 1-based line of the recipe where the statement starts.
    pub line: usize,
    /// Its SQL, comments included.
    pub sql: String,
}

impl Statement {
    /// The first line that is not blank or a comment.
    pub fn first_line(&self) -> &str {
        self.sql.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with("--")).unwrap_or("")
    }

    /// How messages and progress name the statement: its kind and target (`COPY to out/x/`,
    /// `CREATE VIEW docs`, `CREATE COMPONENTS clusters`), or a query's SQL on one line, cut at
    /// 60 characters.
    pub fn label(&self) -> String {
        use datafusion::sql::parser::Statement as Df;
        use datafusion::sql::sqlparser::ast::Statement as Sql;
        let named = match parse_one(&self.sql) {
            Ok(TokqStatement::Copy(c)) => Some(format!("COPY to {}", c.target)),
            Ok(TokqStatement::Components(c)) => Some(format!("CREATE COMPONENTS {}", c.name)),
            Ok(TokqStatement::Df(Df::CreateExternalTable(t))) => Some(format!("CREATE EXTERNAL TABLE {}", t.name)),
            Ok(TokqStatement::Df(Df::Statement(s))) => match *s {
                Sql::CreateView(v) => Some(format!("CREATE VIEW {}", v.name)),
                Sql::CreateTable(t) => Some(format!("CREATE TABLE {}", t.name)),
                _ => None,
            },
            _ => None,
        };
        named.unwrap_or_else(|| {
            let code = self.sql.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("--")).collect::<Vec<_>>().join(" ");
            if code.chars().count() > 60 { code.chars().take(59).chain(['…']).collect() } else { code }
        })
    }
}

#[derive(Debug, Clone)]
/// A parsed recipe.
pub struct Recipe {
    /// The file it came from, for messages.
    pub path: String,
    /// Its PARAMETERS, if it declares them (not those of the parts it includes).
    pub parameters: Vec<Declared>,
    /// The text after parameter substitution: what runs, and what `tokq.recipe_sha256` hashes.
    pub text: String,
    /// sha256 of its file's text as written, before parameters: the same recipe however it is
    /// run ([`Recipe::id`]).
    pub source_sha256: String,
    /// In order.
    pub statements: Vec<Statement>,
}

impl Recipe {
    /// Substitutes the parameters in `raw` (given by `--set`), splits it into statements and puts
    /// each included recipe's statements in place of its `INCLUDE`.
    pub fn parse(path: &str, raw: &str, params: &BTreeMap<String, String>) -> Result<Self, RecipeError> {
        let recipe = Self::parse_within(path, raw, params, Given::Set, &mut Vec::new())?;
        if recipe.statements.is_empty() {
            return Err(RecipeError::Empty { file: path.to_string() });
        }
        Ok(recipe)
    }

    fn parse_within(path: &str, raw: &str, params: &BTreeMap<String, String>, given: Given, within: &mut Vec<String>) -> Result<Self, RecipeError> {
        let declared = declarations(path, raw)?;
        let mut text = substitute(path, raw, params, &given, declared.as_deref())?;
        let mut statements = Vec::new();
        let mut included = String::new();
        let parser = TokqParser::new(&text).map_err(|e| syntax(path, e))?;
        for (i, source) in parser.sources().iter().enumerate() {
            let err = |cause: String| RecipeError::Include { file: path.to_string(), line: source.line, cause };
            let include = match source.leading() {
                Leading::Parameters if i > 0 => return Err(RecipeError::MisplacedDeclaration { file: path.to_string(), line: source.line }),
                // Read before the parameters were substituted, by `declarations`.
                Leading::Parameters => continue,
                Leading::Include => source.include().map_err(err)?,
                // CREATE COMPONENTS and DataFusion's statements are parsed when they run.
                Leading::Components | Leading::Sql => {
                    statements.push(Statement { file: path.to_string(), number: statements.len() + 1, line: source.line, sql: source.sql.to_string() });
                    continue;
                }
            };
            let file = include.resolve(path);
            if within.contains(&file) || within.len() >= MAX_INCLUDE_DEPTH {
                return Err(err(format!("'{file}' includes itself, through {}", within.join(" -> "))));
            }
            let raw = std::fs::read_to_string(&file).map_err(|e| err(format!("cannot read '{file}': {e}")))?;
            within.push(path.to_string());
            let inner = Self::parse_within(&file, &raw, &include.params, Given::Include(include.path.clone()), within)?;
            within.pop();
            included.push_str(&format!("\n-- INCLUDE {file}\n{}", inner.text));
            for s in inner.statements {
                statements.push(Statement { number: statements.len() + 1, ..s });
            }
        }
        text.push_str(&included);
        let source_sha256 = hex::encode(Sha256::digest(raw.as_bytes()));
        Ok(Self { path: path.to_string(), parameters: declared.unwrap_or_default(), text, source_sha256, statements })
    }

    /// The PARAMETERS a recipe's text declares (empty when it declares none), without values:
    /// what `tokq params` lists.
    pub fn declared(path: &str, raw: &str) -> Result<Vec<Declared>, RecipeError> {
        Ok(declarations(path, raw)?.unwrap_or_default())
    }

    /// sha256 of the substituted text: the manifest's `recipe_sha256`.
    pub fn sha256(&self) -> String {
        hex::encode(Sha256::digest(self.text.as_bytes()))
    }

    /// What its outputs' manifests record as their recipe: its file's real path (the same
    /// recipe however it is named, edited or not), or `sql:` and its text's hash for SQL given as
    /// text; and the hash of its text as written.
    pub fn id(&self) -> crate::sink::manifest::RecipeId {
        let origin = match std::fs::canonicalize(&self.path) {
            Ok(real) if real.is_file() => real.display().to_string(),
            _ => format!("sql:{}", self.source_sha256),
        };
        crate::sink::manifest::RecipeId { origin, source_sha256: self.source_sha256.clone(), sha256: self.sha256() }
    }
}

/// The recipe's PARAMETERS, if its first statement declares them; they may not use parameters.
fn declarations(path: &str, raw: &str) -> Result<Option<Vec<Declared>>, RecipeError> {
    let parser = TokqParser::new(raw).map_err(|e| syntax(path, e))?;
    let Some(first) = parser.sources().into_iter().next().filter(|s| s.leading() == Leading::Parameters) else { return Ok(None) };
    let err = |(line, cause)| RecipeError::Declaration { file: path.to_string(), line, cause };
    if params_of(path, first.sql)?.iter().any(|p| p.context != Context::Comment) {
        return Err(err((first.line, "PARAMETERS cannot use parameters".to_string())));
    }
    first.parameters().map(Some).map_err(err)
}

fn syntax(path: &str, e: SyntaxError) -> RecipeError {
    RecipeError::Syntax { file: path.to_string(), line: e.line, cause: e.message }
}

/// Every parameter's value: given, or its default, checked against its declared type.
fn declared_values(path: &str, declared: &[Declared], params: &BTreeMap<String, String>, given: &Given) -> Result<BTreeMap<String, String>, RecipeError> {
    let mut values = BTreeMap::new();
    for d in declared {
        let value = match (params.get(&d.name), &d.default) {
            (Some(v), _) => d.kind.check(v).map_err(|why| RecipeError::BadValue {
                given: given.how(),
                file: path.to_string(),
                line: d.line,
                name: d.name.clone(),
                value: v.clone(),
                kind: d.kind,
                why,
            })?,
            (None, Some(default)) => default.clone(),
            (None, None) => {
                return Err(RecipeError::Missing { file: path.to_string(), line: d.line, name: d.name.clone(), kind: d.kind, how: format!("{} {}=VALUE", given.how(), d.name) })
            }
        };
        values.insert(d.name.clone(), value);
    }
    Ok(values)
}

/// Replaces every `${name}` by its `--set` value or its default. A default given once applies to
/// every use of the name, so a recipe states each default in one place. Inside quotes the value
/// is escaped, so `--set input="it's/"` reads that folder; outside quotes a value that would
/// change the statements is refused.
fn substitute(path: &str, raw: &str, params: &BTreeMap<String, String>, given: &Given, declared: Option<&[Declared]>) -> Result<String, RecipeError> {
    let found = params_of(path, raw)?;
    if let Some(declared) = declared {
        let declared_at = declared.first().map_or(1, |d| d.line);
        for p in &found {
            if p.default.is_some() {
                return Err(RecipeError::InlineDefault { file: path.to_string(), line: p.line, name: p.name.to_string() });
            }
            if !declared.iter().any(|d| d.name == p.name) {
                return Err(RecipeError::Undeclared { file: path.to_string(), line: p.line, name: p.name.to_string(), declared_at });
            }
        }
    }
    let mut defaults: BTreeMap<&str, &str> = BTreeMap::new();
    for d in declared.unwrap_or_default() {
        if let Some(default) = &d.default {
            defaults.insert(&d.name, default);
        }
    }
    for p in &found {
        let Some(d) = p.default else { continue };
        match defaults.insert(p.name, d) {
            Some(earlier) if earlier != d => {
                return Err(RecipeError::ConflictingDefault {
                    file: path.to_string(),
                    line: p.line,
                    name: p.name.to_string(),
                    default: d.to_string(),
                    earlier: earlier.to_string(),
                })
            }
            _ => {}
        }
    }
    let mut known: Vec<&str> = match declared {
        Some(declared) => declared.iter().map(|d| d.name.as_str()).collect(),
        None => found.iter().map(|p| p.name).collect(),
    };
    if let Some(unused) = params.keys().find(|k| !known.contains(&k.as_str())) {
        known.sort();
        known.dedup();
        let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
        return Err(RecipeError::UnusedSet { given: given.how(), file: path.to_string(), name: unused.clone(), known });
    }
    let values = match declared {
        Some(declared) => declared_values(path, declared, params, given)?,
        None => params.clone(),
    };
    let mut out = String::with_capacity(raw.len());
    let mut at = 0;
    for p in &found {
        out.push_str(&raw[at..p.span.start]);
        let Some(v) = values.get(p.name).map(String::as_str).or(defaults.get(p.name).copied()) else {
            return Err(RecipeError::UnknownParam { file: path.to_string(), line: p.line, name: p.name.to_string(), how: format!("give it with {} {}=VALUE", given.how(), p.name) });
        };
        let unsafe_here = match p.context {
            Context::Comment => false,
            Context::Text | Context::Identifier => v.contains(['\n', '\r']),
            Context::Code => v.contains(['\'', '"', ';', '\n', '\r']) || v.contains("--") || v.contains("/*"),
        };
        // `'${work:-out/w/}signed/'` with --set work=out/x would write to 'out/xsigned/'.
        let after: String = raw[p.span.end..].chars().take_while(|c| !matches!(c, '\'' | '"' | '$' | '\n' | ' ')).collect();
        let default = defaults.get(p.name).copied().unwrap_or_default();
        if default.ends_with('/') && !v.ends_with('/') && !after.is_empty() && !after.starts_with('/') {
            return Err(RecipeError::GluedPath {
                file: path.to_string(),
                line: p.line,
                name: p.name.to_string(),
                after,
                default: default.to_string(),
                value: v.to_string(),
            });
        }
        if unsafe_here {
            return Err(RecipeError::UnsafeValue { file: path.to_string(), line: p.line, name: p.name.to_string(), value: v.to_string() });
        }
        match p.context {
            Context::Text => out.push_str(&v.replace('\'', "''")),
            Context::Identifier => out.push_str(&v.replace('"', "\"\"")),
            Context::Comment => out.push_str(&v.replace(['\n', '\r'], " ")),
            Context::Code => out.push_str(v),
        }
        at = p.span.end;
    }
    out.push_str(&raw[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn splits_outside_quotes_and_comments() {
        let r = Recipe::parse(
            "r.sql",
            "-- head; comment\nSELECT ';' AS a;\n\n/* x; */ SELECT \"b;c\" FROM t;\n-- trailing only\n",
            &params(&[]),
        )
        .unwrap();
        assert_eq!(r.statements.len(), 2);
        assert_eq!(r.statements[0].sql, "-- head; comment\nSELECT ';' AS a");
        assert_eq!(r.statements[0].first_line(), "SELECT ';' AS a");
        assert_eq!(r.statements[0].label(), "SELECT ';' AS a");
        assert_eq!((r.statements[1].number, r.statements[1].line), (2, 4));
    }

    #[test]
    fn statements_are_named_by_what_they_do() {
        let sql = "COPY (\n  SELECT 1 AS a\n) TO 'out/x/' STORED AS PARQUET;\nCREATE VIEW docs AS\nSELECT 1;\n\
                   CREATE COMPONENTS c FROM links (a, b) LOCATION 'w/';\nSELECT a,\n  -- why\n  b FROM t";
        let r = Recipe::parse("r.sql", sql, &params(&[])).unwrap();
        let labels: Vec<String> = r.statements.iter().map(Statement::label).collect();
        assert_eq!(labels, ["COPY to out/x/", "CREATE VIEW docs", "CREATE COMPONENTS c", "SELECT a, b FROM t"]);
    }

    #[test]
    fn substitutes_and_names_unknown_params() {
        let r = Recipe::parse("r.sql", "SELECT '${a}', '${b:-d/}'", &params(&[("a", "x")])).unwrap();
        assert_eq!(r.statements[0].sql, "SELECT 'x', 'd/'");
        let r = Recipe::parse("r.sql", "SELECT '${b:-d}'", &params(&[("b", "set")])).unwrap();
        assert_eq!(r.statements[0].sql, "SELECT 'set'");
        let e = Recipe::parse("r.sql", "SELECT 1;\nSELECT ${nope}", &params(&[])).unwrap_err();
        assert_eq!(e.to_string(), "r.sql:2: unknown parameter '${nope}': give it with --set nope=VALUE");
        assert!(matches!(Recipe::parse("r.sql", "-- nothing", &params(&[])), Err(RecipeError::Empty { .. })));
    }

    #[test]
    fn a_default_given_once_applies_to_every_use() {
        let r = Recipe::parse("r.sql", "SELECT ${n}, ${n:-14}, ${n}", &params(&[])).unwrap();
        assert_eq!(r.statements[0].sql, "SELECT 14, 14, 14");
        let r = Recipe::parse("r.sql", "SELECT ${n}, ${n:-14}", &params(&[("n", "7")])).unwrap();
        assert_eq!(r.statements[0].sql, "SELECT 7, 7");
        let e = Recipe::parse("r.sql", "SELECT ${n:-1};\nSELECT ${n:-2}", &params(&[])).unwrap_err();
        assert_eq!(e.to_string(), "r.sql:2: '${n}' has the default '2' here and '1' earlier: give it once");
    }

    #[test]
    fn values_are_escaped_in_quotes_and_refused_where_they_would_change_the_statements() {
        let p = params(&[("dir", "it's; a \"dir\""), ("n", "7"), ("multi", "a\nb")]);
        let r = Recipe::parse("r.sql", "SELECT '${dir}' AS \"${dir}\", ${n} -- ${dir} ${multi}\n;\nSELECT 2", &p).unwrap();
        assert_eq!(r.statements.len(), 2);
        assert_eq!(r.statements[0].sql, "SELECT 'it''s; a \"dir\"' AS \"it's; a \"\"dir\"\"\", 7 -- it's; a \"dir\" a b");
        assert_eq!((r.statements[1].number, r.statements[1].line), (2, 3));
        for (sql, name) in [("SELECT 1;\nSELECT ${dir}", "dir"), ("SELECT 1;\nSELECT '${multi}'", "multi")] {
            let e = Recipe::parse("r.sql", sql, &p.iter().filter(|(k, _)| *k == name).map(|(k, v)| (k.clone(), v.clone())).collect()).unwrap_err();
            assert!(matches!(e, RecipeError::UnsafeValue { line: 2, .. }), "{e}");
            assert!(e.to_string().starts_with("r.sql:2: the value of '${"), "{e}");
        }
        // Quotes doubled inside a literal, and block comments, do not confuse the context.
        let r = Recipe::parse("r.sql", "SELECT 'a''b', /* ' */ '${n}'", &params(&[("n", "x'y")])).unwrap();
        assert_eq!(r.statements[0].sql, "SELECT 'a''b', /* ' */ 'x''y'");
    }

    #[test]
    fn a_set_name_the_recipe_does_not_use_is_refused() {
        let e = Recipe::parse("r.sql", "COPY (SELECT 1) TO '${output:-out/x/}'", &params(&[("outptu", "o/")])).unwrap_err();
        assert_eq!(e.to_string(), "--set outptu=...: r.sql has no parameter '${outptu}' (its parameters: output)");
    }

    #[test]
    fn a_folder_value_glued_to_more_path_is_refused() {
        let sql = "SELECT '${work:-out/w/}signed/';\nSELECT '${work}sources/', '${work}'";
        let e = Recipe::parse("r.sql", sql, &params(&[("work", "out/x")])).unwrap_err();
        assert!(matches!(e, RecipeError::GluedPath { line: 1, .. }), "{e}");
        assert!(e.to_string().contains("'${work}' is followed by 'signed/'") && e.to_string().ends_with("pass --set work=out/x/"), "{e}");
        let r = Recipe::parse("r.sql", sql, &params(&[("work", "out/x/")])).unwrap();
        assert_eq!(r.statements[1].sql, "SELECT 'out/x/sources/', 'out/x/'");
        // A value used alone, or a default that is no folder, is taken as it is.
        assert!(Recipe::parse("r.sql", "SELECT '${o:-out/q/}'", &params(&[("o", "out/z")])).is_ok());
        assert!(Recipe::parse("r.sql", "SELECT '${n:-a}.parquet'", &params(&[("n", "b")])).is_ok());
    }

    #[test]
    fn an_include_puts_the_parts_statements_in_place_with_its_parameters() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("parts")).unwrap();
        std::fs::write(d.path().join("parts/p.sql"), "-- a part\nCREATE VIEW ${name} AS SELECT ${n:-1} AS n;\nSELECT '${dir:-o/}x/'").unwrap();
        let main = d.path().join("main.sql").display().to_string();
        let raw = "SELECT 0;\nINCLUDE 'parts/p.sql' WITH (name = v, dir = '${out:-a/}');\nSELECT * FROM v";
        let r = Recipe::parse(&main, raw, &params(&[])).unwrap();
        let got: Vec<(String, usize, usize, &str)> = r.statements.iter().map(|s| (s.file.rsplit('/').next().unwrap().to_string(), s.number, s.line, s.first_line())).collect();
        assert_eq!(got, [("main.sql".into(), 1, 1, "SELECT 0"), ("p.sql".into(), 2, 1, "CREATE VIEW v AS SELECT 1 AS n"), ("p.sql".into(), 3, 3, "SELECT 'a/x/'"), ("main.sql".into(), 4, 3, "SELECT * FROM v")]);
        assert!(r.text.contains("-- INCLUDE") && r.text.contains("CREATE VIEW v AS SELECT 1"), "the hash covers the included text");
        let fails = |raw: &str| Recipe::parse(&main, raw, &params(&[])).unwrap_err().to_string();
        let e = fails("INCLUDE 'parts/p.sql' WITH (name = v, nmae = w)");
        assert!(e.starts_with("INCLUDE 'parts/p.sql' WITH nmae=...:") && e.contains("has no parameter '${nmae}' (its parameters: dir, n, name)"), "{e}");
        let e = fails("INCLUDE 'parts/p.sql'");
        assert!(e.contains("p.sql:2: unknown parameter '${name}': give it with INCLUDE 'parts/p.sql' WITH name=VALUE"), "{e}");
        assert!(fails("INCLUDE 'parts/nope.sql'").contains("main.sql:1: cannot read '"), "missing file");
        assert!(fails("INCLUDE parts").contains("expected INCLUDE 'file.sql'"), "no quotes");
        std::fs::write(d.path().join("loop.sql"), "INCLUDE 'loop.sql'").unwrap();
        assert!(fails("INCLUDE 'loop.sql'").contains("includes itself"), "a cycle");
    }

    const DECLARED: &str = "PARAMETERS (\n  input path DEFAULT 'in/*.jsonl', -- what to read\n  work folder DEFAULT 'out/w/',\n  seq_len integer DEFAULT 2048,\n  docs name DEFAULT docs,\n  model path\n);\nSELECT '${input}', '${work}x/', ${seq_len}, '${model}' FROM ${docs}";

    #[test]
    fn declared_parameters_have_types_defaults_and_are_checked() {
        let r = Recipe::parse("r.sql", DECLARED, &params(&[("model", "m.bin")])).unwrap();
        assert_eq!(r.statements.len(), 1, "PARAMETERS is no statement to run");
        assert_eq!((r.statements[0].line, r.statements[0].sql.as_str()), (8, "SELECT 'in/*.jsonl', 'out/w/x/', 2048, 'm.bin' FROM docs"));
        assert_eq!(r.parameters.len(), 5);
        assert_eq!((r.parameters[0].doc.as_str(), r.parameters[4].default.as_deref()), ("what to read", None));
        // A folder without its slash gets one, so joined paths stay apart.
        let r = Recipe::parse("r.sql", DECLARED, &params(&[("model", "m"), ("work", "s3://b/run")])).unwrap();
        assert!(r.statements[0].sql.contains("'s3://b/run/x/'"), "{}", r.statements[0].sql);
        let fails = |set: &[(&str, &str)]| Recipe::parse("r.sql", DECLARED, &params(set)).unwrap_err().to_string();
        assert_eq!(fails(&[]), "r.sql:6: 'model' (path) has no default: give it with --set model=VALUE");
        assert_eq!(fails(&[("model", "m"), ("seq_len", "2k")]), "--set seq_len=2k: r.sql:4 declares 'seq_len' integer, so it must be a whole number such as 2048");
        assert_eq!(fails(&[("model", "m"), ("docs", "t; DROP")]), "--set docs=t; DROP: r.sql:5 declares 'docs' name, so it must be a table or view name (letters, digits, _)");
        assert!(fails(&[("model", "m"), ("seqlen", "1")]).contains("has no parameter '${seqlen}' (its parameters: docs, input, model, seq_len, work)"));
    }

    #[test]
    fn a_declaring_recipe_uses_only_what_it_declares_and_declares_first() {
        let fails = |raw: &str| Recipe::parse("r.sql", raw, &params(&[])).unwrap_err().to_string();
        assert_eq!(fails("PARAMETERS (a text DEFAULT 'x');\nSELECT '${b}'"), "r.sql:2: '${b}' is not declared: add it to the PARAMETERS at line 1");
        assert!(fails("PARAMETERS (a text DEFAULT 'x');\nSELECT '${a:-y}'").contains("r.sql:2: '${a}' gives a default, but the recipe declares its parameters"));
        assert_eq!(fails("SELECT 1;\nPARAMETERS (a text)"), "r.sql:2: PARAMETERS must be the recipe's first statement");
        assert!(fails("PARAMETERS (a text DEFAULT '${b}');\nSELECT 1").contains("r.sql:1: PARAMETERS cannot use parameters"));
        assert!(fails("-- head\nPARAMETERS (\n a integer DEFAULT 'x'\n);\nSELECT 1").starts_with("r.sql:3: the default of 'a'"));
        // Parts declare theirs too: INCLUDE's values are checked like --set's.
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("p.sql"), "PARAMETERS (n integer);\nSELECT ${n}").unwrap();
        let main = d.path().join("main.sql").display().to_string();
        let e = Recipe::parse(&main, "INCLUDE 'p.sql' WITH (n = 'many')", &params(&[])).unwrap_err().to_string();
        assert!(e.starts_with("INCLUDE 'p.sql' WITH n=many: ") && e.contains("declares 'n' integer"), "{e}");
        let r = Recipe::parse(&main, "INCLUDE 'p.sql' WITH (n = 3)", &params(&[])).unwrap();
        assert_eq!(r.statements[0].sql, "SELECT 3");
    }

    #[test]
    fn hash_covers_substituted_text() {
        let a = Recipe::parse("r", "SELECT ${x}", &params(&[("x", "1")])).unwrap();
        let b = Recipe::parse("r", "SELECT ${x}", &params(&[("x", "2")])).unwrap();
        assert_ne!(a.sha256(), b.sha256());
    }
}
