//! tokq's SQL functions: thin DataFusion wrappers over the pure cores of `tokq-core`, each with
//! its documentation (`information_schema.routines`, `tokq functions`), and the one place that
//! lists them ([`scalar_udfs`], [`aggregate_udfs`], [`register_all`]).
//!
//! One module per stage: [`text`], [`quality`], [`dedup`], [`spans`] (dedup below the document),
//! [`bloom`] (dedup with a Bloom filter), [`decont`] (n-gram decontamination), [`check`] (`assert_true`),
//! [`tokenize`], [`pad`], [`shuffle`],
//! [`classify`] (language ID, fastText), [`models`] (Hugging Face encoder classifiers), [`web`] (URLs) and [`html`] (main text). Each function is
//! built from the [`kit`]; its constant arguments are read by [`args`] at planning time; the
//! `tokq.*` session options are in [`options`].
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use datafusion::prelude::SessionContext;
//!
//! let ctx = SessionContext::new();
//! tokq_udfs::register_all(&ctx);
//! let batches = ctx.sql("SELECT token_count('hello world', 'tiktoken:cl100k_base') AS n").await?.collect().await?;
//! assert_eq!(batches[0].num_rows(), 1);
//! # Ok::<(), datafusion::error::DataFusionError>(())
//! # }).unwrap();
//! ```
#![warn(missing_docs)]

pub mod args;
pub mod bloom;
pub mod check;
pub mod classify;
pub mod decont;
pub mod dedup;
pub mod html;
pub mod kit;
pub mod models;
pub mod options;
pub mod pad;
pub mod quality;
pub mod shuffle;
pub mod spans;
pub mod text;
pub mod tokenize;
pub mod web;

use std::sync::Arc;

use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion::prelude::SessionContext;

pub use options::{OnBadRow, TokqOptions};

/// Every tokq scalar function.
pub fn scalar_udfs() -> Vec<Arc<ScalarUDF>> {
    let mut udfs = tokenize::functions();
    udfs.push(shuffle::function());
    udfs.extend(pad::functions());
    udfs.extend(text::functions());
    udfs.extend(classify::functions());
    udfs.extend(models::functions());
    udfs.extend(quality::functions());
    udfs.extend(dedup::functions());
    udfs.extend(spans::functions());
    udfs.push(bloom::probe());
    udfs.extend(decont::functions());
    udfs.push(check::function());
    udfs.extend(web::functions());
    udfs.extend(html::functions());
    udfs
}

/// Every tokq aggregate function.
pub fn aggregate_udfs() -> Vec<Arc<AggregateUDF>> {
    vec![bloom::aggregate()]
}

/// Registers every tokq scalar and aggregate function on a context.
pub fn register_all(ctx: &SessionContext) {
    for f in scalar_udfs() {
        ctx.register_udf(f.as_ref().clone());
    }
    for f in aggregate_udfs() {
        ctx.register_udaf(f.as_ref().clone());
    }
}
