//! The kit every tokq function is built from, after DataFusion's own `functions/src/string/`.
//! A function is a [`Body`]: how it reads its constant arguments (tokenizer spec, filter
//! parameters, `num_perm`) and how it computes a batch. [`Udf`] does the DataFusion part once for
//! all: the constants are checked when the statement is planned (`return_field_from_args`), so a
//! bad one fails `tokq explain` before any data is read, and again before each batch; the
//! documentation goes to `information_schema.routines` and the function reference.
//!
//! Most functions are `&str -> T` over a core in `tokq-core`; for them [`str_fn`] is one call:
//!
//! ```
//! use tokq_udfs::kit::{doc, str_fn};
//!
//! let f = str_fn::<String>(
//!     "clean_text",
//!     1..=1,
//!     |_| Ok(Box::new(|t| Some(tokq_core::text::clean::clean_text(t)))),
//!     doc("Cleans text.", "clean_text(text)").build(),
//! );
//! assert_eq!(f.name(), "clean_text");
//! ```

mod str_fn;
pub mod value;

use std::hash::{Hash, Hasher};
use std::ops::RangeInclusive;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::Result;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, DocSection, Expr, Documentation, DocumentationBuilder, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, TypeSignature, Volatility,
};
use tokq_core::TokqError;

use crate::args::{df, Consts};
pub use str_fn::{str_fn, str_fn_struct, unary, Kernel};
pub use value::{Cell, Row, Scores, SpanHashes, Substrings, Value};

/// How a documentation example begins when it needs a file the reader brings (a model): the
/// generated reference shows it without running it.
pub const NEEDS_FILE: &str = "-- needs ";

/// The documentation section of every tokq function.
pub const SECTION: DocSection = DocSection { include: true, label: "tokq functions", description: None };

/// Starts a function's documentation: what it does (more than a sentence: what it returns, what
/// NULL gives, which reference it matches) and its call syntax.
pub fn doc(description: &str, syntax: &str) -> DocumentationBuilder {
    Documentation::builder(SECTION, description, syntax)
}

/// A signature of any argument types, with this many arguments (`1..=3`); each function checks
/// its own arguments' types, with an error that says what it expected.
pub fn arities(range: RangeInclusive<usize>) -> Signature {
    Signature::one_of(range.map(TypeSignature::Any).collect(), Volatility::Immutable)
}

/// What a function is, apart from DataFusion's plumbing.
pub trait Body: Send + Sync + 'static {
    /// The constant arguments, parsed.
    type Consts;
    /// The position of the first constant argument (the ones before it are columns).
    const FIRST_CONST: usize;
    /// Parses and checks the constant arguments; the error names the bad one.
    fn consts(&self, c: &Consts) -> Result<Self::Consts, TokqError>;
    /// The result type.
    fn return_type(&self) -> DataType;
    /// Computes one batch.
    fn invoke(&self, consts: Self::Consts, args: ScalarFunctionArgs) -> Result<ColumnarValue>;
    /// Planning, after the arguments are simplified: a function may rewrite them (one that reads a
    /// file the run writes pins that file's version). Most keep them.
    fn simplify(&self, args: Vec<Expr>) -> Result<ExprSimplifyResult> {
        Ok(ExprSimplifyResult::Original(args))
    }
}

/// A tokq SQL function: a [`Body`] with its name, signature and documentation.
pub struct Udf<B: Body> {
    name: &'static str,
    signature: Signature,
    body: B,
    doc: Documentation,
}

impl<B: Body> Udf<B> {
    /// The function as DataFusion registers it.
    pub fn new(name: &'static str, signature: Signature, body: B, doc: Documentation) -> Arc<ScalarUDF> {
        Arc::new(ScalarUDF::new_from_impl(Self { name, signature, body, doc }))
    }
}

impl<B: Body> std::fmt::Debug for Udf<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Udf").field("name", &self.name).finish()
    }
}

// Functions are identified by name: one registry, one implementation per name.
impl<B: Body> PartialEq for Udf<B> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl<B: Body> Eq for Udf<B> {}
impl<B: Body> Hash for Udf<B> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state)
    }
}

