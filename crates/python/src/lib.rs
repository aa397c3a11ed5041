//! tokq's native Python module, `tokq._native`: the engine's recipes and SQL, Python UDFs, tokq's
//! functions for a stock datafusion SessionContext, and the `tokq` command. `python/tokq/*.py`
//! is the API users see; this module is what it calls.

mod arrow_c;
mod errors;
mod foreign;
mod progress;
mod py_udf;
mod wait;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use datafusion::prelude::SessionContext;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tokq_engine::recipe::Recipe;
use tokq_engine::runner::StatementError;
use tokq_engine::stats::Progress;
use tokq_engine::{Placement, RunStats};
use tokq_udfs::OnBadRow;

use arrow_c::ArrowStream;

/// Why a call failed, before it becomes a Python exception (which needs the GIL).
enum Failure {
    /// Setting up: the context, the cluster, a memory limit.
    Setup(anyhow::Error),
    /// A statement, with what the run did up to it.
    Statement(StatementError, Box<RunStats>),
}

impl Failure {
    fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            Failure::Setup(e) => errors::tokq(e),
            Failure::Statement(e, stats) => errors::statement(py, &e, serde_json::to_string(&stats).unwrap_or_default()),
        }
    }
}

fn placement(partitions: Option<usize>, cluster: Option<String>, memory_limit: Option<String>, on_bad_row: &str) -> PyResult<Placement> {
    let on_bad_row: OnBadRow = on_bad_row.parse().map_err(|_| PyValueError::new_err(format!("on_bad_row must be 'fail' or 'skip', not {on_bad_row:?}")))?;
    Ok(Placement { cluster, partitions, on_bad_row, memory_limit, ..Placement::default() })
}

/// A context for this placement with the Python UDFs of this process.
async fn context(placement: &Placement) -> Result<SessionContext, Failure> {
    let ctx = placement.context().await.map_err(Failure::Setup)?;
    py_udf::add_to(&ctx);
    Ok(ctx)
}

/// Runs SQL statements (`${name}` filled from `params`) and returns the last one's rows as an
/// Arrow stream: collected with the GIL released, or computed as Python reads them (`stream`).
#[pyfunction]
#[pyo3(signature = (query, params = None, partitions = None, memory_limit = None, stream = false))]
fn sql(py: Python<'_>, query: String, params: Option<BTreeMap<String, String>>, partitions: Option<usize>, memory_limit: Option<String>, stream: bool) -> PyResult<ArrowStream> {
    let recipe = Recipe::parse("<sql>", &query, &params.unwrap_or_default()).map_err(errors::recipe)?;
    let placement = placement(partitions, None, memory_limit, "fail")?;
    let work = async move {
        let ctx = context(&placement).await?;
        let (stats, last) = placement.runner(&ctx, &recipe).run_to_final_query().await;
        let failed = |e: StatementError| Failure::Statement(e, Box::new(stats.clone()));
        let Some(df) = last.map_err(failed)? else {
            return Ok(ArrowStream::collected(Arc::new(datafusion::arrow::datatypes::Schema::empty()), Vec::new()));
        };
        let Some(last) = recipe.statements.last() else { unreachable!("a final query is a statement") };
        let failed = |e: datafusion::error::DataFusionError| Failure::Statement(StatementError::new(last, &e), Box::new(stats.clone()));
        if stream {
            return Ok(ArrowStream::live(df.execute_stream().await.map_err(failed)?));
        }
        let schema = Arc::new(df.schema().as_arrow().clone());
        Ok(ArrowStream::collected(schema, df.collect().await.map_err(failed)?))
    };
    wait::wait(py, work, |_| Ok(()))?.map_err(|f: Failure| f.into_py(py))
}

/// Runs a recipe file as `tokq run` does and returns its statistics (the `--stats-json` text).
/// `progress(statement, bytes, total_bytes, rows, seconds)` is called on this thread every half
/// second while a statement reads, and once with its final figures when it ends.
#[pyfunction]
#[pyo3(signature = (recipe, params = None, partitions = None, cluster = None, memory_limit = None, on_bad_row = "fail", progress = None, strict_schema = false, overwrite = false))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    recipe: PathBuf,
    params: Option<BTreeMap<String, String>>,
    partitions: Option<usize>,
    cluster: Option<String>,
    memory_limit: Option<String>,
    on_bad_row: &str,
    progress: Option<Py<PyAny>>,
    strict_schema: bool,
    overwrite: bool,
) -> PyResult<String> {
    let raw = tokq::read_recipe(&recipe).map_err(errors::tokq)?;
    let recipe = Recipe::parse(&recipe.display().to_string(), &raw, &params.unwrap_or_default()).map_err(errors::recipe)?;
    let placement = Placement { strict_schema, overwrite, ..placement(partitions, cluster, memory_limit, on_bad_row)? };
    if placement.cluster.is_some() {
        if let Some((stmt, name)) = recipe.statements.iter().find_map(|s| Some((s, py_udf::called_in(&s.sql)?))) {
            return Err(errors::ClusterError::new_err(format!(
                "{}:{}: calls the Python UDF '{name}', which lives in this Python process and cannot run on a cluster's executors: run this recipe locally (cluster=None)",
                stmt.file, stmt.line
            )));
        }
    }
    let watch = Arc::new(progress::Watch::default());
    let watching = Arc::clone(&watch);
    let work = async move {
        let ctx = context(&placement).await?;
        let runner = tokq_engine::Runner { progress: watching.as_ref() as &dyn Progress, ..placement.runner(&ctx, &recipe) };
        match runner.run_with_stats().await {
            (stats, None) => Ok(stats),
            (stats, Some(e)) => Err(Failure::Statement(e, Box::new(stats))),
        }
    };
    let mut reported = std::time::Instant::now();
    let mut tick = |py: Python<'_>| -> PyResult<()> {
        let Some(callback) = &progress else { return Ok(()) };
        let call = |p: progress::Report| callback.call1(py, (p.statement, p.bytes, p.total_bytes, p.rows, p.seconds)).map(drop);
        watch.take_ended().into_iter().try_for_each(call)?;
        if reported.elapsed() < progress::EVERY {
            return Ok(());
        }
        reported = std::time::Instant::now();
        watch.now().map_or(Ok(()), call)
    };
    let ran = wait::wait(py, work, &mut tick)?;
    // The statements that ended after the last tick.
    tick(py)?;
    let stats = ran.map_err(|f| f.into_py(py))?;
    serde_json::to_string(&stats).map_err(|e| errors::TokqError::new_err(e.to_string()))
}

/// Runs the `tokq` command with these arguments (the first is the program name) and returns its
/// exit status; the GIL is released meanwhile.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| tokq::main_from(argv))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::add(m)?;
    m.add_class::<ArrowStream>()?;
    m.add_class::<arrow_c::ArrowArray>()?;
    m.add_class::<foreign::ScalarFunction>()?;
    m.add_class::<foreign::TableFunction>()?;
    m.add_function(wrap_pyfunction!(sql, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(py_udf::register_udf, m)?)?;
    m.add_function(wrap_pyfunction!(foreign::scalar_functions, m)?)?;
    m.add_function(wrap_pyfunction!(foreign::table_functions, m)?)?;
    Ok(())
}
