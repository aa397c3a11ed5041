//! tokq's functions for DataFusion: tokenizers, text cleaning, quality filters, dedup, sequence packing, the global shuffle key, lineage
//! readers, and the one place that registers them all ([`register_all`]), used by every role
//! (local run, scheduler, executor, cluster client).

pub mod args;
pub mod codec;
pub mod dedup;
pub mod error;
pub mod guard;
pub mod lineage;
pub mod options;
pub mod pack;
pub mod quality;
pub mod order;
pub mod shuffle;
pub mod sink;
pub mod store;
pub mod text;
pub mod tokenize;

#[cfg(test)]
mod fuzz;

use std::sync::Arc;

use datafusion::catalog::TableFunctionImpl;
use datafusion::logical_expr::ScalarUDF;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::prelude::SessionContext;

pub use error::TokqError;
pub use options::TokqOptions;

/// Every tokq scalar function.
pub fn scalar_udfs() -> Vec<Arc<ScalarUDF>> {
    let mut udfs = vec![
        Arc::new(ScalarUDF::new_from_impl(tokenize::udf::Tokenize::ids())),
        Arc::new(ScalarUDF::new_from_impl(tokenize::udf::Tokenize::count())),
        Arc::new(ScalarUDF::new_from_impl(shuffle::udf::ShuffleKey::default())),
        Arc::new(ScalarUDF::new_from_impl(pack::pad::Pad::tokens())),
        Arc::new(ScalarUDF::new_from_impl(pack::pad::Pad::attention_mask())),
    ];
    udfs.extend(text::udf::TextUdf::all());
    udfs.extend(quality::udf::QualityUdf::all());
    udfs.extend(dedup::udf::DedupUdf::all());
    udfs
}

/// Every tokq table function, by name.
pub fn table_functions() -> Vec<(&'static str, Arc<dyn TableFunctionImpl>)> {
    let mut functions: Vec<(&'static str, Arc<dyn TableFunctionImpl>)> =
        [lineage::ReadFiles::jsonl(), lineage::ReadFiles::csv(), lineage::ReadFiles::parquet()]
            .into_iter()
            .map(|f| (f.name(), Arc::new(f) as Arc<dyn TableFunctionImpl>))
            .collect();
    functions.push((pack::table::NAME, Arc::new(pack::table::PackTokens)));
    functions
}

/// Physical optimizer rules that tokq's plans rely on; every session that plans them (local run,
/// scheduler) must add them after DataFusion's own.
pub fn physical_optimizer_rules() -> Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> {
    vec![Arc::new(order::KeepInputOrder)]
}

/// Registers every tokq function on a context.
pub fn register_all(ctx: &SessionContext) {
    for f in scalar_udfs() {
        ctx.register_udf(f.as_ref().clone());
    }
    for (name, f) in table_functions() {
        ctx.register_udtf(name, f);
    }
}
