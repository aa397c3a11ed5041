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

mod build;
mod probe;

use std::borrow::Cow;

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::cast::{as_int64_array, as_uint64_array};
use datafusion::common::{exec_err, Result};

pub use build::aggregate;
pub use probe::probe;

const BUILD: &str = "bloom_counts";
const PROBE: &str = "bloom_count";

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
