//! Function behaviour as sqllogictest files (`tests/slt/*.slt` at the repository root), run in
//! process on a context with every tokq function, as DataFusion tests its own functions.
//! `TOKQ_SLT_COMPLETE=1 cargo test --release --test slt` rewrites the expected results of every
//! query from what tokq returns now; review the diff before committing it.

use std::path::PathBuf;

use async_trait::async_trait;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::DataFusionError;
use datafusion::prelude::{SessionConfig, SessionContext};
use sqllogictest::{default_column_validator, default_normalizer, default_validator, AsyncDB, DBOutput, DefaultColumnType, Runner};

struct Tokq {
    ctx: SessionContext,
}

fn column_type(t: &DataType) -> DefaultColumnType {
    match t {
        t if t.is_integer() => DefaultColumnType::Integer,
        t if t.is_floating() => DefaultColumnType::FloatingPoint,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => DefaultColumnType::Text,
        _ => DefaultColumnType::Any,
    }
}

#[async_trait]
impl AsyncDB for Tokq {
    type Error = DataFusionError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DataFusionError> {
        let df = self.ctx.sql(sql).await?;
        let schema = df.schema().as_arrow().clone();
        let batches = df.collect().await?;
        if schema.fields().is_empty() {
            return Ok(DBOutput::StatementComplete(0));
        }
        let options = FormatOptions::default().with_null("NULL");
        let mut rows = Vec::new();
        for b in &batches {
            let formatters = b.columns().iter().map(|c| ArrayFormatter::try_new(c.as_ref(), &options)).collect::<Result<Vec<_>, _>>()?;
            for i in 0..b.num_rows() {
                rows.push(
                    formatters
                        .iter()
                        .map(|f| match f.value(i).to_string() {
                            s if s.is_empty() => "(empty)".to_string(),
                            s => s,
                        })
                        .collect(),
                );
            }
        }
        Ok(DBOutput::Rows { types: schema.fields().iter().map(|f| column_type(f.data_type())).collect(), rows })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "tokq"
    }
}

fn slt_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn function_behaviour() {
    let complete = std::env::var_os("TOKQ_SLT_COMPLETE").is_some();
    let files = slt_files();
    assert!(!files.is_empty(), "no .slt files");
    for file in files {
        let mut runner = Runner::new(|| async { Ok(Tokq { ctx: tokq_engine::local_context(SessionConfig::new())? }) });
        if complete {
            runner
                .update_test_file(&file, " ", default_validator, default_normalizer, default_column_validator)
                .await
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        } else if let Err(e) = runner.run_file_async(&file).await {
            panic!("{}", e.display(true));
        }
    }
}
