//! The exceptions tokq raises in Python, and how tokq's Rust errors become them. Each carries
//! the one line the `tokq` command prints for the same failure.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use tokq_engine::recipe::RecipeError as BadRecipe;
use tokq_engine::runner::StatementError as FailedStatement;

create_exception!(tokq, TokqError, PyException, "Every error tokq raises; its message is the one line the tokq command prints.");
create_exception!(tokq, RecipeError, TokqError, "A recipe or its parameters are wrong (file, line, and what to change), found before anything runs.");
create_exception!(tokq, StatementError, TokqError, "A statement failed while running: .file, .line and .statement say which, .stats what ran before.");
create_exception!(tokq, ClusterError, TokqError, "A cluster could not run the work: no scheduler, no executors, or a Python UDF it cannot call.");

/// Adds the exception classes to the module.
pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("TokqError", py.get_type::<TokqError>())?;
    m.add("RecipeError", py.get_type::<RecipeError>())?;
    m.add("StatementError", py.get_type::<StatementError>())?;
    m.add("ClusterError", py.get_type::<ClusterError>())?;
    Ok(())
}

/// A recipe that cannot be parsed.
pub fn recipe(e: BadRecipe) -> PyErr {
    RecipeError::new_err(e.to_string())
}

/// Any other failure, as one line.
pub fn tokq(e: anyhow::Error) -> PyErr {
    TokqError::new_err(tokq::one_line(&e))
}

/// A failed statement, with where it is and the run's statistics up to it (a JSON text the Python
/// side turns into a dict).
pub fn statement(py: Python<'_>, e: &FailedStatement, stats_json: String) -> PyErr {
    let err = StatementError::new_err(e.to_string());
    let value = err.value(py);
    let set = || -> PyResult<()> {
        value.setattr("file", &e.file)?;
        value.setattr("line", e.line)?;
        value.setattr("statement", e.number)?;
        value.setattr("stats_json", stats_json)?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(other) => other,
    }
}
