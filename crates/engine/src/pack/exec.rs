//! `PackExec`: runs a [`Packer`] over each input partition, in the partition's order. Input
//! batches stay alive only while an unfinished row still refers to one of their documents.
//! With `by=source` it asks DataFusion for its input hashed by `_source` and sorted by
//! (`_source`, `_row`) in each partition, and ends a stream wherever `_source` changes: every file
//! packs on its own, all of them in parallel, and no partition count or executor changes a row.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int32Array, Int64Array, ListArray, RecordBatch, UInt32Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::{cast, interleave};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt32Type};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::arrow::compute::SortOptions;
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{Distribution, EquivalenceProperties, LexRequirement, OrderingRequirements, PhysicalExpr, PhysicalSortRequirement};
use datafusion::physical_plan::execution_plan::{Boundedness, ChildrenPropertiesMode, EmissionType, ReplaceChildrenOptions};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties, RecordBatchStream};
use futures::{Stream, StreamExt};

use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use tokq_core::pack::{PackCounts, PackOptions, PackedRow, Packer, Streams};
use crate::lineage::scan::{ROW_COLUMN, SOURCE_COLUMN};
use tokq_udfs::tokenize::ids_type;

pub const NAME: &str = "PackExec";

/// Tokens per output batch: small batches keep memory bounded and let the Parquet writer cut
/// row groups at its byte limit (it cannot split the first batch of a row group).
const BATCH_TOKENS: usize = 1 << 20;

fn list_of(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new_list_field(item, true)))
}

/// The packed schema: `input_ids`, `n_tokens`, `doc_offsets`, `first_offset`, optionally
/// `segment_ids`, then every other input column as a list with one entry per document in the row.
pub fn packed_schema(input: &Schema, opts: &PackOptions) -> Result<SchemaRef> {
    let Ok(ids) = input.field_with_name(&opts.ids_column) else {
        return plan_err!(
            "pack_tokens: the input has no '{}' column of token ids (columns: {}); name it or pass ids=COLUMN",
            opts.ids_column,
            input.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
        );
    };
    match ids.data_type() {
        DataType::List(f) | DataType::LargeList(f) if f.data_type().is_integer() => {}
        other => return plan_err!("pack_tokens: '{}' must be a list of token ids, got {other}", opts.ids_column),
    }
    let mut fields = vec![
        Field::new("input_ids", ids_type(), false),
        Field::new("n_tokens", DataType::Int64, false),
        Field::new("doc_offsets", list_of(DataType::Int32), false),
        Field::new("first_offset", DataType::Int64, false),
    ];
    if opts.segment_ids {
        fields.push(Field::new("segment_ids", list_of(DataType::Int32), false));
    }
    for f in input.fields().iter().filter(|f| f.name() != &opts.ids_column) {
        if fields.iter().any(|g| g.name() == f.name()) {
            return plan_err!("pack_tokens: input column '{}' clashes with an output column of the same name; rename it", f.name());
        }
        fields.push(Field::new(f.name(), list_of(f.data_type().clone()), false));
    }
    Ok(Arc::new(Schema::new(fields)))
}

#[derive(Debug)]
pub struct PackExec {
    input: Arc<dyn ExecutionPlan>,
    opts: PackOptions,
    /// With `by=source`: the input's `_source` and `_row` columns.
    lineage: Option<[Arc<Column>; 2]>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    /// The packing counts ([`PackCounts`]' fields), per partition.
    metrics: ExecutionPlanMetricsSet,
}

/// The names of the metrics that carry [`PackCounts`], in its field order.
const COUNTS: [&str; 6] = ["docs", "empty_docs", "rows", "tokens", "dropped_tokens", "padding_tokens"];

