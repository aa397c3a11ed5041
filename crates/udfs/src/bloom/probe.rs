//! `bloom_count`: a hash's count in the filter file an earlier statement wrote, read once per
//! process, its version pinned at planning.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use datafusion::arrow::array::UInt32Array;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::simplify::ExprSimplifyResult;
use datafusion::logical_expr::{ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tokq_core::dedup::bloom::CountingBloom;
use tokq_core::{load, TokqError};

use super::{hashes, BUILD, PROBE};
use crate::args::{for_each_bytes, literal_str, Consts, OrDf};
use crate::kit::{arities, doc, Body, Udf};

/// The filters this process read, by path, with the version they were read at: one per path,
/// so a long-lived process (Python, an executor) keeps the latest and frees the older ones.
static FILTERS: LazyLock<Mutex<HashMap<String, (String, Arc<CountingBloom>)>>> = LazyLock::new(Default::default);

/// The filter in the Parquet file at `path`, as it was at `version`.
fn filter(path: &str, version: &str) -> Result<Arc<CountingBloom>, TokqError> {
    let error = |cause: String| TokqError::Io { uri: path.to_string(), cause };
    // Held while loading, so the partitions of a statement read the file once between them.
    let mut filters = FILTERS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((v, f)) = filters.get(path) {
        if v == version {
            return Ok(Arc::clone(f));
        }
    }
    if load::version(path)? != version {
        return Err(error("the file changed after this statement was planned (another run writing it?): run again".into()));
    }
    let bytes = bytes::Bytes::from(load::read_bytes(path)?);
    let batches = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .and_then(|b| b.build())
        .map_err(|e| error(format!("not a Parquet file of a Bloom filter: {e}")))?;
    let mut found = None;
    for batch in batches {
        let batch = batch.map_err(|e| error(e.to_string()))?;
        if batch.num_columns() != 1 {
            return Err(error(format!("{} columns: a filter file holds one, the value of bloom_counts", batch.num_columns())));
        }
        for_each_bytes(PROBE, batch.column(0), |b| {
            found = found.take().or(b.map(<[u8]>::to_vec));
            Ok(())
        })
        .map_err(|e| error(e.to_string()))?;
    }
    let bytes = found.ok_or_else(|| error("no filter in it: the bloom_counts that wrote it saw no rows".into()))?;
    let f = Arc::new(CountingBloom::from_bytes(&bytes).map_err(error)?);
    filters.insert(path.to_string(), (version.to_string(), Arc::clone(&f)));
    Ok(f)
}

/// `bloom_count(hash, 'FILE' [, version])`.
struct BloomCount;

impl Body for BloomCount {
    type Consts = (String, Option<String>);
    const FIRST_CONST: usize = 1;

    fn consts(&self, c: &Consts) -> Result<(String, Option<String>), TokqError> {
        let path = c.str(1, "filter")?.ok_or_else(|| TokqError::Argument { function: PROBE, cause: "give the filter's file".into() })?;
        Ok((path.to_string(), c.str(2, "version")?.map(str::to_string)))
    }

    fn return_type(&self) -> DataType {
        DataType::UInt32
    }

    fn invoke(&self, (path, version): (String, Option<String>), args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // Unpinned (a host that does not simplify, such as datafusion-python through the FFI):
        // the version is read for each batch instead, which a local file answers in microseconds.
        let version = match version {
            Some(v) => v,
            None => load::version(&path).map_err(|e| TokqError::Argument {
                function: PROBE,
                cause: format!("cannot read the filter: {e}; write it in an earlier statement (COPY (SELECT bloom_counts(...)) TO '{path}')"),
            }).df()?,
        };
        let filter = filter(&path, &version).df()?;
        let column = args.args[0].to_array(args.number_rows)?;
        let (values, nulls) = hashes(PROBE, &column)?;
        Ok(ColumnarValue::Array(Arc::new(UInt32Array::new(filter.count_all(&values).into(), nulls))))
    }

    /// Pins the file's version as a third argument, once, when the file is there; a statement
    /// planned before the file exists (`tokq explain`) keeps two.
    fn simplify(&self, args: Vec<Expr>) -> Result<ExprSimplifyResult> {
        let Some(p) = (args.len() == 2).then(|| literal_str(PROBE, "filter", &args[1]).ok()).flatten() else {
            return Ok(ExprSimplifyResult::Original(args));
        };
        // A relative path means this process's folder, on a cluster's executors too.
        let path = if !p.contains("://") && std::path::Path::new(&p).is_relative() {
            match std::path::absolute(&p) {
                Ok(abs) => abs.display().to_string(),
                Err(_) => return Ok(ExprSimplifyResult::Original(args)),
            }
        } else {
            p
        };
        let Ok(version) = load::version(&path) else { return Ok(ExprSimplifyResult::Original(args)) };
        let pinned = vec![args[0].clone(), Expr::Literal(ScalarValue::Utf8(Some(path)), None), Expr::Literal(ScalarValue::Utf8(Some(version)), None)];
        Ok(ExprSimplifyResult::Simplified(Expr::ScalarFunction(ScalarFunction::new_udf(probe(), pinned))))
    }
}

/// `bloom_count`.
pub fn probe() -> Arc<ScalarUDF> {
    Udf::new(
        PROBE,
        arities(2..=3),
        BloomCount,
        doc(
            "How many times a hash was counted by the bloom_counts filter in a Parquet file an earlier statement wrote, \
             up to the filter's cap: never less than its rows, and for about a share fpr of the hashes with fewer rows, \
             the cap. So WHERE bloom_count(hash, 'f.parquet') >= 2 keeps every repeated hash and few others, and an \
             exact count over what it keeps decides. The file is read once per process and shared by its partitions; \
             its version is pinned when the statement is planned (a third argument tokq adds; where a host does not \
             plan it so, it is read for each batch), so a file rewritten by a later run is read again, and one \
             changed during the statement is an error. NULL gives NULL.",
            "bloom_count(hash, filter_file)",
        )
        .with_argument("hash", "A UInt64 (or Int64) column of hashes.")
        .with_argument("filter_file", "Constant path or URI of a .parquet file of one bloom_counts value.")
        .with_sql_example("```sql\n-- needs a filter file bloom_counts wrote\nSELECT hash FROM spans WHERE bloom_count(hash, 'filter.parquet') >= 2;\n```")
        .with_related_udf(BUILD)
        .build(),
    )
}

