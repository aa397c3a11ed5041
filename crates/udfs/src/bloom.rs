//! Dedup with a Bloom filter in SQL, over `tokq_core::dedup::bloom`: the aggregate `bloom_counts`
//! builds the counting filter of a hash column (the same bits on any partitioning), a COPY writes
//! it to one Parquet file, and `bloom_count` looks hashes up in that file in later statements.
//! `queries/parts/sentence-dedup.sql` with `bloom=true` counts exactly only the spans the filter
//! lets through, so its decisions are the exact mode's in a fraction of the memory.
//!
//! Why a file and not a join: DataFusion and Ballista have no broadcast variable, and a join or a
//! scalar subquery against a one-row table would copy the filter into every row. A file is read
//! once per process (each executor) and shared by its partitions. A recipe rewrites the file on
//! every run, so `bloom_count` pins the file's version when the statement is planned (a third
//! argument it adds) and a process never answers from an older filter of the same path.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use datafusion::arrow::array::{Array, ArrayRef, UInt32Array};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::cast::{as_int64_array, as_uint64_array};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::expr::{AggregateFunction, ScalarFunction};
use datafusion::logical_expr::function::{AccumulatorArgs, AggregateFunctionSimplification, StateFieldsArgs};
use datafusion::logical_expr::simplify::ExprSimplifyResult;
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, Documentation, Expr, ScalarFunctionArgs, ScalarUDF,
    Signature,
};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::physical_expr::expressions::Literal;
use tokq_core::dedup::bloom::CountingBloom;
use tokq_core::{load, TokqError};

use crate::args::{for_each_bytes, Consts, OrDf};
use crate::kit::{arities, doc, Body, Udf};

const BUILD: &str = "bloom_counts";
const PROBE: &str = "bloom_count";

/// `fpr` and `cap` (arguments 2 and 3), checked by building a filter of one item.
fn parameters(c: &Consts) -> Result<(f64, i64), TokqError> {
    let (fpr, cap) = (c.f64(2, "fpr", 0.01)?, c.i64(3, "cap", 2)?);
    CountingBloom::new(BUILD, 1, fpr, cap)?;
    Ok((fpr, cap))
}

/// A hash column's values (UInt64, or Int64 read as its bits) and its NULLs.
fn hashes<'a>(function: &str, array: &'a ArrayRef) -> Result<(Cow<'a, [u64]>, Option<NullBuffer>)> {
    match array.data_type() {
        DataType::UInt64 => {
            let a = as_uint64_array(array)?;
            Ok((Cow::Borrowed(a.values()), a.nulls().cloned()))
        }
        DataType::Int64 => {
            let a = as_int64_array(array)?;
            Ok((Cow::Owned(a.values().iter().map(|&h| h as u64).collect()), a.nulls().cloned()))
        }
        DataType::Null => Ok((Cow::Owned(vec![0; array.len()]), Some(NullBuffer::new_null(array.len())))),
        other => exec_err!("{function}: the hash must be a UInt64 or Int64 column, got {other}"),
    }
}

/// `bloom_counts(hash, items [, fpr, cap])`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct BloomCounts {
    signature: Signature,
}

impl AggregateUDFImpl for BloomCounts {
    fn name(&self) -> &str {
        BUILD
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::LargeBinary)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let literals: Vec<_> = args.exprs.iter().map(|e| e.downcast_ref::<Literal>().map(Literal::value)).collect();
        let (fpr, cap) = parameters(&Consts::at_planning(BUILD, &literals)).df()?;
        Ok(Box::new(Filter { fpr, cap, items: 0, filter: None }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format_state_name(args.name, "filter"), DataType::LargeBinary, true))])
    }

    /// Planning: the constant arguments are checked before any data is read.
    fn simplify(&self) -> Option<AggregateFunctionSimplification> {
        Some(Box::new(|f: AggregateFunction, _| {
            let literals: Vec<_> = f.params.args.iter().map(|e| if let Expr::Literal(v, _) = e { Some(v) } else { None }).collect();
            let consts = Consts::at_planning(BUILD, &literals);
            if consts.known_from(2) {
                parameters(&consts).df()?;
            }
            Ok(Expr::AggregateFunction(f))
        }))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&BUILD_DOC)
    }
}

