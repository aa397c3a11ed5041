//! `pack_tokens(view, seq_len [, options])`: the packing table function. It takes a table or view
//! by name, because DataFusion's table functions take only literal arguments (a subquery argument
//! must have one column).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{plan_datafusion_err, plan_err, Result, TableReference};
use datafusion::datasource::{provider_as_source, TableType};
use datafusion::execution::SessionState;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::ExecutionPlan;

use super::exec::{lineage_columns, packed_schema, PackExec};
use tokq_core::pack::{PackOptions, Streams};
use tokq_udfs::args::literal_str;
use crate::sink::commit::tokenizer_specs;
use crate::store::block_on;

pub const NAME: &str = "pack_tokens";

/// The packed rows of a logical input plan.
#[derive(Debug)]
pub struct PackTable {
    input: LogicalPlan,
    opts: PackOptions,
    schema: SchemaRef,
}

impl PackTable {
    pub fn try_new(input: LogicalPlan, opts: PackOptions) -> Result<Self> {
        let schema = packed_schema(input.schema().as_arrow(), &opts)?;
        if opts.by == Streams::Source {
            lineage_columns(input.schema().as_arrow())?;
        }
        Ok(Self { input, opts, schema })
    }

    pub fn input(&self) -> &LogicalPlan {
        &self.input
    }

    pub fn options(&self) -> &PackOptions {
        &self.opts
    }
}

#[async_trait]
impl TableProvider for PackTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = state.create_physical_plan(&self.input).await?;
        let packed: Arc<dyn ExecutionPlan> = Arc::new(PackExec::try_new(input, self.opts.clone())?);
        let Some(projection) = projection else {
            return Ok(packed);
        };
        let columns = projection.iter().map(|&i| {
            let name = self.schema.field(i).name().clone();
            (Arc::new(Column::new(&name, i)) as Arc<dyn PhysicalExpr>, name)
        });
        Ok(Arc::new(ProjectionExec::try_new(columns, packed)?))
    }
}

/// The call, as errors and the reference show it.
pub const USAGE: &str = "pack_tokens('view', seq_len [, 'eos=ID|TOKEN,tail=drop|pad,pad=ID|TOKEN,segment_ids=true,ids=COLUMN,by=partition|source,tokenizer=SPEC'])";

#[derive(Debug, Default)]
pub struct PackTokens;

impl TableFunctionImpl for PackTokens {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        let (Some(name), Some(seq_len)) = (exprs.first(), exprs.get(1)) else {
            return plan_err!("{NAME}: expected {USAGE}");
        };
        let name = literal_str(NAME, "the table or view name", name)?;
        let seq_len = match seq_len {
            Expr::Literal(v, _) if v.data_type().is_integer() => v.to_string().parse::<i64>().ok(),
            _ => None,
        }
        .ok_or_else(|| plan_datafusion_err!("{NAME}: seq_len must be an integer literal, got {seq_len}"))?;
        let options = exprs.get(2).map(|e| literal_str(NAME, "options", e)).transpose()?.unwrap_or_default();
        let Some(state) = args.session().as_any().downcast_ref::<SessionState>() else {
            return plan_err!("{NAME}: needs a DataFusion SessionState to look up '{name}'");
        };
        let table = TableReference::from(name.as_str());
        let schema = state.schema_for_ref(table.clone())?;
        let provider = block_on(schema.table(table.table()))?
            .ok_or_else(|| plan_datafusion_err!("{NAME}: no table or view named '{name}'; define it first with CREATE VIEW {name} AS SELECT ..."))?;
        let input = LogicalPlanBuilder::scan(table, provider_as_source(provider), None)?.build()?;
        let opts = PackOptions::parse(seq_len, &options, &tokenizer_specs(&input)?).map_err(|e| plan_datafusion_err!("{e}"))?;
        Ok(Arc::new(PackTable::try_new(input, opts)?))
    }
}
