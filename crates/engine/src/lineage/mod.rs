//! Readers with lineage: `read_jsonl`, `read_csv` and `read_parquet` table functions whose rows
//! carry `_source` (the file's URI) and `_row` (the 0-based row, or line for JSONL, in that file).
//! A large file is read as several pieces in parallel ([`pieces`]), with the same lineage.

pub mod counters;
pub mod drift;
pub(crate) mod files;
pub(crate) mod format;
pub(crate) mod json_escapes;
pub(crate) mod jsonl;
pub(crate) mod merge;
pub(crate) mod pieces;
pub mod planned;
pub(crate) mod scan;
pub(crate) mod source;
pub(crate) mod table;
pub(crate) mod warc;
pub(crate) mod warc_records;

use tokq_udfs::args::OrDf;
use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{plan_err, Result, ScalarValue};
use datafusion::logical_expr::Expr;

use tokq_udfs::args::literal_str;
use tokq_udfs::TokqOptions;
use crate::store::{block_on, object_store_url, to_url};
use format::Format;
use scan::ScanConfig;
use table::LineageTable;
pub use table::unnamed;
use tokq_core::quality::params::{Keys, Params};
use warc::{RecordTypes, WarcRows};

/// A batch a reader gives ends at this many bytes of its file's data, whatever its row count, so
/// that a text column's 32-bit offsets never overflow and memory is bounded by the batch, not
/// the file (a JSONL file of 2 MB documents, a WARC of large pages, a Parquet file of books).
/// 4 MiB rather than 16: a batch's text, its decoding and its results stay nearer the CPU, and
/// its buffers are reused instead of mapped fresh (page faults a third fewer); one core's cascade
/// ran 10% faster, MinHash 5%, tokenizing 6% (docs/evidence.md).
pub const BATCH_BYTES: usize = 4 << 20;

/// A `read_*` table function for one format.
#[derive(Debug)]
pub struct ReadFiles {
    name: &'static str,
    format: fn(&[Expr]) -> Result<Format>,
}

impl ReadFiles {
    /// `read_jsonl`.
    pub fn jsonl() -> Self {
        Self { name: "read_jsonl", format: |_| Ok(Format::Jsonl) }
    }

    /// `read_parquet`.
    pub fn parquet() -> Self {
        Self { name: "read_parquet", format: |_| Ok(Format::Parquet) }
    }

    /// `read_csv(path [, has_header BOOLEAN DEFAULT true])`.
    pub fn csv() -> Self {
        Self {
            name: "read_csv",
            format: |args| match args.get(1) {
                None => Ok(Format::Csv { has_header: true }),
                Some(Expr::Literal(ScalarValue::Boolean(Some(b)), _)) => Ok(Format::Csv { has_header: *b }),
                Some(other) => plan_err!("read_csv: has_header must be true or false, got {other}"),
            },
        }
    }

    /// `read_warc(path [, 'types=response|resource'])`.
    pub fn warc() -> Self {
        Self { name: "read_warc", format: |args| Ok(Format::Warc(WarcRows::Records(warc_types(args)?))) }
    }

    /// `read_wet(path)`.
    pub fn wet() -> Self {
        Self { name: "read_wet", format: |_| Ok(Format::Warc(WarcRows::Text)) }
    }

    /// `read_files(path)`: the format of `path`'s extension.
    pub fn any() -> Self {
        Self {
            name: "read_files",
            format: |args| {
                let location = args.first().map(|e| literal_str("read_files", "the path or glob", e)).transpose()?.unwrap_or_default();
                Format::of_extension(&location).map_or_else(
                    || plan_err!("read_files: cannot tell the format of '{location}' from its extension (.jsonl, .json, .ndjson, .parquet, .csv, .warc, optionally .gz or .zst): name the files (such as 'evals/*.parquet') or use read_jsonl, read_parquet or read_csv"),
                    Ok,
                )
            },
        }
    }

    /// The SQL name.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// The record types of `read_warc`'s options (`response` without them).
fn warc_types(args: &[Expr]) -> Result<RecordTypes> {
    let Some(arg) = args.get(1) else { return Ok(RecordTypes::RESPONSE) };
    let spec = literal_str("read_warc", "the options", arg)?;
    let keys: &Keys<RecordTypes> = &[("types", |t, _, _, v| RecordTypes::parse(v).map(|x| *t = x))];
    Params::parse("read_warc", &spec).and_then(|p| p.apply(keys, RecordTypes::RESPONSE)).df()
}

impl TableFunctionImpl for ReadFiles {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        let Some(first) = exprs.first() else {
            return plan_err!("{}: expected a path or glob argument", self.name);
        };
        let location = literal_str(self.name, "the path or glob", first)?;
        let format = (self.format)(exprs)?;
        // Explaining: the folder an earlier COPY of the recipe would write.
        if let Some(schema) = args.session().config().get_extension::<planned::PlannedOutputs>().and_then(|p| p.schema_of(&location)) {
            let config = ScanConfig { format, location, files: Vec::new() };
            return Ok(Arc::new(LineageTable::try_new(config, schema)?));
        }
        let url = to_url(&location).df()?;
        let store = args.session().runtime_env().object_store(object_store_url(&url)?)?;
        let options = TokqOptions::from_config(args.session().config().options());
        let (split_bytes, skip_bad) = (options.split_bytes, options.on_bad_row == tokq_udfs::OnBadRow::Skip);
        let listed: tokq_core::error::Result<_> = block_on(async {
            let files = files::list(Arc::clone(&store), &location).await?;
            let (schema, columns) = format.infer_schema(&store, &files, skip_bad).await?;
            let files = pieces::split(&format, &store, files, split_bytes).await?;
            Ok((files, schema, columns))
        });
        let (files, schema, columns) = listed.df()?;
        let config = ScanConfig { format, location, files };
        Ok(Arc::new(LineageTable::try_new(config, Arc::new(schema))?.with_columns(columns)))
    }
}
