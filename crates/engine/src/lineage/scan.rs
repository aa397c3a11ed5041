//! The lineage scan: a DataFusion `FileSource` that reads files (or pieces of one) in order and appends
//! `_source` and `_row` to every row. Being a `FileScanConfig` source (rather than a custom
//! plan node) lets Ballista's scheduler give each task only its own file groups.

use tokq_udfs::args::OrDf;
use std::fmt;
use std::sync::Arc;

use datafusion::datasource::physical_plan::{FileGroup, FileOpenFuture, FileOpener, FileScanConfig, FileScanConfigBuilder, FileSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::projection::ProjectionExprs;
use futures::StreamExt;
use object_store::ObjectStore;

use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::stats::Precision;
use datafusion::common::{exec_err, Result, Statistics};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::{DisplayFormatType, ExecutionPlan};
use serde::{Deserialize, Serialize};

use super::files::{assign, FileRef};
use super::pieces::Piece;
use crate::store::{object_store_url, store_url};
use super::counters::{ReadCounters, ScanMetrics};
use super::format::{FileBatch, Format};

pub const SOURCE_COLUMN: &str = "_source";
pub const ROW_COLUMN: &str = "_row";

/// What a lineage scan reads: the format and the files, resolved when the recipe was planned.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ScanConfig {
    pub format: Format,
    pub location: String,
    pub files: Vec<FileRef>,
}

/// Whether a scan adds lineage columns. Input that already carries both (tokq's own output)
/// keeps them, so lineage keeps pointing at the raw source through every stage.
pub fn adds_lineage(file_schema: &Schema) -> Result<bool> {
    let source = file_schema.field_with_name(SOURCE_COLUMN).ok();
    let row = file_schema.field_with_name(ROW_COLUMN).ok();
    match (source, row) {
        (None, None) => Ok(true),
        (Some(s), Some(r)) if s.data_type() == &DataType::Utf8 && r.data_type() == &DataType::Int64 => Ok(false),
        // Packed rows: one entry per document in the row.
        (Some(s), Some(r)) if is_list_of(s, &DataType::Utf8) && is_list_of(r, &DataType::Int64) => Ok(false),
        _ => exec_err!(
            "input has a '{SOURCE_COLUMN}' or '{ROW_COLUMN}' column but not both as (Utf8, Int64): \
             rename it, tokq adds lineage columns"
        ),
    }
}

