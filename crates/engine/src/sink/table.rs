//! `SinkTable`: a statement's output as a table whose scan writes the files and yields what it
//! wrote. The runner reads it like any table, so the same plan runs locally and on Ballista,
//! where the table travels in the logical plan to the scheduler and [`SinkExec`] in the physical
//! plan to the executors (`codec.rs`).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::Result;
use datafusion::datasource::TableType;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;

use super::exec::{kept_schema, written_schema, SinkExec};
use super::SinkOptions;

#[derive(Debug)]
pub struct SinkTable {
    input: LogicalPlan,
    opts: SinkOptions,
}

impl SinkTable {
    pub fn try_new(input: LogicalPlan, opts: SinkOptions) -> Result<Self> {
        kept_schema(input.schema().as_arrow(), &opts)?;
        Ok(Self { input, opts })
    }

    pub fn input(&self) -> &LogicalPlan {
        &self.input
    }

    pub fn options(&self) -> &SinkOptions {
        &self.opts
    }
}

#[async_trait]
impl TableProvider for SinkTable {
    fn schema(&self) -> SchemaRef {
        written_schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(&self, state: &dyn Session, _: Option<&Vec<usize>>, _: &[Expr], _: Option<usize>) -> Result<Arc<dyn ExecutionPlan>> {
        // On a fenced node, a target outside its roots is refused here, before anything runs.
        for location in std::iter::once(&self.opts.location).chain(self.opts.rejects.as_ref().map(|r| &r.location)) {
            crate::roots::check_planned(location)?;
        }
        let input = state.create_physical_plan(&self.input).await?;
        Ok(Arc::new(SinkExec::try_new(input, self.opts.clone())?))
    }
}
