//! tokq's engine: everything between a recipe file and a committed output directory.
//!
//! - [`recipe`] reads a recipe: `${name}` parameters, then one parser for its statements
//!   ([`recipe::TokqParser`]: `PARAMETERS`, `INCLUDE`, `CREATE COMPONENTS`, DataFusion's), each
//!   with its line.
//! - [`placement`] says where a run executes (this process or a Ballista cluster, partitions,
//!   memory, bad rows) and makes its context and [`Runner`]; the CLI and Python only configure it.
//! - [`runner`] runs or explains a recipe statement by statement on a [`SessionContext`], handing
//!   result rows to the caller's [`results`] sink.
//! - [`lineage`] holds the readers (`read_jsonl`, `read_csv`, `read_parquet`) that add `_source`
//!   and `_row` to every row, and count what they read as DataFusion metrics and into the run's
//!   live counters ([`lineage::counters`]); [`cpu`] samples the CPU time of each statement, and
//!   [`stats`] holds what a run did (`--stats-json`), which [`report`] renders as a page.
//! - [`sink`] owns the output format: the Parquet writer that runs where each partition runs, the
//!   commit, the manifest and the crash journal.
//! - `components` runs `CREATE COMPONENTS` (connected components in rounds of SQL).
//! - [`session`] builds the context every role shares; `codec` carries tokq's tables and
//!   operators to Ballista; [`store`] opens local and `s3://` locations, the local ones through
//!   `durable`, which syncs what it writes, and for inputs `https://` and `hf://` (`hub`: the
//!   Hugging Face Hub), and fences them to a node's [`roots`] if it has any.
//! - `cluster` (feature `cluster`): what every Ballista node shares, and the client.
//! - [`functions`]: the table functions and the generated function reference.
//!
//! Running a recipe from Rust:
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::collections::BTreeMap;
//! use datafusion::prelude::SessionConfig;
//! use tokq_engine::{local_context, Recipe, Runner};
//!
//! let out = tempfile::tempdir()?;
//! let sql = "COPY (SELECT 'a' AS doc_id, tokenize('hello world', 'tiktoken:cl100k_base') AS input_ids)
//!            TO '${out}' STORED AS PARQUET;";
//! let params = BTreeMap::from([("out".to_string(), format!("{}/", out.path().display()))]);
//! let recipe = Recipe::parse("inline.sql", sql, &params)?;
//! let ctx = local_context(SessionConfig::new())?;
//! let stats = Runner::new(&ctx, &recipe).run().await?;
//! assert_eq!((stats.outputs[0].rows, stats.outputs[0].tokens), (1, 2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
#![warn(missing_docs)]

pub(crate) mod codec;
pub(crate) mod coalesce;
#[cfg(feature = "cluster")]
pub mod cluster;
pub(crate) mod components;
pub mod cpu;
pub(crate) mod durable;
pub mod functions;
pub(crate) mod hub;
pub mod lineage;
pub(crate) mod order;
pub(crate) mod pack;
pub mod placement;
pub mod recipe;
pub mod report;
pub mod results;
pub mod roots;
pub mod runner;
pub mod session;
pub mod sink;
pub mod stats;
pub mod store;

use std::sync::Arc;

use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::prelude::SessionContext;

pub use placement::Placement;
pub use recipe::Recipe;
pub use runner::Runner;
/// What stops a [`Runner`] between its statements' steps (Ctrl-C in the CLI).
pub use tokio_util::sync::CancellationToken;
pub use session::local_context;
pub use stats::RunStats;

/// Physical optimizer rules that tokq's plans rely on; every session that plans them (local run,
/// scheduler) must add them after DataFusion's own.
pub fn physical_optimizer_rules() -> Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> {
    vec![Arc::new(order::KeepInputOrder), Arc::new(coalesce::FiltersPassBatchesThrough)]
}

/// Registers every tokq function, scalar and table, on a context, and lets tokenizer files be
/// read from any store the engine knows (`s3://`).
pub fn register_all(ctx: &SessionContext) {
    tokq_core::load::set_loader(store::LOADER);
    tokq_udfs::register_all(ctx);
    for t in functions::table_functions() {
        ctx.register_udtf(t.name, t.function);
    }
}
