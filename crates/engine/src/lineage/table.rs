//! `LineageTable`: the table provider that the `read_*` table functions return.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::Result;
use datafusion::datasource::TableType;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use super::scan::{scan_plan, with_lineage, LineageSource, ScanConfig};
use tokq_udfs::{OnBadRow, TokqOptions};
use super::counters::ReadCounters;
use super::drift::FileColumns;

/// The schema metadata key that names a read (`jsonl:/data/*.jsonl`), in logical plans only: the
/// physical scan's batches do not carry it, so outputs do not depend on where the inputs lay.
pub const READ_KEY: &str = "tokq.read";

/// `schema` without the name of a read, for what is written: a cluster's physical plans may carry
/// the logical schema's metadata.
pub fn unnamed(schema: &Schema) -> Schema {
    let mut metadata = schema.metadata().clone();
    metadata.remove(READ_KEY);
    Schema::new_with_metadata(schema.fields().clone(), metadata)
}

#[derive(Debug)]
pub struct LineageTable {
    config: ScanConfig,
    file_schema: SchemaRef,
    schema: SchemaRef,
    /// Each file's own columns, for the client's drift check ([`super::drift`]); a table decoded
    /// on a cluster node has none.
    columns: FileColumns,
}

impl LineageTable {
    /// A read of `config`'s files. Its logical schema names what it reads: DataFusion compares
    /// two scans by table name, columns and schema alone, and every call of a `read_*` function
    /// is named `read_jsonl()`, so without it two scalar subqueries over different files of the
    /// same columns were one subexpression, and both answered the first file's figures.
    pub fn try_new(config: ScanConfig, file_schema: SchemaRef) -> Result<Self> {
        let read = HashMap::from([(READ_KEY.to_string(), format!("{}:{}", config.format.name(), config.location))]);
        let schema = Arc::new(with_lineage(&file_schema)?.as_ref().clone().with_metadata(read));
        Ok(Self { config, file_schema, schema, columns: FileColumns::default() })
    }

    pub fn with_columns(self, columns: FileColumns) -> Self {
        Self { columns, ..self }
    }

    pub fn columns(&self) -> &FileColumns {
        &self.columns
    }

    pub fn config(&self) -> &ScanConfig {
        &self.config
    }

    pub fn file_schema(&self) -> &SchemaRef {
        &self.file_schema
    }
}

#[async_trait]
impl TableProvider for LineageTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let skip_bad = TokqOptions::from_config(state.config().options()).on_bad_row == OnBadRow::Skip;
        let run = ReadCounters::of(state.config());
        let source = LineageSource::try_new(self.config.format, self.config.location.clone(), Arc::clone(&self.file_schema), skip_bad, run)?;
        scan_plan(&self.config, source, projection.cloned(), state.config().target_partitions())
    }
}
