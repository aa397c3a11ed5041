//! Schema drift: an input file that lacks a column a statement reads. The files of one read are
//! read in their schemas merged by column name, so such a file's rows get NULL there: right for a
//! column that later files add, a silent loss for one that a file names otherwise (`content`
//! where the others say `text`). The runner reports each such file in its summary and
//! `--stats-json`, and fails the statement under `tokq.strict_schema` (`--strict-schema`).

use std::collections::BTreeSet;
use std::fmt;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Result;
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::LogicalPlan;
use serde::Serialize;

use super::table::LineageTable;

/// The columns of each input file of one read, in the order the files were listed.
#[derive(Debug, Clone, Default)]
pub struct FileColumns(Vec<(String, BTreeSet<String>)>);

impl FileColumns {
    /// Each file's URI with its columns.
    pub fn new(files: Vec<(String, BTreeSet<String>)>) -> Self {
        Self(files)
    }

    /// The files that lack some of the columns `read`, with what they have instead.
    fn drift(&self, read: &BTreeSet<String>) -> Vec<Drift> {
        // Only columns some file has: the lineage columns are nobody's.
        let known: BTreeSet<&String> = self.0.iter().flat_map(|(_, c)| c).collect();
        let read: BTreeSet<&String> = read.iter().filter(|c| known.contains(c)).collect();
        self.0
            .iter()
            .filter_map(|(file, columns)| {
                let missing: Vec<String> = read.iter().filter(|c| !columns.contains(**c)).map(|c| c.to_string()).collect();
                if missing.is_empty() {
                    return None;
                }
                // What the files that have the missing columns all lack: likely the same data renamed.
                let whole = self.0.iter().filter(|(_, c)| missing.iter().all(|m| c.contains(m)));
                let theirs: BTreeSet<&String> = whole.flat_map(|(_, c)| c).collect();
                let instead = columns.iter().filter(|c| !theirs.contains(c)).cloned().collect();
                Some(Drift { statement: 0, file: file.clone(), missing, instead })
            })
            .collect()
    }
}

/// An input file that lacks columns a statement reads.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Drift {
    /// The statement's number, from 1.
    pub statement: usize,
    /// The file's URI.
    pub file: String,
    /// The columns it lacks: its rows read NULL there.
    pub missing: Vec<String>,
    /// Its columns that the files with the missing ones do not have (likely the same data
    /// under another name).
    pub instead: Vec<String>,
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.missing.len() == 1 { "" } else { "s" };
        write!(f, "{} has no column{s} {}, which statement {} reads: its rows read NULL there", self.file, self.missing.join(", "), self.statement)?;
        if !self.instead.is_empty() {
            write!(f, " (it has {}, which the other files lack)", self.instead.join(", "))?;
        }
        Ok(())
    }
}

/// The drift of every lineage read in `plan` (optimized, so that each scan names the columns it
/// reads), for statement `statement`.
pub fn drift(plan: &LogicalPlan, statement: usize) -> Result<Vec<Drift>> {
    let mut found = Vec::new();
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            let provider = source_as_provider(&scan.source)?;
            if let Some(table) = provider.downcast_ref::<LineageTable>() {
                let read = scan.projected_schema.fields().iter().map(|f| f.name().clone()).collect();
                found.extend(table.columns().drift(&read).into_iter().map(|d| Drift { statement, ..d }));
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    found.sort();
    found.dedup();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(spec: &[(&str, &[&str])]) -> FileColumns {
        FileColumns::new(spec.iter().map(|(f, c)| (f.to_string(), c.iter().map(|s| s.to_string()).collect())).collect())
    }

    fn read(cols: &[&str]) -> BTreeSet<String> {
        cols.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_file_without_a_read_column_is_named_with_what_it_has_instead() {
        let f = files(&[("a.jsonl", &["id", "text"]), ("b.jsonl", &["id", "content"]), ("c.jsonl", &["id", "text", "url"])]);
        let d = f.drift(&read(&["id", "text", "_source", "_row"]));
        assert_eq!(d.len(), 1);
        assert_eq!(
            Drift { statement: 2, ..d[0].clone() }.to_string(),
            "b.jsonl has no column text, which statement 2 reads: its rows read NULL there (it has content, which the other files lack)"
        );
        assert!(f.drift(&read(&["id"])).is_empty(), "a column the statement does not read is no drift");
        let url = f.drift(&read(&["url"]));
        assert_eq!(url.iter().map(|d| (d.file.as_str(), d.instead.clone())).collect::<Vec<_>>(), [("a.jsonl", vec![]), ("b.jsonl", vec!["content".to_string()])]);
    }
}