impl<B: Body> ScalarUDFImpl for Udf<B> {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(self.body.return_type())
    }

    /// Planning: the constants are checked here when they are literals.
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let consts = Consts::at_planning(self.name, args.scalar_arguments);
        if consts.known_from(B::FIRST_CONST) {
            self.body.consts(&consts).map_err(df)?;
        }
        Ok(Arc::new(Field::new(self.name, self.body.return_type(), true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let consts = self.body.consts(&Consts::at_run(self.name, &args.args)).map_err(df)?;
        self.body.invoke(consts, args)
    }

    fn simplify(&self, args: Vec<Expr>, _: &SimplifyContext) -> Result<ExprSimplifyResult> {
        self.body.simplify(args)
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&self.doc)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::prelude::SessionContext;

    use super::*;

    fn plain(name: &'static str) -> Documentation {
        doc("A test function. It exists only here.", name).build()
    }

    /// One function per result type, to see each column builder from SQL.
    async fn run(sql: &str) -> Result<String> {
        let ctx = SessionContext::new();
        ctx.register_udf(str_fn::<i64>("t_len", 1..=1, |_| Ok(Box::new(|t| Some(t.len() as i64))), plain("t_len")).as_ref().clone());
        ctx.register_udf(str_fn::<f64>("t_half", 1..=1, |_| Ok(Box::new(|t| Some(t.len() as f64 / 2.0))), plain("t_half")).as_ref().clone());
        ctx.register_udf(str_fn::<bool>("t_empty", 1..=1, |_| Ok(Box::new(|t| Some(t.is_empty()))), plain("t_empty")).as_ref().clone());
        ctx.register_udf(
            str_fn::<Vec<String>>("t_chars", 1..=1, |_| Ok(Box::new(|t| Some(t.chars().map(String::from).collect()))), plain("t_chars")).as_ref().clone(),
        );
        ctx.register_udf(
            str_fn::<String>(
                "t_repeat",
                2..=2,
                |c| {
                    let n = c.i64(1, "n", 1)?;
                    if !(0..=3).contains(&n) {
                        return Err(TokqError::Argument { function: "t_repeat", cause: format!("n must be 0 to 3, got {n}") });
                    }
                    Ok(Box::new(move |t| (n > 0).then(|| t.repeat(n as usize))))
                },
                plain("t_repeat"),
            )
            .as_ref()
            .clone(),
        );
        let batches = ctx.sql(sql).await?.collect().await?;
        Ok(pretty_format_batches(&batches)?.to_string())
    }

    #[tokio::test]
    async fn every_value_type_builds_its_column_and_null_gives_null() {
        let out = run("SELECT t_len(s) AS l, t_half(s) AS h, t_empty(s) AS e, t_chars(s) AS c, t_repeat(s, 2) AS r \
                       FROM (VALUES ('ab'), (''), (NULL)) AS v(s)")
            .await
            .unwrap();
        assert!(out.contains("| 2 | 1.0 | false | [a, b] | abab |"), "{out}");
        assert!(out.contains("| 0 | 0.0 | true  | []     |      |"), "{out}");
        assert!(out.contains("|   |     |       |        |      |"), "{out}");
    }

    #[tokio::test]
    async fn a_bad_constant_fails_at_planning_and_a_column_at_run_time() {
        let e = run("SELECT t_repeat('x', 9)").await.unwrap_err().to_string();
        assert!(e.contains("t_repeat: n must be 0 to 3, got 9"), "{e}");
        // Planning alone (no execution) already fails.
        let ctx = SessionContext::new();
        ctx.register_udf(
            str_fn::<String>("t_one", 2..=2, |c| Ok(c.str(1, "mode").map(|_| Box::new(|t: &str| Some(t.to_string())) as Kernel<String>)?), plain("t_one"))
                .as_ref()
                .clone(),
        );
        assert!(ctx.sql("SELECT t_one('x', 1)").await.unwrap_err().to_string().contains("'mode' must be a string literal"));
        let e = run("SELECT t_repeat(s, s) FROM (VALUES ('1')) AS v(s)").await.unwrap_err().to_string();
        assert!(e.contains("'n' must be a constant"), "{e}");
    }
}