/// One partition's filter, made at its first row, when the item count is known.
#[derive(Debug)]
struct Filter {
    fpr: f64,
    cap: i64,
    items: u64,
    filter: Option<CountingBloom>,
}

impl Filter {
    fn value(&self) -> ScalarValue {
        ScalarValue::LargeBinary(self.filter.as_ref().map(CountingBloom::to_bytes))
    }
}

impl Accumulator for Filter {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(first) = (0..values[0].len()).find(|&i| values[0].is_valid(i)) else { return Ok(()) };
        let items = ScalarValue::try_from_array(&values[1], first)?;
        let Ok(ScalarValue::UInt64(Some(items))) = items.cast_to(&DataType::UInt64) else {
            return exec_err!("{BUILD}: items must be a count (a whole number of at least 0), got {items}");
        };
        let filter = match &mut self.filter {
            Some(f) if items == self.items => f,
            Some(_) => return exec_err!("{BUILD}: items is {items} here and {} before: give one count for every row", self.items),
            None => {
                self.items = items;
                self.filter.insert(CountingBloom::new(BUILD, items, self.fpr, self.cap).df()?)
            }
        };
        match hashes(BUILD, &values[0])? {
            (all, None) => filter.insert_all(&all),
            (some, Some(nulls)) => filter.insert_all(&some.iter().zip(nulls.iter()).filter_map(|(&h, valid)| valid.then_some(h)).collect::<Vec<_>>()),
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        for_each_bytes(BUILD, &states[0], |bytes| {
            let Some(bytes) = bytes else { return Ok(()) };
            let other = CountingBloom::from_bytes(bytes).map_err(|e| TokqError::Argument { function: BUILD, cause: e }).df()?;
            match &mut self.filter {
                Some(f) => f.merge(&other).map_err(|e| TokqError::Argument { function: BUILD, cause: e }).df(),
                None => {
                    self.filter = Some(other);
                    Ok(())
                }
            }
        })
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.value()])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(self.value())
    }

    fn size(&self) -> usize {
        size_of::<Self>() + self.filter.as_ref().map_or(0, CountingBloom::bytes)
    }
}

static BUILD_DOC: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "An aggregate: the counting Bloom filter of a column of 64-bit hashes (span_hashes' hash, ngram_hashes), as \
         bytes for one Parquet value. Each hash counts its rows up to cap; the filter never counts a hash below its \
         rows, and counts about a share fpr of the hashes seen fewer than cap times as if they reached it. Counters \
         saturate at cap, so the filter is the same bits on any partitioning, cluster included. Size it with items, \
         the rows it will see (a column is fine: every row must hold the same count), at about \
         -ln(fpr)/ln(2)^2 counters per item, of 2 bits for a cap up to 3, 4 up to 15, 8 up to 255: 2.4 bytes per \
         item at fpr 0.01 and cap 2. Write it with COPY to a .parquet file and read it with bloom_count. No rows \
         give NULL.",
        "bloom_counts(hash, items [, fpr, cap])",
    )
    .with_argument("hash", "A UInt64 (or Int64) column of hashes; NULLs are skipped.")
    .with_argument("items", "How many rows the filter will see, for its size: a constant or a column with one value.")
    .with_argument("fpr", "Constant false-positive rate, above 0 and below 1 (default 0.01).")
    .with_argument("cap", "Constant count where counters stop, 1 to 255 (default 2): the count that decides.")
    .with_sql_example(
        "```sql\nSELECT bloom_counts(arrow_cast(v, 'UInt64'), 3) IS NOT NULL AS built FROM (VALUES (1), (2), (2)) AS t(v);\n```",
    )
    .with_related_udf(PROBE)
    .build()
});