/// The packing counts of the `PackExec` operators in an executed plan, summed over partitions and
/// operators; `None` when the plan packs nothing.
pub fn pack_counts(plan: &Arc<dyn ExecutionPlan>) -> Option<PackCounts> {
    let mut total: Option<PackCounts> = None;
    let _ = plan.apply(|p| {
        if let Some(m) = p.downcast_ref::<PackExec>().and_then(ExecutionPlan::metrics) {
            let get = |name: &str| m.sum_by_name(name).map_or(0, |v| v.as_usize() as u64);
            let t = total.get_or_insert_with(PackCounts::default);
            t.docs += get(COUNTS[0]);
            t.empty_docs += get(COUNTS[1]);
            t.rows += get(COUNTS[2]);
            t.tokens += get(COUNTS[3]);
            t.dropped_tokens += get(COUNTS[4]);
            t.padding_tokens += get(COUNTS[5]);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    total
}

impl PackExec {
    pub fn try_new(input: Arc<dyn ExecutionPlan>, opts: PackOptions) -> Result<Self> {
        let schema = packed_schema(&input.schema(), &opts)?;
        let lineage = match opts.by {
            Streams::Partition => None,
            Streams::Source => Some(lineage_columns(&input.schema())?),
        };
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(input.properties().partitioning.partition_count()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Ok(Self { input, opts, lineage, schema, properties, metrics: ExecutionPlanMetricsSet::new() })
    }

    pub fn options(&self) -> &PackOptions {
        &self.opts
    }
}

/// The `_source` (Utf8) and `_row` (Int64) columns that `by=source` packs by.
pub fn lineage_columns(input: &Schema) -> Result<[Arc<Column>; 2]> {
    let column = |name: &str, t: DataType| match input.index_of(name) {
        Ok(i) if input.field(i).data_type() == &t => Some(Arc::new(Column::new(name, i))),
        _ => None,
    };
    match (column(SOURCE_COLUMN, DataType::Utf8), column(ROW_COLUMN, DataType::Int64)) {
        (Some(source), Some(row)) => Ok([source, row]),
        _ => plan_err!(
            "pack_tokens: by=source needs the input's {SOURCE_COLUMN} (text) and {ROW_COLUMN} (integer) columns, \
             as read_* adds them; keep them in the packed view"
        ),
    }
}

impl DisplayAs for PackExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{NAME}: seq_len={}, eos={:?}, tail={:?}", self.opts.seq_len, self.opts.eos, self.opts.tail)?;
        if self.lineage.is_some() {
            write!(f, ", by=source")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for PackExec {
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

    // Packing follows the input's order: splitting or merging partitions would change the rows
    // (packing by source asks for its own partitions below).
    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        match &self.lineage {
            Some([source, _]) => vec![Distribution::KeyPartitioned(vec![Arc::clone(source) as Arc<dyn PhysicalExpr>])],
            None => vec![Distribution::UnspecifiedDistribution],
        }
    }

    fn required_input_ordering(&self) -> Vec<Option<OrderingRequirements>> {
        let Some(lineage) = &self.lineage else { return vec![None] };
        let ascending = SortOptions { descending: false, nulls_first: false };
        let keys = lineage.iter().map(|c| PhysicalSortRequirement::new(Arc::clone(c) as Arc<dyn PhysicalExpr>, Some(ascending)));
        vec![LexRequirement::new(keys).map(OrderingRequirements::new)]
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

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let counts = COUNTS.map(|name| MetricBuilder::new(&self.metrics).counter(name, partition));
        let input = self.input.execute(partition, context)?;
        let in_schema = input.schema();
        let ids = in_schema.index_of(&self.opts.ids_column)?;
        let doc_columns = (0..in_schema.fields().len()).filter(|&i| i != ids).collect();
        Ok(Box::pin(PackStream {
            input,
            ready: VecDeque::new(),
            done: false,
            state: PackState {
                packer: Packer::new(self.opts.clone()),
                opts: self.opts.clone(),
                schema: Arc::clone(&self.schema),
                ids,
                doc_columns,
                held: VecDeque::new(),
                next_doc: 0,
                stream: self.lineage.as_ref().map(|[source, _]| (source.index(), None)),
                counts,
            },
        }))
    }
}

struct PackState {
    packer: Packer,
    opts: PackOptions,
    schema: SchemaRef,
    ids: usize,
    doc_columns: Vec<usize>,
    /// Input batches (their document columns only) with the number of their first document.
    held: VecDeque<(u64, RecordBatch)>,
    next_doc: u64,
    /// With `by=source`: the `_source` column and the source being packed (a NULL source is one
    /// stream of its own; before the first document there is nothing to end, so any start works).
    stream: Option<(usize, Option<String>)>,
    /// Where the packer's counts go when it finishes.
    counts: [Count; 6],
}

impl PackState {
    fn push(&mut self, batch: &RecordBatch) -> Result<Vec<RecordBatch>> {
        let ids = cast(batch.column(self.ids), &ids_type())?;
        let ids = ids.as_list::<i32>();
        let values = ids.values().as_primitive::<UInt32Type>().values();
        let first = self.next_doc;
        let sources = self.stream.as_ref().map(|(c, _)| batch.column(*c).as_string::<i32>());
        for (i, w) in ids.offsets().windows(2).enumerate() {
            if let (Some(sources), Some((_, current))) = (sources, &mut self.stream) {
                // A new file ends the stream of the one before: its partial row is dropped or padded.
                let source = sources.is_valid(i).then(|| sources.value(i));
                if current.as_deref() != source {
                    self.packer.finish();
                    *current = source.map(str::to_string);
                }
            }
            let tokens = if ids.is_null(i) { &[][..] } else { &values[w[0] as usize..w[1] as usize] };
            self.packer.push(first + i as u64, tokens);
        }
        self.next_doc += batch.num_rows() as u64;
        self.held.push_back((first, batch.project(&self.doc_columns)?));
        let out = self.emit()?;
        let keep_from = self.packer.oldest_pending_doc().unwrap_or(self.next_doc);
        while self.held.front().is_some_and(|(f, b)| f + b.num_rows() as u64 <= keep_from) {
            self.held.pop_front();
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<RecordBatch>> {
        self.packer.finish();
        let c = self.packer.counts();
        for (metric, value) in self.counts.iter().zip([c.docs, c.empty_docs, c.rows, c.tokens, c.dropped_tokens, c.padding_tokens]) {
            metric.add(value as usize);
        }
        self.emit()
    }

    fn emit(&mut self) -> Result<Vec<RecordBatch>> {
        let rows = self.packer.take_rows();
        rows.chunks((BATCH_TOKENS / self.opts.seq_len).max(1)).map(|c| self.build(c)).collect()
    }

    fn build(&self, rows: &[PackedRow]) -> Result<RecordBatch> {
        let seq_len = self.opts.seq_len;
        let tokens = UInt32Array::from_iter_values(rows.iter().flat_map(|r| r.tokens.iter().copied()));
        let ids_field = Arc::new(Field::new_list_field(DataType::UInt32, false));
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(ListArray::try_new(ids_field, OffsetBuffer::from_lengths(rows.iter().map(|_| seq_len)), Arc::new(tokens), None)?),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.n_tokens as i64))),
        ];
        let per_doc = OffsetBuffer::<i32>::from_lengths(rows.iter().map(|r| r.docs.len()));
        let offsets = Int32Array::from_iter_values(rows.iter().flat_map(|r| r.doc_offsets.iter().map(|&o| o as i32)));
        columns.push(list(per_doc.clone(), Arc::new(offsets))?);
        columns.push(Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.first_offset as i64))));
        if self.opts.segment_ids {
            let segments = Int32Array::from_iter_values(rows.iter().flat_map(segment_ids));
            columns.push(list(OffsetBuffer::from_lengths(rows.iter().map(|_| seq_len)), Arc::new(segments))?);
        }
        let picks: Vec<(usize, usize)> = rows.iter().flat_map(|r| r.docs.iter().map(|&d| self.locate(d))).collect();
        for c in 0..self.doc_columns.len() {
            let arrays: Vec<&dyn Array> = self.held.iter().map(|(_, b)| b.column(c).as_ref()).collect();
            columns.push(list(per_doc.clone(), interleave(&arrays, &picks)?)?);
        }
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }

    /// (index in `held`, row in that batch) of a document.
    fn locate(&self, doc: u64) -> (usize, usize) {
        let k = self.held.partition_point(|(first, _)| *first <= doc) - 1;
        (k, (doc - self.held[k].0) as usize)
    }
}

