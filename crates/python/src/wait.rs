//! Waiting for tokq's async work from Python: the GIL is released while it runs, and Ctrl-C
//! stops it.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use pyo3::prelude::*;
use tokio::runtime::Runtime;

/// How often the waiting thread takes the GIL back to let Python handle signals and progress.
const TICK: Duration = Duration::from_millis(100);

/// The runtime every call from Python runs on, started on first use.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("tokq").build().expect("tokq cannot start its async runtime"))
}

/// Runs `work` on tokq's runtime and waits for it with the GIL released, so that other Python
/// threads run meanwhile. Every [`TICK`] the GIL is taken back for Python's signal handlers and
/// `tick` (progress callbacks run there, on the caller's thread). When either raises (Ctrl-C
/// raises KeyboardInterrupt) the work is cancelled as a killed process would be: tokq's writers
/// publish nothing half-written, and a rerun resumes.
pub fn wait<T, F>(py: Python<'_>, work: F, mut tick: impl FnMut(Python<'_>) -> PyResult<()>) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        // A Python UDF calling tokq.sql or tokq.run runs on one of tokq's own threads.
        return Err(crate::errors::TokqError::new_err("tokq.sql and tokq.run cannot be called from inside a Python UDF: compute what the UDF needs before the query"));
    }
    let mut handle = runtime().spawn(work);
    loop {
        let done = py.detach(|| runtime().block_on(async { tokio::time::timeout(TICK, &mut handle).await }));
        if let Ok(joined) = done {
            return joined.map_err(|e| crate::errors::TokqError::new_err(format!("tokq's work stopped: {e}")));
        }
        if let Err(e) = py.check_signals().and_then(|()| tick(py)) {
            handle.abort();
            py.detach(|| runtime().block_on(async { let _ = (&mut handle).await; }));
            return Err(e);
        }
    }
}