/// `bloom_counts`.
pub fn aggregate() -> Arc<AggregateUDF> {
    Arc::new(AggregateUDF::new_from_impl(BloomCounts { signature: arities(2..=4) }))
}

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
        let [_, Expr::Literal(ScalarValue::Utf8(Some(p)) | ScalarValue::Utf8View(Some(p)) | ScalarValue::LargeUtf8(Some(p)), _)] = &args[..] else {
            return Ok(ExprSimplifyResult::Original(args));
        };
        // A relative path means this process's folder, on a cluster's executors too.
        let path = match std::path::Path::new(p) {
            relative if !p.contains("://") && relative.is_relative() => match std::path::absolute(relative) {
                Ok(abs) => abs.display().to_string(),
                Err(_) => return Ok(ExprSimplifyResult::Original(args)),
            },
            _ => p.clone(),
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

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::UInt32Type;
    use datafusion::prelude::SessionContext;

    use super::*;

    fn context() -> SessionContext {
        let ctx = SessionContext::new();
        ctx.register_udaf(aggregate().as_ref().clone());
        ctx.register_udf(probe().as_ref().clone());
        ctx
    }

    async fn rows(ctx: &SessionContext, sql: &str) -> Result<Vec<datafusion::arrow::array::RecordBatch>> {
        ctx.sql(sql).await?.collect().await
    }

    #[tokio::test]
    async fn a_filter_written_and_read_back_counts_every_repeat_and_sees_a_rewrite() {
        let dir = tempfile_dir();
        let file = format!("{dir}/f.parquet");
        let ctx = context();
        // 2,000 hashes, the even ones twice, over 4 partitions.
        let write = |repeat: &str| {
            format!(
                "COPY (SELECT bloom_counts(h, 3000, 0.01, 2) AS filter FROM \
                 (SELECT arrow_cast(v, 'UInt64') AS h FROM unnest(range(2000)) AS t(v) UNION ALL \
                  SELECT arrow_cast(v, 'UInt64') FROM unnest(range(0, 2000, {repeat})) AS t(v))) TO '{file}'"
            )
        };
        rows(&ctx, &write("2")).await.unwrap();
        let query = format!(
            "SELECT count(*) FILTER (WHERE c >= 2 AND h % 2 = 0) AS repeated, count(*) FILTER (WHERE c >= 2 AND h % 2 = 1) AS wrong \
             FROM (SELECT h, bloom_count(h, '{file}') AS c FROM (SELECT arrow_cast(v, 'UInt64') AS h FROM unnest(range(2000)) AS t(v)))"
        );
        let got = rows(&ctx, &query).await.unwrap();
        assert_eq!(got[0].column(0).as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(0), 1000);
        assert!(got[0].column(1).as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(0) < 50);
        // The same path rewritten with other repeats: the next statement reads the new filter.
        std::thread::sleep(std::time::Duration::from_millis(20));
        rows(&ctx, &write("1")).await.unwrap();
        let got = rows(&ctx, &format!("SELECT min(bloom_count(arrow_cast(v, 'UInt64'), '{file}')) FROM unnest(range(2000)) AS t(v)")).await.unwrap();
        assert_eq!(got[0].column(0).as_primitive::<UInt32Type>().value(0), 2);
    }

    #[tokio::test]
    async fn bad_arguments_fail_at_planning_and_missing_files_say_what_to_do() {
        let ctx = context();
        // Planned, not run: the optimizer checks them.
        let plan = |sql: &str| {
            let ctx = ctx.clone();
            let sql = sql.to_string();
            async move { ctx.sql(&sql).await.unwrap().create_physical_plan().await.unwrap_err().to_string() }
        };
        let e = plan("SELECT bloom_counts(arrow_cast(1, 'UInt64'), 10, 1.5) FROM (VALUES (1))").await;
        assert!(e.contains("bloom_counts: the false-positive rate must be above 0 and below 1, got 1.5"), "{e}");
        let e = plan("SELECT bloom_counts(arrow_cast(1, 'UInt64'), 10, 0.01, 300)").await;
        assert!(e.contains("the count to reach must be 1 to 255, got 300"), "{e}");
        let e = rows(&ctx, "SELECT bloom_count(arrow_cast(1, 'UInt64'), '/nonexistent/f.parquet')").await.unwrap_err().to_string();
        assert!(e.contains("bloom_count: cannot read the filter: /nonexistent/f.parquet: No such file"), "{e}");
        assert!(e.contains("write it in an earlier statement"), "{e}");
        let e = rows(&ctx, "SELECT bloom_counts('x', 10)").await.unwrap_err().to_string();
        assert!(e.contains("the hash must be a UInt64 or Int64 column, got Utf8"), "{e}");
    }

    fn tempfile_dir() -> String {
        let dir = std::env::temp_dir().join(format!("tokq-bloom-{}-{:?}", std::process::id(), std::thread::current().id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.display().to_string()
    }
}
