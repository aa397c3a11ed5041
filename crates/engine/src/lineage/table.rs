//! `LineageTable`: the table provider that the `read_*` table functions return.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::Result;
use datafusion::datasource::TableType;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use super::scan::{scan_plan, with_lineage, LineageSource, ScanConfig};
use tokq_udfs::{OnBadRow, TokqOptions};
use super::counters::ReadCounters;
use super::drift::FileColumns;

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
    pub fn try_new(config: ScanConfig, file_schema: SchemaRef) -> Result<Self> {
        let schema = with_lineage(&file_schema)?;
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
