//! `SinkExec`: writes each input partition's rows as Parquet files where the partition runs, and
//! returns one row per file written, as JSON ([`WrittenFile`]).

use tokq_udfs::args::df;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{exec_err, plan_err, DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, ChildrenPropertiesMode, EmissionType, ReplaceChildrenOptions};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties};
use futures::TryStreamExt;

use super::journal::{self, Entry};
use super::layout::{runs_by_piece, runs_by_source, source_groups, without_files, Layout};
use super::part::{writer_properties, Target, Unit};
use super::{source_part_name, store_and_dir, FileRecord, SinkOptions, WrittenFile};
use crate::lineage::files::FileRef;
use crate::lineage::counters;
use crate::lineage::scan::{ROW_COLUMN, SOURCE_COLUMN};

pub const NAME: &str = "SinkExec";
pub const WRITTEN_COLUMN: &str = "written";

#[derive(Debug)]
pub struct SinkExec {
    input: Arc<dyn ExecutionPlan>,
    opts: SinkOptions,
    properties: Arc<PlanProperties>,
}

pub fn written_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(WRITTEN_COLUMN, DataType::Utf8, false)]))
}

/// The schema of the main output: the input's, without the rejects column.
pub fn kept_schema(input: &Schema, opts: &SinkOptions) -> Result<(SchemaRef, Option<usize>)> {
    let input = &crate::lineage::unnamed(input);
    let Some(r) = &opts.rejects else { return Ok((Arc::new(input.clone()), None)) };
    let Ok(i) = input.index_of(&r.column) else {
        return plan_err!(
            "COPY to '{}' with rejects: the query has no column '{}' (the reason a row is rejected, NULL when kept); name it with 'reject_column'",
            opts.location,
            r.column
        );
    };
    let keep: Vec<usize> = (0..input.fields().len()).filter(|&j| j != i).collect();
    Ok((Arc::new(input.project(&keep)?), Some(i)))
}

impl SinkExec {
    pub fn try_new(input: Arc<dyn ExecutionPlan>, opts: SinkOptions) -> Result<Self> {
        kept_schema(&input.schema(), &opts)?;
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(written_schema()),
            Partitioning::UnknownPartitioning(input.properties().partitioning.partition_count()),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Ok(Self { input, opts, properties })
    }

    pub fn options(&self) -> &SinkOptions {
        &self.opts
    }
}

impl DisplayAs for SinkExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let layout = if source_groups(&self.input).is_some() { "source" } else { "partition" };
        write!(f, "{NAME}: location={}, layout={layout}", self.opts.location)?;
        if let Some(r) = &self.opts.rejects {
            write!(f, ", rejects={} ({})", r.location, r.column)?;
        }
        Ok(())
    }
}

impl ExecutionPlan for SinkExec {
    fn name(&self) -> &str {
        NAME
    }

    fn apply_expressions(&self, _: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    // Files follow the input's partitions and order; splitting partitions would mix sources.
    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn replace_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
        _: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match (children.pop(), children.is_empty()) {
            (Some(input), true) => Ok(Arc::new(Self::try_new(input, self.opts.clone())?)),
            _ => exec_err!("{NAME} takes exactly one input"),
        }
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(children, ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let (input, opts) = (Arc::clone(&self.input), self.opts.clone());
        let written = async move {
            let stage_attempt = context.task_id().as_deref().map_or(0, stage_attempt);
            let mut files = write_partition(input, partition, context, &opts).await?;
            files.iter_mut().for_each(|f| f.stage_attempt = stage_attempt);
            let json = files.iter().map(serde_json::to_string).collect::<Result<Vec<_>, _>>().map_err(df)?;
            Ok(RecordBatch::try_new(written_schema(), vec![Arc::new(StringArray::from(json))])?)
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(written_schema(), futures::stream::once(written))))
    }
}

/// The stage attempt of a Ballista task id, `TID JOB/STAGE.ATTEMPT/TASK.TASK_ATTEMPT` (0 for
/// any other id: a local run has one attempt).
pub(crate) fn stage_attempt(task_id: &str) -> u32 {
    let stage = task_id.split('/').nth(1).unwrap_or_default();
    stage.split_once('.').and_then(|(_, attempt)| attempt.parse().ok()).unwrap_or(0)
}

/// This process, `host pid N`, as every file it writes reports it.
pub(crate) static WRITER: LazyLock<String> = LazyLock::new(|| {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    format!("{} pid {}", host.trim(), std::process::id())
});

/// Where one partition writes: the main directory, and the rejects directory with the index of
/// the reason column.
struct Targets {
    kept: Target,
    rejects: Option<(Target, usize)>,
}

impl Targets {
    fn new(context: &TaskContext, input: &Schema, opts: &SinkOptions) -> Result<Self> {
        let runtime = context.runtime_env();
        let props = writer_properties(opts)?;
        let (schema, column) = kept_schema(input, opts)?;
        let (store, dir) = store_and_dir(&runtime, &opts.location)?;
        let kept = Target { store, dir, schema, props: props.clone() };
        let rejects = match (&opts.rejects, column) {
            (Some(r), Some(i)) => {
                let (store, dir) = store_and_dir(&runtime, &r.location)?;
                Some((Target { store, dir, schema: Arc::new(crate::lineage::unnamed(input)), props }, i))
            }
            _ => None,
        };
        Ok(Self { kept, rejects })
    }

    fn unit(&self, name: Option<String>) -> Unit {
        Unit::new(&self.kept, self.rejects.as_ref(), name)
    }
}

