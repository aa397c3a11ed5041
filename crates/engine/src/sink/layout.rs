//! Which layout a plan can have, and the scan edits that resuming needs.

use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::{replace_children_if_necessary, ExecutionPlan};
use serde::{Deserialize, Serialize};

use crate::lineage::files::FileRef;
use crate::lineage::scan::{adds_lineage, as_lineage_scan, build, file_groups, SOURCE_COLUMN};

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
/// adds. A scan of tokq's own output keeps the raw source's lineage, so its `_source` names no
/// file of the scan (and a packed row names several): such plans write one file per partition.
pub fn source_groups(plan: &Arc<dyn ExecutionPlan>) -> Option<Vec<Vec<FileRef>>> {
    let has_source = plan.schema().field_with_name(SOURCE_COLUMN).is_ok_and(|f| f.data_type() == &DataType::Utf8);
    if !has_source {
        return None;
    }
    let mut node = Arc::clone(plan);
    loop {
        if let Some((config, source)) = as_lineage_scan(node.as_ref()) {
            return adds_lineage(&source.file_schema).ok()?.then(|| file_groups(config));
        }
        let children = node.children();
        if children.len() != 1 || !row_preserving(node.as_ref()) {
            return None;
        }
        let child = Arc::clone(children[0]);
        node = child;
    }
}

/// `plan` with the files in `skip` taken out of its scan, so that they are not read again.
pub fn without_files(plan: &Arc<dyn ExecutionPlan>, skip: &BTreeSet<String>) -> Result<Arc<dyn ExecutionPlan>> {
    if let Some((config, source)) = as_lineage_scan(plan.as_ref()) {
        let groups = file_groups(config).into_iter().map(|g| g.into_iter().filter(|f| !skip.contains(&f.uri)).collect()).collect();
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
}