fn list(offsets: OffsetBuffer<i32>, values: ArrayRef) -> Result<ArrayRef> {
    let field = Arc::new(Field::new_list_field(values.data_type().clone(), true));
    Ok(Arc::new(ListArray::try_new(field, offsets, values, None)?))
}

/// Each token's document index within its row; padding is -1.
fn segment_ids(r: &PackedRow) -> impl Iterator<Item = i32> + '_ {
    let ends = r.doc_offsets.iter().skip(1).map(|&o| o as usize).chain([r.n_tokens]);
    let lens = r.doc_offsets.iter().zip(ends).map(|(&s, e)| e - s as usize);
    lens.enumerate()
        .flat_map(|(k, n)| std::iter::repeat_n(k as i32, n))
        .chain(std::iter::repeat_n(-1, r.tokens.len() - r.n_tokens))
}

struct PackStream {
    input: SendableRecordBatchStream,
    state: PackState,
    ready: VecDeque<RecordBatch>,
    done: bool,
}

impl Stream for PackStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(b) = self.ready.pop_front() {
                return Poll::Ready(Some(Ok(b)));
            }
            if self.done {
                return Poll::Ready(None);
            }
            let next = ready!(self.input.poll_next_unpin(cx));
            let this = &mut *self;
            let out = match next {
                Some(Ok(batch)) => this.state.push(&batch),
                Some(Err(e)) => Err(e),
                None => {
                    this.done = true;
                    this.state.finish()
                }
            };
            match out {
                Ok(batches) => this.ready.extend(batches),
                Err(e) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }
}