fn is_list_of(f: &Field, item: &DataType) -> bool {
    matches!(f.data_type(), DataType::List(i) if i.data_type() == item)
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

/// What a lineage source needs besides its files: fixed when the recipe is planned, carried to
/// Ballista executors by [`crate::codec`].
#[derive(Debug, Clone)]
pub struct LineageSource {
    pub format: Format,
    pub location: String,
    pub file_schema: SchemaRef,
    pub skip_bad: bool,
    table_schema: TableSchema,
    projection: Option<ProjectionExprs>,
    batch_size: usize,
    /// What it reads, per file; shared by its clones.
    pub(crate) metrics: ScanMetrics,
}

impl LineageSource {
    /// A source whose reads also count into `run`'s live counters (none on an executor).
    pub fn try_new(format: Format, location: String, file_schema: SchemaRef, skip_bad: bool, run: Option<Arc<ReadCounters>>) -> Result<Self> {
        let table_schema = TableSchema::from(with_lineage(&file_schema)?);
        Ok(Self {
            format,
            location,
            file_schema,
            skip_bad,
            table_schema,
            projection: None,
            batch_size: 8192,
            metrics: ScanMetrics::new(run),
        })
    }

    /// Column indices of the projection, when there is one.
    pub fn projection_indices(&self) -> Option<Vec<usize>> {
        self.projection.as_ref().map(ordered_columns)
    }

    pub fn with_projection_indices(mut self, indices: Option<Vec<usize>>) -> Self {
        self.projection = indices.map(|i| ProjectionExprs::from_indices(&i, self.table_schema.table_schema()));
        self
    }

    fn output_schema(&self) -> Result<SchemaRef> {
        let full = self.table_schema.table_schema();
        Ok(match &self.projection {
            Some(p) => Arc::new(p.project_schema(full)?),
            None => Arc::clone(full),
        })
    }
}

/// Plans a scan of `config`'s files, spread over at most `partitions` groups of whole files.
pub fn scan_plan(config: &ScanConfig, source: LineageSource, projection: Option<Vec<usize>>, partitions: usize) -> Result<Arc<dyn ExecutionPlan>> {
    let groups = assign(&config.files, partitions)
        .into_iter()
        .map(|g| g.into_iter().map(|i| config.files[i].clone()).collect())
        .collect();
    build(source.with_projection_indices(projection), groups)
}

/// A `DataSourceExec` over the given groups (one partition each).
pub fn build(source: LineageSource, groups: Vec<Vec<FileRef>>) -> Result<Arc<dyn ExecutionPlan>> {
    let first = groups.iter().flatten().next().map(|f| f.url()).transpose().df()?;
    let store = match first {
        Some(url) => object_store_url(&url)?,
        None => ObjectStoreUrl::local_filesystem(),
    };
    let bytes: u64 = groups.iter().flatten().map(FileRef::bytes).sum();
    let mut file_groups = Vec::with_capacity(groups.len().max(1));
    for g in groups {
        let files: Vec<PartitionedFile> = g.iter().map(partitioned).collect::<Result<_>>()?;
        file_groups.push(FileGroup::new(files));
    }
    // A scan of no files (a folder an earlier statement has not written yet, as `tokq explain`
    // plans it) is one empty partition, not none: DataFusion's planner takes zero partitions for
    // one and skips the merge a window or a sort over the whole input needs, which its sanity
    // check then refuses.
    if file_groups.is_empty() {
        file_groups.push(FileGroup::new(Vec::new()));
    }
    // The bytes on disk, as an inexact size: a join whose other side is small (a stage's table of
    // sources, exact duplicates or clusters beside the documents) then collects that side into
    // every partition instead of hashing the documents, text and all, across partitions.
    let statistics = Statistics::new_unknown(source.table_schema.table_schema()).with_total_byte_size(Precision::Inexact(bytes as usize));
    // DataFusion lets idle partitions steal files from their siblings at run time; tokq's
    // partitions must hold exactly their groups, so that output files and packed rows do not
    // depend on timing.
    let config = FileScanConfigBuilder::new(store, Arc::new(source))
        .with_file_groups(file_groups)
        .with_statistics(statistics)
        .with_preserve_order(true)
        .build();
    Ok(DataSourceExec::from_data_source(config))
}

/// A file as DataFusion's scan holds it: its name as listed, and its version, so that the sink's
/// journal can tell a rewritten input from the one it committed.
fn partitioned(f: &FileRef) -> Result<PartitionedFile> {
    let path = f.path().df()?;
    let mut file = PartitionedFile::new(path.to_string(), f.size);
    // `PartitionedFile::new` re-encodes the name (`#` as `%23`): the path is set as it is.
    file.object_meta.location = path;
    file.object_meta.e_tag = f.version.clone();
    if let Some(piece) = &f.piece {
        file.extensions.insert(piece.clone());
    }
    Ok(file)
}

/// The input a scan's file stands for (the inverse of [`partitioned`]).
fn file_ref(root: &str, file: &PartitionedFile) -> FileRef {
    FileRef { piece: file.extensions.get::<Piece>().cloned(), ..FileRef::from_meta(root, &file.object_meta) }
}

/// The file scan config and lineage source of a plan node, if it is a lineage scan.
pub fn as_lineage_scan(plan: &dyn ExecutionPlan) -> Option<(&FileScanConfig, &LineageSource)> {
    let exec = plan.downcast_ref::<DataSourceExec>()?;
    let config = exec.data_source().downcast_ref::<FileScanConfig>()?;
    let source = config.file_source().downcast_ref::<LineageSource>()?;
    Some((config, source))
}

/// The files of a scan's groups, as URIs with sizes.
pub fn file_groups(config: &FileScanConfig) -> Vec<Vec<FileRef>> {
    let root = store_url(config.object_store_url.as_ref());
    config
        .file_groups
        .iter()
        .map(|g| g.files().iter().map(|f| file_ref(&root, f)).collect())
        .collect()
}

impl FileSource for LineageSource {
    fn create_file_opener(
        &self,
        store: Arc<dyn ObjectStore>,
        base: &FileScanConfig,
        partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        Ok(Arc::new(LineageOpener {
            source: self.clone(),
            partition,
            store,
            root: store_url(base.object_store_url.as_ref()),
            schema: self.output_schema()?,
        }))
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(Self { batch_size, ..self.clone() })
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        self.projection.as_ref()
    }

    fn metrics(&self) -> &datafusion::physical_plan::metrics::ExecutionPlanMetricsSet {
        self.metrics.set()
    }

    fn file_type(&self) -> &str {
        self.format.name()
    }

    fn fmt_extra(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, ", lineage_location={}", self.location)
    }

    /// Row numbers need each file, or piece of one ([`super::pieces`]), read in order from its
    /// start: DataFusion's own byte ranges would not know the rows before them.
    fn supports_repartitioning(&self) -> bool {
        false
    }

    /// Only plain column selections are taken, so the projection travels as indices.
    fn try_pushdown_projection(&self, projection: &ProjectionExprs) -> Result<Option<Arc<dyn FileSource>>> {
        let merged = match &self.projection {
            Some(p) => p.try_merge(projection)?,
            None => projection.clone(),
        };
        let full = self.table_schema.table_schema();
        let plain = merged.iter().all(|e| {
            e.expr.downcast_ref::<Column>().is_some_and(|c| full.field(c.index()).name() == &e.alias)
        });
        if !plain {
            return Ok(None);
        }
        Ok(Some(Arc::new(Self { projection: Some(merged), ..self.clone() })))
    }
}

