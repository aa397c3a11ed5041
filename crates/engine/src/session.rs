//! The session every role shares: tokq options, object stores, and all tokq functions.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::optimizer::Optimizer;
use datafusion::prelude::{SessionConfig, SessionContext};
use crate::store::TokqObjectStoreRegistry;
use tokq_udfs::TokqOptions;

/// Adds what every node needs to a config: the `tokq.*` options (a key whose extension is not
/// registered on a node is silently dropped there).
pub fn with_tokq(config: SessionConfig) -> SessionConfig {
    if config.options().extensions.get::<TokqOptions>().is_some() {
        return config;
    }
    // A read's logical schema names its files (`lineage::table::READ_KEY`) and its physical
    // batches do not; DataFusion checks the two against each other only below an aggregate.
    config
        .with_option_extension(TokqOptions::default())
        .with_information_schema(true)
        .set_bool("datafusion.execution.skip_physical_aggregate_schema_check", true)
}

/// The runtime every role uses: tokq's object stores.
pub fn runtime() -> Result<Arc<RuntimeEnv>> {
    RuntimeEnvBuilder::new().with_object_store_registry(Arc::new(TokqObjectStoreRegistry::new())).build_arc()
}

/// DataFusion 55's rules that move struct field reads (`verdict['text']`) towards the scan. Moving
/// one below the projection that computes the struct inlines that computation, so an expensive
/// function (html_to_text, detect_language, quality_chain) ran once per field read: three times
/// per page in fineweb-cc.sql. tokq's readers gain nothing from the move, so it is left out.
const DUPLICATING_RULES: &[&str] = &["extract_leaf_expressions", "push_down_leaf_projections"];

/// DataFusion's default state on tokq's object stores and optimizer rules, before any tokq
/// function is added.
pub fn base_state(config: SessionConfig) -> Result<SessionState> {
    let mut rules: Vec<_> = Optimizer::new().rules.into_iter().filter(|r| !DUPLICATING_RULES.contains(&r.name())).collect();
    rules.push(Arc::new(crate::roots::FencedOutputs));
    let mut builder = SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime()?)
        .with_default_features()
        .with_optimizer_rules(rules);
    for rule in crate::physical_optimizer_rules() {
        builder = builder.with_physical_optimizer_rule(rule);
    }
    Ok(builder.build())
}

/// A local (single-process) context with every tokq function registered.
pub fn local_context(config: SessionConfig) -> Result<SessionContext> {
    let ctx = SessionContext::new_with_state(base_state(with_tokq(config))?);
    crate::register_all(&ctx);
    Ok(ctx)
}