impl RecordBatchStream for PackStream {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.state.schema)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{ListBuilder, StringArray, UInt32Builder};
    use datafusion::datasource::MemTable;
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::*;

    fn docs_batch(schema: &SchemaRef, docs: &[(&str, Vec<u32>)]) -> RecordBatch {
        let mut ids = ListBuilder::new(UInt32Builder::new());
        for (_, t) in docs {
            ids.append_value(t.iter().map(|&x| Some(x)));
        }
        let names = StringArray::from_iter_values(docs.iter().map(|d| d.0));
        RecordBatch::try_new(Arc::clone(schema), vec![Arc::new(names), Arc::new(ids.finish())]).unwrap()
    }

    /// Documents spread over several input batches, with rows that span batch boundaries: the
    /// per-document columns must name the right documents, as the pure packer does.
    #[tokio::test]
    async fn rows_spanning_input_batches_keep_their_documents() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("doc_id", DataType::Utf8, false),
            Field::new("input_ids", DataType::List(Arc::new(Field::new_list_field(DataType::UInt32, true))), true),
        ]));
        let parts: Vec<Vec<(&str, Vec<u32>)>> = vec![
            vec![("a", vec![1, 2, 3]), ("b", vec![4])],
            vec![("c", vec![]), ("d", vec![5, 6, 7, 8, 9, 10, 11])],
            vec![("e", vec![12]), ("f", vec![13, 14])],
        ];
        let batches: Vec<RecordBatch> = parts.iter().map(|p| docs_batch(&schema, p)).collect();
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
        crate::register_all(&ctx);
        ctx.register_table("v", Arc::new(MemTable::try_new(Arc::clone(&schema), vec![batches]).unwrap())).unwrap();
        let out = ctx.sql("SELECT * FROM pack_tokens('v', 4, 'eos=0,tail=pad,pad=99')").await.unwrap().collect().await.unwrap();

        let mut packer = Packer::new(PackOptions::parse(4, "eos=0,tail=pad,pad=99", &[]).unwrap());
        let all: Vec<&(&str, Vec<u32>)> = parts.iter().flatten().collect();
        for (i, (_, t)) in all.iter().enumerate() {
            packer.push(i as u64, t);
        }
        packer.finish();
        let want = packer.take_rows();

        let got: Vec<(Vec<u32>, Vec<String>, i64)> = out
            .iter()
            .flat_map(|b| {
                let ids = b.column_by_name("input_ids").unwrap().as_list::<i32>();
                let docs = b.column_by_name("doc_id").unwrap().as_list::<i32>();
                let first = b.column_by_name("first_offset").unwrap().as_primitive::<datafusion::arrow::datatypes::Int64Type>();
                (0..b.num_rows())
                    .map(|i| {
                        let d = docs.value(i);
                        let d = d.as_string::<i32>();
                        let names = (0..d.len()).map(|k| d.value(k).to_string()).collect();
                        (ids.value(i).as_primitive::<UInt32Type>().values().to_vec(), names, first.value(i))
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        let expected: Vec<(Vec<u32>, Vec<String>, i64)> = want
            .iter()
            .map(|r| (r.tokens.clone(), r.docs.iter().map(|&d| all[d as usize].0.to_string()).collect(), r.first_offset as i64))
            .collect();
        assert_eq!(got, expected);
        assert_eq!(got[2].1, vec!["d"], "a row inside one long document from the second batch");
        assert!(got.iter().any(|r| r.1.first().map(String::as_str) == Some("d") && r.1.contains(&"e".to_string())), "{got:?}");
    }

    /// Packed rows as (tokens, the documents' sources and rows), sorted.
    fn rows_of(out: &[RecordBatch]) -> Vec<(Vec<u32>, Vec<(String, i64)>)> {
        let mut rows: Vec<_> = out
            .iter()
            .flat_map(|b| {
                let ids = b.column_by_name("input_ids").unwrap().as_list::<i32>();
                let (sources, lines) = (b.column_by_name(SOURCE_COLUMN).unwrap().as_list::<i32>(), b.column_by_name(ROW_COLUMN).unwrap().as_list::<i32>());
                (0..b.num_rows())
                    .map(|i| {
                        let (s, r) = (sources.value(i), lines.value(i));
                        let docs = s.as_string::<i32>().iter().zip(r.as_primitive::<datafusion::arrow::datatypes::Int64Type>().values()).map(|(s, &r)| (s.unwrap().to_string(), r));
                        (ids.value(i).as_primitive::<UInt32Type>().values().to_vec(), docs.collect())
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        rows.sort();
        rows
    }

    /// Documents of three files, spread over input partitions out of order: by=source packs each
    /// file alone in `_row` order (its tail padded), and the rows are the same for any number of
    /// partitions.
    #[tokio::test]
    async fn by_source_packs_each_file_alone_in_row_order_whatever_the_partitions() {
        let schema = Arc::new(Schema::new(vec![
            Field::new(SOURCE_COLUMN, DataType::Utf8, false),
            Field::new(ROW_COLUMN, DataType::Int64, false),
            Field::new("input_ids", DataType::List(Arc::new(Field::new_list_field(DataType::UInt32, true))), true),
        ]));
        // (source, row, tokens): file a has 3 documents, b 2, c 1.
        let docs: Vec<(&str, i64, Vec<u32>)> = vec![
            ("a", 0, vec![1, 2, 3]), ("a", 1, vec![4, 5]), ("a", 2, vec![6]),
            ("b", 0, vec![7, 8, 9, 10, 11]), ("b", 1, vec![12]),
            ("c", 0, vec![13, 14]),
        ];
        let batch = |picks: &[usize]| {
            let mut ids = ListBuilder::new(UInt32Builder::new());
            picks.iter().for_each(|&i| ids.append_value(docs[i].2.iter().map(|&x| Some(x))));
            let sources = StringArray::from_iter_values(picks.iter().map(|&i| docs[i].0));
            let rows = Int64Array::from_iter_values(picks.iter().map(|&i| docs[i].1));
            RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(sources), Arc::new(rows), Arc::new(ids.finish())]).unwrap()
        };
        let partitions = vec![vec![batch(&[2, 5]), batch(&[3])], vec![batch(&[1, 4, 0])]];
        let opts = "eos=0,tail=pad,pad=99,by=source";
        let mut want = Vec::new();
        let mut packer = Packer::new(PackOptions::parse(4, opts, &[]).unwrap());
        for file in ["a", "b", "c"] {
            let mine: Vec<usize> = (0..docs.len()).filter(|&i| docs[i].0 == file).collect();
            mine.iter().for_each(|&i| packer.push(i as u64, &docs[i].2));
            packer.finish();
        }
        for r in packer.take_rows() {
            want.push((r.tokens, r.docs.iter().map(|&d| (docs[d as usize].0.to_string(), docs[d as usize].1)).collect::<Vec<_>>()));
        }
        want.sort();
        for target in [1, 2, 3] {
            let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(target));
            crate::register_all(&ctx);
            ctx.register_table("v", Arc::new(MemTable::try_new(Arc::clone(&schema), partitions.clone()).unwrap())).unwrap();
            let out = ctx.sql(&format!("SELECT * FROM pack_tokens('v', 4, '{opts}')")).await.unwrap().collect().await.unwrap();
            assert_eq!(rows_of(&out), want, "{target} partitions");
        }
        // b's second row: the rest of its first document, its EOS, its second document, its EOS.
        assert!(want.contains(&(vec![11, 0, 12, 0], vec![("b".into(), 0), ("b".into(), 1)])), "{want:?}");
        let ctx = SessionContext::new();
        crate::register_all(&ctx);
        ctx.register_table("v", Arc::new(MemTable::try_new(Arc::new(Schema::new(vec![schema.field(2).clone()])), vec![vec![]]).unwrap())).unwrap();
        let err = ctx.sql("SELECT * FROM pack_tokens('v', 4, 'by=source')").await.unwrap_err().to_string();
        assert!(err.contains("by=source needs the input's _source (text) and _row (integer) columns"), "{err}");
    }
}