struct LineageOpener {
    source: LineageSource,
    partition: usize,
    store: Arc<dyn ObjectStore>,
    root: String,
    schema: SchemaRef,
}

impl FileOpener for LineageOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let file = file_ref(&self.root, &file);
        let tally = self.source.metrics.file(&file.key(), self.partition);
        let (source, store, schema) = (self.source.clone(), Arc::clone(&self.store), Arc::clone(&self.schema));
        Ok(Box::pin(async move {
            let mut builder = RecordBatchReceiverStreamBuilder::new(Arc::clone(&schema), 2);
            let tx = builder.tx();
            builder.spawn(async move {
                let add = adds_lineage(&source.file_schema)?;
                let finish = |fb: FileBatch| add_lineage(fb, &file.uri, add, source.projection.as_ref(), &schema);
                let file_schema = Arc::clone(&source.file_schema);
                source.format.read_file(&store, &file, &file_schema, source.batch_size, source.skip_bad, &tally, &tx, &finish).await?;
                Ok(())
            });
            Ok(builder.build().boxed())
        }))
    }
}

/// The columns of a projection in the order it names them. A lineage scan only takes plain
/// column projections (`try_pushdown_projection`), so every expression is a column.
/// (`ProjectionExprs::column_indices` sorts them, which reorders the output.)
fn ordered_columns(p: &ProjectionExprs) -> Vec<usize> {
    p.iter().filter_map(|e| e.expr.downcast_ref::<Column>().map(Column::index)).collect()
}

fn add_lineage(fb: FileBatch, uri: &str, add: bool, projection: Option<&ProjectionExprs>, schema: &SchemaRef) -> Result<RecordBatch> {
    let n = fb.batch.num_rows();
    let mut columns: Vec<ArrayRef> = fb.batch.columns().to_vec();
    if add {
        columns.push(Arc::new(StringArray::from_iter_values(std::iter::repeat_n(uri, n))));
        columns.push(Arc::new(Int64Array::from(fb.rows)));
    }
    let columns = match projection {
        Some(p) => ordered_columns(p).into_iter().map(|i| Arc::clone(&columns[i])).collect(),
        None => columns,
    };
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &datafusion::arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(n)),
    )?)
}
