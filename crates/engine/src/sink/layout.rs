//! Which layout a plan can have, and the scan edits that resuming needs.

use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::{replace_children_if_necessary, ExecutionPlan};
use serde::{Deserialize, Serialize};

use crate::lineage::files::FileRef;
use crate::lineage::scan::{adds_lineage, as_lineage_scan, build, file_groups, ROW_COLUMN, SOURCE_COLUMN};

/// How a COPY's rows are cut into files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// One file per input file, named from the input's URI ([`super::source_part_name`]).
    Source,
    /// One file per partition, named from its content.
    Partition,
}

/// Nodes that keep each input row in its partition and in its order, one row in, at most one out.
fn row_preserving(plan: &dyn ExecutionPlan) -> bool {
    plan.is::<ProjectionExec>() || plan.is::<FilterExec>() || plan.is::<CooperativeExec>()
}

/// The input files of each partition, when `plan` writes source-aligned files: its rows come
/// straight from one lineage scan through row-preserving nodes, and carry the `_source` that scan
/// adds (and `_row` too, when a file is read in pieces: it tells the pieces apart). A scan of
/// tokq's own output keeps the raw source's lineage, so its `_source` names no file of the scan
/// (and a packed row names several): such plans write one file per partition.
pub fn source_groups(plan: &Arc<dyn ExecutionPlan>) -> Option<Vec<Vec<FileRef>>> {
    let schema = plan.schema();
    let has = |name: &str, t: DataType| schema.field_with_name(name).is_ok_and(|f| f.data_type() == &t);
    if !has(SOURCE_COLUMN, DataType::Utf8) {
        return None;
    }
    let mut node = Arc::clone(plan);
    loop {
        if let Some((config, source)) = as_lineage_scan(node.as_ref()) {
            let groups = file_groups(config);
            let pieces = groups.iter().flatten().any(|f| f.piece.is_some());
            let fits = adds_lineage(&source.file_schema).ok()? && (!pieces || has(ROW_COLUMN, DataType::Int64));
            return fits.then_some(groups);
        }
        let children = node.children();
        if children.len() != 1 || !row_preserving(node.as_ref()) {
            return None;
        }
        let child = Arc::clone(children[0]);
        node = child;
    }
}

/// `plan` with the inputs in `skip` (by [`FileRef::key`]) taken out of its scan, so that they are
/// not read again.
pub fn without_files(plan: &Arc<dyn ExecutionPlan>, skip: &BTreeSet<String>) -> Result<Arc<dyn ExecutionPlan>> {
    if let Some((config, source)) = as_lineage_scan(plan.as_ref()) {
        let groups = file_groups(config).into_iter().map(|g| g.into_iter().filter(|f| !skip.contains(&f.key())).collect()).collect();
        return build(source.clone(), groups);
    }
    let children = plan.children().into_iter().map(|c| without_files(c, skip)).collect::<Result<Vec<_>>>()?;
    replace_children_if_necessary(Arc::clone(plan), children)
}

/// Splits a batch into runs of rows with the same `_source`, in order. `None` for a NULL source.
pub fn runs_by_source(batch: &RecordBatch, column: usize) -> Vec<(Option<String>, RecordBatch)> {
    let Some(sources) = batch.column(column).as_any().downcast_ref::<StringArray>() else {
        return vec![(None, batch.clone())];
    };
    let value = |i: usize| sources.is_valid(i).then(|| sources.value(i));
    let mut runs = Vec::new();
    let mut start = 0;
    for i in 1..=batch.num_rows() {
        if i == batch.num_rows() || value(i) != value(start) {
            runs.push((value(start).map(str::to_string), batch.slice(start, i - start)));
            start = i;
        }
    }
    runs
}

/// Splits a run of one file's rows into runs of its inputs among `inputs` (the file whole, or
/// the pieces of it this partition reads), by the `_row` in `row_column`. `None` when a row
/// belongs to none of them.
pub fn runs_by_piece<'a>(run: RecordBatch, row_column: Option<usize>, inputs: &[&'a FileRef]) -> Option<Vec<(&'a FileRef, RecordBatch)>> {
    if let [whole] = inputs {
        if whole.piece.is_none() {
            return Some(vec![(*whole, run)]);
        }
    }
    let rows = run.column(row_column?).as_any().downcast_ref::<Int64Array>()?;
    let holder = |i: usize| {
        let row = u64::try_from(rows.value(i)).ok()?;
        inputs.iter().position(|f| f.piece.as_ref().is_some_and(|p| p.rows.0 <= row && row < p.rows.1))
    };
    let mut runs = Vec::new();
    let mut start = 0;
    let mut current = if run.num_rows() > 0 { holder(0)? } else { 0 };
    for i in 1..=run.num_rows() {
        let next = if i < run.num_rows() { Some(holder(i)?) } else { None };
        if next != Some(current) {
            runs.push((inputs[current], run.slice(start, i - start)));
            if let Some(n) = next {
                (start, current) = (i, n);
            }
        }
    }
    Some(runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{Field, Schema};

    #[test]
    fn runs_follow_the_source_column() {
        let schema = Arc::new(Schema::new(vec![Field::new("_source", DataType::Utf8, true)]));
        let col = StringArray::from(vec![Some("a"), Some("a"), Some("b"), None, None, Some("a")]);
        let batch = RecordBatch::try_new(schema, vec![Arc::new(col)]).unwrap();
        let runs: Vec<_> = runs_by_source(&batch, 0).into_iter().map(|(s, b)| (s, b.num_rows())).collect();
        assert_eq!(runs, vec![(Some("a".into()), 2), (Some("b".into()), 1), (None, 2), (Some("a".into()), 1)]);
    }

    #[test]
    fn pieces_are_told_apart_by_row() {
        use crate::lineage::pieces::Piece;
        let piece = |a: u64, b: u64| FileRef { uri: "f".into(), size: 9, version: None, piece: Some(Piece { rows: (a, b), span: (a, b), bytes: b - a }) };
        let (p0, p1, p3) = (piece(0, 10), piece(10, 20), piece(30, 40));
        let schema = Arc::new(Schema::new(vec![Field::new("_row", DataType::Int64, false)]));
        let batch = |rows: Vec<i64>| RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(Int64Array::from(rows))]).unwrap();
        let runs = runs_by_piece(batch(vec![3, 9, 10, 19, 30]), Some(0), &[&p0, &p1, &p3]).unwrap();
        let got: Vec<_> = runs.iter().map(|(f, b)| (f.key(), b.num_rows())).collect();
        assert_eq!(got, vec![("f#rows=0-10".into(), 2), ("f#rows=10-20".into(), 2), ("f#rows=30-40".into(), 1)]);
        assert!(runs_by_piece(batch(vec![25]), Some(0), &[&p0, &p1, &p3]).is_none(), "a row of another partition's piece");
        assert!(runs_by_piece(batch(vec![1]), None, &[&p0, &p1]).is_none(), "pieces need _row");
        let whole = FileRef { piece: None, ..p0.clone() };
        assert_eq!(runs_by_piece(batch(vec![1, 99]), None, &[&whole]).unwrap().len(), 1);
    }
}
