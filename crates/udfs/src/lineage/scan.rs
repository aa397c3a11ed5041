//! `LineageScanExec`: reads files in order, one group of whole files per partition, and appends
//! `_source` and `_row` to every row.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{exec_err, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties, SendableRecordBatchStream,
};
use serde::{Deserialize, Serialize};

use super::files::{assign, store_url, FileRef};
use super::format::{FileBatch, Format};
use crate::options::TokqOptions;

pub const SOURCE_COLUMN: &str = "_source";
pub const ROW_COLUMN: &str = "_row";

/// What a lineage scan reads: the format and the files, resolved when the recipe was planned.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ScanConfig {
    pub format: Format,
    pub location: String,
    pub files: Vec<FileRef>,
}

impl ScanConfig {
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// Whether a scan adds lineage columns. Input that already carries both (tokq's own output)
/// keeps them, so lineage keeps pointing at the raw source through every stage.
pub fn adds_lineage(file_schema: &Schema) -> Result<bool> {
    let source = file_schema.field_with_name(SOURCE_COLUMN).ok();
    let row = file_schema.field_with_name(ROW_COLUMN).ok();
    match (source, row) {
        (None, None) => Ok(true),
        (Some(s), Some(r)) if s.data_type() == &DataType::Utf8 && r.data_type() == &DataType::Int64 => Ok(false),
        _ => exec_err!(
            "input has a '{SOURCE_COLUMN}' or '{ROW_COLUMN}' column but not both as (Utf8, Int64): \
             rename it, tokq adds lineage columns"
        ),
    }
}

/// The file schema followed by the lineage columns.
pub fn with_lineage(file_schema: &Schema) -> Result<SchemaRef> {
    if !adds_lineage(file_schema)? {
        return Ok(Arc::new(file_schema.clone()));
    }
    let mut fields: Vec<Field> = file_schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(SOURCE_COLUMN, DataType::Utf8, false));
    fields.push(Field::new(ROW_COLUMN, DataType::Int64, false));
    Ok(Arc::new(Schema::new(fields)))
}

#[derive(Debug)]
pub struct LineageScanExec {
    config: ScanConfig,
    file_schema: SchemaRef,
    projection: Option<Vec<usize>>,
    groups: Vec<Vec<usize>>,
    schema: SchemaRef,
    props: Arc<PlanProperties>,
}

impl LineageScanExec {
    pub fn try_new(
        config: ScanConfig,
        file_schema: SchemaRef,
        projection: Option<Vec<usize>>,
        groups: Vec<Vec<usize>>,
    ) -> Result<Self> {
        let full = with_lineage(&file_schema)?;
        let schema = match &projection {
            Some(p) => Arc::new(full.project(p)?),
            None => full,
        };
        let props = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(groups.len().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(Self { config, file_schema, projection, groups, schema, props: Arc::new(props) })
    }

    pub fn plan(config: ScanConfig, file_schema: SchemaRef, projection: Option<Vec<usize>>, partitions: usize) -> Result<Self> {
        let groups = assign(&config.files, partitions);
        Self::try_new(config, file_schema, projection, groups)
    }

    pub fn config(&self) -> &ScanConfig {
        &self.config
    }
    pub fn file_schema(&self) -> &SchemaRef {
        &self.file_schema
    }
    pub fn projection(&self) -> Option<&Vec<usize>> {
        self.projection.as_ref()
    }
    pub fn groups(&self) -> &[Vec<usize>] {
        &self.groups
    }
}

impl DisplayAs for LineageScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "LineageScanExec: format={}, location={}, files={}, partitions={}",
            self.config.format.name(),
            self.config.location,
            self.config.files.len(),
            self.groups.len()
        )
    }
}

fn add_lineage(fb: FileBatch, uri: &str, add: bool, projection: Option<&Vec<usize>>, schema: &SchemaRef) -> Result<RecordBatch> {
    let n = fb.batch.num_rows();
    let mut columns: Vec<ArrayRef> = fb.batch.columns().to_vec();
    if add {
        columns.push(Arc::new(StringArray::from_iter_values(std::iter::repeat_n(uri, n))));
        columns.push(Arc::new(Int64Array::from(fb.rows)));
    }
    let columns = match projection {
        Some(p) => p.iter().map(|&i| Arc::clone(&columns[i])).collect(),
        None => columns,
    };
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &datafusion::arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(n)),
    )?)
}

impl ExecutionPlan for LineageScanExec {
    fn name(&self) -> &str {
        "LineageScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, _children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(&self, partition: usize, ctx: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let Some(group) = self.groups.get(partition) else {
            return exec_err!("LineageScanExec has no partition {partition}");
        };
        let files: Vec<FileRef> = group.iter().map(|&i| self.config.files[i].clone()).collect();
        let opts = TokqOptions::from_config(ctx.session_config().options());
        let skip_bad = match opts.on_bad_row.as_str() {
            "fail" => false,
            "skip" => true,
            other => return exec_err!("tokq.on_bad_row must be 'fail' or 'skip', got '{other}'"),
        };
        let batch_size = ctx.session_config().batch_size();
        let mut stores = Vec::with_capacity(files.len());
        for f in &files {
            stores.push(ctx.runtime_env().object_store(ObjectStoreUrl::parse(store_url(&f.url()?))?)?);
        }
        let format = self.config.format;
        let file_schema = Arc::clone(&self.file_schema);
        let schema = Arc::clone(&self.schema);
        let projection = self.projection.clone();
        let add = adds_lineage(&file_schema)?;
        let mut builder = RecordBatchReceiverStreamBuilder::new(Arc::clone(&schema), 2);
        let tx = builder.tx();
        builder.spawn(async move {
            for (file, store) in files.iter().zip(stores) {
                let lineage = |fb: FileBatch| add_lineage(fb, &file.uri, add, projection.as_ref(), &schema);
                let more = format.read_file(&store, file, &file_schema, batch_size, skip_bad, &tx, &lineage).await?;
                if !more {
                    break;
                }
            }
            Ok(())
        });
        Ok(builder.build())
    }
}