fn written(records: (Option<FileRecord>, Option<FileRecord>), layout: Layout, source: Option<(&str, u64)>, resumed: bool) -> Vec<WrittenFile> {
    let (kept, rejected) = records;
    let one = |record: FileRecord, rejects: bool| WrittenFile {
        rejects,
        record: FileRecord { source: source.map(|s| s.0.to_string()), ..record },
        layout,
        source_rows: source.map(|s| s.1),
        writer: WRITER.clone(),
        resumed,
        stage_attempt: 0,
    };
    kept.map(|r| one(r, false)).into_iter().chain(rejected.map(|r| one(r, true))).collect()
}

async fn write_partition(
    input: Arc<dyn ExecutionPlan>,
    partition: usize,
    context: Arc<TaskContext>,
    opts: &SinkOptions,
) -> Result<Vec<WrittenFile>> {
    let targets = Targets::new(&context, &input.schema(), opts)?;
    let Some(groups) = source_groups(&input) else {
        let mut stream = input.execute(partition, context)?;
        let mut unit = targets.unit(None);
        while let Some(batch) = stream.try_next().await? {
            unit.write(&batch).await?;
        }
        return Ok(written(unit.finish().await?, Layout::Partition, None, false));
    };
    // This task's inputs (files, or pieces of one), by key and by file. Ballista hands each task
    // a plan restricted to its own partitions, so nothing here may depend on the other
    // partitions' files.
    let inputs: Vec<&FileRef> = groups.get(partition).into_iter().flatten().collect();
    let mine: BTreeMap<String, &FileRef> = inputs.iter().map(|f| (f.key(), *f)).collect();
    let mut by_file: BTreeMap<&str, Vec<&FileRef>> = BTreeMap::new();
    for f in &inputs {
        by_file.entry(f.uri.as_str()).or_default().push(f);
    }

    let kept = &targets.kept;
    let folder = journal::folder(&kept.dir, &opts.run_key);
    let rejects = targets.rejects.as_ref().map(|(t, _)| (&t.store, &t.dir));
    let mut committed = journal::read(&kept.store, &folder, &kept.dir, rejects).await?;
    // An input rewritten since, even at the same size, is read again.
    committed.retain(|key, e| mine.get(key).is_some_and(|f| f.size == e.source_size && f.version == e.source_version));
    let mut out = Vec::new();
    for e in committed.values() {
        out.extend(written((e.kept.clone(), e.rejects.clone()), Layout::Source, Some((&e.source, e.source_rows)), true));
    }
    let skip: BTreeSet<String> = committed.into_keys().collect();
    let input = if skip.is_empty() { input } else { without_files(&input, &skip)? };

    let schema = input.schema();
    let column = schema.index_of(SOURCE_COLUMN)?;
    let row_column = schema.index_of(ROW_COLUMN).ok();
    let mut stream = input.execute(partition, context)?;
    // Each input's rows come from the metrics of the scans below, which run in this task, here
    // and on a cluster's executor alike.
    let scans = counters::scans_in(&input);
    let before: BTreeMap<&str, u64> = mine.keys().map(|k| (k.as_str(), counters::rows_of(&scans, k))).collect();
    let mut current: Option<(String, u64, Unit)> = None;
    let mut finished = BTreeSet::new();
    let finish = |key: String, rows_before: u64, unit: Unit| {
        let (store, folder) = (Arc::clone(&kept.store), folder.clone());
        let file = mine.get(&key);
        let (source_size, source_version) = (file.map_or(0, |f| f.size), file.and_then(|f| f.version.clone()));
        let piece_bytes = file.and_then(|f| f.piece.as_ref().map(|p| p.bytes));
        let source_rows = counters::rows_of(&scans, &key).saturating_sub(rows_before);
        async move {
            let (kept, rejects) = unit.finish().await?;
            let name = source_part_name(&key);
            let entry = Entry { source_size, source_version, piece_bytes, source: key, source_rows, kept, rejects };
            journal::record(&store, &folder, &name, &entry).await?;
            Ok::<_, DataFusionError>(written((entry.kept, entry.rejects), Layout::Source, Some((&entry.source, source_rows)), false))
        }
    };
    while let Some(batch) = stream.try_next().await? {
        for (source, rows) in runs_by_source(&batch, column) {
            let Some(pieces) = source.as_deref().and_then(|s| by_file.get(s)).and_then(|files| runs_by_piece(rows.clone(), row_column, files)) else {
                return exec_err!(
                    "{NAME}: a row's _source and _row are not one of this partition's inputs ({} row {}); keep _source and _row as the reader gives them, or rename the columns",
                    source.as_deref().unwrap_or("NULL"),
                    row_column.and_then(|c| rows.column(c).as_any().downcast_ref::<Int64Array>().filter(|a| a.is_valid(0)).map(|a| a.value(0))).map_or("?".into(), |r| r.to_string())
                );
            };
            for (file, rows) in pieces {
                let key = file.key();
                if current.as_ref().is_none_or(|(k, _, _)| *k != key) {
                    if finished.contains(&key) {
                        return exec_err!("{NAME}: rows of '{key}' arrived out of order; tokq cannot write source-aligned files for this plan");
                    }
                    if let Some((k, before, unit)) = current.take() {
                        out.extend(finish(k.clone(), before, unit).await?);
                        finished.insert(k);
                    }
                    let unit = targets.unit(Some(source_part_name(&key)));
                    current = Some((key.clone(), before[key.as_str()], unit));
                }
                if let Some((_, _, unit)) = &mut current {
                    unit.write(&rows).await?;
                }
            }
        }
    }
    if let Some((s, before, unit)) = current.take() {
        out.extend(finish(s, before, unit).await?);
    }
    Ok(out)
}
